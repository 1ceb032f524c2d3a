//! Header handling in one place: hop-by-hop removal, forwarding headers, and client IP
//! resolution through trusted proxies. Both directions (to the upstream and back to the client)
//! go through here.

use std::net::IpAddr;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use ipnet::IpNet;

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
pub const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
pub const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
pub const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// The hop-by-hop headers of RFC 9110 §7.6.1, plus the non-standard ones proxies also drop.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    KEEP_ALIVE,
    PROXY_CONNECTION,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
];

/// Which of the headers the proxy removes or rewrites a message carries, from one pass over its
/// names (told apart by length first: most names cost no comparison). Lets the request path skip
/// the hashed lookups and removals of headers that are not there, which is the common case.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Present(u32);

// Bits 0..8 follow `HOP_BY_HOP`.
const P_UPGRADE: u32 = 1 << 8;
const P_EXPECT: u32 = 1 << 9;
const P_CONTENT_LENGTH: u32 = 1 << 10;
const P_XFF: u32 = 1 << 11;
const P_XFP: u32 = 1 << 12;
const P_XFH: u32 = 1 << 13;
const P_XRI: u32 = 1 << 14;
const P_XID: u32 = 1 << 15;
const P_FWD: u32 = 1 << 16;
/// `X-Forwarded-Port` and `X-Forwarded-Prefix`.
const P_XF_OTHER: u32 = 1 << 17;
const X_FORWARDED_PORT: HeaderName = HeaderName::from_static("x-forwarded-port");
const X_FORWARDED_PREFIX: HeaderName = HeaderName::from_static("x-forwarded-prefix");
const P_HOP: u32 = (1 << 8) - 1;

/// The bit of a (lowercase) header name, 0 for the names the proxy leaves alone.
fn name_bit(n: &str) -> u32 {
    match n.len() {
        2 if n == "te" => 1 << 5,
        6 if n == "expect" => P_EXPECT,
        7 if n == "trailer" => 1 << 6,
        7 if n == "upgrade" => P_UPGRADE,
        9 if n == "x-real-ip" => P_XRI,
        9 if n == "forwarded" => P_FWD,
        10 if n == "connection" => 1 << 0,
        10 if n == "keep-alive" => 1 << 1,
        12 if n == "x-request-id" => P_XID,
        14 if n == "content-length" => P_CONTENT_LENGTH,
        15 if n == "x-forwarded-for" => P_XFF,
        16 if n == "proxy-connection" => 1 << 2,
        16 if n == "x-forwarded-host" => P_XFH,
        16 if n == "x-forwarded-port" => P_XF_OTHER,
        17 if n == "transfer-encoding" => 1 << 7,
        17 if n == "x-forwarded-proto" => P_XFP,
        18 if n == "proxy-authenticate" => 1 << 3,
        18 if n == "x-forwarded-prefix" => P_XF_OTHER,
        19 if n == "proxy-authorization" => 1 << 4,
        _ => 0,
    }
}

impl Present {
    pub fn scan(h: &HeaderMap) -> Present {
        Present(h.keys().fold(0, |acc, k| acc | name_bit(k.as_str())))
    }

    pub fn expect(self) -> bool {
        self.0 & P_EXPECT != 0
    }

    pub fn content_length(self) -> bool {
        self.0 & P_CONTENT_LENGTH != 0
    }
}

/// Whether a `Connection` token names a header removed anyway (or is `close`): such tokens need
/// no header name built.
pub(crate) fn removed_anyway(token: &[u8]) -> bool {
    token.eq_ignore_ascii_case(b"close")
        || token.eq_ignore_ascii_case(b"upgrade")
        || HOP_BY_HOP.iter().any(|n| token.eq_ignore_ascii_case(n.as_str().as_bytes()))
}

/// Remove hop-by-hop headers, including every header named in `Connection`. `Upgrade` goes too
/// (upgrades are not proxied). Content-Length is left for the caller to reset.
pub fn strip_hop_by_hop(h: &mut HeaderMap) {
    strip_hop_by_hop_present(h, Present::scan(h));
}

/// [`strip_hop_by_hop`] with the names already scanned; returns what is present afterwards.
pub fn strip_hop_by_hop_present(h: &mut HeaderMap, present: Present) -> Present {
    if present.0 & (P_HOP | P_UPGRADE) == 0 {
        return present;
    }
    let mut named: Vec<HeaderName> = Vec::new();
    if present.0 & 1 != 0 {
        // Headers named in Connection go too; tokens naming headers removed anyway (or `close`)
        // need no name built.
        for v in h.get_all(header::CONNECTION) {
            for t in v.as_bytes().split(|b| *b == b',').map(<[u8]>::trim_ascii) {
                if t.is_empty() || removed_anyway(t) {
                    continue;
                }
                if let Ok(n) = HeaderName::from_bytes(t) {
                    // Never let a client strip the forwarding headers we set or the framing we rely on.
                    if n != header::HOST && n != header::CONTENT_LENGTH {
                        named.push(n);
                    }
                }
            }
        }
    }
    let renamed = !named.is_empty();
    for n in named {
        h.remove(n);
    }
    for (i, n) in HOP_BY_HOP.iter().enumerate() {
        if present.0 & (1 << i) != 0 {
            h.remove(n);
        }
    }
    if present.0 & P_UPGRADE != 0 {
        h.remove(header::UPGRADE);
    }
    if renamed {
        // Connection named arbitrary headers (rare): look again.
        return Present::scan(h);
    }
    Present(present.0 & !(P_HOP | P_UPGRADE))
}

/// The client's address: the peer, or, when the peer is a trusted proxy, the right-most address
/// in `X-Forwarded-For` (or `Forwarded: for=`) that is not itself a trusted proxy.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let peer = canonical(peer);
    if trusted.is_empty() || !is_trusted(peer, trusted) {
        return peer;
    }
    let mut chain: Vec<IpAddr> = Vec::new();
    for v in headers.get_all(X_FORWARDED_FOR) {
        let Ok(s) = v.to_str() else { return peer };
        for part in s.split(',') {
            match parse_ip(part.trim()) {
                Some(ip) => chain.push(ip),
                None => return peer,
            }
        }
    }
    if chain.is_empty() {
        for v in headers.get_all(header::FORWARDED) {
            let Ok(s) = v.to_str() else { return peer };
            for element in s.split(',') {
                for pair in element.split(';') {
                    let Some((k, val)) = pair.trim().split_once('=') else { continue };
                    if k.trim().eq_ignore_ascii_case("for") {
                        match parse_ip(val.trim().trim_matches('"')) {
                            Some(ip) => chain.push(ip),
                            None => return peer,
                        }
                    }
                }
            }
        }
    }
    for ip in chain.iter().rev() {
        let ip = canonical(*ip);
        if !is_trusted(ip, trusted) {
            return ip;
        }
    }
    chain.first().copied().map(canonical).unwrap_or(peer)
}

fn is_trusted(ip: IpAddr, trusted: &[IpNet]) -> bool {
    trusted.iter().any(|n| n.contains(&ip))
}

/// `::ffff:1.2.3.4` is reported as `1.2.3.4`.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// An address as it appears in forwarding headers: bare, `[v6]`, `[v6]:port` or `v4:port`.
fn parse_ip(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse() {
        return Some(ip);
    }
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split(']').next()?.parse().ok();
    }
    let (host, port) = s.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// Apply what the stages asked for on the request going upstream: remove `strip_upstream`
/// (e.g. claim headers a client could spoof), then add `upstream_headers` (e.g. verified
/// claims). Runs after the forwarding headers are set, so a stage cannot be overridden by them.
pub fn apply_stage_edits(h: &mut HeaderMap, cx: &mut palisade_core::Context) {
    for name in cx.strip_upstream.drain(..) {
        h.remove(name);
    }
    for (name, value) in cx.upstream_headers.drain(..) {
        h.append(name, value);
    }
}

/// Add the headers the stages set for the client's response (`RateLimit`, `Retry-After`,
/// `WWW-Authenticate`), replacing any of the same name the upstream sent.
pub fn add_response_headers(h: &mut HeaderMap, extra: Vec<(HeaderName, HeaderValue)>) {
    let mut seen: Vec<HeaderName> = Vec::new();
    for (name, value) in extra {
        if seen.contains(&name) {
            h.append(name, value);
        } else {
            seen.push(name.clone());
            h.insert(name, value);
        }
    }
}

/// What the forwarding headers of one request are made of.
pub struct Forwarding<'a> {
    /// The peer's IP as a header value (cached per connection).
    pub peer_value: &'a HeaderValue,
    pub client: IpAddr,
    pub peer_trusted: bool,
    pub tls: bool,
    /// The host the request was routed by.
    pub orig_host: Option<&'a [u8]>,
    /// The request id (16 hex digits).
    pub request_id: &'a [u8],
    /// [`untrusted_lines`] for `peer_value` and `tls`, when the caller has them (built once per
    /// connection): an untrusted peer's lines are then copied from there.
    pub untrusted: Option<(&'a [u8], &'a [u8])>,
}

/// The forwarding lines of a request from an untrusted peer that depend only on the connection,
/// as [`set_forwarding`] writes them: the part before `X-Forwarded-Host` and the part after it,
/// up to the request id's value. Returns the lines and where the second part starts.
pub fn untrusted_lines(peer_value: &[u8], tls: bool) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(96);
    line(&mut out, "x-forwarded-for", peer_value);
    line(&mut out, "x-forwarded-proto", if tls { b"https" } else { b"http" });
    let split = out.len();
    line(&mut out, "x-real-ip", peer_value);
    out.extend_from_slice(b"x-request-id: ");
    (out, split)
}

/// Whether a request header (name as sent) is one the proxy removes or sets itself when the peer
/// is not a trusted proxy: hop-by-hop ones, `Upgrade`, `Expect`, `Content-Length` (recomputed)
/// and the forwarding headers (`Forwarded`, `X-Forwarded-Port` and `-Prefix` included) and
/// `X-Request-Id`.
pub fn replaced_upstream(n: &[u8]) -> bool {
    let is = |s: &[u8]| crate::codec::eq_lower(n, s);
    match n.len() {
        2 => is(b"te"),
        6 => is(b"expect"),
        7 => is(b"trailer") || is(b"upgrade"),
        9 => is(b"x-real-ip") || is(b"forwarded"),
        10 => is(b"connection") || is(b"keep-alive"),
        12 => is(b"x-request-id"),
        14 => is(b"content-length"),
        15 => is(b"x-forwarded-for"),
        16 => is(b"proxy-connection") || is(b"x-forwarded-host") || is(b"x-forwarded-port"),
        17 => is(b"transfer-encoding") || is(b"x-forwarded-proto"),
        18 => is(b"proxy-authenticate") || is(b"x-forwarded-prefix"),
        19 => is(b"proxy-authorization"),
        _ => false,
    }
}

/// A `content-length` line.
pub fn length_line(out: &mut Vec<u8>, n: u64) {
    line_bytes(out, b"content-length", crate::codec::decimal(n, &mut [0u8; 20]));
}

/// A header line from a name and a value.
#[inline]
pub fn line_bytes(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

#[inline]
fn line(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Set the forwarding headers (and `X-Request-Id`) on a request going upstream. They are
/// written as header lines into `out`, which the upstream client appends to the request head
/// (no map insertions on the hot path); client-sent copies that they replace are removed from
/// `h`.
///
/// `X-Forwarded-For` is extended when the peer is a trusted proxy and replaced otherwise, so a
/// client cannot plant addresses that the upstream would believe; `Forwarded`,
/// `X-Forwarded-Port` and `X-Forwarded-Prefix` are kept from a trusted proxy and removed
/// otherwise.
pub fn set_forwarding(h: &mut HeaderMap, out: &mut Vec<u8>, f: &Forwarding<'_>) {
    set_forwarding_present(h, out, f, Present::scan(h));
}

/// [`set_forwarding`] with the names already scanned.
pub fn set_forwarding_present(h: &mut HeaderMap, out: &mut Vec<u8>, f: &Forwarding<'_>, present: Present) {
    let present = present.0;
    if let (Some((before_host, after_host)), false) = (f.untrusted, f.peer_trusted) {
        // The same lines as below, mostly precomputed (see `untrusted_lines`).
        out.extend_from_slice(before_host);
        if let Some(host) = f.orig_host {
            line(out, "x-forwarded-host", host);
        }
        out.extend_from_slice(after_host);
        out.extend_from_slice(f.request_id);
        out.extend_from_slice(b"\r\n");
    } else {
        write_forwarding_lines(out, h, f, present);
    }
    if present & (P_XFF | P_XFP | P_XFH | P_XRI | P_XID | P_FWD | P_XF_OTHER) == 0 {
        return;
    }
    // `Forwarded` (RFC 7239), `X-Forwarded-Port` and `X-Forwarded-Prefix` say what the headers
    // above say (where the client connected, under which URL): passed on only from a trusted
    // proxy, dropped from anyone else so the upstream cannot be told a planted address or URL.
    if !f.peer_trusted {
        if present & P_FWD != 0 {
            h.remove(header::FORWARDED);
        }
        if present & P_XF_OTHER != 0 {
            h.remove(X_FORWARDED_PORT);
            h.remove(X_FORWARDED_PREFIX);
        }
    }
    let keep_proto = f.peer_trusted && present & P_XFP != 0;
    let keep_host = f.peer_trusted && present & P_XFH != 0;
    if present & P_XFF != 0 {
        h.remove(X_FORWARDED_FOR);
    }
    if present & P_XFP != 0 && !keep_proto {
        h.remove(X_FORWARDED_PROTO);
    }
    if present & P_XFH != 0 && !keep_host {
        h.remove(X_FORWARDED_HOST);
    }
    if present & P_XRI != 0 {
        h.remove(X_REAL_IP);
    }
    if present & P_XID != 0 {
        h.remove(X_REQUEST_ID);
    }
}

/// The forwarding lines of [`set_forwarding_present`], one by one.
fn write_forwarding_lines(out: &mut Vec<u8>, h: &HeaderMap, f: &Forwarding<'_>, present: u32) {
    if f.peer_trusted && present & P_XFF != 0 {
        let mut xff: Vec<u8> = Vec::new();
        for v in h.get_all(X_FORWARDED_FOR) {
            xff.extend_from_slice(v.as_bytes());
            xff.extend_from_slice(b", ");
        }
        xff.extend_from_slice(f.peer_value.as_bytes());
        line(out, "x-forwarded-for", &xff);
    } else {
        line(out, "x-forwarded-for", f.peer_value.as_bytes());
    }
    // A trusted proxy in front (e.g. a TLS-terminating load balancer) knows the original scheme.
    let keep_proto = f.peer_trusted && present & P_XFP != 0;
    if !keep_proto {
        line(out, "x-forwarded-proto", if f.tls { b"https" } else { b"http" });
    }
    let keep_host = f.peer_trusted && present & P_XFH != 0;
    if let (Some(host), false) = (f.orig_host, keep_host) {
        line(out, "x-forwarded-host", host);
    }
    // An untrusted peer is the client (see `client_ip`): reuse the cached value.
    if f.peer_trusted {
        line(out, "x-real-ip", f.client.to_string().as_bytes());
    } else {
        line(out, "x-real-ip", f.peer_value.as_bytes());
    }
    line(out, "x-request-id", f.request_id);
}

/// Whether `peer` is in the trusted list.
pub fn peer_trusted(peer: IpAddr, trusted: &[IpNet]) -> bool {
    !trusted.is_empty() && is_trusted(canonical(peer), trusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn nets(s: &[&str]) -> Vec<IpNet> {
        s.iter().map(|n| n.parse().unwrap()).collect()
    }

    #[test]
    fn hop_by_hop_and_connection_named_headers_are_removed() {
        let mut h = map(&[
            ("connection", "keep-alive, X-Secret, host"),
            ("keep-alive", "timeout=5"),
            ("x-secret", "1"),
            ("te", "trailers"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "websocket"),
            ("proxy-authorization", "Basic x"),
            ("host", "a.example"),
            ("accept", "*/*"),
        ]);
        strip_hop_by_hop(&mut h);
        let names: Vec<_> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["host", "accept"]);
    }

    #[test]
    fn present_names_are_found_and_updated_after_stripping() {
        let h = map(&[("expect", "100-continue"), ("content-length", "3"), ("x-real-ip", "1.1.1.1"), ("accept", "*/*")]);
        let p = Present::scan(&h);
        assert!(p.expect() && p.content_length());
        assert_eq!(Present::scan(&map(&[("accept", "*/*"), ("host", "a")])), Present::default());
        // Connection naming a forwarding header removes it: the forwarding headers must then be
        // written as if the client had not sent it.
        let mut h = map(&[("connection", "Keep-Alive, X-Forwarded-Proto"), ("x-forwarded-proto", "https"), ("accept", "*/*")]);
        let p = Present::scan(&h);
        let p = strip_hop_by_hop_present(&mut h, p);
        assert_eq!(h.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["accept"]);
        let pv = HeaderValue::from_static("10.1.1.1");
        let f = Forwarding {
            peer_value: &pv,
            client: "10.1.1.1".parse().unwrap(),
            peer_trusted: true,
            tls: false,
            orig_host: None,
            request_id: b"req-1",
            untrusted: None,
        };
        let mut out = Vec::new();
        set_forwarding_present(&mut h, &mut out, &f, p);
        assert!(std::str::from_utf8(&out).unwrap().contains("x-forwarded-proto: http\r\n"));
    }

    #[test]
    fn client_ip_only_from_trusted_peers() {
        let peer: IpAddr = "10.0.0.5".parse().unwrap();
        let h = map(&[("x-forwarded-for", "1.2.3.4, 10.0.0.9")]);
        assert_eq!(client_ip(peer, &h, &[]), peer);
        assert_eq!(client_ip(peer, &h, &nets(&["192.168.0.0/16"])), peer);
        assert_eq!(client_ip(peer, &h, &nets(&["10.0.0.0/8"])), "1.2.3.4".parse::<IpAddr>().unwrap());
        // Spoofed left-most entries are ignored: the right-most untrusted address wins.
        let h = map(&[("x-forwarded-for", "6.6.6.6, 1.2.3.4")]);
        assert_eq!(client_ip(peer, &h, &nets(&["10.0.0.0/8"])), "1.2.3.4".parse::<IpAddr>().unwrap());
        // Garbage falls back to the peer.
        let h = map(&[("x-forwarded-for", "1.2.3.4, nonsense")]);
        assert_eq!(client_ip(peer, &h, &nets(&["10.0.0.0/8"])), peer);
    }

    #[test]
    fn stage_edits_strip_then_add() {
        let mut h = map(&[("x-user-id", "spoofed"), ("x-user-id", "again"), ("accept", "*/*")]);
        let mut cx = palisade_core::Context::default();
        cx.strip_upstream.push(HeaderName::from_static("x-user-id"));
        cx.strip_upstream.push(HeaderName::from_static("x-tenant"));
        cx.upstream_headers.push((HeaderName::from_static("x-user-id"), HeaderValue::from_static("alice")));
        apply_stage_edits(&mut h, &mut cx);
        assert_eq!(h.get_all("x-user-id").iter().collect::<Vec<_>>(), vec!["alice"]);
        assert_eq!(h.get("accept").unwrap(), "*/*");
        assert!(h.get("x-tenant").is_none());

        let mut resp = map(&[("retry-after", "99"), ("server", "up")]);
        add_response_headers(
            &mut resp,
            vec![
                (header::RETRY_AFTER, HeaderValue::from_static("3")),
                (HeaderName::from_static("ratelimit"), HeaderValue::from_static("\"a\";r=0;t=3")),
                (HeaderName::from_static("ratelimit"), HeaderValue::from_static("\"b\";r=1;t=1")),
            ],
        );
        assert_eq!(resp.get_all("retry-after").iter().collect::<Vec<_>>(), vec!["3"], "the stage's value replaces the upstream's");
        assert_eq!(resp.get_all("ratelimit").iter().count(), 2);
        assert_eq!(resp.get("server").unwrap(), "up");
    }

    #[test]
    fn forwarded_header_and_ports() {
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let h = map(&[("forwarded", "for=\"[2001:db8::1]:4711\";proto=https, for=192.0.2.60:80")]);
        assert_eq!(client_ip(peer, &h, &nets(&["127.0.0.0/8"])), "192.0.2.60".parse::<IpAddr>().unwrap());
        let h = map(&[("forwarded", "for=\"[2001:db8::1]:4711\"")]);
        assert_eq!(client_ip(peer, &h, &nets(&["127.0.0.0/8"])), "2001:db8::1".parse::<IpAddr>().unwrap());
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(client_ip(mapped, &HeaderMap::new(), &[]), peer);
    }

    /// The map as the upstream sees it: what is left in `h` plus the lines written to `out`.
    fn forwarded(mut h: HeaderMap, pv: &HeaderValue, client: IpAddr, peer_trusted: bool, tls: bool, orig_host: Option<&HeaderValue>) -> HeaderMap {
        let mut out = Vec::new();
        let f =
            Forwarding { peer_value: pv, client, peer_trusted, tls, orig_host: orig_host.map(HeaderValue::as_bytes), request_id: b"req-1", untrusted: None };
        // The precomputed lines give exactly the same lines and map.
        let (pre, split) = untrusted_lines(pv.as_bytes(), tls);
        let (mut h2, mut out2) = (h.clone(), b"kept".to_vec());
        set_forwarding(&mut h2, &mut out2, &Forwarding { untrusted: Some((&pre[..split], &pre[split..])), ..f });
        set_forwarding(&mut h, &mut out, &f);
        assert_eq!([&b"kept"[..], &out].concat(), out2);
        assert_eq!(h, h2);
        for l in std::str::from_utf8(&out).unwrap().split_terminator("\r\n") {
            let (n, v) = l.split_once(": ").unwrap();
            h.append(HeaderName::from_bytes(n.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn forwarding_headers_replace_untrusted_and_extend_trusted() {
        let peer: IpAddr = "10.1.1.1".parse().unwrap();
        let pv = HeaderValue::from_static("10.1.1.1");
        let host = HeaderValue::from_static("api.example");
        let h = forwarded(map(&[("x-forwarded-for", "9.9.9.9"), ("x-forwarded-host", "evil"), ("x-request-id", "spoof")]), &pv, peer, false, true, Some(&host));
        assert_eq!(h.get_all(X_FORWARDED_FOR).iter().collect::<Vec<_>>(), ["10.1.1.1"]);
        assert_eq!(h[X_FORWARDED_PROTO], "https");
        assert_eq!(h.get_all(X_FORWARDED_HOST).iter().collect::<Vec<_>>(), ["api.example"]);
        assert_eq!(h[X_REAL_IP], "10.1.1.1");
        assert_eq!(h.get_all(X_REQUEST_ID).iter().collect::<Vec<_>>(), ["req-1"], "a client's request id is replaced");
        let client: IpAddr = "9.9.9.9".parse().unwrap();
        let h = forwarded(map(&[("x-forwarded-for", "9.9.9.9"), ("x-forwarded-for", "8.8.8.8")]), &pv, client, true, false, Some(&host));
        assert_eq!(h.get_all(X_FORWARDED_FOR).iter().collect::<Vec<_>>(), ["9.9.9.9, 8.8.8.8, 10.1.1.1"]);
        assert_eq!(h[X_REAL_IP], "9.9.9.9");
        assert_eq!(h[X_FORWARDED_PROTO], "http");
        let h = forwarded(map(&[("x-forwarded-proto", "https"), ("x-forwarded-host", "front.example")]), &pv, peer, true, false, Some(&host));
        assert_eq!(h.get_all(X_FORWARDED_PROTO).iter().collect::<Vec<_>>(), ["https"], "kept from a trusted proxy");
        assert_eq!(h.get_all(X_FORWARDED_HOST).iter().collect::<Vec<_>>(), ["front.example"], "kept from a trusted proxy");
        let h = forwarded(map(&[("x-forwarded-proto", "https"), ("x-forwarded-host", "evil")]), &pv, peer, false, false, None);
        assert_eq!(h.get_all(X_FORWARDED_PROTO).iter().collect::<Vec<_>>(), ["http"], "replaced from an untrusted peer");
        assert!(h.get(X_FORWARDED_HOST).is_none(), "an untrusted client's X-Forwarded-Host is dropped");
        let planted = "for=6.6.6.6;proto=https;host=admin.internal";
        let claims = [("forwarded", planted), ("x-forwarded-port", "8443"), ("x-forwarded-prefix", "/evil")];
        let h = forwarded(map(&[claims[0], claims[1], claims[2], ("accept", "*/*")]), &pv, peer, false, false, None);
        for (n, _) in claims {
            assert!(h.get(n).is_none(), "an untrusted client's {n} is dropped");
        }
        assert_eq!(h["accept"], "*/*");
        let h = forwarded(map(&claims), &pv, peer, true, false, None);
        for (n, v) in claims {
            assert_eq!(h.get_all(n).iter().collect::<Vec<_>>(), [v], "{n} is kept from a trusted proxy");
        }
        // The raw path (plain requests from untrusted peers) drops the same field by name.
        assert!(replaced_upstream(b"Forwarded") && replaced_upstream(b"forwarded"));
        assert!(replaced_upstream(b"X-Forwarded-Port") && replaced_upstream(b"x-forwarded-prefix"));
        assert!(!replaced_upstream(b"forwardedx") && !replaced_upstream(b"x-forwarded"));
        // Every combination of the forwarding headers present, trust, scheme and host (the
        // precomputed lines are compared in `forwarded`).
        let names = [X_FORWARDED_FOR, X_FORWARDED_PROTO, X_FORWARDED_HOST, X_REAL_IP, X_REQUEST_ID];
        for bits in 0..32u32 {
            let mut m = map(&[("accept", "*/*")]);
            for (i, n) in names.iter().enumerate() {
                if bits & (1 << i) != 0 {
                    m.append(n.clone(), HeaderValue::from_static("c"));
                }
            }
            for (trusted, tls, host) in [(false, false, None), (false, true, Some(&host)), (true, false, Some(&host)), (true, true, None)] {
                let h = forwarded(m.clone(), &pv, peer, trusted, tls, host);
                assert_eq!(h[X_REQUEST_ID], "req-1");
            }
        }
    }
}
