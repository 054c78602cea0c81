//! `ticktrade hl verify`: the consistency check, as an explicit command rather than a timer.
//!
//! Loads `--snapshot` (height A), replays the data files up to `--against`'s height B, and
//! compares every coin order by order. Cost: reading the files between A and B. Take B from
//! `hl-node compute-l4-snapshots <periodic_abci_states/…/B.rmp> <out>` (offline, free for the
//! node); asking a live node for B (`fileSnapshot`) stalls its block processing for seconds
//! (~2.7 s for a ~300 MB snapshot), so do that only when you accept the stall.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use ticktrade_hl_node::follow::Follower;
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_node::server::engine::{Engine, EngineConfig};
use ticktrade_hl_proto::snapshot::Snapshot;

use super::serve;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The snapshot to start from, the data dir and metadata (as for serving).
    #[command(flatten)]
    pub start: Box<serve::Args>,
    /// The later snapshot to compare against.
    #[arg(long)]
    pub against: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let start = serve::load_start(&args.start)?;
    let bytes = std::fs::read(&args.against).with_context(|| format!("reading {}", args.against.display()))?;
    let against = Snapshot::parse(&bytes).context("the --against snapshot")?;
    let from = start.books.height();
    anyhow::ensure!(
        against.height() >= from,
        "--against is at block {}, before the start snapshot ({from})",
        against.height()
    );
    let mut followers = Vec::new();
    for stream in Stream::ALL {
        let mut f = Follower::new(&start.data_dir, stream);
        f.seek_height(from)?;
        followers.push(f);
    }
    let config =
        EngineConfig { stop_after: Some(against.height()), poll: Duration::from_millis(1), ..EngineConfig::default() };
    let mut engine = Engine::new(config, start.books, followers);
    engine.poll_files();
    let reached = engine.books().height();
    anyhow::ensure!(reached == against.height(), "the files end at block {reached}, before {}", against.height());
    let diffs = ticktrade_hl_node::verify::compare(engine.books(), &against, 50);
    if diffs.is_empty() {
        println!("consistent: blocks {}..={} replayed, every coin equals the snapshot", from + 1, reached);
        return Ok(ExitCode::SUCCESS);
    }
    for d in &diffs {
        println!("{d}");
    }
    Ok(ExitCode::FAILURE)
}
