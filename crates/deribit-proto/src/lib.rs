//! Deribit API v2 on the wire: JSON-RPC envelopes both ways, the order-book notification codec,
//! instrument specs, channel names, error codes and request signatures.
//!
//! Owns: every byte ticktrade sends to or reads from Deribit (and what the simulator and the
//! fan-out server send as Deribit), and the exact conversion of Deribit's JSON numbers into
//! `Decimal`/`Price`/`Qty`.
//! Must not: do I/O, read a clock, spawn threads, or pass a price or amount through `f64`.
//! Decoders borrow from the caller's frame and fill caller-owned buffers; encoders append to a
//! caller-owned `Vec<u8>`.
//!
//! # Layout
//! - `envelope`: JSON-RPC 2.0 requests, responses, notifications and heartbeats, both sides.
//! - `book`: `book.{instrument}.{interval}` and grouped book notifications, decode and encode.
//! - `instrument`: `public/get_instruments` results → `InstrumentSpec`.
//! - `channel`: subscription channel names, parsed and formatted.
//! - `error`: Deribit's RPC error codes and the JSON-RPC ones.
//! - `signature`: `client_signature` and `deri-hmac-sha256`, and the `Secret` newtype.
//! - `api`: typed method params and results.
//! - `book_fast`: the hot path's fixed-layout book decoder, same results as `book`.
//! - `order`: the hot path's order encoder (buy/sell of any type and time in force, edit by
//!   label or id) and the origin `OrderLabel`.
//! - `order_fixed`: the same encoder laid out for a cold cache (one struct, fixed-size region).
//! - `requests`: cancels and the session's control requests (auth, heartbeat, subscribe, queries).
//! - `frame`: the hot path's one-pass classifier of a received frame (`scan_frame`).
//! - `report`: order and trade reports (`user.orders`/`user.trades`/`user.changes`, order
//!   results), fixed-layout fast path and general path.
//! - `interval`: interval book channels (`100ms`, `agg2`): the held book, the net change.
//! - `ratelimit`: Deribit's request-credit rules (classes, defaults, buckets) for both sides.
//! - `scan` (private): the small JSON scanner the hand decoders share.
//! - `words` (private): word-at-a-time scans and compares of byte strings (SWAR).

pub mod api;
pub mod book;
pub mod book_fast;
pub mod channel;
pub mod client;
pub mod envelope;
pub mod error;
pub mod frame;
pub mod instrument;
pub mod interval;
pub mod order;
pub mod order_fixed;
pub mod ratelimit;
pub mod report;
pub mod requests;
mod scan;
pub mod signature;
mod words;

pub use book::{Action, BookHeader, BookKind, BookSink, DecimalLevel, LevelUpdate, decode_book, decode_book_units};
pub use envelope::{Heartbeat, Id, Incoming, Notification, Response, RpcError, classify, encode_request};
pub use scan::DecodeError;
