//! Order books: full-depth L2 books rebuilt from snapshots and deltas, order-level (L4) books,
//! and L2 aggregation at several precisions.
//!
//! Owns: the ladders, sequence checks (`change_id`/`prev_change_id`), the stale flag,
//! aggregation (Deribit `group`, Hyperliquid `nSigFigs`/`mantissa`), top-N views, checksums.
//! Must not: decode JSON, read a clock, log, allocate per update in steady state, or resync on
//! its own: a gap returns an error, the book stays stale, and the caller fetches a snapshot.
//!
//! # Layout
//! - `l2`: `L2Book`, the full-depth price ladder and its sequence rules.
//! - `l4`: `L4Book`, orders by id in price-time queues, and its L2 view.
//! - `aggregate`: grouped L2 views at coarser precisions.
//! - `workload`: deterministic Deribit-shaped delta streams for tests and benchmarks.

pub mod aggregate;
pub mod l2;
pub mod l4;
pub mod workload;

pub use aggregate::{AggLevel, AggregateBuf, Grouping, HlPrecision};
pub use l2::{Action, ApplyError, L2Book, Level, LevelUpdate, VwapFill};
