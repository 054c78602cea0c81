//! The book crate's model tests, one binary: L2, L4 and aggregation against naive models. The
//! allocation tests keep their own binaries (a counting global allocator).

#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test with its message")]

mod aggregate_model;
mod l2_model;
mod l4_model;
