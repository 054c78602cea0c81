//! `ticktrade replay FILE` (being written).

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A recorded Deribit WebSocket session (cryptofeed text or `*.frames.jsonl`).
    file: PathBuf,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("replay is not built yet")
}

/// What `ticktrade` with no subcommand does until the trading shell exists.
pub fn run_demo() -> anyhow::Result<ExitCode> {
    anyhow::bail!("the default mode is not built yet; see `ticktrade --help`")
}
