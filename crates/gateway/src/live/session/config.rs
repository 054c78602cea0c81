//! How to run a session (`LiveConfig`), how it ends (`Exit`, `LiveError`), what it counted
//! and reports (`LiveStats`, `LiveReport`), and how another thread stops it (`StopHandle`).
//!
//! Owns: the session's configuration and report types.
//! Must not: hold session state.

use super::*;

/// How to run a session.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// `ws://` (loopback) or `wss://` endpoint.
    pub url: String,
    pub connect: HotOptions,
    /// `None`: market data only (public books, nothing private, `--dry-run` without a key).
    pub credentials: Option<Credentials>,
    /// Send the secret itself (`client_credentials`) instead of an HMAC signature.
    pub send_secret: bool,
    /// `public/set_heartbeat` interval (Deribit's minimum is 10).
    pub heartbeat_s: u32,
    pub cancel_on_disconnect: bool,
    /// A book with no update for this long is re-subscribed.
    pub stale_after: Duration,
    /// Run everything except writing the strategy's requests.
    pub dry_run: bool,
    /// Assumed until the account's own limits are read.
    pub rate_limits: RateLimits,
    /// The strategy's `on_timer` period.
    pub timer: Duration,
    /// Longest blocking read before housekeeping runs on a quiet connection.
    pub poll: Duration,
    /// Never block in a read: poll the socket in a loop (`run --busy-poll`). The thread keeps
    /// its vCPU and its caches, and a frame is handled as soon as it lands.
    pub busy_poll: bool,
    pub reconnect_base: Duration,
    pub reconnect_max: Duration,
    /// How long stopping may take before the session gives up and reports what is left.
    pub shutdown_timeout: Duration,
    /// Close positions with reduce-only market orders when stopping.
    pub flatten: bool,
    /// Stop once this many places and edits were sent (benchmarks, tests).
    pub stop_after_orders: Option<u64>,
    /// Push a `Status` entry once a second (the status line).
    pub status_every: Option<Duration>,
    /// Pace by the limits the account reports (`get_account_summary`), not `rate_limits`.
    pub adopt_account_limits: bool,
    /// Trades asked for per catch-up request (Deribit's most, 1000); a smaller page only
    /// makes a test page through few trades.
    pub trades_page: u32,
}

impl LiveConfig {
    pub fn new(url: impl Into<String>) -> LiveConfig {
        LiveConfig {
            url: url.into(),
            connect: HotOptions::default(),
            credentials: None,
            send_secret: false,
            heartbeat_s: 10,
            cancel_on_disconnect: true,
            stale_after: Duration::from_secs(30),
            dry_run: false,
            rate_limits: RateLimits::client_default(),
            timer: Duration::from_millis(100),
            poll: Duration::from_millis(20),
            busy_poll: false,
            reconnect_base: Duration::from_millis(100),
            reconnect_max: Duration::from_secs(5),
            shutdown_timeout: Duration::from_secs(10),
            flatten: false,
            stop_after_orders: None,
            status_every: Some(Duration::from_secs(1)),
            adopt_account_limits: true,
            trades_page: 1000,
        }
    }
}

/// Why a session could not go on.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("connecting to {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: ConnectError,
    },
    #[error("the venue refused the credentials: {code} {message}")]
    Auth { code: i64, message: String },
    #[error("the venue refused {what}: {code} {message}")]
    Refused { what: &'static str, code: i64, message: String },
    #[error("{0}")]
    Setup(String),
}

/// How a session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Stopped on request; the venue lists no open order of the session's instruments (and,
    /// with `flatten`, no position).
    Clean,
    /// Stopped, but the venue still listed open orders or positions at the deadline.
    Incomplete { open_orders: usize, positions: Vec<(String, i64)> },
}

/// Counters of one session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveStats {
    pub frames: u64,
    pub book_frames: u64,
    pub places: u64,
    pub edits: u64,
    pub cancels: u64,
    pub results: u64,
    pub rejects: u64,
    pub notifications: u64,
    pub connects: u64,
    pub gaps: u64,
    pub stale_books: u64,
    pub malformed: u64,
    /// Reports naming an instrument, label or state the session does not track.
    pub dropped_reports: u64,
    /// Order reports of another client's orders on the same account (left alone).
    pub foreign_reports: u64,
    /// Places and edits refused locally because the venue's credits were spent.
    pub rate_limited: u64,
    pub test_requests: u64,
    pub would_send: u64,
    /// Reconciliation and stop queries sent (open orders, positions, trades catch-up pages).
    pub queries: u64,
}

/// What a session did.
#[derive(Clone, Debug)]
pub struct LiveReport {
    pub exit: Exit,
    pub stats: LiveStats,
    /// Final position of each instrument, in lots, by name.
    pub positions: Vec<(String, i64)>,
    /// Total PnL of each instrument at the last mid, in its PnL currency.
    pub pnl: Vec<(String, Option<Decimal>)>,
    pub kill: Option<Blocked>,
}

/// Asks a running session to stop (from a signal handler's thread, stdin, a test).
#[derive(Clone, Debug, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag itself, for `signal_hook::flag::register`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}
