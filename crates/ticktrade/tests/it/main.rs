//! The binary's tests, one binary: every command run as a user runs it (sim, serve, hl, run, trade,
//! the shell in a pty and in tmux, replay) and the tidy checks. The benchmark tests keep their own
//! binaries: they run timed work that should not share the machine with these.

#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test with its message")]

mod common;
mod hl_cli;
mod replay;
mod run_sim;
mod serve_cli;
mod serve_grouped;
mod shell_sim;
mod shell_tmux;
mod sim_cli;
mod tidy;
mod trade_script;
