//! The `ticktrade` library: what the binary's subcommands share with programs built on
//! ticktrade.
//!
//! Owns: `run`, the live strategy runner's command line and wiring, generic over the strategy,
//! so that a user's own binary runs its strategy exactly as `ticktrade run` runs the built-in
//! ones (`examples/my-strategy` is the template); `credentials`, loading an API key from the
//! environment or a private file; `status`, the servers' runtime, banner and status ticker;
//! `shell`, the interactive trading shell of `ticktrade trade` (a user interface over the
//! gateway's exchange-agnostic `Venue`).
//! Must not: hold protocol, book or strategy logic (the library crates do), or print a secret.

pub mod credentials;
pub mod run;
pub mod shell;
pub mod status;
