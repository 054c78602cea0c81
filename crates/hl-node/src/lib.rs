//! The Hyperliquid order-book server's engine: follows hl-node's data files as they are
//! written, keeps an L4 book for every coin, and serves Hyperliquid's WebSocket and `/info` API.
//!
//! Owns: file following (notify + polling fallback, hourly rollover, partial lines), joining
//! the three streams by block height, the books, L2 at the seven precisions for what clients
//! subscribed to, per-client bounded queues, and the synthetic hl-node output generator.
//! Must not: request a snapshot on a timer, reorder blocks for a client, or let a slow client
//! stall the others (its queue fills, it is disconnected with a reason).
//!
//! # Layout
//! - `coins`: the coin table and per-coin integer units.
//! - `books`: L4 books for every coin and the per-block apply rules (pure).
//! - `l2`: the seven precisions of a book side (adapters to `ticktrade_book::aggregate`) and
//!   the rules that let a view skip its aggregation (pure).
//! - `ctx`: a book's part of an asset context: mid and impact prices (pure).
//! - `join`: the by-height join of the three streams (pure).
//! - `follow`: hourly-file followers (I/O).
//! - `synth`: the deterministic synthetic node (model pure, writer I/O).
//! - `verify`: books rebuilt from files against a snapshot of the same height.
//! - `info_client`: the start-up POST to the node's info server (I/O).
//! - `server`: the engine thread, subscriptions and per-client queues, `/ws` and `/info` (I/O).
//! - `sched`: opt-in real-time scheduling of the engine's threads (`--rt-priority`).

pub mod books;
pub mod coins;
pub mod ctx;
pub mod follow;
pub mod info_client;
pub mod join;
pub mod l2;
pub mod sched;
pub mod server;
pub mod synth;
pub mod verify;
