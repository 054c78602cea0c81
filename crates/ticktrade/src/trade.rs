//! `ticktrade trade`: the trading shell on the embedded simulator (default), Deribit testnet,
//! production, or any Deribit-compatible endpoint (`--url`), and `ticktrade` with no
//! subcommand (the embedded simulator plus the shell).
//!
//! Owns: the command line, choosing the venue, loading credentials (environment or a
//! private config file; never the command line), and picking the front end (terminal,
//! script, `--json`).
//! Must not: hold shell or protocol logic (that is the library's `ticktrade::shell` and
//! `ticktrade_gateway::deribit`), or print a secret.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::ValueEnum as _;
use ticktrade::credentials;
use ticktrade::shell::{Shell, tty};
use ticktrade_gateway::venue::Venue;
use ticktrade_gateway::venues::{self, SessionOptions};

/// Which venue to trade on.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum VenueKind {
    /// The embedded simulator, started inside this process.
    Sim,
    /// Deribit's testnet (test.deribit.com).
    #[value(name = "deribit-testnet")]
    Testnet,
    /// Deribit production.
    #[value(name = "deribit")]
    Production,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Venue (ignored when --url is given).
    #[arg(long, value_enum, default_value = "sim")]
    venue: VenueKind,
    /// Any Deribit-compatible WebSocket endpoint, e.g. ws://127.0.0.1:8080/ws/api/v2.
    #[arg(long)]
    url: Option<String>,
    /// One JSON object per result (for scripts).
    #[arg(long)]
    json: bool,
    /// Credentials file (`client_id = …`, `client_secret = …`); must not be readable by
    /// others. Default: $DERIBIT_CLIENT_ID / $DERIBIT_CLIENT_SECRET.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Keep orders alive when the connection drops (cancel-on-disconnect is on by default).
    #[arg(long)]
    no_cancel_on_disconnect: bool,
    /// Authenticate with client_credentials instead of an HMAC client_signature.
    #[arg(long)]
    client_credentials: bool,
    /// Heartbeat interval in seconds (Deribit's minimum is 10).
    #[arg(long, default_value_t = 10)]
    heartbeat: u64,
}

/// `ticktrade` with no subcommand: the embedded simulator and the shell on it.
pub fn run_default() -> anyhow::Result<ExitCode> {
    run(Args {
        venue: VenueKind::Sim,
        url: None,
        json: false,
        config: None,
        no_cancel_on_disconnect: false,
        client_credentials: false,
        heartbeat: 10,
    })
}

/// Logs go to stderr, filtered by `RUST_LOG`. Without it: warnings for scripts, nothing at a
/// terminal (the shell prints connection changes itself, between prompts). The WebSocket
/// crates never log below `info`: their frame dumps would carry access tokens (and, with
/// `--client-credentials`, the secret).
fn init_logging(interactive: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if interactive { "off" } else { "warn" };
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    for quiet in ["tungstenite=info", "tokio_tungstenite=info", "rustls=info"] {
        if let Ok(directive) = quiet.parse() {
            filter = filter.add_directive(directive);
        }
    }
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    init_logging(std::io::stdin().is_terminal() && !args.json);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(session(args))
}

/// A local endpoint (a separately started `ticktrade sim`), where the simulator's built-in
/// key is the default.
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    ["127.", "localhost:", "localhost/", "[::1]"].iter().any(|p| rest.starts_with(p))
}

async fn session(args: Args) -> anyhow::Result<ExitCode> {
    let mut sim = None;
    let (url, credentials) = match (&args.url, args.venue) {
        (Some(url), _) => {
            let creds = credentials::load(args.config.as_deref())?
                .or_else(|| is_loopback(url).then(credentials::simulator_default));
            (url.clone(), creds)
        }
        (None, VenueKind::Sim) => {
            let handle = ticktrade_sim::spawn_loopback(ticktrade_sim::SimConfig::default())
                .await
                .context("starting the embedded simulator")?;
            let url = handle.ws_url();
            sim = Some(handle);
            (url, Some(credentials::simulator_default()))
        }
        (None, kind) => {
            let name = kind.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default();
            let url = venues::endpoint_url(&name).with_context(|| format!("no endpoint named {name}"))?;
            (url.to_owned(), credentials::load(args.config.as_deref())?)
        }
    };
    let mut options = SessionOptions::new(url.clone());
    options.credentials = credentials;
    options.cancel_on_disconnect = !args.no_cancel_on_disconnect;
    options.heartbeat_s = args.heartbeat.max(1);
    options.request_timeout = Duration::from_secs(10);
    options.send_secret = args.client_credentials;
    let venue = venues::open(options);
    // Say at once where we go: a venue that cannot be reached takes up to the timeout to fail.
    if !std::io::stdin().is_terminal() || args.json {
        eprintln!("connecting to {url} …");
    } else {
        println!("connecting to {url} …");
    }
    venue.connect().await.with_context(|| format!("connecting to {url}"))?;
    let mut shell = Shell::new(venue);
    // Completion and local validation want the instrument list; trading works without it.
    let _ = shell.load_instruments().await;
    // A person at a terminal sees each error as it happens; only scripts get a failing status.
    let failures = if std::io::stdin().is_terminal() && !args.json {
        tty::run_interactive(&mut shell).await?;
        0
    } else {
        let stdin = std::io::BufReader::new(std::io::stdin());
        let mut stdout = std::io::stdout();
        shell.run_script(stdin, &mut stdout, args.json).await.context("writing results")?
    };
    let _ = shell.venue().logout().await;
    if let Some(sim) = sim {
        sim.shutdown().await;
    }
    Ok(if failures == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
