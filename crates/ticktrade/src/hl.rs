//! `ticktrade hl …`: the Hyperliquid order-book server fed from hl-node's data files, and its
//! tools.
//!
//! Owns: the command line (`ticktrade hl [serve options]`, `ticktrade hl gen …`,
//! `ticktrade hl stats …`) and the wiring of `ticktrade-hl-node` (and of the NATS bus:
//! `--publish`, `--upstream nats://…`).
//! Must not: hold protocol or book logic (that is `ticktrade-hl-proto` / `ticktrade-hl-node`).

use std::process::ExitCode;

mod bus;
mod r#gen;
mod serve;
mod stats;
mod verify;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand: serve (same options as `ticktrade hl serve`).
    #[command(flatten)]
    serve: Box<serve::Args>,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Follow hl-node's files and serve `/ws` and `/info` (the default).
    Serve(Box<serve::Args>),
    /// Write realistic synthetic hl-node output (and a matching snapshot and metadata).
    Gen(r#gen::Args),
    /// Subscribe like a client and print book/trade latency percentiles.
    Stats(stats::Args),
    /// Consistency check (explicit, never automatic): replay the files from one snapshot up to a
    /// second one's height and compare order by order.
    Verify(verify::Args),
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        None => serve::run(*args.serve),
        Some(Command::Serve(args)) => serve::run(*args),
        Some(Command::Gen(args)) => r#gen::run(args),
        Some(Command::Stats(args)) => stats::run(args),
        Some(Command::Verify(args)) => verify::run(args),
    }
}
