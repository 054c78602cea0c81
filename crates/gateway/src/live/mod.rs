//! The live session: the hot loop's own connection to a Deribit-compatible venue, driving a
//! user's strategy (`ticktrade_strategy::Strategy`) on one thread. What `ticktrade run` runs
//! and `ticktrade bench tick-to-trade` measures.
//!
//! Owns: the connection (`ws://` or `wss://` through `ticktrade_net::hot`, rustls verified),
//! authentication, heartbeats, cancel-on-disconnect, the book and private subscriptions, the
//! decoding of book frames, order results and `user.orders`/`user.trades` notifications on the
//! hot thread, the encoding and writing of the strategy's actions (paced by the venue's
//! request credits, `ticktrade_deribit_proto::ratelimit`), reconnection with resync and
//! reconciliation, staleness detection, the kill switch and the clean shutdown.
//! Must not: allocate, log, lock or format between reading a frame and writing the order it
//! caused, nor in steady state at all (`tests/live_alloc.rs`); decide anything a strategy or
//! the risk checks decide (that is `ticktrade_strategy`); skip certificate verification.
//!
//! # How a session runs
//! 1. Connect within the deadline; authenticate (client signature by default); set heartbeats;
//!    enable cancel-on-disconnect; read the account's request limits; subscribe to the books
//!    (`raw` once authenticated, else `100ms`) and to `user.orders`/`user.trades` of each
//!    instrument.
//! 2. Paused until three things hold: every book has a snapshot, the private subscriptions
//!    are confirmed, and orders are reconciled: orders whose fate a disconnect left unknown are
//!    looked up by label, trades missed since the last one seen are fetched, then open orders
//!    and positions replace what the session believed. Only then does the strategy see books.
//! 3. Live: each book frame is decoded (fixed-layout fast path, general fallback), applied,
//!    shown to the strategy; its actions pass the risk checks inside `Context` and go out in
//!    one write. Order results and notifications update order state and positions.
//! 4. A gap in a book, or a book silent for longer than the staleness limit, pauses trading and
//!    re-subscribes that book; a connection silent for longer than the heartbeat allows, or any
//!    error, reconnects with backoff and goes back to 2.
//! 5. Stop (a signal, stdin, the loss limit): the kill switch cancels every order on the
//!    session's instruments, the venue is asked until it lists none open, `--flatten` closes
//!    the positions with reduce-only market orders, and the session returns its report.
//!
//! # Layout
//! - `wire`: the in-flight request table, the queued queries, the instrument table, venue
//!   report conversion.
//! - `session`: `Session` and its loop; beneath it `config` (`LiveConfig`, stats, report),
//!   `incoming` (answers, order reports, trades), `outgoing` (pacing, encoding) and
//!   `housekeeping` (between frames).
//! - `query`: `Query`, a blocking client for one-off requests; `fetch_instruments`.
//! - `control`: answers to control requests: sync, the steps of reconciliation.
//! - `reconcile`: the reconciliation queries (per currency group or instrument), their pacing
//!   and answers.
//! - `stop`: the kill switch's steps and the shutdown deadline.
//! - `journal`: the journal entries, `Journaled`, the observer thread (journal file, status
//!   line, histograms).

mod control;
pub mod journal;
mod query;
mod reconcile;
mod session;
mod stop;
pub mod wire;

pub use journal::{Entry, Journaled, Link, Observed, Observer, ObserverConfig, Status, spawn_observer};
pub use query::{Query, fetch_instruments};
pub use session::{Exit, LiveConfig, LiveError, LiveReport, LiveStats, Session, StopHandle};
