//! `ticktrade hl stats`: connect like a client, subscribe to `l2Book` and `trades`, and print
//! latency percentiles from block time to receipt, plus (with `--data-dir`) the file-level
//! floor: block time → the line being readable from hl-node's file.
//!
//! Block time is the node's consensus time; `l2Book`/`trades` carry it in whole milliseconds,
//! so those figures carry up to 1 ms of truncation (the file floor uses the line's
//! nanoseconds). Output: the same table and JSON lines as `ticktrade bench`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use ticktrade_hl_node::follow::Watched;
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_proto::time::scan_block_time;
use ticktrade_latency::{Histogram, Series, write_json_lines, write_table};
use tokio_tungstenite::tungstenite::Message;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Server WebSocket URL, e.g. ws://127.0.0.1:8000/ws.
    #[arg(long)]
    pub url: String,
    /// Coins to subscribe to (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "BTC,ETH")]
    pub coins: Vec<String>,
    /// Seconds to measure.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// hl-node data directory, to measure the file-level floor as well.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Print JSON lines instead of the table.
    #[arg(long)]
    pub json: bool,
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

fn record(histogram: &mut Histogram, time_ms: Option<u64>) {
    if let Some(ms) = time_ms {
        histogram.record(now_ns().saturating_sub(ms as i64 * 1_000_000).max(0) as u64);
    }
}

/// Reads new lines of every stream as they appear and records block time → read.
fn file_floor(data_dir: PathBuf, until: Instant) -> Histogram {
    let mut histogram = Histogram::new();
    let mut watched = Watched::new(&data_dir, &Stream::ALL);
    let _ = watched.seek_end();
    let mut lines = Vec::new();
    while Instant::now() < until {
        watched.wait_lines(Duration::from_millis(50), &mut lines);
        for line in lines.drain(..) {
            let read = now_ns();
            if let Some(t) = scan_block_time(&line.text) {
                histogram.record(read.saturating_sub(t.as_nanos()).max(0) as u64);
            }
        }
    }
    histogram
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let until = Instant::now() + Duration::from_secs(args.duration);
    let floor = args.data_dir.clone().map(|dir| std::thread::spawn(move || file_floor(dir, until)));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (book, trade) = runtime.block_on(async {
        let (mut ws, _) =
            tokio_tungstenite::connect_async(&args.url).await.with_context(|| format!("connecting to {}", args.url))?;
        for coin in &args.coins {
            for sub in [json!({"type": "l2Book", "coin": coin}), json!({"type": "trades", "coin": coin})] {
                ws.send(Message::Text(json!({"method": "subscribe", "subscription": sub}).to_string().into())).await?;
            }
        }
        let (mut book, mut trade) = (Histogram::new(), Histogram::new());
        let mut primed = std::collections::HashSet::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let Ok(Some(msg)) = tokio::time::timeout(left, ws.next()).await else { break };
            let Message::Text(text) = msg? else { continue };
            let Ok(value) = serde_json::from_str::<Value>(&text) else { continue };
            match value["channel"].as_str() {
                // The first l2Book after subscribing is the current book, not a new block.
                Some("l2Book") => {
                    let coin = value["data"]["coin"].as_str().unwrap_or_default().to_owned();
                    if primed.insert(coin) {
                        continue;
                    }
                    record(&mut book, value["data"]["time"].as_u64());
                }
                Some("trades") => {
                    for t in value["data"].as_array().into_iter().flatten() {
                        record(&mut trade, t["time"].as_u64());
                    }
                }
                Some("error") => eprintln!("server: {}", value["data"]),
                _ => {}
            }
        }
        anyhow::Ok((book, trade))
    })?;
    let mut series = vec![
        Series::from_histogram("hl book (block time → received)", &book),
        Series::from_histogram("hl trade (block time → received)", &trade),
    ];
    if let Some(handle) = floor {
        let floor = handle.join().map_err(|_| anyhow::anyhow!("file reader panicked"))?;
        series.push(Series::from_histogram("hl file floor (block time → line read)", &floor));
    }
    if args.json {
        write_json_lines(std::io::stdout(), &series)?;
    } else {
        let mut out = String::new();
        write_table(&mut out, &series)?;
        print!("{out}");
    }
    Ok(ExitCode::SUCCESS)
}
