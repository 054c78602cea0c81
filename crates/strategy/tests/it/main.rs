//! The strategy crate's tests, one binary: the order-state model and the built-in strategies on
//! scripted books. The allocation test keeps its own binary (a counting global allocator).

#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test with its message")]

#[path = "../common/mod.rs"]
mod common;
mod order_model;
mod quote;
mod take;
