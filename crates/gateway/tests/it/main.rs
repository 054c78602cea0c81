//! The gateway's loopback tests, one binary: the Deribit venue and the live session against the
//! simulator (reconciliation by currency, many instruments, isolation). The allocation test keeps
//! its own binary (a counting global allocator).

#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test with its message")]

mod deribit_sim;
mod live_currency;
mod live_many;
mod venue_isolation;
