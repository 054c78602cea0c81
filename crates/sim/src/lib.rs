//! ticktrade's simulator: an exchange of its own that speaks Deribit's API v2 on one port
//! (WebSocket JSON-RPC at `/ws/api/v2`, HTTP JSON-RPC at `/api/v2/...`), so the whole system
//! runs and is tested offline and any Deribit client connects by URL only.
//!
//! Owns: the server (axum on tokio, optional TLS), sessions (auth, heartbeats, credits,
//! cancel-on-disconnect), the engine task that owns the venue and fans events out to bounded
//! per-session queues, fault injection, and the in-process handle tests and the CLI use.
//! Must not: let one session disturb another (bounded queues, per-session credits, a slow
//! subscriber is disconnected with a reason), log a secret, or pass a price through `f64`.
//!
//! The venue is `ticktrade-exchange` (matching, order types and triggers, fees, positions,
//! exact balances and margins, its catalogue and synthetic market); Deribit's wire formats
//! (envelope, channel names, book frames, instrument specs) are `ticktrade-deribit-proto`'s.
//!
//! Deliberate differences from Deribit (checked by the vector test, listed there too): no funding or
//! liquidation model (those fields are 0); `trades.*`/`user.*` aggregated intervals are sent
//! per event; `incremental_ticker` changes carry every field. WebSocket is `yawc`, which
//! accepts permessage-deflate when offered (see `server`).
//!
//! # Layout
//! - `rpc`: the error value, typed params (`-32602` names the parameter), envelope wrappers.
//! - `clock`: `SimClock`, the one source of time, and `TokioClock` for paused-time tests.
//! - `auth`: keys, `Secret`, tokens, scopes, signatures.
//! - `fault`: fault kinds, rules, log. Fault schedules and `auth`'s tokens draw from the
//!   core's `SplitMix64`, seeded from `SimConfig::seed` (`seeded_rng`).
//! - `market`: the exchange, its synthetic market and catalogue, rendered as API objects.
//! - `engine`: the task owning the market; methods; publishing.
//! - `session`: per-connection state and request dispatch.
//! - `coverage`: served / out-of-scope methods, their error, the `docs/PROTOCOLS.md` table.
//! - `ws`, `http`, `server`: the front ends and the listener.

pub mod auth;
pub mod clock;
pub mod coverage;
mod engine;
pub mod fault;
mod http;
mod market;
mod rpc;
mod server;
mod session;
mod ws;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ticktrade_core::{Decimal, Side};
use tokio::sync::{mpsc, oneshot, watch};

pub use auth::{ApiKey, Secret};
pub use clock::{SimClock, TokioClock};
pub use fault::{Fault, FaultRecord, FaultRule};
pub use market::CatalogueError;
pub use server::TlsSource;
pub use ticktrade_deribit_proto::ratelimit::RateLimits;

use engine::{Command, EngineConfig, Stats};
use fault::{FaultLog, Faults};
use session::Shared;

/// How to run a simulator.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub listen: SocketAddr,
    pub seed: u64,
    /// Synthetic market events per second (quotes, cancels, trades), over all instruments.
    pub rate_per_s: u32,
    /// A recorded `public/get_instruments` reply; `None` = the built-in set.
    pub instruments_file: Option<PathBuf>,
    /// API keys, one account each; empty = the default key.
    pub keys: Vec<ApiKey>,
    pub faults: Vec<FaultRule>,
    pub tls: Option<TlsSource>,
    /// Request credits per session (Deribit's defaults; `RateLimits::unlimited` for floods).
    pub limits: RateLimits,
    pub testnet: bool,
    /// Smallest `public/set_heartbeat` interval accepted (Deribit: 10 s).
    pub min_heartbeat_s: u64,
    /// Frames a session may have queued before it is disconnected as a slow consumer.
    pub queue_capacity: usize,
    pub token_expires_s: i64,
    /// Where every timestamp, token expiry, credit refill and idle check reads time.
    pub clock: SimClock,
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            seed: 1,
            rate_per_s: 50,
            instruments_file: None,
            keys: Vec::new(),
            faults: Vec::new(),
            tls: None,
            limits: RateLimits::default(),
            testnet: false,
            min_heartbeat_s: 10,
            queue_capacity: 4_096,
            token_expires_s: 900,
            clock: SimClock::system(),
        }
    }
}

/// Why a simulator did not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Server(#[from] server::ServerError),
    #[error(transparent)]
    Catalogue(#[from] market::CatalogueError),
    #[error("reading instruments file {path}: {source}")]
    Read { path: String, source: std::io::Error },
}

/// Counters for the status line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    pub connections: u64,
    pub orders: u64,
    pub book_changes: u64,
}

/// A running simulator. Dropping it does not stop it; call [`SimHandle::shutdown`].
pub struct SimHandle {
    addr: SocketAddr,
    tls: bool,
    cert_der: Option<Vec<u8>>,
    engine: mpsc::Sender<Command>,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    stats: Arc<Stats>,
    keys: Vec<ApiKey>,
}

/// Best levels of a book as exact decimals (price, amount), best first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BookTop {
    pub change_id: i64,
    pub bids: Vec<(Decimal, Decimal)>,
    pub asks: Vec<(Decimal, Decimal)>,
}

/// Starts a simulator on 127.0.0.1 with an ephemeral port (tests, the shell's default venue).
pub async fn spawn_loopback(mut config: SimConfig) -> Result<SimHandle, SimError> {
    config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    spawn(config).await
}

/// Starts a simulator on `config.listen`.
pub async fn spawn(config: SimConfig) -> Result<SimHandle, SimError> {
    let now = config.clock.utc();
    let (catalogue, infos) = match &config.instruments_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| SimError::Read { path: path.display().to_string(), source })?;
            market::catalogue_from_file(&text, now)?
        }
        None => market::builtin_catalogue(now)?,
    };
    let market = market::Market::new(catalogue, infos, config.seed, config.rate_per_s, now);
    let keys = if config.keys.is_empty() { vec![ApiKey::default_key()] } else { config.keys.clone() };
    let stats = Arc::new(Stats::default());
    let fault_log = Arc::new(FaultLog::default());
    let (engine_tx, engine_rx) = mpsc::channel(1_024);
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let shared = Arc::new(Shared {
        engine: engine_tx.clone(),
        clock: config.clock.clone(),
        tokens: std::sync::Mutex::new(auth::Tokens::new(keys.clone(), config.seed, config.token_expires_s)),
        limits: config.limits,
        testnet: config.testnet,
        min_heartbeat_s: config.min_heartbeat_s,
        queue_capacity: config.queue_capacity.max(16),
        response_faults: std::sync::Mutex::new(Faults::new(config.faults.clone(), config.seed ^ 1)),
        fault_log: fault_log.clone(),
        next_session: AtomicU64::new(1),
        http_credits: std::sync::Mutex::new(std::collections::HashMap::new()),
        cancel_on_disconnect_defaults: std::sync::Mutex::new(std::collections::HashMap::new()),
    });
    let engine_config = EngineConfig {
        rate_per_s: config.rate_per_s,
        testnet: config.testnet,
        faults: Faults::new(config.faults.clone(), config.seed),
        fault_log,
        stats: stats.clone(),
        clock: config.clock.clone(),
    };
    let engine_task = tokio::spawn(engine::run(market, engine_config, engine_rx));
    let (tls, cert_der) = match &config.tls {
        Some(source) => {
            let (acceptor, der) = server::tls_acceptor(source)?;
            (Some(acceptor), Some(der))
        }
        None => (None, None),
    };
    let is_tls = tls.is_some();
    let (addr, server_task) = server::start(config.listen, shared.clone(), tls, shutdown_rx).await?;
    tracing::info!(%addr, tls = is_tls, "simulator listening");
    Ok(SimHandle {
        addr,
        tls: is_tls,
        cert_der,
        engine: engine_tx,
        shared,
        shutdown: shutdown_tx,
        tasks: vec![engine_task, server_task],
        stats,
        keys,
    })
}

impl SimHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ws://127.0.0.1:PORT/ws/api/v2` (or `wss://` with TLS).
    pub fn ws_url(&self) -> String {
        format!("{}://{}/ws/api/v2", if self.tls { "wss" } else { "ws" }, self.addr)
    }

    /// `http://127.0.0.1:PORT/api/v2` (or `https://`).
    pub fn http_url(&self) -> String {
        format!("{}://{}/api/v2", if self.tls { "https" } else { "http" }, self.addr)
    }

    /// The self-signed (or loaded) certificate, DER, when serving TLS.
    pub fn certificate_der(&self) -> Option<&[u8]> {
        self.cert_der.as_deref()
    }

    /// The same certificate as PEM, for a client to trust as its root (`--ca-cert FILE`).
    pub fn certificate_pem(&self) -> Option<String> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(self.cert_der.as_deref()?);
        let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
        for line in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(line).unwrap_or_default());
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
        Some(pem)
    }

    /// The API keys clients may use (one account each).
    pub fn keys(&self) -> &[ApiKey] {
        &self.keys
    }

    /// Injects a fault now. Per-response faults apply to the next responses of any session;
    /// book faults to the next book change frame; session faults at once.
    pub fn inject(&self, fault: Fault) {
        match fault {
            Fault::Delay { .. } | Fault::TooManyRequests { .. } => {
                if let Ok(mut faults) = self.shared.response_faults.lock() {
                    faults.inject(fault);
                }
            }
            other => {
                if self.engine.try_send(Command::Inject(other)).is_err() {
                    tracing::warn!("fault not injected: engine queue full or stopped");
                }
            }
        }
    }

    /// Every fault injected so far, oldest first.
    pub fn fault_log(&self) -> Vec<FaultRecord> {
        self.shared.fault_log.snapshot()
    }

    pub fn stats(&self) -> SimStats {
        SimStats {
            connections: self.stats.connections.load(Ordering::Relaxed),
            orders: self.stats.orders.load(Ordering::Relaxed),
            book_changes: self.stats.book_changes.load(Ordering::Relaxed),
        }
    }

    /// The top `depth` levels of `instrument` as the engine holds them now.
    pub async fn book_top(&self, instrument: &str, depth: usize) -> Option<BookTop> {
        let (tx, rx) = oneshot::channel();
        let name = instrument.to_owned();
        let inspect = move |market: &market::Market| {
            let top = market.find(&name).map(|instr| {
                let spec = market.spec(instr);
                let side = |s| {
                    market
                        .levels(instr, s, depth)
                        .into_iter()
                        .map(|(p, q)| (spec.price_to_decimal(p), spec.qty_to_decimal(q)))
                        .collect()
                };
                BookTop { change_id: market.change_id(instr), bids: side(Side::Buy), asks: side(Side::Sell) }
            });
            let _ = tx.send(top);
        };
        self.engine.send(Command::Inspect(Box::new(inspect))).await.ok()?;
        rx.await.ok().flatten()
    }

    /// Stops accepting, closes every session with "simulator shutting down", stops the engine.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.engine.send(Command::Shutdown).await;
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// The seeded generator behind fault schedules and token strings (the core's splitmix64, its
/// state offset so streams differ from other users of the same seed). Not for anything an
/// attacker must not predict: tokens here only need to be unique on a local simulator.
pub(crate) fn seeded_rng(seed: u64) -> ticktrade_core::SplitMix64 {
    ticktrade_core::SplitMix64::seeded(seed)
}
