//! The trading side: the exchange-agnostic `Venue` trait (async control plane), the Deribit
//! client that implements it, order management, and the live session that trades on one
//! thread.
//!
//! Owns: everything between a trader (or a test) and a venue's socket.
//! Must not: know a venue's wire format outside that venue's module (`deribit` only talks
//! to `ticktrade_deribit_proto`), print a secret, or use floats for prices or sizes.
//!
//! # Layout
//! - `venue`: the `Venue` trait, typed parameters and events (no JSON crosses it).
//! - `venues`: opening a venue by endpoint name or URL (front ends never name a venue's types).
//! - `oms`: `OrderTracker`, order/fill/position state merged from any-order reports.
//! - `deribit`: the Deribit WebSocket JSON-RPC client implementing `Venue`.
//! - `live`: the live session `ticktrade run` drives: a strategy on the hot thread, over ws/wss,
//!   with order state, reconciliation and the kill switch.
//! - `hot`: what the hot path's benchmarks and tests share (synthetic feed, stamp recorder,
//!   in-process venues). The trading shell is the binary's (`ticktrade::shell`).

pub mod deribit;
pub mod hot;
pub mod live;
pub mod oms;
pub mod venue;
pub mod venues;
