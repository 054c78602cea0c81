//! What the long-running server subcommands (`ticktrade sim`, `ticktrade serve`) share: logging
//! and the runtime they start, the start banner, and the status line printed every period until
//! Ctrl-C.
//!
//! Owns: the banner's layout (a headline, then aligned `label  value` rows, then "Ctrl-C stops
//! it.") and the ticking. Must not: know what a server reports; the caller formats its line.

use std::time::Duration;

use anyhow::Context as _;

/// Logs to stderr at `warn` (or as `RUST_LOG` says) and builds the two-worker runtime a server
/// subcommand runs on.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .try_init();
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("starting the runtime")
}

/// The start banner: `headline`, one `  label  value` row per entry (labels padded to one
/// width), and how to stop.
pub fn banner(headline: &str, rows: &[(&str, String)]) -> String {
    let width = rows.iter().map(|(label, _)| label.chars().count()).max().unwrap_or(0);
    let mut text = format!("{headline}\n");
    for (label, value) in rows {
        text.push_str(&format!("  {label:<width$}  {value}\n"));
    }
    text.push_str("  Ctrl-C stops it.\n");
    text
}

/// Wakes every `period` for a status line until Ctrl-C.
pub struct StatusTicker {
    interval: Option<tokio::time::Interval>,
}

impl StatusTicker {
    /// `None`: no status lines, only the wait for Ctrl-C.
    pub async fn new(period: Option<Duration>) -> StatusTicker {
        let mut interval = period.map(tokio::time::interval);
        if let Some(interval) = &mut interval {
            interval.tick().await; // The first tick is immediate.
        }
        StatusTicker { interval }
    }

    /// Waits for the next status time: `true`, or `false` once Ctrl-C is pressed.
    pub async fn next(&mut self) -> bool {
        match &mut self.interval {
            Some(interval) => tokio::select! {
                _ = tokio::signal::ctrl_c() => false,
                _ = interval.tick() => true,
            },
            None => {
                let _ = tokio::signal::ctrl_c().await;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_aligns_rows_and_ends_with_how_to_stop() {
        let text = banner("head", &[("websocket", "ws://a".into()), ("http", "http://b".into())]);
        assert_eq!(text, "head\n  websocket  ws://a\n  http       http://b\n  Ctrl-C stops it.\n");
    }

    #[test]
    fn ticker_ticks_every_period() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let start = tokio::time::Instant::now();
            let mut ticker = StatusTicker::new(Some(Duration::from_millis(20))).await;
            assert!(ticker.next().await);
            assert!(ticker.next().await);
            assert!(start.elapsed() >= Duration::from_millis(40));
        });
    }
}
