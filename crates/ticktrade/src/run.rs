//! `ticktrade run STRATEGY`: a built-in strategy on the live session (`ticktrade_gateway::live`),
//! on the embedded simulator (default), Deribit testnet, Deribit, or any Deribit-compatible
//! `ws://`/`wss://` endpoint.
//!
//! Owns: the command line, choosing the venue (starting the embedded simulator when none is
//! given), loading the TOML config and credentials, checking the config against the venue's
//! instrument list before anything is sent, the stop triggers (SIGINT, SIGTERM, `stop` on
//! stdin), and the output: the banner, the status line, the journal file and the final report.
//! Must not: trade itself (the session does), or print a secret.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use ticktrade_core::Decimal;
use ticktrade_gateway::live::{self, Exit, LiveConfig, LiveReport, ObserverConfig, Session, StopHandle};
use ticktrade_gateway::venue::Credentials;
use ticktrade_gateway::venues;
use ticktrade_latency::{Series, table_string};
use ticktrade_net::hot::{HotOptions, TlsRoots};
use ticktrade_strategy::{Config, Setup, Strategy};

use crate::credentials;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The built-in strategy: `quote` (market maker) or `take` (imbalance taker); with
    /// `--config`, the file's `strategy` when omitted.
    #[arg(required_unless_present_any = ["print_config", "config"])]
    strategy: Option<String>,
    /// `sim` (the embedded simulator, default), `deribit-testnet`, `deribit`, or a
    /// `ws://`/`wss://` URL of a Deribit-compatible endpoint.
    #[arg(long, default_value = "sim")]
    venue: String,
    /// The strategy's instrument (overrides the config's), then any others whose books it
    /// should see, comma-separated.
    #[arg(long, value_delimiter = ',')]
    instruments: Vec<String>,
    /// Strategy parameters and risk limits (TOML; `--print-config` prints a template).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print the commented config template and exit.
    #[arg(long)]
    print_config: bool,
    /// Run everything except writing the strategy's orders; the journal records what would
    /// have been sent.
    #[arg(long)]
    dry_run: bool,
    /// Trust exactly the certificates in this PEM file for `wss://` (a private root, e.g. the
    /// one `ticktrade sim --tls` writes). Verification is never skipped.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Write the final report, the latency plots (SVG) and the journal into this directory.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// The JSONL journal of every order event (default: journal.jsonl in --report's
    /// directory, else ticktrade-run-NONCE.jsonl here).
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// When stopping, also close the positions with reduce-only market orders.
    #[arg(long)]
    flatten: bool,
    /// Credentials file (`client_id = …`, `client_secret = …`, readable by you only).
    /// Default: $DERIBIT_CLIENT_ID / $DERIBIT_CLIENT_SECRET; the simulator's own key on a
    /// simulator.
    #[arg(long, value_name = "FILE")]
    credentials: Option<PathBuf>,
    /// Authenticate with client_credentials instead of an HMAC client_signature.
    #[arg(long)]
    client_credentials: bool,
    /// Stop by itself after this many seconds (as if Ctrl-C were pressed).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<u64>,
    /// A book with no update for this many ms is re-subscribed.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    stale_ms: u64,
    /// Heartbeat interval in seconds (Deribit's minimum is 10).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(10..=3600))]
    heartbeat: u32,
    /// No status line.
    #[arg(long)]
    quiet: bool,
    /// Poll the socket in a loop instead of blocking in the kernel: a frame is handled as
    /// soon as it lands, with the thread's caches kept warm (each empty read is followed by a
    /// dry run of the decoder, risk checks and order encoder that sends nothing), at the cost
    /// of one vCPU kept at 100% (it yields to other threads every few hundred microseconds when
    /// idle).
    #[arg(long)]
    busy_poll: bool,
}

/// `ticktrade run`: a built-in strategy.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_with(args, |setup| {
        setup
            .strategy
            .clone()
            .ok_or_else(|| anyhow!("strategy = \"custom\" runs with your own binary: copy examples/my-strategy"))
    })
}

/// The whole of `ticktrade run` for a program of the user's own: parses the same command
/// line, and `make` builds the strategy from the checked configuration (its `[custom]` table
/// and instruments). Prints errors as `ticktrade` does.
pub fn main_with<S: Strategy>(make: impl FnOnce(&Setup) -> anyhow::Result<S>) -> ExitCode {
    #[derive(clap::Parser, Debug)]
    #[command(about = "A strategy on ticktrade's live session (the embedded simulator by default).")]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }
    let cli = <Cli as clap::Parser>::parse();
    match run_with(cli.args, make) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", crate::error_text(&error));
            ExitCode::FAILURE
        }
    }
}

/// `ticktrade run` with the strategy `make` builds from the checked configuration.
pub fn run_with<S: Strategy>(args: Args, make: impl FnOnce(&Setup) -> anyhow::Result<S>) -> anyhow::Result<ExitCode> {
    if args.print_config {
        print!("{}", ticktrade_strategy::template());
        return Ok(ExitCode::SUCCESS);
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .try_init();
    let mut config = load_config(args.config.as_deref())?;
    let strategy = chosen_strategy(&args, &mut config)?;
    apply_instruments(&mut config, &args.instruments);
    let Target { url, credentials, roots, sim } = open_target(&args)?;
    if credentials.is_none() && !args.dry_run {
        bail!(
            "no credentials for {url}: set DERIBIT_CLIENT_ID and DERIBIT_CLIENT_SECRET, pass --credentials FILE, or use --dry-run"
        );
    }
    let connect = HotOptions { roots, ..HotOptions::default() };
    eprintln!("ticktrade run {strategy}: connecting to {url} …");

    let specs = live::fetch_instruments(&url, &connect).with_context(|| format!("listing the instruments of {url}"))?;
    let setup = config.validate(&specs).with_context(|| path_text(&args.config))?;
    let names: Vec<String> = setup.specs.iter().map(|s| s.name.clone()).collect();
    let outbox = setup.outbox;
    let nonce = run_nonce();
    let user_strategy = make(&setup)?;
    let (_builtin, parts) = setup.into_parts(nonce).map_err(|e| anyhow!("{}: {e}", path_text(&args.config)))?;

    if let Some(dir) = &args.report {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let journal_path = args.journal.clone().unwrap_or_else(|| match &args.report {
        Some(dir) => dir.join("journal.jsonl"),
        None => PathBuf::from(format!("ticktrade-run-{nonce:08x}.jsonl")),
    });
    let clock = ticktrade_latency::TscClock::new();
    let anchor = {
        use ticktrade_core::Clock as _;
        (clock.mono(), clock.utc().0)
    };
    let observer = live::spawn_observer(ObserverConfig {
        journal: Some(journal_path.clone()),
        status: !args.quiet,
        instruments: names.clone(),
        anchor,
    })
    .with_context(|| format!("creating the journal {}", journal_path.display()))?;

    let mut live_config = LiveConfig::new(url.clone());
    live_config.connect = connect;
    live_config.credentials = credentials;
    live_config.send_secret = args.client_credentials;
    live_config.heartbeat_s = args.heartbeat;
    live_config.stale_after = Duration::from_millis(args.stale_ms);
    live_config.dry_run = args.dry_run;
    live_config.flatten = args.flatten;
    live_config.busy_poll = args.busy_poll;
    live_config.status_every = (!args.quiet).then_some(Duration::from_secs(1));
    let stop = stop_handle(args.duration)?;

    eprint!(
        "{}",
        crate::status::banner(
            &format!("ticktrade run {strategy}{}", if args.dry_run { " (dry run: nothing is sent)" } else { "" }),
            &[
                ("venue", url.clone()),
                ("instruments", names.join(", ")),
                ("labels", format!("{}-{nonce:08x}-N", config.label_prefix)),
                ("journal", journal_path.display().to_string()),
                (
                    "reads",
                    match args.busy_poll {
                        true => "busy polling (one vCPU kept at 100%)",
                        false => "blocking (--busy-poll to spin)",
                    }
                    .to_owned(),
                ),
                ("stop", "Ctrl-C, SIGTERM or `stop` on stdin: cancels every order, then exits".to_owned()),
            ],
        )
    );
    let mut session =
        Session::new(live_config, user_strategy, parts, outbox, Some(observer.journal), Some(observer.stamps), stop);
    let result = session.run();
    drop(session);
    let observed = observer.handle.join().map_err(|_| anyhow!("the observer thread panicked"))?;
    if let Some((rt, sim)) = sim {
        rt.block_on(sim.shutdown());
    }
    let report = result.with_context(|| format!("trading on {url}"))?;
    let text = final_report(&strategy, &report, &observed);
    print!("{text}");
    if let Some(error) = &observed.journal_error {
        eprintln!("warning: the journal {} is incomplete: {error}", journal_path.display());
    }
    if let Some(dir) = &args.report {
        write_report(dir, &text, &observed)?;
    }
    Ok(match report.exit {
        Exit::Clean => ExitCode::SUCCESS,
        Exit::Incomplete { .. } => ExitCode::FAILURE,
    })
}

/// The strategy to run: the one named on the command line (which must agree with the
/// config's, when a config is given) or the config's.
fn chosen_strategy(args: &Args, config: &mut Config) -> anyhow::Result<String> {
    Ok(match (&args.strategy, &args.config) {
        (Some(named), None) => {
            config.strategy = named.clone();
            named.clone()
        }
        (Some(named), Some(_)) if *named != config.strategy => {
            bail!(
                "{}: strategy is {:?}, but the command line asks for {named:?}",
                path_text(&args.config),
                config.strategy
            );
        }
        (_, Some(_)) => config.strategy.clone(),
        (None, None) => bail!("name a strategy (quote or take) or give a --config"),
    })
}

/// Where the session connects, with what, and the embedded simulator when that is the venue.
struct Target {
    url: String,
    credentials: Option<Credentials>,
    roots: TlsRoots,
    /// The embedded simulator and the runtime of its own it runs on (the session has this
    /// thread).
    sim: Option<(tokio::runtime::Runtime, ticktrade_sim::SimHandle)>,
}

fn open_target(args: &Args) -> anyhow::Result<Target> {
    if args.venue == "sim" {
        let rt = crate::status::runtime()?;
        let handle = rt
            .block_on(ticktrade_sim::spawn_loopback(ticktrade_sim::SimConfig::default()))
            .context("starting the embedded simulator")?;
        return Ok(Target {
            url: handle.ws_url(),
            credentials: Some(credentials::simulator_default()),
            roots: TlsRoots::Webpki,
            sim: Some((rt, handle)),
        });
    }
    let venue = args.venue.as_str();
    let url = if venue.contains("://") {
        venue.to_owned()
    } else {
        venues::endpoint_url(venue)
            .with_context(|| format!("unknown venue {venue:?}: sim, deribit-testnet, deribit or a ws(s):// URL"))?
            .to_owned()
    };
    let credentials = credentials::load(args.credentials.as_deref())?
        .or_else(|| ticktrade_net::is_loopback_url(&url).then(credentials::simulator_default));
    let roots = args.ca_cert.clone().map_or(TlsRoots::Webpki, TlsRoots::File);
    Ok(Target { url, credentials, roots, sim: None })
}

/// The session's stop: set by SIGINT, SIGTERM, `stop` on stdin, or after `duration` seconds.
fn stop_handle(duration: Option<u64>) -> anyhow::Result<StopHandle> {
    let stop = StopHandle::default();
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.flag()).context("installing the signal handlers")?;
    }
    spawn_stdin_stop(stop.clone());
    if let Some(secs) = duration {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("tt-duration".into())
            .spawn(move || {
                std::thread::sleep(Duration::from_secs(secs));
                stop.stop();
            })
            .context("starting the duration timer")?;
    }
    Ok(stop)
}

fn path_text(path: &Option<PathBuf>) -> String {
    path.as_ref().map_or_else(|| "the default config".to_owned(), |p| p.display().to_string())
}

fn load_config(path: Option<&Path>) -> anyhow::Result<Config> {
    let text = match path {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        None => ticktrade_strategy::template().to_owned(),
    };
    Config::parse(&text)
        .map_err(|e| anyhow!("{}: {e}", path.map_or("the default config".into(), |p| p.display().to_string())))
}

/// `--instruments A,B,C`: A becomes the strategy's instrument; B, C are subscribed too.
fn apply_instruments(config: &mut Config, instruments: &[String]) {
    let Some((first, rest)) = instruments.split_first() else { return };
    match config.strategy.as_str() {
        "quote" => {
            if let Some(q) = config.quote.as_mut() {
                q.instrument = first.clone();
            }
        }
        "take" => {
            if let Some(t) = config.take.as_mut() {
                t.instrument = first.clone();
            }
        }
        _ => {}
    }
    for name in rest {
        if !config.risk.instrument.iter().any(|r| &r.name == name) {
            config.risk.instrument.push(ticktrade_strategy::config::InstrumentRiskConfig::unlimited(name.clone()));
        }
    }
}

/// A nonce for this run's labels, from the clock (labels must not repeat across runs).
fn run_nonce() -> u32 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut rng = ticktrade_core::SplitMix64::seeded(nanos ^ u64::from(std::process::id()));
    rng.next_u64() as u32
}

/// `stop` (or `kill`, `q`) on stdin stops the session; end of input does not.
fn spawn_stdin_stop(stop: StopHandle) {
    let interactive = std::io::stdin().is_terminal();
    let _ = std::thread::Builder::new().name("tt-stdin".into()).spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            match line.trim() {
                "stop" | "kill" | "q" | "quit" => {
                    stop.stop();
                    return;
                }
                "" => {}
                other if interactive => eprintln!("unknown command {other:?}: `stop` cancels every order and exits"),
                _ => {}
            }
        }
    });
}

fn final_report(strategy: &str, report: &LiveReport, observed: &live::Observed) -> String {
    use std::fmt::Write as _;
    let s = &report.stats;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "ticktrade run {strategy}: {}",
        match &report.exit {
            Exit::Clean => "stopped cleanly: no open order left on the venue".to_owned(),
            Exit::Incomplete { open_orders, positions } => {
                format!("STOP INCOMPLETE: {open_orders} open orders and positions {positions:?} left on the venue")
            }
        }
    );
    if let Some(why) = report.kill {
        let _ = writeln!(text, "  kill switch: {why}");
    }
    let _ = writeln!(
        text,
        "  orders {}  edits {}  cancels {}  rejects {}  fills {}  reconnects {}",
        s.places,
        s.edits,
        s.cancels,
        s.rejects,
        observed.fills,
        s.connects.saturating_sub(1)
    );
    let _ = writeln!(
        text,
        "  book frames {}  gaps {}  stale books {}  malformed {}  dropped reports {}  other clients' reports {}  rate-limited {}{}",
        s.book_frames,
        s.gaps,
        s.stale_books,
        s.malformed,
        s.dropped_reports,
        s.foreign_reports,
        s.rate_limited,
        if s.would_send > 0 { format!("  would have sent {}", s.would_send) } else { String::new() }
    );
    for ((name, position), (_, pnl)) in report.positions.iter().zip(&report.pnl) {
        let pnl = pnl.map_or_else(|| "-".to_owned(), |p: Decimal| p.to_string());
        let _ = writeln!(text, "  {name}: position {position} lots, pnl {pnl}");
    }
    let series = report_series(observed);
    if !series.is_empty() {
        let _ = writeln!(text, "\nstage latency (ns):");
        text.push_str(&table_string(&series));
    }
    text
}

fn report_series(observed: &live::Observed) -> Vec<Series> {
    let mut series = observed.recorded.stages.series();
    if !observed.recorded.tick_to_encoded.is_empty() {
        series.push(Series::from_histogram("tick_to_encoded", &observed.recorded.tick_to_encoded));
    }
    series
}

fn write_report(dir: &Path, text: &str, observed: &live::Observed) -> anyhow::Result<()> {
    std::fs::write(dir.join("report.txt"), text).with_context(|| format!("writing {}", dir.display()))?;
    let series = report_series(observed);
    if !series.is_empty() {
        let svg = ticktrade_latency::svg_string("ticktrade run: tick-to-trade by stage", &series);
        std::fs::write(dir.join("latency.svg"), svg).with_context(|| format!("writing {}", dir.display()))?;
    }
    Ok(())
}
