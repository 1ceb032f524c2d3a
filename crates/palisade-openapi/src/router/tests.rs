use super::*;

fn router(routes: &[(&str, &str)]) -> Router {
    router_with(RouterOptions::default(), routes)
}

fn router_with(opts: RouterOptions, routes: &[(&str, &str)]) -> Router {
    let mut r = Router::new(opts);
    for (i, (m, t)) in routes.iter().enumerate() {
        r.insert(Method::from_request(m).unwrap(), t, i).unwrap();
    }
    r
}

/// (op, [(name, raw value)]) or None when not found.
fn find(r: &Router, method: &str, path: &str) -> Option<(OpId, Vec<(String, String)>)> {
    let mut out = Vec::new();
    match r.lookup(method, path, &mut out) {
        Lookup::Found { op, names } => {
            assert_eq!(names.len(), out.len());
            Some((op, names.iter().zip(&out).map(|(n, s)| (n.clone(), s.get(path).to_string())).collect()))
        }
        _ => None,
    }
}

fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn static_beats_param_and_params_are_spans() {
    let r = router(&[("GET", "/users/{id}"), ("GET", "/users/me"), ("GET", "/users/{id}/posts/{post}")]);
    assert_eq!(find(&r, "GET", "/users/me"), Some((1, vec![])));
    assert_eq!(find(&r, "GET", "/users/42"), Some((0, p(&[("id", "42")]))));
    assert_eq!(find(&r, "GET", "/users/42/posts/7?x=1"), Some((2, p(&[("id", "42"), ("post", "7")]))));
    // `me` is literal at that level but the deeper template still works through the param branch
    assert_eq!(find(&r, "GET", "/users/me/posts/7"), Some((2, p(&[("id", "me"), ("post", "7")]))));
    assert_eq!(find(&r, "GET", "/users"), None);
    assert_eq!(find(&r, "GET", "/users/42/posts"), None);
}

#[test]
fn method_not_allowed_and_method_fallthrough() {
    let r = router(&[("GET", "/users/me"), ("DELETE", "/users/{id}"), ("POST", "/items")]);
    let mut out = Vec::new();
    // DELETE /users/me: the literal template has no DELETE, the templated one does
    assert_eq!(find(&r, "DELETE", "/users/me"), Some((1, p(&[("id", "me")]))));
    match r.lookup("PUT", "/users/me", &mut out) {
        Lookup::MethodNotAllowed { allowed } => {
            assert_eq!(allowed.iter().collect::<Vec<_>>(), vec![Method::Get, Method::Delete]);
            assert_eq!(allowed.to_string(), "GET, DELETE");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(r.lookup("GET", "/items", &mut out), Lookup::MethodNotAllowed { allowed } if allowed.iter().eq([Method::Post])));
    // unknown and lower-case methods are not allowed anywhere
    assert!(matches!(r.lookup("PROPFIND", "/items", &mut out), Lookup::MethodNotAllowed { .. }));
    assert!(matches!(r.lookup("post", "/items", &mut out), Lookup::MethodNotAllowed { .. }));
    assert_eq!(r.lookup("GET", "/nope", &mut out), Lookup::NotFound);
}

#[test]
fn head_falls_back_to_get() {
    let r = router(&[("GET", "/a"), ("GET", "/b"), ("HEAD", "/b"), ("POST", "/c")]);
    assert_eq!(find(&r, "HEAD", "/a"), Some((0, vec![])));
    assert_eq!(find(&r, "HEAD", "/b"), Some((2, vec![])));
    let mut out = Vec::new();
    assert!(matches!(r.lookup("HEAD", "/c", &mut out), Lookup::MethodNotAllowed { .. }));
}

#[test]
fn several_params_in_one_segment() {
    let r = router(&[("GET", "/files/{name}.{ext}"), ("GET", "/report.{format}"), ("GET", "/pair/{a}-{b}"), ("GET", "/files/{whole}")]);
    assert_eq!(find(&r, "GET", "/files/photo.jpg"), Some((0, p(&[("name", "photo"), ("ext", "jpg")]))));
    // shortest-first: the name stops at the first dot
    assert_eq!(find(&r, "GET", "/files/a.tar.gz"), Some((0, p(&[("name", "a"), ("ext", "tar.gz")]))));
    // no dot, or empty name / ext: the whole-segment template takes it
    assert_eq!(find(&r, "GET", "/files/README"), Some((3, p(&[("whole", "README")]))));
    assert_eq!(find(&r, "GET", "/files/.bashrc"), Some((3, p(&[("whole", ".bashrc")]))));
    assert_eq!(find(&r, "GET", "/files/x."), Some((3, p(&[("whole", "x.")]))));
    assert_eq!(find(&r, "GET", "/report.pdf"), Some((1, p(&[("format", "pdf")]))));
    assert_eq!(find(&r, "GET", "/report."), None);
    assert_eq!(find(&r, "GET", "/report"), None);
    assert_eq!(find(&r, "GET", "/pair/x-y-z"), Some((2, p(&[("a", "x"), ("b", "y-z")]))));
    assert_eq!(find(&r, "GET", "/pair/-y"), None);
    // an encoded unreserved separator counts as the separator
    assert_eq!(find(&r, "GET", "/files/a%2Ejpg"), Some((0, p(&[("name", "a"), ("ext", "jpg")]))));
}

#[test]
fn a_literal_after_the_only_parameter() {
    // Twilio's `/Calls/{Sid}.json`: the suffix is not part of the value.
    let r = router(&[("GET", "/calls/{sid}.json"), ("GET", "/calls/{sid}"), ("GET", "/v{major}x")]);
    assert_eq!(find(&r, "GET", "/calls/CA123.json"), Some((0, p(&[("sid", "CA123")]))));
    assert_eq!(find(&r, "GET", "/calls/a.b.json"), Some((0, p(&[("sid", "a.b")]))));
    assert_eq!(find(&r, "GET", "/calls/CA123"), Some((1, p(&[("sid", "CA123")]))));
    assert_eq!(find(&r, "GET", "/calls/.json"), Some((1, p(&[("sid", ".json")]))));
    assert_eq!(find(&r, "GET", "/v2x"), Some((2, p(&[("major", "2")]))));
    assert_eq!(find(&r, "GET", "/v2"), None);
}

#[test]
fn mixed_segment_backtracking_is_bounded() {
    let r = router(&[("GET", "/{a}x{b}x{c}x{d}y")]);
    let long = format!("/{}", "x".repeat(3000));
    assert_eq!(find(&r, "GET", &long), None);
    let ok = "/1x2x3x4y";
    assert_eq!(find(&r, "GET", ok), Some((0, p(&[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]))));
}

#[test]
fn trailing_slash_strict_by_default() {
    let r = router(&[("GET", "/users"), ("GET", "/dirs/")]);
    assert_eq!(find(&r, "GET", "/users"), Some((0, vec![])));
    assert_eq!(find(&r, "GET", "/users/"), None);
    assert_eq!(find(&r, "GET", "/dirs/"), Some((1, vec![])));
    assert_eq!(find(&r, "GET", "/dirs"), None);
    let r = router(&[("GET", "/users/{id}")]);
    assert_eq!(find(&r, "GET", "/users/"), None, "a parameter never matches an empty string");

    let r = router_with(RouterOptions { ignore_trailing_slash: true }, &[("GET", "/users"), ("GET", "/dirs/"), ("GET", "/")]);
    assert_eq!(find(&r, "GET", "/users/"), Some((0, vec![])));
    assert_eq!(find(&r, "GET", "/dirs"), Some((1, vec![])));
    assert_eq!(find(&r, "GET", "/"), Some((2, vec![])));
    assert_eq!(find(&r, "GET", "/users//"), None, "only one slash is ignored");
}

#[test]
fn root_and_empty_segments() {
    let r = router(&[("GET", "/"), ("GET", "/a//b")]);
    assert_eq!(find(&r, "GET", "/"), Some((0, vec![])));
    assert_eq!(find(&r, "GET", "/?q=1"), Some((0, vec![])));
    assert_eq!(find(&r, "GET", "/a//b"), Some((1, vec![])));
    assert_eq!(find(&r, "GET", "/a/b"), None);
    assert_eq!(find(&r, "GET", ""), None);
    assert_eq!(find(&r, "GET", "*"), None);
    assert_eq!(find(&r, "GET", "http://x/"), None);
}

#[test]
fn percent_encoding_in_literals() {
    let r = router(&[("GET", "/~user/items"), ("GET", "/a:b"), ("GET", "/caf\u{e9}")]);
    assert_eq!(find(&r, "GET", "/%7Euser/items"), Some((0, vec![])));
    assert_eq!(find(&r, "GET", "/%7euser/%69tems"), Some((0, vec![])));
    assert_eq!(find(&r, "GET", "/a:b"), Some((1, vec![])));
    // `:` is reserved: its encoded form is a different character
    assert_eq!(find(&r, "GET", "/a%3Ab"), None);
    // a non-ASCII literal matches its UTF-8 percent-encoding, in either hex case
    assert_eq!(find(&r, "GET", "/caf%C3%A9"), Some((2, vec![])));
    assert_eq!(find(&r, "GET", "/caf%c3%a9"), Some((2, vec![])));
}

#[test]
fn encoded_slash_never_splits() {
    let r = router(&[("GET", "/files/{name}"), ("GET", "/dirs/{dir}/{name}")]);
    assert_eq!(find(&r, "GET", "/files/a%2Fb"), Some((0, p(&[("name", "a%2Fb")]))));
    assert_eq!(percent_decode("a%2Fb").unwrap(), "a/b");
    assert_eq!(find(&r, "GET", "/dirs/a%2Fb"), None);
    assert_eq!(find(&r, "GET", "/dirs/a/b"), Some((1, p(&[("dir", "a"), ("name", "b")]))));
}

#[test]
fn dot_segments_match_nothing() {
    let r = router(&[("GET", "/a/b"), ("GET", "/files/{name}"), ("GET", "/x/{p}/y")]);
    for path in ["/a/../a/b", "/a/./b", "/files/..", "/files/.", "/files/%2e%2e", "/files/%2E", "/files/.%2e", "/x/../y", "/a/b/.."] {
        assert_eq!(find(&r, "GET", path), None, "{path}");
    }
    // dots inside a longer value are ordinary characters
    assert_eq!(find(&r, "GET", "/files/...").map(|f| f.0), Some(1));
    assert_eq!(find(&r, "GET", "/files/a..b").map(|f| f.0), Some(1));
}

#[test]
fn conflicts_and_bad_templates() {
    let mut r = Router::default();
    r.insert(Method::Get, "/users/{id}", 0).unwrap();
    assert_eq!(r.insert(Method::Get, "/users/{name}", 1), Err(InsertError::Conflict { existing: 0 }));
    r.insert(Method::Post, "/users/{name}", 2).unwrap();
    assert_eq!(r.len(), 2);
    // each operation reports its own parameter names
    assert_eq!(find(&r, "POST", "/users/5"), Some((2, p(&[("name", "5")]))));
    assert_eq!(find(&r, "GET", "/users/5"), Some((0, p(&[("id", "5")]))));
    for bad in ["users", "/a/{b", "/a/b}", "/a/{}", "/a/{{b}}"] {
        assert!(matches!(r.insert(Method::Get, bad, 9), Err(InsertError::BadTemplate(_))), "{bad}");
    }
}

#[test]
fn template_helpers() {
    assert_eq!(template_params("/files/{name}.{ext}/{v}").unwrap(), vec!["name", "ext", "v"]);
    let e = template_params("/a/{b").unwrap_err();
    assert_eq!((e.kind(), e.message()), (crate::ErrorKind::Template, "unclosed '{' in path template \"/a/{b\""));
    assert_eq!(template_shape("/users/{id}/x.{fmt}"), "/users/{}/x.{}");
    assert_eq!(template_shape("/users/{id}"), template_shape("/users/{name}"));
}

#[test]
fn percent_decode_results() {
    assert!(matches!(percent_decode("plain"), Ok(Cow::Borrowed("plain"))));
    assert_eq!(percent_decode("a%20b+c").unwrap(), "a b+c");
    assert_eq!(percent_decode("%e2%82%ac").unwrap(), "\u{20ac}");
    assert_eq!(percent_decode("ab%zz"), Err(DecodeError::InvalidPercent { at: 2 }));
    assert_eq!(percent_decode("ab%4"), Err(DecodeError::InvalidPercent { at: 2 }));
    assert_eq!(percent_decode("%ff%fe"), Err(DecodeError::InvalidUtf8));
}

#[test]
fn out_vec_is_reused_and_cleared() {
    let r = router(&[("GET", "/u/{a}/{b}"), ("GET", "/v")]);
    let mut out = Vec::with_capacity(4);
    assert!(matches!(r.lookup("GET", "/u/1/2", &mut out), Lookup::Found { op: 0, .. }));
    assert_eq!(out.len(), 2);
    assert!(matches!(r.lookup("GET", "/v", &mut out), Lookup::Found { op: 1, .. }));
    assert!(out.is_empty());
    assert_eq!(r.lookup("GET", "/u/1", &mut out), Lookup::NotFound);
    assert!(out.is_empty(), "no partial captures left behind");
}

#[test]
fn many_static_children_use_sorted_lookup() {
    let names: Vec<String> = (0..200).map(|i| format!("/r{i:03}/{{id}}")).collect();
    let mut r = Router::default();
    for (i, t) in names.iter().enumerate() {
        r.insert(Method::Get, t, i).unwrap();
    }
    for i in [0usize, 57, 199] {
        assert_eq!(find(&r, "GET", &format!("/r{i:03}/x")).map(|f| f.0), Some(i));
        // the slow (percent) path agrees with the fast one
        assert_eq!(find(&r, "GET", &format!("/%72{i:03}/x")).map(|f| f.0), Some(i));
    }
}

#[test]
fn canonical_table_matches_the_rule() {
    for b in 0..=255u8 {
        assert_eq!(CANONICAL[b as usize], is_canonical_byte(b), "byte {b}");
    }
}
