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

/// The training traffic of the profile-guided build (`scripts/pgo-train.py`, one round of 2,000
/// requests built from the repository's own benign and attack sets) through a proxy with
/// detection's defaults: every request is answered 200 or 403 (the script exits 1 otherwise),
/// both occur, and the blocked share stays near the ~10 % of requests that carry an attack (a
/// share far above it would mean benign values blocked, far below it attacks let through).
#[tokio::test]
async fn the_profile_training_traffic_is_passed_or_blocked_as_expected() {
    let up = Upstream::tcp(reply("ok")).await;
    let proxy = Proxy::start(&cfg(&[], &one_app(&up.url())));
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pgo-train.py");
    let addr = proxy.addr.to_string();
    let (code, out, err) = tokio::task::spawn_blocking(move || {
        let o = std::process::Command::new("python3").arg(script).arg(addr).args(["--rounds", "1"]).output().expect("run python3");
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "stdout: {out}\nstderr: {err}");
    let count = |status: &str| -> u32 { out.split_whitespace().find_map(|kv| kv.strip_prefix(status)?.strip_prefix(':')?.parse().ok()).unwrap_or(0) };
    let (passed, blocked) = (count("200"), count("403"));
    assert_eq!(passed + blocked, 2000, "{out}");
    assert!((100..=300).contains(&blocked), "blocked {blocked} of 2000: {out}");
}
