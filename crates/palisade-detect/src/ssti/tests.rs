use super::*;
use crate::other_util::take_steps;
use crate::test_tables::assert_all_at_least;
use crate::FieldKind;

fn q(v: &str) -> u8 {
    detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict).map_or(0, |h| h.confidence)
}

fn bal(v: &str) -> bool {
    detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Balanced).is_some()
}

#[test]
fn attacks() {
    assert_all_at_least(
        &[
            "{{7*7}}",
            "${7*7}",
            "<%= 7*7 %>",
            "#{7*7}",
            "${{7*7}}",
            "[[${7*7}]]",
            "[[*{T(java.lang.Runtime).getRuntime()}]]",
            "{{7*'7'}}",
            "{{ ''.__class__.__mro__[2].__subclasses__() }}",
            "{{request|attr('application')|attr('\\x5f\\x5fglobals\\x5f\\x5f')}}",
            "{{request|attr([\"_\"*2,\"class\",\"_\"*2]|join)}}",
            "{{config.items()}}",
            "{{self}}",
            "{{cycler.__init__.__globals__.os.popen('id').read()}}",
            "<#assign ex=\"freemarker.template.utility.Execute\"?new()>${ex(\"id\")}",
            "${T(java.lang.Runtime).getRuntime().exec('id')}",
            "#set($x=$class.inspect(\"java.lang.Runtime\"))",
            "__${T(java.lang.Runtime).getRuntime().exec('id')}__::.x",
            "{php}echo `id`;{/php}",
            "<%= File.open('/etc/passwd').read %>",
            "%{#_memberAccess['allowStaticMethodAccess']=true}",
            "${#_memberAccess}",
            "{{'a'.toUpperCase()}}",
            "{$smarty.version}",
            "{{ [].class.base.subclasses() }}",
        ],
        Level::Balanced,
        q,
    );
}

#[test]
fn benign() {
    let mut bad: Vec<String> = Vec::new();
    for v in [
        "Hello {{name}}, your order {{order_id}} shipped",
        "{\"a\": {\"b\": [1, 2, 3]}}",
        "price ${price} per unit",
        "Use #{count} items",
        "<% if you see this %>",
        "{{ user.first_name }}",
        "function f() { return `${a}`; }",
        "[[wiki link]]",
        "email me @(home)",
        "Total: ${10}",
        "{% raw %}",
        "<#list>",
    ] {
        if bal(v) {
            bad.push(format!("{v:?}: {}", q(v)));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn linear_on_large_inputs() {
    for unit in ["{{", "${", "{{7*7", "}}", "<%", "#set(", "__${", "{{__class__ "] {
        let v = unit.repeat(1_000_000 / unit.len());
        take_steps();
        let _ = detector().check(&Input { raw: &v, decoded: &v, field: FieldKind::QueryValue }, Level::Strict);
        let steps = take_steps();
        assert!(steps < 80 * v.len() as u64, "{unit}: {steps}");
    }
}

#[test]
fn hex_escape_before_a_multibyte_character_does_not_panic() {
    // Found by the detect_misc fuzz target: `\x0` followed by a two-byte character.
    let v = "#$set(\u{1c}${.pope~(\\pe~(\\x0\u{2cc}p}\u{2}k$e";
    let _ = detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict);
    let v = "${\\x4\u{e9}}";
    let _ = detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Strict);
    // And a real escape still decodes.
    let v = "${T(java.lang.Runtime).getRuntime().exec('\\x69d')}";
    assert!(detector().check(&Input { raw: v, decoded: v, field: FieldKind::QueryValue }, Level::Balanced).is_some());
}

#[test]
fn the_gate_holds_every_opener() {
    for (open, _, _) in DELIMS {
        assert!(OPENER_LITERALS.iter().any(|l| open.contains(l)), "{open} has no gate literal");
    }
    assert_eq!(GATE.anchors, OPENER_LITERALS);
}

/// Written for these rules: Java expression languages (EL, OGNL, SpEL) reaching server state,
/// and server-side include directives; then text and code that only look alike.
#[test]
fn expression_languages_and_server_side_includes() {
    assert_all_at_least(
        &[
            "${pageContext.servletContext}",
            "${sessionScope}",
            "#{facesContext.externalContext.sessionMap}",
            "${req.getSession().getAttribute(\"user\")}",
            "#{bean.getClass().getClassLoader()}",
            "%{@org.apache.commons.io.FileUtils@readFileToString(x)}",
            "%{(#v='a').(#w=#v)}",
            "${#context['com.opensymphony.xwork2.ActionContext.container']}",
            "<!--#exec cmd=\"ls -l\" -->",
            "<!--#include virtual=\"/var/secret\"-->",
            "<!--#echo var=\"DATE_LOCAL\" -->",
            "<!--#printenv -->",
            "<esi:include src=\"https://cdn.other.example/frag\"/>",
            "<esi:vars>$(QUERY_STRING)</esi:vars>",
        ],
        Level::Balanced,
        q,
    );
    for v in [
        "${user.name}",
        "${ escapeHtml(name) }",
        "#{item.title}",
        "Price: ${total} (#a == #b)",
        "<!-- a comment -->",
        "<!--# just a note -->",
        "<!--#include-->",
        "write me @home.example@ or there",
        "<esi:foo>",
    ] {
        assert!(!bal(v), "{v:?}: {}", q(v));
    }
}
