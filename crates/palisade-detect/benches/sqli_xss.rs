//! Per-value cost of the SQL injection and XSS detectors on typical benign values and attacks.
//! Target: ≤ 2 µs median per benign value, much less for short alphanumerics.

use criterion::{criterion_group, criterion_main, Criterion};
use palisade_detect::{Detector, FieldKind, Input, Level};
use std::hint::black_box;

const BENIGN: &[(&str, &str)] = &[
    ("alnum", "kirbee"),
    ("number", "7466876651335348"),
    ("email", "reich.puffy@g-audi.pe"),
    ("name", "perales del alfambra"),
    ("prose", "Tom's diner; open 9-5, and we'll select the best table for you."),
    ("url", "https://example.com/search?q=rock+%27n%27+roll&page=2"),
    ("markdown", "**Note**: use `a < b` and <john@example.com> for details."),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
];

const ATTACKS: &[(&str, &str)] = &[
    ("sqli_union", "-1' UNION ALL SELECT username, password FROM users--"),
    ("sqli_tautology", "' or 'a'='a"),
    ("sqli_time", "1; waitfor delay '0:0:5'--"),
    ("xss_img", "\"><img src=x onerror=alert(document.cookie)>"),
    ("xss_js", "';alert(1)//"),
];

fn bench(c: &mut Criterion) {
    let sqli = palisade_detect::sqli::detector();
    let xss = palisade_detect::xss::detector();
    let dets: [(&str, &dyn Detector); 2] = [("sqli", sqli.as_ref()), ("xss", xss.as_ref())];
    for (dn, d) in dets {
        let mut g = c.benchmark_group(dn);
        for (name, v) in BENIGN.iter().chain(ATTACKS) {
            g.bench_function(*name, |b| {
                let input = Input { raw: v, decoded: v, field: FieldKind::QueryValue };
                b.iter(|| black_box(d.check(black_box(&input), Level::Balanced)))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
