use super::*;
use crate::codec::{find_head_end, parse_chunk_size, valid_host};
use crate::raw_head::NameCache;
use http::{HeaderMap, HeaderName};

#[test]
fn chunk_sizes() {
    assert_eq!(parse_chunk_size(b"1a\r\n").unwrap(), 26);
    assert_eq!(parse_chunk_size(b"0\r\n").unwrap(), 0);
    assert_eq!(parse_chunk_size(b"A;name=value\r\n").unwrap(), 10);
    assert_eq!(parse_chunk_size(b"ffffffffffffffff\r\n").unwrap(), u64::MAX);
    for bad in [&b"\r\n"[..], b"1a\n", b"g\r\n", b"1 2\r\n", b"10000000000000000\r\n", b"-1\r\n", b"0x10\r\n", b"1;\x01\r\n"] {
        assert!(parse_chunk_size(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn host_values_follow_the_uri_host_grammar() {
    let good: &[&[u8]] = &[
        b"",
        b"localhost",
        b"api.example.com",
        b"api.example.com:8443",
        b"127.0.0.1:80",
        b"my_host-2.internal",
        b"[::1]",
        b"[2001:db8::7]:443",
        b"[v1.fe80::a+en1]",
        b"xn--bcher-kva.example",
        b"caf%C3%A9.example",
        b"a!$&'()*+,;=b",
        b"host:",
    ];
    for v in good {
        assert!(valid_host(v), "{:?} is a valid Host", String::from_utf8_lossy(v));
    }
    let bad: &[&[u8]] = &[
        b"local host",
        b" localhost",
        b"localhost ",
        b"a\tb",
        b"host/path",
        b"user@host",
        b"host\\x",
        b"host:80:81",
        b"host:8o",
        b"[::1",
        b"[::1]x",
        b"[::g]",
        b"[]",
        b"[v1.]",
        b"[vz.x]",
        b"ho%2",
        b"ho%zz",
        b"a\"b",
        b"a{b}",
        b"\xc3\xa9.example",
        b"a\x7fb",
        b"a\0b",
    ];
    for v in bad {
        assert!(!valid_host(v), "{:?} is not a valid Host", String::from_utf8_lossy(v));
    }
}

#[test]
fn head_end_is_found_incrementally() {
    let mut scanned = 0;
    let full = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nrest";
    for cut in 1..full.len() - 4 {
        scanned = scanned.min(cut);
        let r = find_head_end(&full[..cut], &mut scanned);
        if cut < full.len() - 4 {
            assert!(r.is_none() || r == Some(full.len() - 4), "cut {cut}");
        }
    }
    let mut scanned = 0;
    assert_eq!(find_head_end(full, &mut scanned), Some(full.len() - 4));
    let mut scanned = 0;
    assert_eq!(find_head_end(b"GET / HTTP/1.1\nHost: a\n\n", &mut scanned), Some(24));
}

#[test]
fn keep_alive_rules() {
    let mut h = HeaderMap::new();
    assert!(connection_keep_alive(&h, Version::HTTP_11));
    assert!(!connection_keep_alive(&h, Version::HTTP_10));
    h.insert(header::CONNECTION, HeaderValue::from_static("Keep-Alive"));
    assert!(connection_keep_alive(&h, Version::HTTP_10));
    h.append(header::CONNECTION, HeaderValue::from_static("foo, close"));
    assert!(!connection_keep_alive(&h, Version::HTTP_11));
}

/// Drive `serve` over an in-memory duplex stream by going through a real loopback socket pair.
async fn roundtrip(input: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (server, peer) = listener.accept().await.unwrap();
    struct Echo;
    impl Handler for Echo {
        async fn call(&self, req: Request<ClientBody>, _c: &ConnInfo) -> Response<RespBody> {
            use http_body_util::BodyExt;
            let body = req.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
            Response::new(RespBody::full(format!("got {} bytes: {}", body.len(), String::from_utf8_lossy(&body))))
        }
    }
    let limits = Limits {
        max_header_size: 1024,
        max_headers: 8,
        header_timeout: Duration::from_millis(300),
        body_timeout: Duration::from_millis(300),
        keepalive_timeout: Duration::from_millis(300),
    };
    let (_tx, rx) = watch::channel(false);
    let info = ConnInfo::new(peer, addr, false);
    let serve = async move {
        let _ = serve(Stream::Tcp(server), info, &Echo, &limits, rx, false).await;
    };
    let client_side = async move {
        client.write_all(input).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(3), client.read_to_end(&mut out)).await;
        out
    };
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let server = tokio::task::spawn_local(serve);
            let out = client_side.await;
            server.abort();
            out
        })
        .await
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn status_of(out: &[u8]) -> String {
    String::from_utf8_lossy(out).lines().next().unwrap_or("").to_string()
}

#[test]
fn chunked_body_with_extensions_and_trailers() {
    let out = rt().block_on(roundtrip(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n",
    ));
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("got 5 bytes: abcde"), "{text}");
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let out = rt().block_on(roundtrip(
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nConnection: close\r\n\r\nyou",
    ));
    let text = String::from_utf8_lossy(&out);
    let first = text.find("got 2 bytes: hi").expect(&text);
    let second = text.find("got 3 bytes: you").expect(&text);
    assert!(first < second);
}

#[test]
fn framing_violations_are_rejected() {
    let cases: &[(&[u8], &str)] = &[
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "400"),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc", "400"),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "501"),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n", "400"),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-Folded: a\r\n b\r\n\r\n", "400"),
        (b"GET / HTTP/1.1\nHost: a\n\n", "400"),
        (b"GET / HTTP/1.1\r\n\r\n", "400"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "400"),
        (b"GET nopath HTTP/1.1\r\nHost: a\r\n\r\n", "400"),
        (b"GET / HTTP/3.0\r\nHost: a\r\n\r\n", "505"),
        (b"NOT A REQUEST\r\nHost: a\r\n\r\n", "400"),
        (b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", "400"),
        (b"G\x01T / HTTP/1.1\r\nHost: a\r\n\r\n", "400"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\n\r\n", "417"),
        (b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", "501"),
    ];
    let rt = rt();
    for (input, want) in cases {
        let out = rt.block_on(roundtrip(input));
        let status = status_of(&out);
        assert!(status.starts_with(&format!("HTTP/1.1 {want}")), "{:?} -> {status:?}", String::from_utf8_lossy(input));
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("connection: close"), "{text}");
        assert!(text.contains("application/problem+json"), "{text}");
    }
}

#[test]
fn invalid_chunked_bodies_fail_the_request() {
    let rt = rt();
    for body in [&b"zz\r\nabc\r\n0\r\n\r\n"[..], b"3\r\nabcXX0\r\n\r\n", b"3\nabc\r\n0\r\n\r\n", b"3\r\nabc\r\n0\r\nbad\n\r\n"] {
        let mut input = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        input.extend_from_slice(body);
        let out = rt.block_on(roundtrip(&input));
        let text = String::from_utf8_lossy(&out);
        // The echo handler turns a body error into an empty body; what matters is that the
        // connection is not kept alive on a broken stream and nothing is misframed.
        assert!(text.contains("got 0 bytes") || text.is_empty() || text.contains("connection: close"), "{text}");
        assert!(!text.contains("got 3 bytes: abc\r\n"), "{text}");
    }
}

#[test]
fn oversized_head_and_too_many_headers_get_431() {
    let rt = rt();
    let mut big = b"GET / HTTP/1.1\r\nHost: a\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 2000));
    big.extend_from_slice(b"\r\n\r\n");
    assert!(status_of(&rt.block_on(roundtrip(&big))).starts_with("HTTP/1.1 431"));
    let mut many = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 0..20 {
        many.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    assert!(status_of(&rt.block_on(roundtrip(&many))).starts_with("HTTP/1.1 431"));
}

#[test]
fn partial_head_times_out_with_408_and_idle_connection_closes_silently() {
    let rt = rt();
    let out = rt.block_on(roundtrip(b"GET / HTTP/1.1\r\nHost: a\r\n"));
    assert!(status_of(&out).starts_with("HTTP/1.1 408"), "{:?}", String::from_utf8_lossy(&out));
    let out = rt.block_on(roundtrip(b""));
    assert!(out.is_empty());
}

#[test]
fn http10_keep_alive_and_leading_empty_lines() {
    let out = rt().block_on(roundtrip(b"\r\n\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.contains("connection: keep-alive"), "{text}");
}

#[test]
fn whole_body_reads_keep_what_follows_the_body_for_the_pipelined_requests() {
    // A whole-body read asks for up to BODY_SLACK bytes past the body (so that a drained socket
    // is seen without an extra recv); what it gets of the next request goes back to the
    // connection's buffer: here the head and the start of a second whole body, then a third.
    let body = "x".repeat(100_000);
    let second = "y".repeat(20_000);
    let input = format!(
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n{body}POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 20000\r\n\r\n{second}POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nConnection: close\r\n\r\nend"
    );
    let out = rt().block_on(roundtrip(input.as_bytes()));
    let text = String::from_utf8_lossy(&out);
    // Each body exactly, followed by the next response.
    let first = text.find(&format!("got 100000 bytes: {body}HTTP/1.1 200")).unwrap_or_else(|| panic!("{}", &text[..text.len().min(300)]));
    let second_at = text.find(&format!("got 20000 bytes: {second}HTTP/1.1 200")).unwrap_or_else(|| panic!("{}", &text[..text.len().min(300)]));
    assert!(first < second_at);
    assert!(text.ends_with("got 3 bytes: end"), "{}", &text[text.len().saturating_sub(300)..]);
    assert_eq!(crate::h1_body::RESERVED_AHEAD.with(|r| r.get()), 0, "reservations are returned");
}

#[test]
fn head_end_with_a_bare_lf_before_the_first_crlfcrlf_is_the_line_walk_end() {
    // The vectorised search finds the later `\r\n\r\n`; the bare LF before it sends the search
    // back to the line walk, which ends the head where it always did (and parsing rejects it).
    let buf = b"GET / HTTP/1.1\r\nA: b\n\r\nX: y\r\n\r\n";
    let mut scanned = 0;
    assert_eq!(find_head_end(buf, &mut scanned), Some(23));
    let mut scanned = 0;
    assert_eq!(find_head_end(b"GET / HTTP/1.1\r\nA: b\n\nX: y\r\n\r\n", &mut scanned), Some(22));
    let mut scanned = 0;
    assert_eq!(find_head_end(b"GET / HTTP/1.1\r\nA: b\r\n", &mut scanned), None);
    assert_eq!(scanned, 22);
}

#[test]
fn crlf_only_finds_every_bare_lf() {
    assert!(codec::crlf_only(b""));
    assert!(codec::crlf_only(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    assert!(!codec::crlf_only(b"\n"));
    assert!(!codec::crlf_only(b"GET / HTTP/1.1\nHost: a\r\n\r\n"));
    assert!(!codec::crlf_only(b"GET / HTTP/1.1\r\nHost: a\r\n\n"));
    // Past the width of one vector compare too.
    let mut long = b"GET / HTTP/1.1\r\n".repeat(20);
    assert!(codec::crlf_only(&long));
    long[200] = b'\n';
    assert!(!codec::crlf_only(&long));
}

#[test]
fn a_head_end_found_checked_is_the_same_end_and_crlf_only_when_said() {
    let heads: &[&[u8]] = &[
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\n\n",
        b"GET / HTTP/1.1\r\nA: b\n\nX: y\r\n\r\n",
        b"GET / HTTP/1.1\r\nA: b\r\n\nX: y\r\n\r\n",
        b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 0\r\n\r\nbody\n\n",
        b"GET / HTTP/1.1\r\nA: b\r\n",
    ];
    for h in heads {
        for cut in 0..=h.len() {
            let (mut s1, mut s2) = (0, 0);
            let got = codec::find_head_end_checked(&h[..cut], &mut s2);
            assert_eq!(got.map(|(e, _)| e), find_head_end(&h[..cut], &mut s1));
            assert_eq!(s1, s2);
            if let Some((end, true)) = got {
                assert!(codec::crlf_only(&h[..end]));
            }
        }
    }
}

#[test]
fn eq_lower_is_eq_ignore_ascii_case_for_header_name_literals() {
    let lits: &[&[u8]] = &[
        b"te",
        b"host",
        b"date",
        b"expect",
        b"trailer",
        b"upgrade",
        b"x-real-ip",
        b"connection",
        b"keep-alive",
        b"x-request-id",
        b"content-length",
        b"x-forwarded-for",
        b"proxy-connection",
        b"x-forwarded-host",
        b"transfer-encoding",
        b"x-forwarded-proto",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"a1-b2-c3",
        b"x",
        b"",
    ];
    // Every literal against: itself in every case pattern (up to 2^8 per word), every single-byte
    // change at every position (all 256 values), other lengths, and the other literals.
    let mut rng = palisade_testkit::rng::XorShift64::new(0x9e37_79b9_7f4a_7c15u64);
    let mut next = move || rng.next_u64();
    for lit in lits {
        let mut cands: Vec<Vec<u8>> = Vec::new();
        for _ in 0..300 {
            let bits = next();
            cands.push(lit.iter().enumerate().map(|(i, b)| if bits >> (i % 64) & 1 == 1 { b.to_ascii_uppercase() } else { *b }).collect());
        }
        for i in 0..lit.len() {
            for v in 0..=255u8 {
                let mut c = lit.to_vec();
                c[i] = v;
                cands.push(c.clone());
                c.make_ascii_uppercase();
                c[i] = v;
                cands.push(c);
            }
        }
        cands.push(lit[..lit.len().saturating_sub(1)].to_vec());
        cands.push([*lit, b"x"].concat());
        cands.extend(lits.iter().map(|l| l.to_vec()));
        for _ in 0..2000 {
            cands.push((0..lit.len()).map(|_| next() as u8).collect());
        }
        for c in &cands {
            assert_eq!(codec::eq_lower(c, lit), c.eq_ignore_ascii_case(lit), "{:?} vs {:?}", String::from_utf8_lossy(c), String::from_utf8_lossy(lit));
        }
    }
}

#[test]
fn is_visible_ascii_is_the_byte_by_byte_check() {
    let reference = |v: &[u8]| v.iter().all(|b| (32..127).contains(b) || *b == b'\t');
    let fill = [b'a', b' ', b'\t', b'~', b'!', b'0'];
    let mut rng = palisade_testkit::rng::XorShift64::new(0x2545_f491_4f6c_dd1du64);
    let mut next = move || rng.next_u64();
    for len in 0..=25usize {
        for f in fill {
            let base = vec![f; len];
            assert_eq!(crate::raw_head::is_visible_ascii(&base), reference(&base));
            for i in 0..len {
                for b in 0..=255u8 {
                    let mut v = base.clone();
                    v[i] = b;
                    assert_eq!(crate::raw_head::is_visible_ascii(&v), reference(&v), "{v:?}");
                }
            }
        }
        for _ in 0..3000 {
            // Mostly valid bytes, a few of any value.
            let v: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    if r % 16 == 0 {
                        (r >> 8) as u8
                    } else {
                        fill[(r >> 8) as usize % fill.len()]
                    }
                })
                .collect();
            assert_eq!(crate::raw_head::is_visible_ascii(&v), reference(&v), "{v:?}");
        }
    }
}

#[test]
fn a_sent_body_buffer_is_reused_for_the_next_body_unless_still_shared() {
    let mut b = crate::h1_body::body_buffer(40_000);
    b.extend_from_slice(&[7u8; 28_000]);
    let frozen = b.freeze();
    let ptr = frozen.as_ptr();
    crate::h1_body::recycle_body(frozen);
    let again = crate::h1_body::body_buffer(30_000);
    assert_eq!(again.as_ptr(), ptr, "the pooled buffer is handed out again");
    assert!(again.is_empty() && again.capacity() >= 30_000);
    // A body another holder still references is not pooled.
    let mut again = again;
    again.extend_from_slice(b"x");
    let shared = again.freeze();
    let other = shared.clone();
    crate::h1_body::recycle_body(shared);
    assert_ne!(crate::h1_body::body_buffer(30_000).as_ptr(), other.as_ptr());
    // A buffer too small for the body asked for is not used.
    let mut small = crate::h1_body::body_buffer(1_000);
    small.extend_from_slice(b"y");
    crate::h1_body::recycle_body(small.freeze());
    assert!(crate::h1_body::body_buffer(50_000).capacity() >= 50_000);
}

#[test]
fn connection_tokens_tell_headers_named_beyond_the_hop_by_hop_ones() {
    let t = |v: &[&str], ver| connection_tokens(v.iter().map(|s| s.as_bytes()), ver);
    assert_eq!(t(&["Keep-Alive"], Version::HTTP_10), (true, false));
    assert_eq!(t(&["keep-alive, TE, upgrade"], Version::HTTP_11), (true, false));
    assert_eq!(t(&["close"], Version::HTTP_11), (false, false));
    assert_eq!(t(&["keep-alive, X-Secret"], Version::HTTP_11), (true, true));
    assert_eq!(t(&["te", " , x-b ,"], Version::HTTP_10), (false, true));
}

#[test]
fn parse_request_head_keeps_what_follows_and_shares_the_head() {
    let input = b"POST /a?b HTTP/1.1\r\nHost:  h.example \r\nContent-Length: 2\r\nX-Empty:\r\n\r\nhiGET / HTTP/1.1\r\n";
    let end = find_head_end(input, &mut 0).unwrap();
    let mut rbuf = BytesMut::from(&input[..]);
    let p = parse_request_head(&mut rbuf, end, 16, 4096).unwrap_or_else(|r| panic!("{r:?}"));
    assert_eq!(&rbuf[..], b"hiGET / HTTP/1.1\r\n");
    assert_eq!((p.method, p.uri.to_string(), p.version), (Method::POST, "/a?b".to_string(), Version::HTTP_11));
    assert_eq!(p.body, BodyState::Length(2));
    assert!(p.keep_alive && !p.expect_continue && p.raw.plain());
    assert_eq!(p.raw.head(), &input[..end]);
    let fields: Vec<_> = p.raw.fields().collect();
    let want: [(&[u8], &[u8]); 3] = [(b"Host", b"h.example"), (b"Content-Length", b"2"), (b"X-Empty", b"")];
    assert_eq!(fields, want);
    // Offsets into the head: the value without its surrounding spaces.
    let base = p.raw.head().as_ptr() as usize;
    assert_eq!(fields[0].1.as_ptr() as usize - base, input.windows(9).position(|w| w == b"h.example").unwrap());
    assert_eq!(p.raw.host_str(), "h.example");
    assert_eq!(p.raw.host_visible(), p.raw.host_str().as_bytes());
    assert_eq!(p.raw.content_length(), Some(&b"2"[..]));
}

#[test]
fn parse_request_head_refusals_carry_status_and_code() {
    let cases: &[(&[u8], u16, &str)] = &[
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400, code::SMUGGLING),
        (b"POST / HTTP/1.1\r\nHost: a\r\ncontent-length: 3\r\nContent-Length: 3, 4\r\n\r\n", 400, code::SMUGGLING),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, code::SMUGGLING),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400, code::SMUGGLING),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\nY: b\r\n\r\n", 400, code::BAD_REQUEST),
        (b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, code::BAD_REQUEST),
        (b"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", 431, code::HEADERS_TOO_LARGE),
        (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, code::BAD_REQUEST),
    ];
    for (input, status, c) in cases {
        let end = find_head_end(input, &mut 0).unwrap();
        let r =
            parse_request_head(&mut BytesMut::from(&input[..]), end, 3, 4096).err().unwrap_or_else(|| panic!("accepted {:?}", String::from_utf8_lossy(input)));
        assert_eq!((r.status.as_u16(), r.code), (*status, *c), "{:?}", String::from_utf8_lossy(input));
    }
}

/// The name cache of `to_map` gives exactly what `HeaderName::from_bytes` gives, whatever the
/// order and case the names come in, refuses what it refuses, and stays bounded.
#[test]
fn cached_header_names_are_those_of_from_bytes() {
    let mut c = NameCache::default();
    let mut rng = palisade_testkit::rng::XorShift64::new(7);
    let pool: Vec<String> = ["Host", "host", "Content-Type", "X-Api-Key", "x-api-key", "Cookie", "User-Agent", "Accept", "X-Custom-1"]
        .iter()
        .map(|s| s.to_string())
        .chain((0..60).map(|i| format!("X-Gen-{i}")))
        .collect();
    for round in 0..2_000 {
        let k = (rng.next_u64() % 8) as usize;
        let name = &pool[(rng.next_u64() % pool.len() as u64) as usize];
        let got = c.name(k, name.as_bytes());
        assert_eq!(got, Some(HeaderName::from_bytes(name.as_bytes()).unwrap()), "round {round}: {name} at {k}");
    }
    assert!(c.names.len() <= NameCache::MAX);
    for bad in [&b"Bad Name"[..], b"", b"X:Y", b"\xff"] {
        assert_eq!(c.name(0, bad), None, "{bad:?}");
    }
}

#[test]
fn te_trailers_is_a_token_of_any_te_field() {
    let te = |fields: &str| {
        let input = format!("GET / HTTP/1.1\r\nHost: a\r\n{fields}\r\n");
        let end = find_head_end(input.as_bytes(), &mut 0).unwrap();
        parse_request_head(&mut BytesMut::from(input.as_bytes()), end, 16, 4096).unwrap_or_else(|r| panic!("{r:?}")).te_trailers
    };
    assert!(te("TE: trailers\r\n"));
    assert!(te("te: gzip;q=0.5 , TRAILERS\r\n"));
    assert!(te("TE: deflate\r\nTE: trailers\r\n"));
    assert!(!te(""));
    assert!(!te("TE: gzip\r\n"));
    assert!(!te("TE: trailers-not\r\nX-TE: trailers\r\n"));
}

#[test]
fn chunked_trailer_lines_are_kept_when_asked_and_bounded() {
    let mut state = BodyState::Chunked(Chunk::Size);
    let mut rbuf = BytesMut::from(&b"3\r\nabc\r\n0\r\nX-A: 1\r\nX-B: 2\r\n\r\nnext"[..]);
    let mut trailers = Vec::new();
    let mut data = Vec::new();
    loop {
        match codec::decode_keeping_trailers(&mut state, &mut rbuf, Some(&mut trailers)).unwrap() {
            Some(Some(d)) => data.extend_from_slice(&d),
            Some(None) => break,
            None => panic!("needs no more input"),
        }
    }
    assert_eq!((&data[..], &trailers[..], &rbuf[..]), (&b"abc"[..], &b"X-A: 1\r\nX-B: 2\r\n"[..], &b"next"[..]));
    // The trailer section keeps its bound when kept.
    let mut state = BodyState::Chunked(Chunk::Trailers(0));
    let mut rbuf = BytesMut::from(format!("X-Big: {}\r\n\r\n", "a".repeat(9000)).as_bytes());
    assert!(codec::decode_keeping_trailers(&mut state, &mut rbuf, Some(&mut Vec::new())).is_err());
}

/// A writer that takes at most `per_call` bytes per write, vectored or not, and records them.
struct Trickle {
    out: Vec<u8>,
    per_call: usize,
    calls: usize,
    vectored: bool,
}

impl tokio::io::AsyncWrite for Trickle {
    fn poll_write(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let n = buf.len().min(self.per_call);
        self.out.extend_from_slice(&buf[..n]);
        self.calls += 1;
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        if !self.vectored {
            let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
            return self.poll_write(cx, first);
        }
        let mut left = self.per_call;
        let mut n = 0;
        for b in bufs {
            let take = b.len().min(left);
            self.out.extend_from_slice(&b[..take]);
            left -= take;
            n += take;
        }
        self.calls += 1;
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.vectored
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[test]
fn vectored_writes_send_every_slice_in_order_whatever_each_write_takes() {
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let (a, b, c) = (b"HTTP/1.1 200 OK\r\n\r\n".as_slice(), "x".repeat(1000), b"\r\n".as_slice());
    let whole = [a, b.as_bytes(), c].concat();
    for vectored in [true, false] {
        for per_call in [1, 7, 19, 20, 1000, 1021, 1022, 5000] {
            let mut w = Trickle { out: Vec::new(), per_call, calls: 0, vectored };
            let mut bufs = [a, b"", b.as_bytes(), c];
            let mut moved = 0;
            assert!(matches!(codec::poll_write_all(&mut w, &mut cx, &mut bufs, || moved += 1), Poll::Ready(Ok(()))));
            assert_eq!(w.out, whole, "vectored {vectored}, {per_call} bytes a call");
            assert_eq!(moved, w.calls);
            assert!(bufs.iter().all(|b| b.is_empty()));
            if vectored && per_call >= whole.len() {
                assert_eq!(w.calls, 1, "one write when the writer takes it all");
            }
        }
    }
    // Nothing to write: no write at all.
    let mut w = Trickle { out: Vec::new(), per_call: 10, calls: 0, vectored: true };
    assert!(matches!(codec::poll_write_all(&mut w, &mut cx, &mut [b"".as_slice(), b""], || {}), Poll::Ready(Ok(()))));
    assert_eq!(w.calls, 0);
}

#[test]
fn body_reads_take_up_to_a_body_sized_read_and_reuse_the_buffer_once_frames_are_gone() {
    use std::io::Write as _;
    let (mut tx, rx) = std::os::unix::net::UnixStream::pair().unwrap();
    rx.set_nonblocking(true).unwrap();
    let queued = 3 * codec::BODY_READ;
    tx.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    rt().block_on(async move {
        let mut io = Stream::Unix(tokio::net::UnixStream::from_std(rx).unwrap());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        // Room for what is sent, whatever the system's default socket buffers.
        let sock = socket2::SockRef::from(&tx);
        let _ = sock.set_send_buffer_size(queued * 2);
        let mut sent = 0;
        let chunk = vec![b'z'; 8192];
        while sent < queued {
            match tx.write(&chunk) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
        }
        assert!(sent > codec::BODY_READ, "the socket holds more than one body read ({sent})");
        // Readiness comes from the poller: wait for it once.
        std::future::poll_fn(|cx| match &mut io {
            Stream::Unix(s) => s.poll_read_ready(cx),
            _ => unreachable!(),
        })
        .await
        .unwrap();
        // A head read takes a head-sized piece.
        let mut head = BytesMut::new();
        let Poll::Ready(Ok(n)) = codec::poll_read_more(&mut io, &mut head, &mut cx) else { panic!("head read") };
        assert!(n <= 4096, "{n}");
        // A body read takes a body-sized one.
        let mut rbuf = BytesMut::new();
        let Poll::Ready(Ok(n)) = codec::poll_read_body(&mut io, &mut rbuf, &mut cx) else { panic!("body read") };
        assert_eq!(n, codec::BODY_READ);
        let frame = rbuf.split().freeze();
        let at = frame.as_ptr();
        drop(frame);
        // The frame is gone: the next read lands in the same allocation.
        let Poll::Ready(Ok(n)) = codec::poll_read_body(&mut io, &mut rbuf, &mut cx) else { panic!("second body read") };
        assert!(n > 0);
        assert_eq!(rbuf.as_ptr(), at, "the buffer is reused in place");
        // Once empty between messages, a body-sized buffer is given up.
        let _ = rbuf.split();
        codec::shrink_idle(&mut rbuf);
        assert_eq!(rbuf.capacity(), 0);
        let mut small = BytesMut::with_capacity(4096);
        codec::shrink_idle(&mut small);
        assert_eq!(small.capacity(), 4096, "a head-sized buffer stays");
        drop(tx);
    });
}
