//! `ticktrade`: one binary, one subcommand per capability.
//!
//! Owns: argument parsing, wiring of the library crates, and reporting errors with context.
//! Each subcommand lives in its own module with its own `Args` and `run`.

use clap::{Parser, Subcommand};

mod bench;
mod hl;
mod replay;
mod serve;
mod sim;
mod trade;

// `crate::status` for the subcommand modules (serve's tests include `serve.rs` by path, with
// their own `status`).
use ticktrade::status;

#[derive(Parser, Debug)]
#[command(
    name = "ticktrade",
    version,
    about = "Low-latency crypto trading: Deribit gateway and shell, full-depth books, market-data servers, an embedded Deribit-compatible exchange."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The trading shell on a Deribit-compatible venue (the embedded simulator by default).
    Trade(trade::Args),
    /// Run a strategy on the hot path (the embedded simulator by default).
    Run(ticktrade::run::Args),
    /// Rebuild every book from a recorded Deribit WebSocket session and print them.
    Replay(replay::Args),
    /// Benchmarks: ticktrade beside a baseline measured in the same run.
    Bench(bench::Args),
    /// Hyperliquid order-book server fed from hl-node's data files (and its tools).
    Hl(hl::Args),
    /// Market-data fan-out: one upstream feed served to many local clients in Deribit's protocol.
    Serve(serve::Args),
    /// The embedded Deribit-compatible exchange on a port (WebSocket + HTTP JSON-RPC).
    Sim(sim::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Replay(args)) => replay::run(args),
        Some(Command::Bench(args)) => bench::run(args),
        Some(Command::Hl(args)) => hl::run(args),
        Some(Command::Sim(args)) => sim::run(args),
        Some(Command::Serve(args)) => serve::run(args),
        Some(Command::Trade(args)) => trade::run(args),
        Some(Command::Run(args)) => ticktrade::run::run(args),
        None => trade::run_default(),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", ticktrade::error_text(&err));
            std::process::ExitCode::FAILURE
        }
    }
}
