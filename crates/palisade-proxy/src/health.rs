//! Active health checks: each target of an upstream probed over HTTP/1.1 (`upstream.rs`) or
//! with the gRPC health protocol (`h2up.rs`), the result recorded on the target
//! ([`Upstream::record_check`]).

use std::sync::Arc;

use crate::targets::Upstream;

/// Run active health checks for `up` until `alive` says the snapshot is gone.
pub async fn health_loop(up: Arc<Upstream>, alive: impl Fn() -> bool) {
    let Some(hc) = up.cfg.health_check.clone() else { return };
    let mut tick = tokio::time::interval(hc.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if !alive() {
            return;
        }
        for t in 0..up.targets.len() {
            let ok = if hc.grpc {
                tokio::time::timeout(hc.timeout, crate::h2up::grpc_probe(&up, t, &hc.service)).await.unwrap_or(false)
            } else {
                tokio::time::timeout(hc.timeout, crate::upstream::probe(&up, t, &hc.path)).await.unwrap_or(false)
            };
            up.record_check(t, ok);
        }
    }
}
