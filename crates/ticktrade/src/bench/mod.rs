//! `ticktrade bench …`: each benchmark measures ticktrade and a baseline in the same run.

use std::process::ExitCode;

mod book;
mod feed;
mod hl;
mod matching;
mod order;
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
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.which {
        Which::Book(args) => book::run(args),
        Which::Match(args) => matching::run(args),
        Which::Hl(args) => hl::run(args),
        Which::TickToTrade(args) => tick_to_trade::run(args),
        Which::Order(args) => order::run(args),
        Which::Feed(args) => feed::run(args),
    }
}
