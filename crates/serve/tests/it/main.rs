//! serve's loopback tests, one binary: sessions, fan-out, limits, the web view and the NATS bus,
//! each against real processes and sockets on 127.0.0.1. The CLI arguments test keeps its own
//! binary: it compiles the binary crate's `serve` module at its crate root.

#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test with its message")]

mod bus;
mod common;
mod fanout;
mod limits;
mod session;
mod web_view;
