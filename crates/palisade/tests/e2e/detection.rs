//! Attack detection in the running proxy: on by default, blocks with the reason code only,
//! `off` and `monitor` let requests through.

use crate::common::*;

#[tokio::test]
async fn detection_is_on_by_default_and_never_echoes_the_payload() {
    let mut up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let r = get(proxy.addr, "api.test", "/search?q=1%27%20union%20select%20password%20from%20users--").await;
    let v = assert_problem(&r, 403, "detect.sqli");
    assert_eq!(v["reasons"][0], serde_json::json!({"code": "detect.sqli"}), "{}", r.dump());
    assert!(!r.text().contains("password"), "{}", r.dump());

    let r = get(proxy.addr, "api.test", "/search?q=select%20the%20blue%20one%2C%20or%20the%20red%20one%3B%20don%27t%20mind").await;
    assert_eq!(r.status, 200, "{}", r.dump());
    assert_eq!(up.next_req().await.path(), "/search");
}

#[tokio::test]
async fn detection_off_and_monitor_let_attacks_through() {
    for section in ["    detection: off\n", "    detection: {mode: monitor}\n"] {
        let mut up = Upstream::tcp(reply("ok")).await;
        let proxy = Proxy::start(&cfg(&[], &format!("{}{section}", one_app(&up.url()))));
        let r = get(proxy.addr, "api.test", "/x?q=%3Cscript%3Ealert(1)%3C/script%3E").await;
        assert_eq!(r.status, 200, "{section}: {}", r.dump());
        assert_eq!(up.next_req().await.path(), "/x");
    }
}
