//! `ticktrade replay FILE`: rebuilds every order book of a recorded Deribit WebSocket session
//! and prints them.
//!
//! Owns: the command's arguments, reading the recording and the instruments file, and the
//! exit code. Decoding is `ticktrade_deribit_proto`'s, books are `ticktrade_book::l2::L2Book`
//! with its sequence rules (a broken `prev_change_id` chain is a gap; the book is stale until
//! the next snapshot, which counts as a resync).
//! Must not: abort on a bad line. Unreadable lines are reported on stderr with their line
//! number and skipped; the other lines and instruments replay normally.
//!
//! # Layout
//! - `recording`: the two recording formats → received frames with line numbers.
//! - `specs`: instrument specs from `--instruments`, or inferred exactly from the recording.
//! - `books`: applying book notifications, counters, errors.
//! - `report`: the table and the JSON lines.

mod books;
mod recording;
mod report;
mod specs;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use books::Replay;

/// The demo recording `ticktrade replay --demo` replays (bundled in the binary).
const DEMO_NAME: &str = "DERIBIT-5dd9ce.0__2021-04-05.frames.jsonl";
const DEMO: &[u8] =
    include_bytes!("../../../testdata/deribit/market_data/cryptofeed/DERIBIT-5dd9ce.0__2021-04-05.frames.jsonl");

/// Exit code when the replay finished but some lines could not be read or applied.
const EXIT_BAD_LINES: u8 = 2;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit status: 0 when every line was read, 2 when some lines were skipped (see stderr), 1 on failure."
)]
pub struct Args {
    /// A recorded Deribit WebSocket session: cryptofeed's text recording or a `*.frames.jsonl`.
    #[arg(required_unless_present = "demo")]
    file: Option<PathBuf>,
    /// Replay the bundled demo recording of a real Deribit session instead of a file.
    #[arg(long, conflicts_with = "file")]
    demo: bool,
    /// Levels to print per side, best first.
    #[arg(long, default_value_t = 10, value_name = "N")]
    depth: usize,
    /// Print one JSON object per instrument per line instead of tables.
    #[arg(long)]
    json: bool,
    /// Instrument specs: a `public/get_instruments` reply or a cryptofeed HTTP recording.
    /// Without it, each instrument's price and amount units are inferred exactly from the
    /// recording (the GCD of every price and of every amount it contains).
    #[arg(long, value_name = "FILE")]
    instruments: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let instruments = args.instruments.as_deref();
    let mut out = std::io::stdout().lock();
    let Some(file) = args.file.filter(|_| !args.demo) else {
        if !args.json {
            let _ = writeln!(
                out,
                "ticktrade: demo replay of a recorded Deribit session ({DEMO_NAME}, bundled); see `ticktrade --help` for the commands.\n"
            );
        }
        return replay(DEMO, DEMO_NAME, instruments, args.depth, args.json, &mut out);
    };
    let data = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    replay(&data, &file.display().to_string(), instruments, args.depth, args.json, &mut out)
}

fn replay(
    data: &[u8],
    source: &str,
    instruments: Option<&Path>,
    depth: usize,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let (frames, read_errors) = recording::frames(data);
    let mut specs = specs::infer(&frames);
    if let Some(path) = instruments {
        let loaded = specs::load(path)?;
        for (name, spec) in specs.iter_mut() {
            match loaded.get(name) {
                Some(found) => *spec = found.clone(),
                None => eprintln!("{name}: not in {}; units inferred from the recording", path.display()),
            }
        }
    }
    let mut replay = Replay::new(specs);
    for frame in &frames {
        replay.on_frame(frame);
    }
    let mut errors = read_errors;
    errors.append(&mut replay.errors);
    errors.sort_by_key(|e| e.line);
    for notice in &replay.notices {
        eprintln!("{source}:{}: {}", notice.line, notice.message);
    }
    for error in &errors {
        eprintln!("{source}:{}: error: {} (line skipped)", error.line, error.message);
    }
    // Reported by instrument name, or by channel name for an instrument recorded on several
    // book channels; sorted by what is printed.
    let mut n_channels: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for state in replay.books.values() {
        *n_channels.entry(state.instrument.as_str()).or_default() += 1;
    }
    let mut named: Vec<(&str, &books::InstrumentBook)> = replay
        .books
        .iter()
        .map(|(channel, state)| {
            let name =
                if n_channels[state.instrument.as_str()] > 1 { channel.as_str() } else { state.instrument.as_str() };
            (name, state)
        })
        .collect();
    named.sort_by_key(|(name, _)| *name);
    let written = named.into_iter().try_for_each(|(name, state)| {
        if json { report::write_json(out, name, state, depth) } else { report::write_table(out, name, state, depth) }
    });
    match written.and_then(|()| out.flush()) {
        // A closed pipe (`ticktrade replay … | head`) is the reader's choice, not a failure.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        result => result.context("writing the report")?,
    }
    if errors.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("{source}: {} line(s) skipped", errors.len());
        Ok(ExitCode::from(EXIT_BAD_LINES))
    }
}
