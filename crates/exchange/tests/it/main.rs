//! The exchange's integration tests, one binary: the engine through its public API, invariants
//! and models checked against naive ones, and the synthetic market. The allocation test keeps its
//! own binary, since it installs a counting global allocator.

#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test with its message")]

mod engine;
mod invariants;
mod matching_model;
mod mmp_model;
mod synth;
