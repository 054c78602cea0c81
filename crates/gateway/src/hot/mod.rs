//! The hot path: one thread that reads a market-data frame, decodes it, applies it to the
//! book, lets a strategy decide, encodes the order and writes it.
//!
//! Owns: the synchronous loop and everything on it: `ticktrade_net`'s WebSocket framer
//! (`frame::WsReader`/`WsWriter`) on a blocking `std::net::TcpStream` with `TCP_NODELAY`, the
//! `Strategy` trait and its `OrderSink`, stage
//! stamps t0…t5 (raw TSC readings, converted after t5 and pushed to an SPSC ring), and the
//! recorder thread that drains that ring into histograms.
//! Must not: allocate, lock, log, format or touch the async control plane between t0 and t5
//! (`tests/hot_alloc.rs` counts allocations over 100 000 ticks). The control plane (`venue`,
//! `deribit`) subscribes, authenticates and manages orders; this module only trades.
//!
//! # Code layout
//! The functions a tick runs out of line (`HotLoop::run`, `WsReader::next_message` and `fill`,
//! `Pipeline::on_frame`, `FastBookDecoder::decode` and its number and level helpers,
//! `L2Book::apply_change`, `Ladder::set`/`remove`, `FixedOrderEncoder::encode_into` and its digit
//! writers) carry `#[link_section = "ticktrade_hot"]` on Linux: the linker puts them together in
//! one ≈20 KiB section, so a tick that starts with the caches emptied by the kernel's read and
//! write paths fetches its code from a few adjacent pages instead of lines spread among cold code
//! (`nm -n target/release/ticktrade` lists them side by side; docs/PERFORMANCE.md §8).
//!
//! # Layout
//! - `strategy`: `Strategy`, `BookEvent`, `OrderSink`, `OrderIntent`, `QuoteOnTick`.
//! - `pipeline`: `Pipeline` (decode → book → decide → encode), `RawStamps`, `StageClock`.
//! - `engine`: `HotLoop` (socket read … socket write), `HotConfig`, `FLOOR_PROBE`.
//! - `record`: `spawn_recorder`, `Recorded` (histograms filled off the hot thread).
//! - `feed`: `SyntheticFeed`, seeded BTC-PERPETUAL book frames for tests and benchmarks.
//! - `order_client`: `OrderClient`, orders sent and acknowledged on the same framer
//!   (`ticktrade bench order`).
//! - `order_frame`: `OrderFrame`, an order encoded, masked and framed in one compact block.
//! - `acker`: `Acker`, an in-process venue that acknowledges each request with `usIn`/`usOut`.
//! - `exchange`: `ExchangeSide`, a blocking in-process publisher + order reader on loopback,
//!   closed-loop or gap-paced (`Pace`) (benchmarks and tests; the simulator replaces it where
//!   it is available).

pub mod acker;
pub mod engine;
pub mod exchange;
pub mod feed;
pub mod order_client;
pub mod order_frame;
pub mod pipeline;
pub mod record;
pub mod strategy;

pub use engine::{Exit, FLOOR_PROBE, HotConfig, HotError, HotLoop, LoopReport, pin_current_thread};
pub use pipeline::{Outcome, Pipeline, PipelineStats, RawStamps, StageClock};
pub use record::{Recorded, spawn_recorder};
pub use strategy::{BookEvent, OrderIntent, OrderSink, QuoteOnTick, Strategy};
