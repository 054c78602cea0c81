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
//! - `events`: subscription notifications (which to show, one line each).
//! - `tty`: line editing, history, completion, `watch`.

pub mod command;
pub mod events;
mod exec;
pub mod output;
pub mod tty;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use ticktrade_latency::Histogram;
use tokio::sync::{broadcast, mpsc};

pub use command::{Command, ParseError, parse};
pub use events::Interest;
pub use output::{Output, Table};

use ticktrade_gateway::venue::{InstrumentInfo, RoundTrip, Venue, VenueError};

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
        // The exchange's share is its own clock's and always stands; the network share only
        // when the parts fit inside the round trip (see `RoundTrip::network_us`).
        if let Some(ex) = rt.exchange_us {
            self.exchange.record(ex.saturating_mul(1_000));
        }
        if let Some(net) = rt.network_us() {
            self.network.record(net.saturating_mul(1_000));
        }
    }
}

/// A shell session on one venue.
pub struct Shell<V: Venue> {
    pub(crate) venue: V,
    pub(crate) instruments: BTreeMap<String, InstrumentInfo>,
    pub(crate) latencies: Latencies,
    /// The channels the user subscribed to with `sub` (what notifications to print).
    pub(crate) interest: Arc<Mutex<Interest>>,
    /// The venue's events since the shell started (read by `run_script`; the terminal front
    /// end takes it for its printer task).
    pub(crate) events: Option<broadcast::Receiver<ticktrade_gateway::venue::VenueEvent>>,
}

impl<V: Venue> Shell<V> {
    pub fn new(venue: V) -> Shell<V> {
        let events = Some(venue.events());
        Shell {
            venue,
            instruments: BTreeMap::new(),
            latencies: Latencies::default(),
            interest: Arc::new(Mutex::new(Interest::default())),
            events,
        }
    }

    /// The notifications the user asked for (shared with a printer task).
    pub fn interest(&self) -> Arc<Mutex<Interest>> {
        self.interest.clone()
    }

    /// Renders an event if the user subscribed to it.
    fn render_event(&self, event: &ticktrade_gateway::venue::VenueEvent, json: bool) -> Option<String> {
        self.interest.lock().ok()?.render(&self.venue, event, json)
    }

    /// Prints the notifications that arrived so far (without waiting).
    fn drain_events(
        &self,
        rx: &mut broadcast::Receiver<ticktrade_gateway::venue::VenueEvent>,
        out: &mut impl Write,
        json: bool,
    ) -> std::io::Result<()> {
        loop {
            let line = match rx.try_recv() {
                Ok(event) => self.render_event(&event, json),
                Err(broadcast::error::TryRecvError::Lagged(n)) => Some(events::lagged(n, json)),
                Err(_) => return Ok(()),
            };
            if let Some(line) = line {
                writeln!(out, "{line}")?;
            }
        }
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
    /// or one JSON object per line) and returns the number of failed commands. Notifications
    /// of subscribed channels are printed as they arrive, between results (as lines, or JSON
    /// objects with an `"event"` key), also while the input is idle; the run ends at the end
    /// of the input or at `quit`.
    pub async fn run_script<R: BufRead + Send + 'static>(
        &mut self,
        input: R,
        out: &mut impl Write,
        json: bool,
    ) -> std::io::Result<u64> {
        // Input is read on its own thread so that an idle pipe does not hold notifications back.
        let (tx, mut lines) = mpsc::channel::<std::io::Result<String>>(64);
        std::thread::Builder::new().name("shell-input".into()).spawn(move || {
            for line in input.lines() {
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        })?;
        // Taken by a terminal front end: follow the venue from now on.
        let mut rx = self.events.take().unwrap_or_else(|| self.venue.events());
        let result = self.script_loop(&mut lines, &mut rx, out, json).await;
        self.events = Some(rx);
        result
    }

    async fn script_loop(
        &mut self,
        lines: &mut mpsc::Receiver<std::io::Result<String>>,
        rx: &mut broadcast::Receiver<ticktrade_gateway::venue::VenueEvent>,
        out: &mut impl Write,
        json: bool,
    ) -> std::io::Result<u64> {
        #[allow(clippy::large_enum_variant)] // one value, on the stack, per loop turn
        enum Next {
            Line(Option<std::io::Result<String>>),
            Event(Result<ticktrade_gateway::venue::VenueEvent, broadcast::error::RecvError>),
        }
        let mut failures = 0;
        let mut events_open = true;
        loop {
            let next = tokio::select! {
                biased;
                line = lines.recv() => Next::Line(line),
                event = rx.recv(), if events_open => Next::Event(event),
            };
            let line = match next {
                Next::Event(event) => {
                    let text = match event {
                        Ok(event) => self.render_event(&event, json),
                        Err(broadcast::error::RecvError::Lagged(n)) => Some(events::lagged(n, json)),
                        Err(broadcast::error::RecvError::Closed) => {
                            events_open = false;
                            None
                        }
                    };
                    if let Some(text) = text {
                        writeln!(out, "{text}")?;
                        out.flush()?;
                    }
                    continue;
                }
                Next::Line(None) => break,
                Next::Line(Some(line)) => line?,
            };
            // What arrived while the previous command ran comes before this command's result.
            self.drain_events(rx, out, json)?;
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
        self.drain_events(rx, out, json)?;
        out.flush()?;
        Ok(failures)
    }
}
