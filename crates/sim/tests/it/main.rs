//! The simulator's loopback tests, one binary: each module covers one behaviour (the WebSocket
//! and HTTP APIs, the vectors walk, faults, scopes, triggers, cancel-on-disconnect, TLS, ...).
//! One binary links the simulator once instead of once per file.

#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test with its message")]

mod account_reads;
mod cancel_on_disconnect;
mod common;
mod coverage;
mod deflate;
mod faults;
mod history_vectors;
mod http_api;
mod mmp_trigger;
mod order_reports;
mod robustness;
mod scopes;
mod tls;
mod triggers;
mod vectors;
mod ws_api;
