//! `ticktrade bench book` (being written).

use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("bench book is not built yet")
}
