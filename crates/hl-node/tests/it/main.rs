//! The Hyperliquid server's tests, one binary: replay of node files, the WebSocket and per-user
//! feeds, the fast decoder and the NATS bus. Two tests keep their own binaries: the allocation
//! test (a counting global allocator) and the real-time test, which reads its server's threads
//! by name from the process's task list.

#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test with its message")]

mod bus;
#[path = "../common.rs"]
mod common;
mod fast_decode;
mod feeds;
mod replay;
mod ws;
