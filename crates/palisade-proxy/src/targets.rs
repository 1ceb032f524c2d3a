//! Upstream targets and balancing: where each target is reached, round-robin or least
//! connections over the available ones, passive ejection after failures and the flags of active
//! health checks. [`Upstream`] belongs to a configuration snapshot and is shared by all workers
//! through atomics; connections and requests are `upstream.rs`'s.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use http::HeaderValue;
use palisade_config::{Balance, Target, UpstreamConfig};

/// Where a target is reached, resolved at snapshot build time.
#[derive(Clone, Debug)]
pub enum Addr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

pub struct TargetState {
    pub target: Target,
    pub addr: Addr,
    /// `host:port` for `host_header: upstream`.
    pub authority: HeaderValue,
    pub(crate) active: AtomicUsize,
    pub(crate) fails: AtomicU32,
    /// Milliseconds since [`epoch`] until which the target is ejected.
    pub(crate) ejected_until: AtomicU64,
    /// Result of active health checks (true when none are configured).
    pub(crate) healthy: AtomicBool,
    pub(crate) check_streak: AtomicU32,
}

impl TargetState {
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    pub(crate) fn available(&self, now_ms: u64) -> bool {
        self.healthy.load(Ordering::Relaxed) && self.ejected_until.load(Ordering::Relaxed) <= now_ms
    }
}

/// The protocol an upstream's targets speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `http://` and `unix:`: the inline HTTP/1.1 client.
    Http1,
    /// `h2c://`: HTTP/2 with prior knowledge (`crate::h2up`).
    H2c,
    /// `https://`: TLS; HTTP/2 when the upstream chooses `h2` by ALPN, else HTTP/1.1.
    Https,
}

pub struct Upstream {
    pub cfg: UpstreamConfig,
    pub protocol: Protocol,
    /// For `https://`: the client configurations offering `h2` and `http/1.1`, and `http/1.1`
    /// only, and the name the certificates must hold (per target when not configured).
    pub tls: Option<UpstreamTls>,
    /// An `https://` upstream answered ALPN with `http/1.1` (or nothing): it is spoken to over
    /// HTTP/1.1 from then on.
    pub(crate) alpn_http1: AtomicBool,
    pub targets: Vec<TargetState>,
    /// Snapshot generation and index, which key the per-worker pools.
    pub generation: u64,
    pub index: usize,
    pub(crate) rr: AtomicUsize,
}

/// A monotonic millisecond clock shared by all workers.
pub(crate) fn now_ms() -> u64 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

impl Upstream {
    /// Resolve targets. Host names are resolved once here (at start and on reload).
    pub fn build(cfg: &UpstreamConfig, generation: u64, index: usize) -> Result<Upstream, (usize, String)> {
        let mut targets = Vec::with_capacity(cfg.targets.len());
        let protocol = match cfg.targets.first().map(|t| &t.value) {
            Some(Target::H2c { .. }) => Protocol::H2c,
            Some(Target::Https { .. }) => Protocol::Https,
            _ => Protocol::Http1,
        };
        let tls = if protocol == Protocol::Https { Some(UpstreamTls::build(&cfg.tls).map_err(|e| (0, e.to_string()))?) } else { None };
        for (i, t) in cfg.targets.iter().enumerate() {
            let (addr, authority) = match &t.value {
                Target::Tcp { host, port } | Target::H2c { host, port } | Target::Https { host, port } => {
                    let addr = (host.as_str(), *port)
                        .to_socket_addrs()
                        .map_err(|e| (i, format!("cannot resolve {host}: {e}")))?
                        .next()
                        .ok_or_else(|| (i, format!("{host} resolves to no address")))?;
                    let auth = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
                    (Addr::Tcp(addr), auth)
                }
                Target::Unix(p) => (Addr::Unix(p.clone()), "localhost".to_string()),
            };
            targets.push(TargetState {
                target: t.value.clone(),
                addr,
                authority: HeaderValue::from_str(&authority).map_err(|_| (i, "invalid host".to_string()))?,
                active: AtomicUsize::new(0),
                fails: AtomicU32::new(0),
                ejected_until: AtomicU64::new(0),
                healthy: AtomicBool::new(true),
                check_streak: AtomicU32::new(0),
            });
        }
        Ok(Upstream { cfg: cfg.clone(), protocol, tls, alpn_http1: AtomicBool::new(false), targets, generation, index, rr: AtomicUsize::new(0) })
    }

    /// Whether requests go to this upstream over HTTP/2 (`crate::h2up`): `h2c://`, and
    /// `https://` until an upstream answered ALPN without `h2`.
    pub fn speaks_h2(&self) -> bool {
        match self.protocol {
            Protocol::Http1 => false,
            Protocol::H2c => true,
            Protocol::Https => !self.alpn_http1.load(Ordering::Relaxed),
        }
    }

    /// An `https://` target chose HTTP/1.1 by ALPN.
    pub(crate) fn fall_back_to_http1(&self) {
        if !self.alpn_http1.swap(true, Ordering::Relaxed) {
            tracing::info!(upstream = %self.cfg.name, "the upstream does not offer HTTP/2 by ALPN: speaking HTTP/1.1 to it");
        }
    }

    /// The host name a target's certificate must hold.
    pub(crate) fn server_name(&self, t: usize) -> Result<rustls_pki_types::ServerName<'static>, crate::Error> {
        let name = match (&self.cfg.tls.server_name, &self.targets[t].target) {
            (Some(n), _) => n.clone(),
            (None, Target::Https { host, .. } | Target::Tcp { host, .. } | Target::H2c { host, .. }) => host.clone(),
            (None, Target::Unix(_)) => "localhost".into(),
        };
        rustls_pki_types::ServerName::try_from(name.clone())
            .map_err(|e| crate::Error::caused_by(crate::ErrorKind::Tls, format!("`{name}` is not a valid TLS server name"), e))
    }

    /// Choose a target, skipping `tried` (a bit set) and unavailable ones; when every target is
    /// unavailable, fall back to any untried one rather than refusing outright.
    pub fn pick(&self, tried: u64) -> Option<usize> {
        let n = self.targets.len();
        if n == 1 {
            return (tried & 1 == 0).then_some(0);
        }
        let now = now_ms();
        let candidates = |require_available: bool| {
            (0..n).filter(move |i| *i >= 64 || tried & (1 << i) == 0).filter(move |i| !require_available || self.targets[*i].available(now))
        };
        for strict in [true, false] {
            let choice = match self.cfg.balance {
                Balance::RoundRobin => {
                    let start = self.rr.fetch_add(1, Ordering::Relaxed);
                    let count = candidates(strict).count();
                    if count == 0 {
                        None
                    } else {
                        candidates(strict).nth(start % count)
                    }
                }
                Balance::LeastConnections => {
                    let start = self.rr.fetch_add(1, Ordering::Relaxed);
                    candidates(strict).min_by_key(|i| (self.targets[*i].active(), (i + n - start % n) % n))
                }
            };
            if choice.is_some() {
                return choice;
            }
        }
        None
    }

    pub(crate) fn record_success(&self, t: usize) {
        let ts = &self.targets[t];
        if ts.fails.load(Ordering::Relaxed) != 0 {
            ts.fails.store(0, Ordering::Relaxed);
        }
    }

    pub(crate) fn record_failure(&self, t: usize) {
        let ts = &self.targets[t];
        if self.cfg.max_fails == 0 {
            return;
        }
        let fails = ts.fails.fetch_add(1, Ordering::Relaxed) + 1;
        if fails >= self.cfg.max_fails {
            ts.fails.store(0, Ordering::Relaxed);
            ts.ejected_until.store(now_ms() + self.cfg.eject_for.as_millis() as u64, Ordering::Relaxed);
            tracing::warn!(upstream = %self.cfg.name, target = %ts.target, eject_for = ?self.cfg.eject_for, "target ejected after {fails} consecutive failures");
        }
    }

    /// Whether a target is currently ejected by passive health checking.
    pub fn is_ejected(&self, t: usize) -> bool {
        self.targets[t].ejected_until.load(Ordering::Relaxed) > now_ms()
    }

    /// Feed one active health check result.
    pub fn record_check(&self, t: usize, ok: bool) {
        let Some(hc) = &self.cfg.health_check else { return };
        let ts = &self.targets[t];
        let healthy = ts.healthy.load(Ordering::Relaxed);
        if ok == healthy {
            ts.check_streak.store(0, Ordering::Relaxed);
            return;
        }
        let streak = ts.check_streak.fetch_add(1, Ordering::Relaxed) + 1;
        let needed = if ok { hc.rise } else { hc.fall };
        if streak >= needed {
            ts.healthy.store(ok, Ordering::Relaxed);
            ts.check_streak.store(0, Ordering::Relaxed);
            if ok {
                tracing::info!(upstream = %self.cfg.name, target = %ts.target, "target is healthy again");
            } else {
                tracing::warn!(upstream = %self.cfg.name, target = %ts.target, "target failed its health checks");
            }
        }
    }
}

/// TLS client configurations of an `https://` upstream.
pub struct UpstreamTls {
    /// ALPN `h2`, `http/1.1`.
    pub h2: Arc<rustls::ClientConfig>,
    /// ALPN `http/1.1` only, once the upstream is known to speak HTTP/1.1.
    pub http1: Arc<rustls::ClientConfig>,
}

/// The system's CA bundle (Debian, Fedora, Alpine, macOS-with-openssl locations).
const SYSTEM_CA: &[&str] = &["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"];

impl UpstreamTls {
    pub(crate) fn build(cfg: &palisade_config::UpstreamTls) -> Result<UpstreamTls, crate::Error> {
        use crate::{Error, ErrorKind};
        use rustls_pki_types::pem::PemObject;
        let path = match &cfg.ca {
            Some(p) => p.clone(),
            None => {
                SYSTEM_CA.iter().map(PathBuf::from).find(|p| p.exists()).ok_or_else(|| Error::new(ErrorKind::Tls, "no system CA bundle found: set tls.ca"))?
            }
        };
        let mut roots = rustls::RootCertStore::empty();
        let certs = rustls_pki_types::CertificateDer::pem_file_iter(&path)
            .map_err(|e| Error::caused_by(ErrorKind::Tls, format!("cannot read CA file {}: {e}", path.display()), e))?;
        for c in certs {
            let c = c.map_err(|e| Error::caused_by(ErrorKind::Tls, e.to_string(), e).context(format_args!("CA file {}", path.display())))?;
            // (A bundle may hold certificates rustls cannot use: skipped, as other clients do.)
            let _ = roots.add(c);
        }
        if roots.is_empty() {
            return Err(Error::new(ErrorKind::Tls, format!("CA file {} holds no usable certificate", path.display())));
        }
        let roots = Arc::new(roots);
        let make = |alpn: &[&[u8]]| -> Result<Arc<rustls::ClientConfig>, Error> {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut c = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| Error::caused_by(ErrorKind::Tls, e.to_string(), e))?
                .with_root_certificates(roots.clone())
                .with_no_client_auth();
            c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
            Ok(Arc::new(c))
        };
        Ok(UpstreamTls { h2: make(&[b"h2", b"http/1.1"])?, http1: make(&[b"http/1.1"])? })
    }
}
