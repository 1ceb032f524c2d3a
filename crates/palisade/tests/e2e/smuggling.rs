//! Malformed and ambiguous requests over raw TCP: rejected, connection closed, never forwarded,
//! and the server keeps serving.

use crate::common::*;

/// Send `req` on a fresh connection; expect `status` (with `code` when given) as a problem
/// response, then a closed connection; then check that nothing reached the upstream and that a
/// well-formed request on a new connection still works.
async fn rejected(req: &[u8], status: u16, code: Option<&str>) {
    rejected_with(req, &[status], code).await
}

/// Like [`rejected`], accepting any of `statuses`.
async fn rejected_with(req: &[u8], statuses: &[u16], code: Option<&str>) {
    let mut up = Upstream::tcp(handler(|req| vec![Step::Write(ok(req.path()))])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    c.send_lossy(req).await;
    let r = c.response().await;
    assert!(statuses.contains(&r.status), "expected one of {statuses:?}: {}", r.dump());
    match code {
        Some(code) => {
            assert_problem(&r, r.status, code);
        }
        None => {
            assert_eq!(r.header("content-type"), Some("application/problem+json"));
        }
    }
    assert_eq!(r.header("connection"), Some("close"), "{}", r.dump());
    let rest = c.rest().await;
    assert!(rest.is_empty(), "nothing may follow the rejection: {:?}", String::from_utf8_lossy(&rest));
    after(&proxy, &mut up).await;
}

/// The upstream received nothing but the follow-up request, which succeeds.
async fn after(proxy: &Proxy, up: &mut Upstream) {
    let r = get(proxy.addr, "api.test", "/follow-up").await;
    assert_eq!(r.status, 200, "the server must keep serving: {}", r.dump());
    assert_eq!(r.text(), "/follow-up");
    let reqs = up.drain();
    let paths: Vec<_> = reqs.iter().map(|r| r.target.clone()).collect();
    assert_eq!(paths, ["/follow-up"], "the malformed request must never be forwarded");
}

#[tokio::test]
async fn content_length_with_transfer_encoding() {
    rejected(b"POST /s HTTP/1.1\r\nHost: api.test\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: api.test\r\n\r\n", 400, Some("http.ambiguous_framing")).await;
    rejected(b"POST /s HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", 400, Some("http.ambiguous_framing"))
        .await;
}

#[tokio::test]
async fn conflicting_content_lengths() {
    rejected(b"POST /s HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400, Some("http.ambiguous_framing")).await;
    rejected(b"POST /s HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5, 6\r\n\r\nhello!", 400, Some("http.ambiguous_framing")).await;
    rejected(b"POST /s HTTP/1.1\r\nHost: api.test\r\nContent-Length: +5\r\n\r\nhello", 400, Some("http.ambiguous_framing")).await;
    rejected(b"POST /s HTTP/1.1\r\nHost: api.test\r\nContent-Length: 0x5\r\n\r\nhello", 400, Some("http.ambiguous_framing")).await;
    rejected(b"POST /s HTTP/1.1\r\nHost: api.test\r\nContent-Length: 99999999999999999999\r\n\r\nhello", 400, Some("http.ambiguous_framing")).await;
}

#[tokio::test]
async fn identical_repeated_content_length_is_folded_into_one() {
    let mut up = Upstream::tcp(handler(|req| vec![Step::Write(ok(req.path()))])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let r = raw(proxy.addr, "POST /same HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello").await;
    assert_eq!(r.status, 200);
    let got = up.next_req().await;
    assert_eq!(got.header_all("content-length"), ["5"]);
    assert_eq!(got.body, b"hello");
}

/// Invalid chunked framing: a 400 or a clean close, never forwarded.
async fn bad_chunked(body: &[u8]) {
    let mut up = Upstream::tcp(handler(|req| vec![Step::Write(ok(req.path()))])).await;
    let proxy = Proxy::start(&cfg(&["body_read_timeout: 2s"], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    let mut req = b"POST /chunky HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    req.extend_from_slice(body);
    c.send_lossy(&req).await;
    let got = c.rest().await;
    if !got.is_empty() {
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 400 "), "{text}");
        assert!(text.contains("application/problem+json"), "{text}");
        assert!(text.contains("connection: close"), "{text}");
    }
    after(&proxy, &mut up).await;
}

#[tokio::test]
async fn invalid_chunked_encoding() {
    bad_chunked(b"zz\r\nhello\r\n0\r\n\r\n").await; // bad hex
    bad_chunked(b"5\r\nhelloXX0\r\n\r\n").await; // missing CRLF after data
    bad_chunked(b"5\nhello\r\n0\r\n\r\n").await; // bare LF after size
    bad_chunked(b"-5\r\nhello\r\n0\r\n\r\n").await; // negative
    bad_chunked(b"5 junk\r\nhello\r\n0\r\n\r\n").await; // junk after size
    bad_chunked(b"ffffffffffffffffff\r\nhello\r\n0\r\n\r\n").await; // overflow
    bad_chunked(b"5\r\nhello\r\n0\r\nX-T: 1\n\r\n").await; // bare LF in trailers
    bad_chunked(format!("{}\r\n", "1".repeat(2000)).as_bytes()).await; // endless size line
}

#[tokio::test]
async fn obsolete_line_folding() {
    rejected(b"GET /f HTTP/1.1\r\nHost: api.test\r\nX-Folded: a\r\n  b\r\n\r\n", 400, Some("http.bad_request")).await;
    rejected(b"GET /f HTTP/1.1\r\nHost: api.test\r\nX-Folded: a\r\n\tb\r\n\r\n", 400, Some("http.bad_request")).await;
}

#[tokio::test]
async fn bare_lf_line_endings() {
    rejected(b"GET /lf HTTP/1.1\nHost: api.test\n\n", 400, Some("http.bad_request")).await;
    rejected(b"GET /lf HTTP/1.1\r\nHost: api.test\nX-A: b\r\n\r\n", 400, Some("http.bad_request")).await;
}

#[tokio::test]
async fn invalid_request_lines() {
    // Not HTTP at all in the version position: httparse reports a version error, which
    // Palisade answers with 505 (still a problem response and a closed connection).
    rejected_with(b"NOT A REQUEST\r\nHost: api.test\r\n\r\n", &[400, 505], Some("http.bad_request")).await;
    rejected_with(b"GET /a b HTTP/1.1\r\nHost: api.test\r\n\r\n", &[400, 505], Some("http.bad_request")).await;
    for line in [
        &b"GET /x HTTP/1.1 junk\r\nHost: api.test\r\n\r\n"[..],
        b"GET\r\nHost: api.test\r\n\r\n",
        b"GET x HTTP/1.1\r\nHost: api.test\r\n\r\n",
        b"G(T / HTTP/1.1\r\nHost: api.test\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header: x\r\nHost: api.test\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : api.test\r\n\r\n",
        b"GET /\x01 HTTP/1.1\r\nHost: api.test\r\n\r\n",
    ] {
        rejected(line, 400, Some("http.bad_request")).await;
    }
    rejected(b"GET / HTTP/2.0\r\nHost: api.test\r\n\r\n", 505, None).await;
    rejected(b"CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n", 501, Some("http.not_implemented")).await;
}

#[tokio::test]
async fn transfer_codings_other_than_chunked() {
    rejected(b"POST /te HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, Some("http.not_implemented")).await;
    rejected(
        b"POST /te HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        501,
        Some("http.not_implemented"),
    )
    .await;
    rejected(b"POST /te HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400, Some("http.ambiguous_framing")).await;
    rejected(b"POST /te HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: identity\r\n\r\n", 400, Some("http.ambiguous_framing")).await;
    rejected(b"POST /te HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: xchunked\r\n\r\n", 400, Some("http.ambiguous_framing")).await;
}

#[tokio::test]
async fn http10_with_transfer_encoding() {
    rejected(b"POST /old HTTP/1.0\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400, Some("http.ambiguous_framing")).await;
}

#[tokio::test]
async fn host_header_missing_or_repeated() {
    rejected(b"GET /nohost HTTP/1.1\r\nAccept: */*\r\n\r\n", 400, Some("http.bad_request")).await;
    rejected(b"GET /twohosts HTTP/1.1\r\nHost: api.test\r\nHost: evil.test\r\n\r\n", 400, Some("http.bad_request")).await;
}

#[tokio::test]
async fn http10_without_host_is_accepted() {
    let mut up = Upstream::tcp(handler(|req| vec![Step::Write(ok(req.path()))])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let r = raw(proxy.addr, "GET /ten HTTP/1.0\r\n\r\n").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    let got = up.next_req().await;
    assert_eq!(got.version, "HTTP/1.1");
    assert!(got.header("host").is_some(), "the upstream request needs a Host: {}", got.raw_head);
}

#[tokio::test]
async fn pipelined_smuggling_attempt_is_not_forwarded() {
    // A valid request followed by a CL.TE ambiguity on the same connection: the first is
    // served, the second rejected, and the payload hidden in it never reaches the upstream.
    let mut up = Upstream::tcp(handler(|req| vec![Step::Write(ok(req.path()))])).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let mut c = Conn::connect(proxy.addr).await;
    c.send(
        "GET /first HTTP/1.1\r\nHost: api.test\r\n\r\nPOST /second HTTP/1.1\r\nHost: api.test\r\nContent-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\nHost: api.test\r\n\r\n",
    )
    .await;
    let r = c.response().await;
    assert_eq!(r.text(), "/first");
    let r = c.response().await;
    assert_problem(&r, 400, "http.ambiguous_framing");
    assert!(c.closed().await);
    assert_eq!(up.next_req().await.target, "/first");
    after(&proxy, &mut up).await;
}
