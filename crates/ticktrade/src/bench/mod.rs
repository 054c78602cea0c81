//! `ticktrade bench …`: each benchmark measures ticktrade and a baseline in the same run, and
//! reports in one format (`report`: aligned percentile table, `--json` lines, `--plot` SVG);
//! `bench all` runs them all and writes a Markdown report.

use std::process::ExitCode;

use clap::Parser as _;

mod all;
mod book;
mod bus;
mod feed;
mod hl;
mod host;
mod matching;
mod order;
mod report;
mod tick_to_trade;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    which: Which,
}

#[derive(clap::Subcommand, Debug)]
enum Which {
    /// L2 book delta apply vs a BTreeMap baseline, aggregation cost, deep-book cost.
    Book(book::Args),
    /// Matching engine order operations per second vs a naive linear-scan matcher.
    Match(matching::Args),
    /// Hyperliquid server: per-block cost and end to end, beside the clone-and-recompute-all baseline.
    Hl(hl::Args),
    /// Tick-to-trade: socket read to socket write through the one-thread hot loop, per stage, beside a plain tokio/serde_json baseline.
    #[command(name = "tick-to-trade")]
    TickToTrade(tick_to_trade::Args),
    /// Order path: call to bytes written, and the round trip split with usIn/usOut.
    Order(order::Args),
    /// Fan-out server: upstream frame received → downstream frame written with 1…1,000 clients, beside bare writes.
    Feed(feed::Args),
    /// Books across machines on NATS: publisher upstream frame received → edge client frame written, beside direct fan-out; one publisher's load and CPU.
    Bus(bus::Args),
    /// Every benchmark in turn, with a progress bar; writes DIR/REPORT.md, DIR/results.jsonl and the plots.
    All(all::Args),
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Each benchmark's notes end with the host's steal since here (`report::emit_outcome`).
    host::mark_run_start();
    match args.which {
        Which::Book(args) => book::run(args),
        Which::Match(args) => matching::run(args),
        Which::Hl(args) => hl::run(args),
        Which::TickToTrade(args) => tick_to_trade::run(args),
        Which::Order(args) => order::run(args),
        Which::Feed(args) => feed::run(args),
        Which::Bus(args) => bus::run(args),
        Which::All(args) => all::run(args),
    }
}

/// `ticktrade bench …` parsed from words, for `bench all`.
#[derive(clap::Parser, Debug)]
#[command(name = "ticktrade")]
struct Words {
    #[command(subcommand)]
    command: WordsCommand,
}

#[derive(clap::Subcommand, Debug)]
enum WordsCommand {
    Bench(Args),
}

/// Runs the benchmark that `argv` (`["bench", NAME, flags…]`) names, in this process.
fn run_argv(argv: &[String]) -> anyhow::Result<ExitCode> {
    let words = Words::try_parse_from(std::iter::once("ticktrade".to_owned()).chain(argv.iter().cloned()))
        .map_err(|e| anyhow::anyhow!("{}", e.render()))?;
    let WordsCommand::Bench(args) = words.command;
    anyhow::ensure!(!matches!(args.which, Which::All(_)), "bench all does not run itself");
    run(args)
}
