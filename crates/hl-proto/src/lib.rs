//! Hyperliquid's wire formats: hl-node's data-file records, the L4 snapshot file, and the
//! public WebSocket / `POST /info` messages, as Hyperliquid spells them.
//!
//! Owns: every serde type with Hyperliquid's field names (`nSigFigs`, `raw_book_diff`, …), the
//! node timestamp parser, request validation (allowed `nSigFigs`/`mantissa`/`nLevels`) and the
//! exact error strings clients see.
//! Must not: do I/O, read a clock, keep books, or turn a price into `f64`. Prices and sizes stay
//! the node's decimal strings here; `ticktrade-hl-node` turns them into integer units.
//!
//! # Layout
//! - `time`: node timestamps (`2026-04-30T20:46:43.304461819`) → `Utc`.
//! - `node`: the three by-block streams (`Batch`, `OrderStatus`, `BookDiff`, `NodeFill`).
//! - `snapshot`: the `fileSnapshot`/`l4Snapshots` file.
//! - `ws`: client requests, subscriptions and their validation, server envelopes and errors;
//!   `ws::feeds`: the `allMids`, `bbo`, `orderUpdates` and `userFills` frames.
//! - `info`: `POST /info` requests and the `meta`/`spotMeta` documents.
//! - `orders`: a user's resting orders as `openOrders`/`frontendOpenOrders`/`orderStatus`.
//! - `candle`: the `candle` feed's and `candleSnapshot`'s candles, built from trades.
//! - `asset_ctx`: the asset contexts of `metaAndAssetCtxs`/`spotMetaAndAssetCtxs`, and
//!   `exchangeStatus`.

pub mod asset_ctx;
pub mod candle;
pub mod info;
pub mod node;
pub mod orders;
pub mod snapshot;
pub mod time;
pub mod ws;

pub use node::{Batch, BookDiff, NodeFill, NodeOrder, OrderStatus, RawBookDiff, Str};
pub use time::parse_node_time;
