//! `ticktrade serve`: the market-data fan-out server on a port.
//!
//! Owns: the command line (`--upstream`, `--instruments`, `--listen`, `--raw`, queue and
//! limit flags, the NATS bus flags `--publish`, `--nats-ca`, `--nats-subjects`, `--bus-queue`;
//! credentials come from the URL or the environment, never a flag), the embedded simulator when `--upstream sim` (started before the server,
//! which only gets its URL, and stopped after it), the start banner (a line with the `ws://…/ws/api/v2` URL, which the process
//! tests read), the status line printed once per interval, and Ctrl-C.
//! Must not: hold any server logic; everything is `ticktrade_serve`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use ticktrade_serve::ServeHandle;
use ticktrade_serve::{BusConfig, ClientCounters, ServeConfig, SlowPolicy, Subjects, Totals, UpstreamSource};
use ticktrade_sim::{SimConfig, SimHandle};

use crate::status::{banner, runtime};

/// Fan one upstream Deribit market-data feed out to many local clients (Deribit's public API).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// sim (embedded simulator), deribit-testnet, deribit, a ws:// / wss:// URL, or a NATS bus
    /// (nats://HOST:PORT[,…] or tls://…) that a `--publish` server feeds: this server is then
    /// an edge and opens no venue connection. NATS credentials: in the URL
    /// (nats://user:pass@host, nats://token@host) or NATS_USER/NATS_PASSWORD, NATS_TOKEN,
    /// NATS_NKEY (seed) or NATS_CREDS (file).
    #[arg(long, default_value = "sim")]
    pub upstream: String,
    /// Also publish every served instrument's book changes, trades and tickers to this NATS
    /// bus (nats://HOST:PORT[,…] or tls://…; credentials as for --upstream), and answer edges'
    /// snapshot requests.
    #[arg(long)]
    pub publish: Option<String>,
    /// PEM file of the CA that signed the NATS servers' certificates (else NATS_CA).
    #[arg(long)]
    pub nats_ca: Option<std::path::PathBuf>,
    /// Subject root on the bus (publisher and edges must agree).
    #[arg(long, default_value = ticktrade_bus::subject::DEFAULT_ROOT)]
    pub nats_subjects: String,
    /// Messages the NATS sink may hold before it drops (a slow NATS never slows clients).
    #[arg(long, default_value_t = 65_536)]
    pub bus_queue: usize,
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
    /// Per-client rows printed under each status line: the N clients sent the most in the
    /// interval (0 = totals only; every client is in the web view and at /metrics).
    #[arg(long, default_value_t = 5)]
    pub stats_clients: usize,
}

/// What `--upstream` names: the embedded simulator, which this module starts, or a source the
/// server reads by itself.
#[derive(Debug)]
pub enum Upstream {
    Sim(Box<SimConfig>),
    Source(UpstreamSource),
}

pub fn upstream(args: &Args) -> anyhow::Result<Upstream> {
    Ok(match args.upstream.as_str() {
        "sim" => Upstream::Sim(Box::new(SimConfig { rate_per_s: args.sim_rate, ..SimConfig::default() })),
        "deribit-testnet" => Upstream::Source(UpstreamSource::Url("wss://test.deribit.com/ws/api/v2".to_owned())),
        "deribit" => Upstream::Source(UpstreamSource::Url(ticktrade_serve::DERIBIT_URL.to_owned())),
        url if url.starts_with("ws://") || url.starts_with("wss://") => {
            Upstream::Source(UpstreamSource::Url(url.to_owned()))
        }
        urls if urls.starts_with("nats://") || urls.starts_with("tls://") => {
            Upstream::Source(UpstreamSource::Nats(bus_config(urls, args).context("--upstream")?))
        }
        other => anyhow::bail!(
            "--upstream {:?}: expected sim, deribit-testnet, deribit, a ws:// / wss:// URL or nats:// / tls:// URLs",
            redacted(other)
        ),
    })
}

/// A NATS bus from URLs, `--nats-ca` and the process's environment.
fn bus_config(urls: &str, args: &Args) -> anyhow::Result<BusConfig> {
    Ok(BusConfig::parse(urls, args.nats_ca.clone(), |name| std::env::var(name).ok())?)
}

/// A URL as it may be shown: what stands before an `@` (credentials) is hidden.
fn redacted(urls: &str) -> String {
    let one = |url: &str| match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://***{}", &url[at..]),
        _ => url.to_owned(),
    };
    urls.split(',').map(one).collect::<Vec<_>>().join(",")
}

/// The bus settings of the flags: where to publish (if anywhere), the subject root.
pub fn bus(args: &Args) -> anyhow::Result<(Option<BusConfig>, Subjects)> {
    let publish = args.publish.as_deref().map(|urls| bus_config(urls, args).context("--publish")).transpose()?;
    let subjects = Subjects::try_new(&args.nats_subjects).context("--nats-subjects")?;
    Ok((publish, subjects))
}

/// The server's configuration from the flags, reading `upstream`.
pub fn config(args: &Args, upstream: UpstreamSource) -> anyhow::Result<ServeConfig> {
    let (publish, subjects) = bus(args)?;
    let instruments = match args.instruments.trim() {
        "" | "all" => None,
        list => Some(list.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()),
    };
    Ok(ServeConfig {
        listen: args.listen,
        upstream,
        instruments,
        raw: args.raw,
        queue_capacity: args.queue.max(1),
        slow_policy: if args.slow == "disconnect" { SlowPolicy::Disconnect } else { SlowPolicy::Conflate },
        max_subscriptions: args.max_subscriptions,
        max_message_bytes: args.max_message_bytes,
        max_connections: args.max_connections,
        linger: Duration::from_secs(args.linger_s),
        publish,
        subjects,
        bus_queue_capacity: args.bus_queue.max(1),
        ..ServeConfig::default()
    })
}

/// A running server and the embedded simulator it reads, if any.
pub struct Running {
    pub serve: ServeHandle,
    pub sim: Option<SimHandle>,
}

impl Running {
    /// Stops the server, then the simulator it reads.
    pub async fn shutdown(self) {
        self.serve.shutdown().await;
        if let Some(sim) = self.sim {
            sim.shutdown().await;
        }
    }
}

/// Starts what the flags ask for: the embedded simulator first when `--upstream sim`, then the
/// server on its URL. A server that fails to start stops the simulator again.
pub async fn start(args: &Args) -> anyhow::Result<Running> {
    let (sim, source) = match upstream(args)? {
        Upstream::Sim(config) => {
            let sim = ticktrade_sim::spawn_loopback(*config).await.context("starting the embedded simulator")?;
            let url = sim.ws_url();
            (Some(sim), UpstreamSource::Url(url))
        }
        Upstream::Source(source) => (None, source),
    };
    let config = match config(args, source) {
        Ok(config) => config,
        Err(e) => {
            if let Some(sim) = sim {
                sim.shutdown().await;
            }
            return Err(e);
        }
    };
    match ticktrade_serve::spawn(config).await {
        Ok(serve) => Ok(Running { serve, sim }),
        Err(e) => {
            if let Some(sim) = sim {
                sim.shutdown().await;
            }
            Err(anyhow::Error::new(e).context("starting the server"))
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    upstream(&args)?;
    bus(&args)?;
    runtime()?.block_on(async move {
        let running = start(&args).await?;
        let serve = &running.serve;
        let mut rows = vec![("websocket", serve.ws_url()), ("web view", format!("http://{}/", serve.addr()))];
        if let Some(sim) = &running.sim {
            rows.push(("upstream", format!("embedded simulator {} (REST {})", sim.ws_url(), sim.http_url())));
        }
        if let Some(urls) = &args.publish {
            rows.push(("publishing to", format!("NATS {} under {}.*", redacted(urls), args.nats_subjects)));
        }
        let headline = format!(
            "ticktrade serve: market data from {} fanned out over Deribit's public API",
            redacted(&args.upstream)
        );
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
                    print!("{}", client_rows(&now, &last, args.stats_clients));
                    last = now;
                }
            }
        }
        println!("stopping…");
        running.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// The `top` clients by messages sent since `last`, one row each (counts in the interval,
/// drops/conflations/resyncs since they connected, fan-out quantiles), then how many are left
/// out. Empty when `top` is 0 or there are no clients.
fn client_rows(now: &Totals, last: &Totals, top: usize) -> String {
    use std::fmt::Write as _;
    if top == 0 || now.clients.is_empty() {
        return String::new();
    }
    let mut rows: Vec<(u64, u64, u64, &ClientCounters)> = now
        .clients
        .iter()
        .map(|(id, c)| {
            let before = last.clients.get(id).copied().unwrap_or_default();
            (*id, c.messages.saturating_sub(before.messages), c.bytes.saturating_sub(before.bytes), c)
        })
        .collect();
    rows.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = String::from("  client  messages        bytes  drops  conflations  resyncs  fan-out p50    p99\n");
    for (id, messages, bytes, c) in rows.iter().take(top) {
        let _ = writeln!(
            out,
            "  {id:>6}  {messages:>8}  {bytes:>11}  {:>5}  {:>11}  {:>7}  {:>11}  {:>5}",
            c.drops,
            c.conflations,
            c.resyncs,
            micros(c.fanout.p50_ns),
            micros(c.fanout.p99_ns),
        );
    }
    if rows.len() > top {
        let _ = writeln!(out, "  … and {} more clients (all of them: the web view, /metrics)", rows.len() - top);
    }
    out
}

/// `12µs`, `1.3ms`: a delay for the status line.
fn micros(ns: u64) -> String {
    if ns >= 1_000_000 { format!("{:.1}ms", ns as f64 / 1e6) } else { format!("{}µs", ns / 1_000) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(messages: u64, resyncs: u64) -> ClientCounters {
        ClientCounters { messages, bytes: messages * 100, resyncs, ..ClientCounters::default() }
    }

    #[test]
    fn client_rows_rank_by_messages_in_the_interval_and_count_the_rest() {
        let mut last = Totals::default();
        last.clients.insert(1, counters(1_000, 0));
        last.clients.insert(2, counters(10, 0));
        let mut now = Totals::default();
        now.clients.insert(1, counters(1_005, 0)); // 5 in the interval
        now.clients.insert(2, counters(60, 2)); // 50 in the interval
        now.clients.insert(3, counters(20, 1)); // new: 20
        let text = client_rows(&now, &last, 2);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].contains("resyncs"), "{text}");
        let first: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(&first[..3], ["2", "50", "5000"], "{text}");
        assert_eq!(first[5], "2", "resyncs since connect: {text}");
        assert!(lines[2].trim_start().starts_with("3 "), "{text}");
        assert!(lines[3].contains("1 more"), "{text}");
        assert_eq!(client_rows(&now, &last, 0), "");
        assert_eq!(client_rows(&Totals::default(), &last, 5), "");
    }
}
