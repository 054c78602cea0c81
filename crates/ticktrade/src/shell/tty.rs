//! The terminal front end: line editing, history kept across sessions, tab completion of
//! commands, channels and instrument names (rustyline), and `watch`, a live ladder with
//! trades redrawn in place until a key is pressed (crossterm). Notifications of subscribed
//! channels print between prompts through rustyline's external printer, which clears and
//! repaints the line being typed instead of writing over it.
//!
//! Owns: the editor, the history file, the alternate screen while watching.
//! Must not: run commands itself (it hands lines to `Shell`), or leave the terminal in raw
//! mode on any exit path.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crossterm::{cursor, event, execute, queue, terminal};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{Context, Editor, Helper, Highlighter, Hinter, Validator};

use super::command::COMMANDS;
use super::output::render_text;
use super::{Flow, Shell, ShellError};
use ticktrade_gateway::venue::{PublicTrade, Subscription, Venue, VenueEvent};

/// Completes the first word from the command list, later words from instrument names and
/// channel names.
#[derive(Helper, Hinter, Highlighter, Validator)]
struct ShellHelper {
    instruments: Vec<String>,
}

fn candidates<'a>(line: &str, words: impl Iterator<Item = &'a str>) -> Vec<Pair> {
    words
        .filter(|w| w.starts_with(line))
        .map(|w| Pair { display: w.to_owned(), replacement: format!("{w} ") })
        .collect()
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before.rfind(char::is_whitespace).map(|i| i + 1).unwrap_or(0);
        let word = &before[start..];
        if start == 0 {
            return Ok((0, candidates(word, COMMANDS.iter().map(|c| c.0))));
        }
        let command = before.split_whitespace().next().unwrap_or_default();
        if command == "sub" || command == "unsub" {
            if let Some((kind, partial)) = word.split_once(':') {
                let full: Vec<String> = self.instruments.iter().map(|i| format!("{kind}:{i}")).collect();
                let _ = partial;
                return Ok((start, candidates(word, full.iter().map(String::as_str))));
            }
            let kinds = ["book:", "trades:", "ticker:", "orders", "user-trades", "changes"];
            let pairs = kinds
                .iter()
                .filter(|k| k.starts_with(word))
                .map(|k| Pair {
                    display: (*k).to_owned(),
                    replacement: if k.ends_with(':') { (*k).to_owned() } else { format!("{k} ") },
                })
                .collect();
            return Ok((start, pairs));
        }
        Ok((start, candidates(word, self.instruments.iter().map(String::as_str))))
    }
}

/// Where history lives: `$TICKTRADE_HISTORY`, else `~/.ticktrade_history`.
pub fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TICKTRADE_HISTORY") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".ticktrade_history"))
}

/// Prints the user's notifications until the venue's event stream ends.
async fn print_notifications<V: Venue>(
    venue: V,
    interest: std::sync::Arc<std::sync::Mutex<super::Interest>>,
    mut events: tokio::sync::broadcast::Receiver<VenueEvent>,
    mut printer: impl rustyline::ExternalPrinter,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let line = match events.recv().await {
            Ok(event) => match interest.lock() {
                Ok(mut interest) => interest.render(&venue, &event, false),
                Err(_) => return,
            },
            Err(RecvError::Lagged(n)) => {
                Some(super::events::lagged(n, false)).filter(|_| interest.lock().is_ok_and(|i| !i.paused))
            }
            Err(RecvError::Closed) => return,
        };
        if let Some(mut line) = line {
            line.push('\n');
            if printer.print(line).is_err() {
                return;
            }
        }
    }
}

/// Runs the interactive shell until `quit`, `logout` or end of input. Returns the number of
/// failed commands. Needs a multi-threaded tokio runtime (reading a line blocks a worker).
pub async fn run_interactive<V: Venue + Clone>(shell: &mut Shell<V>) -> Result<u64, ShellError> {
    let io = |e: std::io::Error| ShellError::Invalid(format!("terminal: {e}"));
    let readline_err = |e: ReadlineError| ShellError::Invalid(format!("terminal: {e}"));
    let mut editor: Editor<ShellHelper, DefaultHistory> = Editor::new().map_err(readline_err)?;
    editor.set_helper(Some(ShellHelper { instruments: shell.instrument_names() }));
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    let mut stdout = std::io::stdout();
    let info = shell.venue.info();
    writeln!(stdout, "ticktrade shell on {} ({}). `help` lists commands.", info.endpoint, info.venue).map_err(io)?;
    let events = shell.events.take().unwrap_or_else(|| shell.venue.events());
    let printer = editor.create_external_printer().map_err(readline_err)?;
    let notifications = tokio::spawn(print_notifications(shell.venue.clone(), shell.interest.clone(), events, printer));
    let result = edit_loop(shell, &mut editor, history.as_deref(), &mut stdout).await;
    notifications.abort();
    result
}

async fn edit_loop<V: Venue>(
    shell: &mut Shell<V>,
    editor: &mut Editor<ShellHelper, DefaultHistory>,
    history: Option<&std::path::Path>,
    stdout: &mut std::io::Stdout,
) -> Result<u64, ShellError> {
    let io = |e: std::io::Error| ShellError::Invalid(format!("terminal: {e}"));
    let readline_err = |e: ReadlineError| ShellError::Invalid(format!("terminal: {e}"));
    let mut failures = 0;
    loop {
        let line = tokio::task::block_in_place(|| editor.readline("ticktrade> "));
        let line = match line {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(err) => return Err(readline_err(err)),
        };
        if line.trim().is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line.as_str());
        if let Some(path) = history {
            let _ = editor.save_history(path);
        }
        let result = match super::parse(&line) {
            Ok(Some(super::Command::Watch(instrument))) => {
                set_paused(shell, true);
                let watched = watch(shell, &instrument, stdout).await.map(|_| None);
                set_paused(shell, false);
                watched
            }
            Ok(Some(command)) => shell.execute(command).await.map(Some),
            Ok(None) => Ok(None),
            Err(err) => Err(err.into()),
        };
        match result {
            Ok(Some((output, flow))) => {
                write!(stdout, "{}", render_text(&output)).map_err(io)?;
                if flow == Flow::Quit {
                    break;
                }
            }
            Ok(None) => {}
            Err(err) => {
                failures += 1;
                writeln!(stdout, "error: {err}").map_err(io)?;
            }
        }
        if let Some(helper) = editor.helper_mut() {
            helper.instruments = shell.instrument_names();
        }
    }
    Ok(failures)
}

/// Holds notifications back while `watch` owns the screen.
fn set_paused<V: Venue>(shell: &Shell<V>, paused: bool) {
    if let Ok(mut interest) = shell.interest.lock() {
        interest.paused = paused;
    }
}

/// Restores the terminal even if drawing fails half-way.
struct RawGuard;

impl Drop for RawGuard {
    fn drop(&mut self) {
        let _ = execute!(std::io::stdout(), cursor::Show, terminal::LeaveAlternateScreen);
        let _ = terminal::disable_raw_mode();
    }
}

/// A live ladder of `instrument` with its last trades, redrawn in place until a key is pressed.
pub async fn watch<V: Venue>(shell: &mut Shell<V>, instrument: &str, out: &mut impl Write) -> Result<(), ShellError> {
    let io = |e: std::io::Error| ShellError::Invalid(format!("terminal: {e}"));
    let wanted = [Subscription::Book(instrument.to_owned()), Subscription::Trades(instrument.to_owned())];
    let existing = shell.venue.info().subscriptions;
    let added: Vec<Subscription> = wanted.iter().filter(|s| !existing.contains(s)).cloned().collect();
    let mut events = shell.venue.events();
    if !added.is_empty() {
        shell.venue.subscribe(&added).await?;
    }
    let mut trades: VecDeque<PublicTrade> = VecDeque::with_capacity(10);
    terminal::enable_raw_mode().map_err(io)?;
    let guard = RawGuard;
    execute!(out, terminal::EnterAlternateScreen, cursor::Hide).map_err(io)?;
    let result: Result<(), ShellError> = async {
        loop {
            while let Ok(event) = events.try_recv() {
                if let VenueEvent::Trade(trade) = event
                    && trade.instrument == instrument
                {
                    if trades.len() == 10 {
                        trades.pop_back();
                    }
                    trades.push_front(trade);
                }
            }
            let mut lines = vec![format!("watch {instrument} — press any key to stop"), String::new()];
            match shell.venue.local_book(instrument, 10) {
                Some(book) => {
                    lines.push(format!("{:>14} {:>14} │ {:<14} {:<14}", "bid_amount", "bid", "ask", "ask_amount"));
                    for i in 0..10 {
                        let bid = book.bids.get(i);
                        let ask = book.asks.get(i);
                        let cell = |v: Option<String>| v.unwrap_or_default();
                        lines.push(format!(
                            "{:>14} {:>14} │ {:<14} {:<14}",
                            cell(bid.map(|l| l.1.to_string())),
                            cell(bid.map(|l| l.0.to_string())),
                            cell(ask.map(|l| l.0.to_string())),
                            cell(ask.map(|l| l.1.to_string()))
                        ));
                    }
                    lines.push(format!("change_id {}", book.change_id));
                }
                None => lines.push("(book resyncing…)".into()),
            }
            lines.push(String::new());
            lines.push("last trades".into());
            for t in &trades {
                lines.push(format!("  {:<4} {:>14} {:>12}  {}", t.side.as_str(), t.price, t.amount, t.trade_id));
            }
            queue!(out, cursor::MoveTo(0, 0), terminal::Clear(terminal::ClearType::All)).map_err(io)?;
            for line in &lines {
                write!(out, "{line}\r\n").map_err(io)?;
            }
            out.flush().map_err(io)?;
            let key = tokio::task::block_in_place(|| -> std::io::Result<bool> {
                if event::poll(Duration::from_millis(200))? {
                    return Ok(matches!(event::read()?, event::Event::Key(_)));
                }
                Ok(false)
            })
            .map_err(io)?;
            if key {
                return Ok(());
            }
        }
    }
    .await;
    drop(guard);
    if !added.is_empty() {
        let _ = shell.venue.unsubscribe(&added).await;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pairs: &[Pair]) -> Vec<&str> {
        pairs.iter().map(|p| p.display.as_str()).collect()
    }

    #[test]
    fn completes_commands_instruments_and_channels() {
        let helper =
            ShellHelper { instruments: vec!["BTC-PERPETUAL".into(), "BTC-27MAR26".into(), "ETH-PERPETUAL".into()] };
        let history = DefaultHistory::new();
        let ctx = Context::new(&history);
        let (start, pairs) = helper.complete("can", 3, &ctx).unwrap();
        assert_eq!((start, names(&pairs)), (0, vec!["cancel", "cancel-all"]));
        let (start, pairs) = helper.complete("book BTC-P", 10, &ctx).unwrap();
        assert_eq!((start, names(&pairs)), (5, vec!["BTC-PERPETUAL"]));
        let (_, pairs) = helper.complete("sub bo", 6, &ctx).unwrap();
        assert_eq!(names(&pairs), vec!["book:"]);
        let (_, pairs) = helper.complete("sub book:ETH", 12, &ctx).unwrap();
        assert_eq!(names(&pairs), vec!["book:ETH-PERPETUAL"]);
    }
}
