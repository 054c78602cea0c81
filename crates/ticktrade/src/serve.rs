//! `ticktrade serve`: the market-data fan-out server on a port.
//!
//! Owns: the command line (`--upstream`, `--instruments`, `--listen`, `--raw`, queue and
//! limit flags), the start banner (a line with the `ws://…/ws/api/v2` URL, which the process
//! tests read), the status line printed once per interval, and Ctrl-C.
//! Must not: hold any server logic; everything is `ticktrade_serve`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use ticktrade_serve::{ServeConfig, SlowPolicy, UpstreamSource};
use ticktrade_sim::SimConfig;

use crate::status::{banner, runtime};

/// Fan one upstream Deribit market-data feed out to many local clients (Deribit's public API).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// sim (embedded simulator), deribit-testnet, deribit, or a ws:// / wss:// URL.
    #[arg(long, default_value = "sim")]
    pub upstream: String,
    /// Instruments served: a comma-separated list, or `all`.
    #[arg(long, default_value = "all")]
    pub instruments: String,
    /// Address to listen on (loopback by default; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8788")]
    pub listen: SocketAddr,
    /// Thin relay: upstream frames go out untouched, no books kept.
    #[arg(long)]
    pub raw: bool,
    /// Frames a client may have queued before the slow-client policy applies.
    #[arg(long, default_value_t = 1_024)]
    pub queue: usize,
    /// What happens to a slow client: conflate (fresh snapshot when it catches up) or disconnect.
    #[arg(long, default_value = "conflate", value_parser = ["conflate", "disconnect"])]
    pub slow: String,
    /// Subscriptions per connection.
    #[arg(long, default_value_t = 1_000)]
    pub max_subscriptions: usize,
    /// Largest message accepted from a client, bytes.
    #[arg(long, default_value_t = 65_536)]
    pub max_message_bytes: usize,
    /// Concurrent client connections.
    #[arg(long, default_value_t = 10_000)]
    pub max_connections: usize,
    /// Seconds an upstream subscription is kept after its last client left.
    #[arg(long, default_value_t = 10)]
    pub linger_s: u64,
    /// Synthetic market events per second of the embedded simulator (`--upstream sim`).
    #[arg(long, default_value_t = 50)]
    pub sim_rate: u32,
    /// Seconds between status lines (0 = none).
    #[arg(long, default_value_t = 1)]
    pub stats_interval_s: u64,
}

fn upstream(text: &str, sim_rate: u32) -> anyhow::Result<UpstreamSource> {
    Ok(match text {
        "sim" => UpstreamSource::Sim(Box::new(SimConfig { rate_per_s: sim_rate, ..SimConfig::default() })),
        "deribit-testnet" => UpstreamSource::Url("wss://test.deribit.com/ws/api/v2".to_owned()),
        "deribit" => UpstreamSource::Url("wss://www.deribit.com/ws/api/v2".to_owned()),
        url if url.starts_with("ws://") || url.starts_with("wss://") => UpstreamSource::Url(url.to_owned()),
        other => anyhow::bail!("--upstream {other:?}: expected sim, deribit-testnet, deribit or a ws:// / wss:// URL"),
    })
}

pub fn config(args: &Args) -> anyhow::Result<ServeConfig> {
    let instruments = match args.instruments.trim() {
        "" | "all" => None,
        list => Some(list.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()),
    };
    Ok(ServeConfig {
        listen: args.listen,
        upstream: upstream(&args.upstream, args.sim_rate)?,
        instruments,
        raw: args.raw,
        queue_capacity: args.queue.max(1),
        slow_policy: if args.slow == "disconnect" { SlowPolicy::Disconnect } else { SlowPolicy::Conflate },
        max_subscriptions: args.max_subscriptions,
        max_message_bytes: args.max_message_bytes,
        max_connections: args.max_connections,
        linger: Duration::from_secs(args.linger_s),
        ..ServeConfig::default()
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = config(&args)?;
    runtime()?.block_on(async move {
        let serve = ticktrade_serve::spawn(config).await.context("starting the server")?;
        let mut rows = vec![("websocket", serve.ws_url()), ("web view", format!("http://{}/", serve.addr()))];
        if let Some(sim) = serve.sim() {
            rows.push(("upstream", format!("embedded simulator {} (REST {})", sim.ws_url(), sim.http_url())));
        }
        let headline = format!("ticktrade serve: market data from {} fanned out over Deribit's public API", args.upstream);
        print!("{}", banner(&headline, &rows));
        let period = Duration::from_secs(args.stats_interval_s.max(1));
        let mut ticker = tokio::time::interval(period);
        ticker.tick().await;
        let mut last = serve.totals().await.unwrap_or_default();
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = ticker.tick(), if args.stats_interval_s > 0 => {
                    let Some(now) = serve.totals().await else { break };
                    let d = serve.fanout_summary();
                    println!(
                        "clients {:>5}  upstream subs {:>3} frames {:>6}  sent {:>8} ({} B)  fan-out p50 {} p99 {} p99.9 {}  drops {}  conflations {}  disconnects {}  resyncs {}",
                        now.clients.len(),
                        now.upstream_channels.len(),
                        now.upstream_frames - last.upstream_frames,
                        now.messages - last.messages,
                        now.bytes - last.bytes,
                        micros(d.p50_ns),
                        micros(d.p99_ns),
                        micros(d.p999_ns),
                        now.drops,
                        now.conflations,
                        now.disconnects,
                        now.resyncs,
                    );
                    last = now;
                }
            }
        }
        println!("stopping…");
        serve.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// `12µs`, `1.3ms`: a delay for the status line.
fn micros(ns: u64) -> String {
    if ns >= 1_000_000 { format!("{:.1}ms", ns as f64 / 1e6) } else { format!("{}µs", ns / 1_000) }
}
