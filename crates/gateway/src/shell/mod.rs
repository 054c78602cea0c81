//! The trading shell: parses a line, runs it against any `Venue`, and renders the result.
//! The same `Shell` serves scripts (stdin not a terminal, `--json`) and the interactive
//! terminal front end (`tty`).
//!
//! Owns: command execution, the instrument cache for validation and completion, the session's
//! order-path latency histograms.
//! Must not: know which venue it talks to (only the `Venue` trait), print a secret, or
//! format a price other than as the venue's exact decimal.
//!
//! # Layout
//! - `command`: the grammar (`parse`, `Command`, `COMMANDS`).
//! - `output`: `Output`, text tables and JSON lines.
//! - `exec`: what each command does.
//! - `tty`: line editing, history, completion, `watch`.

pub mod command;
mod exec;
pub mod output;
pub mod tty;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use ticktrade_latency::Histogram;

pub use command::{Command, ParseError, parse};
pub use output::{Output, Table};

use crate::venue::{InstrumentInfo, RoundTrip, Venue, VenueError};

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Venue(#[from] VenueError),
    #[error("{0}")]
    Invalid(String),
}

impl ShellError {
    pub fn code(&self) -> Option<i64> {
        match self {
            ShellError::Venue(err) => err.code(),
            _ => None,
        }
    }
}

/// What the caller should do after a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// Order-path latency of this session.
#[derive(Debug, Default)]
pub(crate) struct Latencies {
    pub local: Histogram,
    pub round_trip: Histogram,
    pub network: Histogram,
    pub exchange: Histogram,
}

impl Latencies {
    pub(crate) fn record(&mut self, rt: &RoundTrip) {
        self.local.record(rt.local_ns);
        self.round_trip.record(rt.round_trip_us.saturating_mul(1_000));
        if let (Some(ex), Some(net)) = (rt.exchange_us, rt.network_us()) {
            self.exchange.record(ex.saturating_mul(1_000));
            self.network.record(net.saturating_mul(1_000));
        }
    }
}

/// A shell session on one venue.
pub struct Shell<V: Venue> {
    pub(crate) venue: V,
    pub(crate) instruments: BTreeMap<String, InstrumentInfo>,
    pub(crate) latencies: Latencies,
}

impl<V: Venue> Shell<V> {
    pub fn new(venue: V) -> Shell<V> {
        Shell { venue, instruments: BTreeMap::new(), latencies: Latencies::default() }
    }

    pub fn venue(&self) -> &V {
        &self.venue
    }

    /// Loads the instrument list (validation and completion). Failure is not fatal.
    pub async fn load_instruments(&mut self) -> Result<usize, VenueError> {
        let list = self.venue.instruments(None, None).await?;
        for info in list {
            self.instruments.insert(info.name.clone(), info);
        }
        Ok(self.instruments.len())
    }

    pub fn instrument_names(&self) -> Vec<String> {
        self.instruments.keys().cloned().collect()
    }

    /// Parses and runs one line. `Ok(None)` for blank lines and comments.
    pub async fn run_line(&mut self, line: &str) -> Result<Option<(Output, Flow)>, ShellError> {
        let Some(command) = parse(line)? else { return Ok(None) };
        self.execute(command).await.map(Some)
    }

    /// Reads commands line by line (stdin that is not a terminal), prints each result (text
    /// or one JSON object per line) and returns the number of failed commands.
    pub async fn run_script(&mut self, input: impl BufRead, out: &mut impl Write, json: bool) -> std::io::Result<u64> {
        let mut failures = 0;
        for line in input.lines() {
            let line = line?;
            let name = line.split_whitespace().next().unwrap_or_default().to_owned();
            match self.run_line(&line).await {
                Ok(None) => {}
                Ok(Some((output, flow))) => {
                    if json {
                        writeln!(out, "{}", output::render_json(&output))?;
                    } else {
                        write!(out, "{}", output::render_text(&output))?;
                    }
                    if flow == Flow::Quit {
                        break;
                    }
                }
                Err(err) => {
                    failures += 1;
                    if json {
                        writeln!(out, "{}", output::render_json_error(&name, err.code(), &err.to_string()))?;
                    } else {
                        writeln!(out, "error: {err}")?;
                    }
                }
            }
            out.flush()?;
        }
        Ok(failures)
    }
}
