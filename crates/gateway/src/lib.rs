//! The trading side: the exchange-agnostic `Venue` trait (async control plane), the Deribit
//! client that implements it, order management, and the one-thread hot-path loop.
//!
//! # Layout
//! - `venue`: the `Venue` trait, typed parameters and events (no JSON crosses it).
//! - `deribit`: the Deribit WebSocket JSON-RPC client implementing `Venue`.
//! - `hot`: the synchronous read → decode → book → decide → encode → write loop and `Strategy`.

pub mod deribit;
pub mod hot;
pub mod venue;
