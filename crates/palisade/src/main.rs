//! The `palisade` binary: command line, logging, signals, and the demo.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};

mod demo;
mod detect_eval;
use palisade::stages;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's `mi_collect` (linked through the `mimalloc` crate).
    fn mi_collect(force: bool);
}

/// Give the pages that this thread's allocations no longer use back to the operating system.
/// mimalloc keeps freed pages for reuse; after a large spec is loaded (its text, tree and parse
/// buffers freed) they would otherwise stay resident and add to the peak of the next reload
/// (`scripts/spec-memory --reload` measures both).
#[allow(unsafe_code)]
fn release_freed_memory() {
    // SAFETY: `mi_collect` takes no pointer and only frees memory no allocation uses.
    unsafe { mi_collect(true) }
}

/// Let a closed pipe end a command that prints (`palisade detect eval ... | head`) as it ends
/// other Unix tools, instead of a panic on the next `println!`. Servers (`run`, `demo`) keep the
/// runtime's choice: a peer that goes away must never end the process.
#[allow(unsafe_code)]
fn default_sigpipe() {
    // SAFETY: `signal` with `SIG_DFL` changes one process-wide disposition; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[derive(Parser)]
#[command(name = "palisade", version, about = "An API firewall and WAF that runs as a reverse proxy")]
struct Cli {
    /// Log format (overrides `log.format` in the configuration).
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    /// Log level or filter, e.g. `info` or `palisade=debug` (overrides `log.level`).
    #[arg(long, global = true)]
    log_level: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy with a configuration file.
    Run {
        /// The configuration file (docs/CONFIG.md).
        #[arg(short, long, env = "PALISADE_CONFIG")]
        config: PathBuf,
    },
    /// Validate a configuration (and everything it refers to) and exit: 0 if valid, 1 if not.
    Check {
        /// The configuration file to check.
        #[arg(short, long)]
        config: PathBuf,
        /// Use no network: JWKS URLs and OpenAPI spec URLs are not fetched (by default each one
        /// is fetched once, as the proxy would). Spec files never lead to the network.
        #[arg(long)]
        offline: bool,
    },
    /// OpenAPI tools: lint a spec, judge a request offline.
    #[command(subcommand)]
    Openapi(OpenapiCommand),
    /// Security events: list or follow what was blocked and monitored, from the SQLite
    /// database or from a running Palisade's admin listener.
    #[command(subcommand)]
    Events(Box<EventsCommand>),
    /// Attack detection tools: evaluate the engine on a corpus, explain a value.
    #[command(subcommand)]
    Detect(DetectCommand),
    /// GraphQL tools: judge a request offline against a schema.
    #[command(subcommand)]
    Graphql(GraphqlCommand),
    /// Run the bundled example in front of an embedded demo API.
    Demo {
        /// Address for the proxy.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        /// Address for the admin listener.
        #[arg(long, default_value = "127.0.0.1:9901")]
        admin: std::net::SocketAddr,
    },
}

#[derive(Subcommand)]
enum EventsCommand {
    /// Print events matching the filters, newest first (one page; `--cursor` for the next).
    Query {
        #[command(flatten)]
        source: EventSource,
        #[command(flatten)]
        filter: EventFilter,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
        /// Print statistics (counts per time bucket, top IPs, reasons, paths) as JSON instead.
        #[arg(long)]
        stats: bool,
    },
    /// Print the last events, then new ones as they are recorded.
    Tail {
        #[command(flatten)]
        source: EventSource,
        #[command(flatten)]
        filter: EventFilter,
        /// How many past events to print first.
        #[arg(short = 'n', long, default_value_t = 10)]
        last: usize,
        /// Print the past events and exit.
        #[arg(long)]
        no_follow: bool,
        /// Poll interval, e.g. 500ms or 2s.
        #[arg(long, default_value = "1s")]
        interval: String,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args)]
struct EventSource {
    /// The events database: an SQLite file (`events.sink: sqlite:PATH`) or a postgres:// URL.
    #[arg(long, conflicts_with = "admin")]
    db: Option<PathBuf>,
    /// A running Palisade's admin listener, e.g. http://127.0.0.1:9901.
    #[arg(long)]
    admin: Option<String>,
    /// The admin token, when one is configured.
    #[arg(long, env = "PALISADE_ADMIN_TOKEN")]
    token: Option<String>,
}

#[derive(clap::Args)]
struct EventFilter {
    /// From this time: Unix ms, RFC 3339 (2026-11-22T08:00:00Z), or a duration ago (15m, 2h, 1d).
    #[arg(long)]
    since: Option<String>,
    /// Before this time (same forms).
    #[arg(long)]
    until: Option<String>,
    /// App name.
    #[arg(long)]
    app: Option<String>,
    /// Client IP.
    #[arg(long)]
    ip: Option<String>,
    /// Attack category (sqli, xss, ...) or stage family (openapi, access).
    #[arg(long)]
    category: Option<String>,
    /// Reason code, e.g. detect.sqli.
    #[arg(long)]
    reason: Option<String>,
    /// Status returned.
    #[arg(long)]
    status: Option<u16>,
    /// block, monitor or allow.
    #[arg(long)]
    verdict: Option<String>,
    /// Substring of the path.
    #[arg(long)]
    path: Option<String>,
    /// Page size (at most 1000).
    #[arg(long)]
    limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[arg(long)]
    cursor: Option<i64>,
}

impl EventFilter {
    fn pairs(&self) -> Vec<(String, String)> {
        let mut p = Vec::new();
        let mut add = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                p.push((k.to_string(), v));
            }
        };
        add("since", self.since.clone());
        add("until", self.until.clone());
        add("app", self.app.clone());
        add("ip", self.ip.clone());
        add("category", self.category.clone());
        add("reason", self.reason.clone());
        add("status", self.status.map(|s| s.to_string()));
        add("verdict", self.verdict.clone());
        add("path", self.path.clone());
        add("limit", self.limit.map(|s| s.to_string()));
        add("cursor", self.cursor.map(|s| s.to_string()));
        p
    }
}

impl EventSource {
    fn source(&self) -> anyhow::Result<palisade_events::cli::Source> {
        use palisade_events::cli::Source;
        match (&self.db, &self.admin) {
            (Some(db), _) => Ok(match db.to_str().map(palisade_events::query::Store::parse) {
                Some(palisade_events::query::Store::Postgres(url)) => Source::Postgres(url),
                _ => Source::Db(db.clone()),
            }),
            (None, Some(url)) => Ok(Source::Admin { url: url.clone(), token: self.token.clone() }),
            (None, None) => anyhow::bail!("give --db FILE (the SQLite events database) or --admin URL (a running Palisade's admin listener)"),
        }
    }
}

fn events_cmd(cmd: EventsCommand) -> anyhow::Result<ExitCode> {
    use palisade_events::cli;
    let mut out = std::io::stdout();
    match cmd {
        EventsCommand::Query { source, filter, json, stats } => {
            let src = source.source()?;
            if stats {
                let st = src.stats(&filter.pairs(), 24, 10).map_err(|e| anyhow::anyhow!(e))?;
                println!("{}", serde_json::to_string_pretty(&st)?);
                return Ok(ExitCode::SUCCESS);
            }
            let page = src.page(&filter.pairs()).map_err(|e| anyhow::anyhow!(e))?;
            cli::print(&mut out, &page.events, json)?;
            if let Some(c) = page.next_cursor {
                if !json {
                    eprintln!("(more: --cursor {c})");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        EventsCommand::Tail { source, filter, last, no_follow, interval, json } => {
            let src = source.source()?;
            let interval = palisade_config::decode::parse_duration(&interval).filter(|d| !d.is_zero()).context("--interval: expected a duration such as 1s")?;
            cli::tail(&src, &filter.pairs(), last, !no_follow, interval, json, &mut out).map_err(|e| anyhow::anyhow!(e))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[derive(Subcommand)]
enum OpenapiCommand {
    /// Load a spec and list what Palisade does not support or finds suspicious, and what it
    /// will do about it. Exit 0 when the spec loads, 1 when it does not.
    Lint {
        /// Spec file or http(s) URL.
        spec: String,
        /// Use no network at all: a spec URL is refused. (A spec file never leads to the
        /// network: http(s) `$ref`s in it are errors unless `remote_refs` is set.)
        #[arg(long)]
        offline: bool,
    },
    /// Judge one raw HTTP request (and optionally the upstream's response) against a spec, as
    /// the proxy would with `request: block`. Exit 0 when allowed, 2 when blocked, 1 on error.
    Validate {
        /// Spec file or http(s) URL.
        spec: String,
        /// Use no network at all: a spec URL is refused.
        #[arg(long)]
        offline: bool,
        /// File holding the raw request: request line, headers, blank line, body.
        #[arg(long)]
        request: PathBuf,
        /// File holding the raw response to judge (status line, headers, blank line, body).
        #[arg(long)]
        response: Option<PathBuf>,
        /// What to do with body properties the schema does not describe.
        #[arg(long, default_value = "monitor", value_parser = ["block", "monitor", "pass"])]
        unknown_fields: String,
        /// What to do with query parameters the operation does not declare.
        #[arg(long, default_value = "block", value_parser = ["block", "monitor", "pass"])]
        unknown_query: String,
    },
    /// Build an OpenAPI 3.1 draft from observed traffic: path templates inferred from varying
    /// segments, typed parameters, JSON and form body schemas merged across requests, response
    /// schemas when responses were recorded. Prints the spec as JSON. Exit 0, or 1 on error.
    Learn {
        #[command(flatten)]
        traffic: TrafficArgs,
        /// The title written into the learned spec (its info.title).
        #[arg(long, default_value = "Learned API")]
        title: String,
        /// Write the spec to this file instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Report the traffic a spec does not describe: shadow endpoints (learned into templates),
    /// and per operation the query parameters, body fields and values it does not allow.
    /// Exit 0 when everything is described, 2 when something is not, 1 on error.
    Diff {
        /// Spec file or http(s) URL.
        spec: String,
        #[command(flatten)]
        traffic: TrafficArgs,
        /// The report as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args)]
struct TrafficArgs {
    /// A HAR file (browser developer tools, proxies); may be repeated.
    #[arg(long)]
    har: Vec<PathBuf>,
    /// A raw HTTP request file, or a directory of them; may be repeated.
    #[arg(long)]
    raw: Vec<PathBuf>,
    /// An events database (SQLite file or postgres:// URL): the allowed requests sampled with
    /// `events.sample_allowed` (method, path and query only).
    #[arg(long)]
    events: Option<String>,
    /// With --events: only this app's requests.
    #[arg(long)]
    app: Option<String>,
}

impl TrafficArgs {
    fn read(self) -> Result<Vec<palisade_openapi::learn::Sample>, String> {
        let (samples, skipped) = palisade::traffic::read(&palisade::traffic::Sources { har: self.har, raw: self.raw, events: self.events, app: self.app })
            .map_err(|e| e.to_string())?;
        if let Some(first) = skipped.first() {
            eprintln!("skipped {} file(s) that are not HTTP requests; the first: {first}", skipped.len());
        }
        Ok(samples)
    }
}

#[derive(Subcommand)]
enum GraphqlCommand {
    /// Judge one request (a raw HTTP request, a JSON body or a bare document) against an SDL
    /// schema with the default limits. Exit 0 allowed, 2 blocked, 1 on error.
    Validate {
        /// The schema file (GraphQL SDL).
        schema: PathBuf,
        /// File holding the raw HTTP request to judge: request line, headers, blank line, body.
        #[arg(long)]
        request: PathBuf,
        /// Allow introspection (`__schema`, `__type`), blocked by default.
        #[arg(long)]
        allow_introspection: bool,
    },
}

#[derive(Subcommand)]
enum DetectCommand {
    /// Evaluate the detection engine on a labelled corpus and print detection and
    /// false-positive rates. A corpus of whole requests (a JSON-lines file whose lines have
    /// `label`, `class`, `location` and `request` or `request_base64`, gzip accepted, or a
    /// directory of raw request files laid out as LABEL/CLASS/[LOCATION/]FILE) goes through
    /// the detection stage as the proxy runs it, with the app's settings (`--config`) or the
    /// defaults at `--level`: rates per class, location and detector, every false positive
    /// (detector, location, fragment, confidence) and every missed attack. A corpus of values
    /// (`{"label", "category", "value"}` a line) has each value placed in several locations of
    /// a request (`--locations`), with µs per value. Exit 0 when the corpus was evaluated, 1 on
    /// error.
    Eval {
        /// The corpus file: one JSON object a line.
        corpus: PathBuf,
        /// Value corpora: comma-separated locations: query, form, json, header, cookie.
        #[arg(long, default_value = "query,form,json,header,cookie")]
        locations: String,
        /// At most this many values or requests per label and class (evenly spread); 0 for all.
        #[arg(long, default_value_t = 0)]
        max: usize,
        /// The level, with the default settings (ignored with `--config`).
        #[arg(long, default_value = "balanced", value_parser = ["balanced", "strict"])]
        level: String,
        /// Request corpora: judge with this configuration's detection settings (its
        /// `detection:` section: mode, level, headers, exclusions, paths, limits).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The app of `--config` whose settings apply (default: the first).
        #[arg(long, requires = "config")]
        app: Option<String>,
        /// Request corpora: print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show how the engine reads one value: the decoding layers, the findings with the value
    /// at a location, and every detector's signal. Exit 0 when nothing blocks, 2 when the value
    /// would be blocked, 1 on error.
    Explain {
        /// The value to explain.
        value: String,
        /// Where the value is placed: query, form, json, header or cookie.
        #[arg(long, default_value = "query")]
        location: String,
        /// Detection level: balanced or strict.
        #[arg(long, default_value = "balanced", value_parser = ["balanced", "strict"])]
        level: String,
    },
    /// Propose the narrowest detection exclusions for recorded events (blocked and monitored,
    /// so a monitor-mode trial counts): detector × location × OpenAPI operation or path prefix,
    /// each with the requests it would have allowed and from how many clients, printed as a
    /// `detection:` snippet to paste into the configuration. Exit 0, or 1 on error.
    Suggest {
        #[command(flatten)]
        source: EventSource,
        /// From this time: Unix ms, RFC 3339, or a duration ago (15m, 2h, 7d).
        #[arg(long)]
        since: Option<String>,
        /// Before this time (same forms).
        #[arg(long)]
        until: Option<String>,
        /// Only this app's events.
        #[arg(long)]
        app: Option<String>,
        /// Leave out exclusions that cover fewer requests.
        #[arg(long, default_value_t = 1)]
        min_requests: u64,
        /// Read at most this many events (newest first).
        #[arg(long, default_value_t = 100_000)]
        max_events: usize,
        /// The whole report as JSON instead of the YAML snippet.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    stages::on_freed_memory(release_freed_memory);
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Run { .. } | Command::Demo { .. }) {
        default_sigpipe();
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("palisade: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn init_logging(format: Option<LogFormat>, level: Option<&str>, config: Option<&palisade_config::LogConfig>) {
    use tracing_subscriber::EnvFilter;
    let level = level.map(str::to_string).or_else(|| config.and_then(|c| c.level.clone())).unwrap_or_else(|| "info".into());
    let format = format.or_else(|| {
        config.and_then(|c| c.format).map(|f| match f {
            palisade_config::LogFormat::Json => LogFormat::Json,
            palisade_config::LogFormat::Text => LogFormat::Text,
        })
    });
    let filter = EnvFilter::try_new(&level).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format.unwrap_or(LogFormat::Text) {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).try_init(),
        LogFormat::Text => builder.with_ansi(false).try_init(),
    };
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Check { config, offline } => Ok(check(&config, offline)),
        Command::Openapi(cmd) => Ok(openapi_cmd(cmd)),
        Command::Events(cmd) => events_cmd(*cmd),
        Command::Detect(cmd) => Ok(detect_cmd(cmd)),
        Command::Graphql(GraphqlCommand::Validate { schema, request, allow_introspection }) => {
            Ok(palisade::graphql_cmd::validate(&schema, &request, allow_introspection))
        }
        Command::Run { config } => {
            let cfg = match palisade_config::load_file(&config) {
                Ok(c) => c,
                Err(errors) => {
                    eprintln!("{errors}");
                    eprintln!("palisade: {} problem(s) in {}", errors.0.len(), config.display());
                    return Ok(ExitCode::from(1));
                }
            };
            init_logging(cli.log_format, cli.log_level.as_deref(), Some(&cfg.log));
            serve(cfg, Some(config))
        }
        Command::Demo { listen, admin } => {
            let upstream = demo::start_upstream().context("starting the demo API")?;
            let text = include_str!("../../../examples/demo.yaml");
            let vars = vec![("PALISADE_LISTEN_0_ADDR".to_string(), listen.to_string()), ("PALISADE_ADMIN_ADDR".to_string(), admin.to_string())];
            let up = format!("http://{upstream}");
            let dir = demo::DemoDir::create().context("creating the demo's temporary directory")?;
            let spec = dir.write_spec().context("writing the demo API's spec")?;
            let events_db = spec.with_file_name("events.db");
            let cfg = palisade_config::parse_with_env(text, "examples/demo.yaml", std::path::Path::new("."), &vars, &|name| {
                if name == "DEMO_UPSTREAM" {
                    Some(up.clone())
                } else if name == "DEMO_SPEC" {
                    Some(spec.display().to_string())
                } else if name == "DEMO_EVENTS" {
                    Some(events_db.display().to_string())
                } else {
                    std::env::var(name).ok()
                }
            })
            .map_err(|e| anyhow::anyhow!("the bundled demo configuration is invalid:\n{e}"))?;
            init_logging(cli.log_format, cli.log_level.as_deref(), Some(&cfg.log));
            demo::print_intro(listen, admin, &events_db);
            let served = serve(cfg, None);
            drop(dir);
            served
        }
    }
}

/// Settings for the OpenAPI tools, decoded like a configuration section. `offline`: no
/// network at all (a spec URL is refused).
/// The judge of a spec for the offline commands: its problems printed, one line to fail with.
fn offline_judge(spec: &str, extra: &str, offline: bool) -> Result<palisade_openapi::judge::Judge, String> {
    let settings = offline_settings(spec, extra, offline)?;
    match stages::build(&settings) {
        Ok((judge, _, _)) => Ok(judge),
        Err(errors) => {
            for e in &errors {
                eprintln!("{e}");
            }
            Err(format!("{spec}: the spec does not load"))
        }
    }
}

fn offline_settings(spec: &str, extra: &str, offline: bool) -> Result<palisade_openapi::settings::Settings, String> {
    if offline && spec.contains("://") && !spec.starts_with("file://") {
        return Err(format!("{spec}: a spec URL cannot be read with --offline"));
    }
    let spec = if spec.contains("://") { spec.to_string() } else { std::path::absolute(spec).map_err(|e| e.to_string())?.display().to_string() };
    let text = format!("spec: {}\n{extra}", serde_json::to_string(&spec).unwrap_or_default());
    let node = palisade_config::yaml::parse(&text).map_err(|e| e.message)?;
    let mut cx = palisade_config::decode::Ctx::new("command line");
    let s = palisade_openapi::settings::Settings::decode(&mut cx, &node, "openapi", std::path::Path::new("/"));
    match (s, cx.errors.is_empty()) {
        (Some(mut s), true) => {
            s.offline = offline;
            Ok(s)
        }
        _ => Err(cx.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")),
    }
}

fn detect_cmd(cmd: DetectCommand) -> ExitCode {
    use palisade_detect::eval::{self, Place};
    let fail = |msg: &str| {
        eprintln!("palisade: {msg}");
        ExitCode::from(1)
    };
    let engine = |level: &str| {
        let level = if level == "strict" { palisade_detect::Level::Strict } else { palisade_detect::Level::Balanced };
        palisade_detect::Engine::new(palisade_detect::EngineConfig { level, ..Default::default() })
    };
    match cmd {
        DetectCommand::Suggest { source, since, until, app, min_requests, max_events, json } => {
            let pairs: Vec<(String, String)> =
                [("since", since), ("until", until), ("app", app)].into_iter().filter_map(|(k, v)| v.map(|v| (k.to_string(), v))).collect();
            let report =
                match source.source().map_err(|e| e.to_string()).and_then(|src| src.suggest(&pairs, min_requests, max_events).map_err(|e| e.to_string())) {
                    Ok(r) => r,
                    Err(e) => return fail(&e),
                };
            if json {
                println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
            } else {
                print!("{}", report.yaml);
                if report.truncated {
                    eprintln!("(only the newest {max_events} events were read: narrow with --since/--until/--app or raise --max-events)");
                }
            }
            ExitCode::SUCCESS
        }
        DetectCommand::Eval { corpus, locations, max, level, config, app, json } => {
            let loaded = match detect_eval::load(&corpus) {
                Ok(c) => c,
                Err(e) => return fail(&e),
            };
            let requests = match loaded {
                detect_eval::Corpus::Requests(r) => eval::requests::sample(r, max),
                detect_eval::Corpus::Values(samples) => {
                    if config.is_some() || json {
                        return fail("--config and --json apply to corpora of whole requests; this corpus holds values");
                    }
                    let places = match Place::parse_list(&locations) {
                        Ok(p) => p,
                        Err(e) => return fail(&e),
                    };
                    let samples = eval::sample(samples, max);
                    let engine = match engine(&level) {
                        Ok(e) => e,
                        Err(e) => return fail(&e),
                    };
                    println!("{}: {} values at {} location(s), level {level}", corpus.display(), samples.len(), places.len());
                    print!("{}", eval::evaluate(&engine, &samples, &places).report());
                    return ExitCode::SUCCESS;
                }
            };
            let settings = match &config {
                Some(path) => match eval_settings(path, app.as_deref()) {
                    Ok(s) => s,
                    Err(e) => return fail(&e),
                },
                None => palisade_detect::settings::Settings {
                    level: if level == "strict" { palisade_detect::Level::Strict } else { palisade_detect::Level::Balanced },
                    ..Default::default()
                },
            };
            let stage = match palisade_detect::stage::DetectionStage::new(&settings) {
                Ok(s) => s,
                Err(e) => return fail(&e),
            };
            let ev = eval::requests::evaluate_requests(&stage, requests);
            if json {
                println!("{}", ev.to_json());
            } else {
                println!("{}: {} requests", corpus.display(), ev.requests.len());
                print!("{}", ev.report());
            }
            ExitCode::SUCCESS
        }
        DetectCommand::Explain { value, location, level } => {
            let place = match Place::parse_list(&location) {
                Ok(p) if p.len() == 1 => p[0],
                Ok(_) => return fail("give one location"),
                Err(e) => return fail(&e),
            };
            let engine = match engine(&level) {
                Ok(e) => e,
                Err(e) => return fail(&e),
            };
            let lv = engine.config().level;
            match eval::explain(&engine, &value, place, lv) {
                Some(x) => {
                    print!("{x}");
                    if x.findings.is_empty() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(2)
                    }
                }
                None => fail(&format!("the value cannot be sent in a {location} (control characters)")),
            }
        }
    }
}

/// The detection settings of an app of a configuration file (the first app by default).
fn eval_settings(path: &std::path::Path, app: Option<&str>) -> Result<palisade_detect::settings::Settings, String> {
    let cfg = palisade_config::load_file(path).map_err(|errors| format!("{errors}\n{} problem(s) in {}", errors.0.len(), path.display()))?;
    let a = match app {
        Some(name) => cfg.apps.iter().find(|a| a.name == name).ok_or_else(|| {
            let names: Vec<&str> = cfg.apps.iter().map(|a| a.name.as_str()).collect();
            format!("{}: no app `{name}` (apps: {})", path.display(), names.join(", "))
        })?,
        None => cfg.apps.first().ok_or_else(|| format!("{}: no app", path.display()))?,
    };
    stages::detection_settings(&cfg, a).map_err(|errors| errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))
}

fn openapi_cmd(cmd: OpenapiCommand) -> ExitCode {
    let fail = |msg: &str| {
        eprintln!("{msg}");
        ExitCode::from(1)
    };
    match cmd {
        OpenapiCommand::Learn { traffic, title, output } => {
            let samples = match traffic.read() {
                Ok(s) => s,
                Err(e) => return fail(&e),
            };
            let mut learner = palisade_openapi::learn::Learner::new(Default::default());
            for s in &samples {
                learner.add(s);
            }
            let doc = serde_json::to_string_pretty(&learner.spec(&title)).unwrap_or_default() + "\n";
            match output {
                Some(path) => {
                    if let Err(e) = std::fs::write(&path, doc) {
                        return fail(&format!("{}: {e}", path.display()));
                    }
                    eprintln!("{}: learned from {} request(s)", path.display(), samples.len());
                }
                None => print!("{doc}"),
            }
            ExitCode::SUCCESS
        }
        OpenapiCommand::Diff { spec, traffic, json } => {
            let judge = match offline_judge(&spec, "unknown_fields: monitor\nunknown_query: monitor\nmax_violations: 100\n", false) {
                Ok(j) => j,
                Err(e) => return fail(&e),
            };
            let samples = match traffic.read() {
                Ok(s) => s,
                Err(e) => return fail(&e),
            };
            let d = palisade_openapi::learn::diff(&judge, &samples);
            if json {
                let v = serde_json::json!({
                    "requests": d.requests,
                    "described": d.described,
                    "shadow_endpoints": d.shadow_endpoints.iter().map(|((m, t), n)| serde_json::json!({"method": m, "path": t, "requests": n})).collect::<Vec<_>>(),
                    "undescribed": d.undescribed.iter().map(|((op, code, loc), n)| serde_json::json!({"operation": op, "code": code, "location": loc, "requests": n})).collect::<Vec<_>>(),
                });
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                println!("{} request(s), {} described by {spec}", d.requests, d.described);
                if !d.shadow_endpoints.is_empty() {
                    println!("\nShadow endpoints (no operation in the spec):");
                    for ((m, t), n) in &d.shadow_endpoints {
                        println!("  {m} {t}  ({n} request(s))");
                    }
                }
                if !d.undescribed.is_empty() {
                    println!("\nNot described by their operation:");
                    for ((op, code, loc), n) in &d.undescribed {
                        println!("  {op}: {code} at {loc}  ({n} request(s))");
                    }
                }
            }
            if d.described == d.requests {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            }
        }
        OpenapiCommand::Lint { spec, offline } => {
            let settings = match offline_settings(&spec, "", offline) {
                Ok(s) => s,
                Err(e) => return fail(&e),
            };
            match stages::build(&settings) {
                Ok((judge, warnings, _)) => {
                    for w in &warnings {
                        println!("{w}");
                    }
                    println!("{spec}: OK ({} operation(s), {} warning(s))", judge.api.operations.len(), warnings.len());
                    ExitCode::SUCCESS
                }
                Err(errors) => {
                    for e in &errors {
                        println!("{e}");
                    }
                    println!("{spec}: {} problem(s)", errors.len());
                    ExitCode::from(1)
                }
            }
        }
        OpenapiCommand::Validate { spec, offline, request, response, unknown_fields, unknown_query } => {
            let response_mode = if response.is_some() { "block" } else { "off" };
            let extra = format!("response: {response_mode}\nunknown_fields: {unknown_fields}\nunknown_query: {unknown_query}\nmax_violations: 100\n");
            let judge = match offline_judge(&spec, &extra, offline) {
                Ok(j) => j,
                Err(e) => return fail(&e),
            };
            let read = |p: &PathBuf| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
            let req = match read(&request).and_then(|b| palisade_core::rawhttp::parse_request(&b).map_err(|e| format!("{}: {e}", request.display()))) {
                Ok(r) => r,
                Err(e) => return fail(&e),
            };
            let mut findings = Vec::new();
            judge.check_request(&req.view(), palisade_openapi::judge::Phase::Whole, &mut findings);
            if let Some(path) = &response {
                let resp = match read(path).and_then(|b| palisade_core::rawhttp::parse_response(&b).map_err(|e| format!("{}: {e}", path.display()))) {
                    Ok(r) => r,
                    Err(e) => return fail(&e),
                };
                judge.check_response(&req.view(), &resp.view(), &mut findings);
            }
            let blocked = findings.iter().any(|f| f.severity == palisade_openapi::judge::Severity::Block);
            println!(
                "{}",
                if blocked {
                    "block"
                } else if findings.is_empty() {
                    "allow"
                } else {
                    "allow (with findings that are only monitored)"
                }
            );
            for f in &findings {
                let sev = if f.severity == palisade_openapi::judge::Severity::Block { "block" } else { "monitor" };
                let at = if f.location.is_empty() { String::new() } else { format!(" at {}", f.location) };
                println!("  {sev}: {}{at}: {}", f.code, f.detail);
            }
            if blocked {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}

fn check(path: &std::path::Path, offline: bool) -> ExitCode {
    let warnings = std::sync::Arc::new(stages::Checks::new(offline));
    // Problems of the file, then those found building the stages of the apps that decoded (a
    // typo in one section does not hide the problems of another).
    let (config, mut errors) = palisade_config::load_file_all(path);
    let mut summary = None;
    if let Some(cfg) = config {
        summary = Some((cfg.apps.len(), cfg.listen.len()));
        let plan = body_plan(&cfg);
        match palisade_proxy::Snapshot::build(cfg, 0, &stages::factory(stages::Use::Check(warnings.clone()))) {
            Ok(snap) if errors.is_empty() => {
                for line in plan {
                    println!("{line}");
                }
                for app in &snap.apps {
                    if let (Some(d), Some(file)) = (&app.grpc_types, &app.cfg.grpc.descriptor_set) {
                        let (messages, methods) = d.counts();
                        println!("app `{}`: gRPC descriptor set {}: {messages} message type(s), {methods} method(s)", app.cfg.name, file.value.display());
                    }
                }
            }
            Ok(_) => {}
            Err(e) => errors.extend(e.0),
        }
    }
    for w in warnings.lock().map(|w| w.clone()).unwrap_or_default() {
        println!("{w}");
    }
    if errors.is_empty() {
        let (apps, listeners) = summary.unwrap_or_default();
        println!("{}: OK ({apps} app(s), {listeners} listener(s))", path.display());
        return ExitCode::SUCCESS;
    }
    let count = errors.len();
    println!("{}", palisade_config::ConfigErrors(errors));
    println!("{}: {count} problem(s)", path.display());
    ExitCode::from(1)
}

/// What happens to request bodies, per app, in the words of `check`'s output (apps with the
/// same limits on one line).
fn body_plan(cfg: &palisade_config::Config) -> Vec<String> {
    use palisade_config::read::human_size;
    let mut plans: Vec<(String, Vec<&str>)> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for a in &cfg.apps {
        let (max, inspect) = (human_size(a.max_body_size), human_size(a.inspect_body));
        let beyond = if a.inspect_body >= a.max_body_size {
            format!("over {max}: 413")
        } else {
            match a.oversize {
                palisade_config::Oversize::Stream => format!("over {inspect}: the rest streamed uninspected up to {max}; over {max}: 413"),
                palisade_config::Oversize::Reject => format!("over {inspect}: 413 (oversize: reject; max_body_size {max} is not reachable)"),
            }
        };
        let plan = format!("bodies inspected up to {inspect}; {beyond}");
        let i = *index.entry(plan.clone()).or_insert_with(|| {
            plans.push((plan, Vec::new()));
            plans.len() - 1
        });
        plans[i].1.push(a.name.as_str());
    }
    plans
        .into_iter()
        .map(|(plan, apps)| {
            let names = apps.iter().take(5).map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
            let more = if apps.len() > 5 { format!(" and {} more", apps.len() - 5) } else { String::new() };
            format!("{} {names}{more}: {plan}", if apps.len() == 1 { "app" } else { "apps" })
        })
        .collect()
}

fn serve(cfg: palisade_config::Config, path: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    use tokio::signal::unix::{signal, SignalKind};
    // Signal handlers go in before anything listens, so that a supervisor's SIGHUP or SIGTERM
    // right after start is never fatal.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut hup, mut term, mut int) = {
        let _enter = rt.enter();
        (signal(SignalKind::hangup())?, signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?)
    };
    let running = match palisade_proxy::start(cfg, stages::factory(stages::Use::Serve)) {
        Ok(r) => r,
        Err(palisade_proxy::StartError::Config(errors)) => {
            eprintln!("{errors}");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    running.shared().set_config_path(path.clone());
    rt.block_on(async {
        loop {
            tokio::select! {
                _ = hup.recv() => {
                    match running.shared().reload_file() {
                        Ok(_) => {}
                        Err(palisade_proxy::server::ReloadError::NoFile) => tracing::warn!("SIGHUP ignored: the demo has no configuration file to reload"),
                        Err(e) => tracing::error!(errors = %e, "reload rejected; the previous configuration keeps serving"),
                    }
                }
                _ = term.recv() => break,
                _ = int.recv() => break,
            }
        }
        anyhow::Ok(())
    })?;
    tracing::info!("shutting down: draining in-flight requests");
    // A second signal during the drain exits at once.
    std::thread::spawn(|| {
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
            rt.block_on(async {
                use tokio::signal::unix::{signal, SignalKind};
                if let (Ok(mut t), Ok(mut i)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
                    tokio::select! { _ = t.recv() => {}, _ = i.recv() => {} }
                    eprintln!("palisade: second signal, exiting now");
                    demo::remove_dir();
                    std::process::exit(1);
                }
            });
        }
    });
    running.shutdown();
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Rows `(command, option, help)` of the command line: one per command (option empty) and
    /// one per option or argument, as `palisade --help` and each subcommand's `--help` print
    /// them.
    fn cli_rows() -> Vec<(String, String, String)> {
        fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String, String)>) {
            let one_line = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
            out.push((path.to_string(), String::new(), one_line(cmd.get_about().map(|a| a.to_string()).unwrap_or_default())));
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" || (arg.is_global_set() && path != "palisade") {
                    continue;
                }
                let name = match (arg.get_long(), arg.get_short()) {
                    (Some(l), Some(s)) => format!("-{s}, --{l}"),
                    (Some(l), None) => format!("--{l}"),
                    _ => format!("<{}>", id.to_ascii_uppercase()),
                };
                out.push((path.to_string(), name, one_line(arg.get_help().map(|h| h.to_string()).unwrap_or_default())));
            }
            for sub in cmd.get_subcommands() {
                if sub.get_name() != "help" {
                    walk(sub, &format!("{path} {}", sub.get_name()), out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&super::Cli::command(), "palisade", &mut out);
        out
    }

    /// The "Command line" table of docs/CONFIG.md lists exactly what `--help` prints, in the
    /// same words.
    #[test]
    fn help_matches_the_configuration_reference() {
        let doc = include_str!("../../../docs/CONFIG.md");
        let section = doc.split("\n## Command line\n").nth(1).expect("docs/CONFIG.md has a `## Command line` section");
        let section = section.split("\n## ").next().unwrap_or(section);
        let documented: Vec<(String, String, String)> = section
            .lines()
            .filter(|l| l.starts_with("| `palisade"))
            .map(|l| {
                let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(|c| c.trim().trim_matches('`')).collect();
                (cells[0].to_string(), cells.get(1).copied().unwrap_or("").to_string(), cells.get(2).copied().unwrap_or("").to_string())
            })
            .collect();
        let expected = cli_rows();
        let undescribed: Vec<String> = expected.iter().filter(|(_, _, h)| h.is_empty()).map(|(c, o, _)| format!("`{c} {o}`")).collect();
        assert!(undescribed.is_empty(), "no help text: {}", undescribed.join(", "));
        let table: String =
            expected.iter().map(|(c, o, h)| format!("| `{c}` | {} | {h} |\n", if o.is_empty() { String::new() } else { format!("`{o}`") })).collect();
        assert_eq!(documented, expected, "docs/CONFIG.md's command line table should be:\n{table}");
    }
}
