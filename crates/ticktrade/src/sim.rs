//! `ticktrade sim`: run the Deribit-compatible simulator on a port.
//!
//! Owns: the command line (`--listen`, `--tls`, `--cert/--cert-key`, `--cert-out`, `--seed`, `--rate`,
//! `--instruments`, `--key`, `--fault`), the start banner (where it listens, the API key to
//! use, a clear "local simulator" notice), the once-a-second status line, and Ctrl-C.
//! Must not: hold any simulator logic (everything is `ticktrade_sim`), or print a secret given
//! with `--key` (only the public demo key is shown whole).
//!
//! `--key` is the API key (`CLIENT_ID:CLIENT_SECRET`, repeatable); the TLS key file is
//! `--cert-key`, so the two never clash.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use ticktrade_sim::{ApiKey, FaultRule, SimConfig, TlsSource};

use crate::status::{StatusTicker, banner, runtime};

/// Run the Deribit-compatible simulator (WebSocket + HTTP JSON-RPC on one port).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,
    /// Serve wss:// and https:// (self-signed certificate generated at start unless --cert is given).
    #[arg(long)]
    pub tls: bool,
    /// PEM certificate chain for --tls.
    #[arg(long, requires = "cert_key")]
    pub cert: Option<PathBuf>,
    /// PEM private key for --cert.
    #[arg(long, requires = "cert")]
    pub cert_key: Option<PathBuf>,
    /// Where --tls writes its generated certificate (PEM), for clients to trust with
    /// --ca-cert (default: ticktrade-sim-PORT.pem in the system temp directory).
    #[arg(long, value_name = "FILE", conflicts_with = "cert")]
    pub cert_out: Option<PathBuf>,
    /// Seed of the synthetic market and of fault decisions.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Synthetic market events per second.
    #[arg(long, default_value_t = 50)]
    pub rate: u32,
    /// A recorded public/get_instruments reply to trade instead of the built-in instruments.
    #[arg(long)]
    pub instruments: Option<PathBuf>,
    /// API key CLIENT_ID:CLIENT_SECRET (repeatable; one account each).
    #[arg(long = "key", value_name = "ID:SECRET")]
    pub keys: Vec<String>,
    /// Fault rule KIND[:rate=P|:every=N][:ms=MS][:levels=N] (repeatable), e.g. drop_change:rate=0.01.
    #[arg(long = "fault", value_name = "RULE")]
    pub faults: Vec<String>,
    /// Report `testnet: true` in every response.
    #[arg(long)]
    pub testnet: bool,
}

fn config(args: &Args) -> anyhow::Result<SimConfig> {
    let keys = args
        .keys
        .iter()
        .map(|k| ApiKey::parse(k).with_context(|| "--key must be CLIENT_ID:CLIENT_SECRET".to_owned()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let faults = args
        .faults
        .iter()
        .map(|f| f.parse::<FaultRule>().map_err(anyhow::Error::from))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let tls = match (&args.cert, &args.cert_key) {
        (Some(cert), Some(key)) => Some(TlsSource::Files { cert: cert.clone(), key: key.clone() }),
        _ if args.tls => Some(TlsSource::SelfSigned),
        _ => None,
    };
    Ok(SimConfig {
        listen: args.listen,
        seed: args.seed,
        rate_per_s: args.rate,
        instruments_file: args.instruments.clone(),
        keys,
        faults,
        tls,
        testnet: args.testnet,
        ..SimConfig::default()
    })
}

/// Resident set size in bytes from /proc/self/statm (pages × 4 KiB), if readable.
fn rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The banner's line for one key: the built-in demo key is public and printed whole (so a
/// user can copy it); any other key shows its id and a masked secret.
fn key_row(key: &ApiKey) -> String {
    let secret = key.client_secret.expose();
    if key.client_id == ApiKey::DEFAULT_ID && secret == ApiKey::DEFAULT_SECRET {
        format!("client_id={} client_secret={secret}", key.client_id)
    } else {
        format!("client_id={} client_secret=******** (as given with --key)", key.client_id)
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Logs go to stderr, filtered by `RUST_LOG` (default: warnings). A secret never reaches
    // them: the simulator logs no request params, and `Secret` hides itself in `Debug`.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .try_init();
    let config = config(&args)?;
    runtime()?.block_on(async move {
        let sim = ticktrade_sim::spawn(config).await.context("starting the simulator")?;
        let mut rows = vec![("websocket", sim.ws_url()), ("http", sim.http_url())];
        for key in sim.keys() {
            rows.push(("api key", key_row(key)));
        }
        if let Some(pem) = sim.certificate_pem()
            && args.cert.is_none()
        {
            let path = args
                .cert_out
                .clone()
                .unwrap_or_else(|| std::env::temp_dir().join(format!("ticktrade-sim-{}.pem", sim.addr().port())));
            std::fs::write(&path, pem).with_context(|| format!("writing the certificate to {}", path.display()))?;
            rows.push((
                "tls",
                format!(
                    "self-signed certificate for localhost/127.0.0.1 written to {0}; pass --ca-cert {0}",
                    path.display()
                ),
            ));
        }
        print!(
            "{}",
            banner("ticktrade sim: a LOCAL SIMULATOR speaking Deribit API v2. Not Deribit; no real funds.", &rows)
        );
        let mut ticker = StatusTicker::new(Some(Duration::from_secs(1))).await;
        let mut last = sim.stats();
        while ticker.next().await {
            let now = sim.stats();
            let rss_mib = rss_bytes().map_or_else(|| "?".to_owned(), |b| format!("{:.1}", b as f64 / 1_048_576.0));
            println!(
                "connections {:>4}  orders/s {:>6}  book changes/s {:>6}  rss {rss_mib} MiB",
                now.connections,
                now.orders - last.orders,
                now.book_changes - last.book_changes,
            );
            last = now;
        }
        println!("stopping…");
        sim.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn flags_build_a_config() {
        let cli = Cli::parse_from([
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--seed",
            "7",
            "--rate",
            "10",
            "--key",
            "a:b",
            "--fault",
            "drop_change:rate=0.5",
            "--tls",
        ]);
        let config = config(&cli.args).unwrap();
        assert_eq!(config.seed, 7);
        assert_eq!(config.keys[0].client_id, "a");
        assert_eq!(config.faults.len(), 1);
        assert!(matches!(config.tls, Some(TlsSource::SelfSigned)));
        let bad = Cli::parse_from(["sim", "--key", "nocolon"]);
        assert!(config_err(&bad.args));
    }

    fn config_err(args: &Args) -> bool {
        config(args).is_err()
    }
}
