//! `--exchange sim`: the same live session against the embedded simulator (`ticktrade_sim`) on
//! loopback, plain or TLS. The simulator's market publishes `book.BTC-PERPETUAL.raw` changes at
//! its own rate; the session authenticates, subscribes, reconciles, and answers book changes
//! with edits of its resting bid, which the simulator matches and acknowledges.
//!
//! Owns: the simulator's runtime and the run's wiring.
//! Must not: time anything itself; the stamps come from the session's ring, as in-process.
//! What it cannot give: the venue-side view and `write_floor` (the simulator neither
//! timestamps ticks for us nor answers the floor probe), and exact pacing (ticks come when the
//! simulated market changes, including changes caused by our own orders). The simulator runs
//! without request-credit limits (`RateLimits::unlimited`), or its order bucket would end the run.

use anyhow::anyhow;
use ticktrade_core::InstrumentSpec;
use ticktrade_gateway::hot::Recorded;
use ticktrade_gateway::live::{LiveStats, StopHandle};
use ticktrade_gateway::venue::{Credentials, Secret};
use ticktrade_net::hot::TlsRoots;
use ticktrade_sim::{ApiKey, RateLimits, SimConfig, TlsSource};

use super::session::{RunOptions, Target, drive};

/// What the run measured, and how many orders the simulator counted.
pub(crate) struct SimRun {
    pub(crate) recorded: Recorded,
    pub(crate) stats: LiveStats,
    pub(crate) sim_orders: u64,
}

pub(crate) fn run(spec: &InstrumentSpec, orders: u64, rate_per_s: u32, options: RunOptions) -> anyhow::Result<SimRun> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let sim = runtime
        .block_on(ticktrade_sim::spawn_loopback(SimConfig {
            rate_per_s,
            limits: RateLimits::unlimited(),
            tls: options.tls.then_some(TlsSource::SelfSigned),
            ..SimConfig::default()
        }))
        .map_err(|e| anyhow!("simulator: {e}"))?;
    let dir = tempfile::tempdir()?;
    let roots = match sim.certificate_pem() {
        Some(pem) => {
            let path = dir.path().join("sim.pem");
            std::fs::write(&path, pem)?;
            TlsRoots::File(path)
        }
        None => TlsRoots::Webpki,
    };
    let key = ApiKey::default_key();
    let target = Target {
        url: sim.ws_url(),
        roots,
        credentials: Credentials { client_id: key.client_id, client_secret: Secret::new(key.client_secret.expose()) },
        stop_after_orders: Some(orders),
        floor: false,
    };
    let (stats, recorded, _pinned) = drive(spec, &target, options, StopHandle::default())?;
    let sim_orders = sim.stats().orders;
    runtime.block_on(sim.shutdown());
    Ok(SimRun { recorded, stats, sim_orders })
}
