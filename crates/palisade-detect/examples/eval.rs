//! `palisade detect eval` without building the proxy: evaluate the built-in engine on corpus
//! files (the format of `../shared/data/attack-corpus/`) at every location and print the
//! report; `--max N` samples at most N values per category (0: all, the default);
//! `--misses CATEGORY` (or `all`) also lists the attack values missed in the query and the
//! benign values reported anywhere; `--level strict` evaluates at the strict level (default
//! balanced); `--param NAME` places the values in the parameter (and JSON key) `NAME` instead
//! of one with no role (`--param q`: a search box's, judged as free text).
//!
//! ```sh
//! cargo run --release -p palisade-detect --example eval -- ../shared/data/attack-corpus/corpus.jsonl
//! ```

use palisade_detect::eval::{evaluate_in, parse_corpus, sample, Label, Place, PARAM};
use palisade_detect::{Engine, EngineConfig};

fn main() {
    let mut files = Vec::new();
    let mut max = 0usize;
    let mut misses: Option<String> = None;
    let mut level = palisade_detect::Level::Balanced;
    let mut param = PARAM.to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--max" => max = args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
            "--misses" => misses = Some(args.next().unwrap_or_else(|| usage())),
            "--param" => param = args.next().unwrap_or_else(|| usage()),
            "--level" => {
                level = match args.next().as_deref() {
                    Some("balanced") => palisade_detect::Level::Balanced,
                    Some("strict") => palisade_detect::Level::Strict,
                    _ => usage(),
                }
            }
            _ if a.starts_with("--") => usage(),
            _ => files.push(a),
        }
    }
    if files.is_empty() {
        usage();
    }
    let engine = Engine::new(EngineConfig { level, ..EngineConfig::default() }).expect("default engine");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| {
            eprintln!("{f}: {e}");
            std::process::exit(1)
        });
        let samples = parse_corpus(&text).unwrap_or_else(|e| {
            eprintln!("{f}: {e}");
            std::process::exit(1)
        });
        let samples = sample(samples, max);
        println!("== {f}");
        let ev = evaluate_in(&engine, &samples, &Place::ALL, &param);
        println!("{}", ev.report());
        if let Some(cat) = &misses {
            // Evaluate value by value to list every miss (the report keeps a few examples).
            for s in &samples {
                if cat != "all" && *cat != s.category {
                    continue;
                }
                let one = evaluate_in(&engine, std::slice::from_ref(s), &Place::ALL, &param);
                let hit = one.overall(s.label).detected;
                match s.label {
                    Label::Attack if one.by_place(Label::Attack, Place::Query).detected == 0 => println!("MISS {} {:?}", s.category, s.value),
                    Label::Benign if hit > 0 => println!("FP {} ({hit} places) {:?}", s.category, s.value),
                    _ => {}
                }
            }
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: eval CORPUS.jsonl... [--max N] [--misses CATEGORY|all] [--level balanced|strict] [--param NAME]");
    std::process::exit(1)
}
