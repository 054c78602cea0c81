//! Test helpers every ticktrade crate may dev-depend on: a per-thread allocation counter,
//! loaders for the recorded data in the repository's `testdata/`, and the one WebSocket
//! JSON-RPC client of the loopback tests, real `nats-server` processes for the bus tests, and a
//! runtime a test can freeze (a deliberately slow server).
//!
//! Owns: `CountingAlloc` (proves "no allocation on the hot path") and the paths and formats of
//! `testdata/` (`deribit/examples/`, `hyperliquid/examples/`, `*.frames.jsonl` recordings),
//! `WsClient` (connect, JSON-RPC calls by id, notifications by channel, the close reason).
//! Must not: depend on any other ticktrade crate (it is a leaf, so there are no dev-dependency
//! cycles; the tidy test checks it), or be a normal dependency of anything.
//!
//! Loaders panic with the path in the message when a file is missing or malformed: they run only
//! in tests, where a missing vector is a failed test.
//!
//! # Layout
//! - `alloc`: `CountingAlloc`, a `GlobalAlloc` over `System` with thread-local counters.
//! - `data`: `testdata`, `read_testdata`, `deribit_vector`, `hl_vector`, `vector_names`,
//!   `recorded_frames`, `recorded_frame_lines`.
//! - `ws`: `WsClient`, the loopback tests' WebSocket client.
//! - `nats`: `NatsServer`, a `nats-server` child process on a free port, killed on drop;
//!   `NatsCluster`, several of them routed into one cluster.
//! - `runtime`: `Freezable`, a current-thread runtime on its own thread that a test freezes.

pub mod alloc;
pub mod data;
pub mod nats;
pub mod runtime;
pub mod ws;

pub use alloc::{AllocCount, CountingAlloc};
pub use data::{
    Direction, RecordedFrame, deribit_vector, hl_vector, read_testdata, recorded_frame_lines, recorded_frames,
    testdata, vector_names,
};
pub use nats::{NatsCluster, NatsServer};
pub use runtime::{Freezable, Thaw};
pub use ws::WsClient;
