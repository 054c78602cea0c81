//! `ticktrade hl --publish` / `--upstream nats://…`: the NATS bus flags, the connection, the
//! edge's run, and the bus status line.
//!
//! Owns: turning `--publish`/`--upstream`, `--nats-ca`, `--nats-subjects` and the
//! environment into a `BusConfig` and subjects, and the edge process (`run_edge`).
//! Must not: print a credential (a `BusConfig` shows none).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ticktrade_bus::{BusConfig, HlSubjects};
use ticktrade_hl_node::server::bus::{BusCounters, BusStats};
use ticktrade_hl_node::server::edge::{EdgeConfig, start_edge};

use super::serve::Args;

/// A NATS bus from URLs, `--nats-ca` and the process's environment.
pub fn config(args: &Args, urls: &str) -> anyhow::Result<BusConfig> {
    let mut config = BusConfig::parse(urls, args.nats_ca.clone(), |name| std::env::var(name).ok())?;
    config.name = "ticktrade-hl".to_owned();
    Ok(config)
}

pub fn subjects(args: &Args) -> anyhow::Result<HlSubjects> {
    HlSubjects::try_new(&args.nats_subjects).context("--nats-subjects")
}

/// Connects (a refused login or no server answering is an error now, not a retry loop).
pub async fn connect(config: &BusConfig) -> anyhow::Result<(ticktrade_bus::async_nats::Client, Arc<BusStats>)> {
    let (client, stats, _) = connect_with_events(config).await?;
    Ok((client, stats))
}

type Events = tokio::sync::mpsc::UnboundedReceiver<ticktrade_hl_node::server::edge::BusEvent>;

async fn connect_with_events(
    config: &BusConfig,
) -> anyhow::Result<(ticktrade_bus::async_nats::Client, Arc<BusStats>, Events)> {
    let stats = Arc::new(BusStats::default());
    let (client, events) = ticktrade_hl_node::server::bus::connect(config, Arc::clone(&stats)).await?;
    Ok((client, stats, events))
}

/// Waits for Ctrl-C, printing the bus counters to stderr every 10 s when they changed.
pub async fn status_until_ctrl_c(counters: impl Fn() -> BusCounters) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    tick.tick().await;
    let mut last = BusCounters::default();
    loop {
        tokio::select! {
            signal = tokio::signal::ctrl_c() => return Ok(signal?),
            _ = tick.tick() => {
                let now = counters();
                if now != last {
                    eprintln!("{now}");
                    last = now;
                }
            }
        }
    }
}

/// `ticktrade hl --upstream nats://…`: an edge serving `/ws` and `/info` from the bus.
pub fn run_edge(args: &Args, urls: &str) -> anyhow::Result<ExitCode> {
    let config = config(args, urls).context("--upstream")?;
    let subjects = subjects(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let (client, stats, events) = connect_with_events(&config).await?;
        let listener =
            tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("binding {}", args.listen))?;
        let edge_config = EdgeConfig { subjects, queue: args.queue };
        let edge = start_edge(listener, client, events, edge_config, stats).await.context("following the bus")?;
        println!(
            "ticktrade hl: edge of NATS at {} under {}; listening on ws://{}/ws and http://{}/info",
            config.servers_text(),
            args.nats_subjects,
            edge.addr,
            edge.addr
        );
        status_until_ctrl_c(|| edge.counters()).await?;
        edge.stop();
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
