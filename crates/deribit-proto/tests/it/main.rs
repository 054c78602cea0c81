//! The protocol crate's integration tests, one binary: every recorded vector decoded or skipped
//! with a reason, request vectors, instruments and robustness against malformed input. The
//! allocation test keeps its own binary (a counting global allocator).

#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test with its message")]

mod instruments;
mod request_vectors;
mod robustness;
mod vectors;
