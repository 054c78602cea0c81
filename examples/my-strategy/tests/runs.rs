//! The template runs: `my-strategy` with its own config trades on the embedded simulator for
//! a few seconds, stops cleanly on its own, and journals what it sent; over TLS against a
//! simulator with a private certificate (`--ca-cert`), it leaves no order open and every label
//! it sent is unique on the venue. A bad `[custom]` table is refused at start, naming the key.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/my-strategy.toml");

/// Runs `my-strategy` with `args` to its end; it must stop cleanly. Returns what it printed.
fn runs_cleanly(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_my-strategy")).args(args).stdin(Stdio::null()).output().unwrap();
    let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{printed}");
    assert!(printed.contains("stopped cleanly"), "{printed}");
    printed
}

#[test]
fn my_strategy_trades_on_the_embedded_simulator_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    runs_cleanly(&["--config", CONFIG, "--duration", "3", "--quiet", "--journal", &journal.display().to_string()]);
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.lines().any(|l| l.contains(r#""request":"place""#) && l.contains(r#""label":"mine-"#)), "{text}");
}

#[test]
fn my_strategy_trades_over_tls_and_leaves_nothing_open() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let config = ticktrade_sim::SimConfig {
        tls: Some(ticktrade_sim::TlsSource::SelfSigned),
        rate_per_s: 400,
        seed: 3,
        ..Default::default()
    };
    let sim = runtime.block_on(ticktrade_sim::spawn_loopback(config)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("sim.pem");
    std::fs::write(&cert, sim.certificate_pem().unwrap()).unwrap();
    let url = sim.ws_url();
    assert!(url.starts_with("wss://"), "{url}");
    let journal = dir.path().join("journal.jsonl");
    let (cert_arg, journal_arg) = (cert.display().to_string(), journal.display().to_string());
    let printed = runs_cleanly(&[
        "--venue",
        &url,
        "--config",
        CONFIG,
        "--duration",
        "4",
        "--quiet",
        "--ca-cert",
        &cert_arg,
        "--journal",
        &journal_arg,
    ]);
    let entries: Vec<serde_json::Value> =
        std::fs::read_to_string(&journal).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(entries.iter().any(|e| e["event"] == "sent" && e["request"] == "place"), "no order sent: {printed}");
    let mut journal_fills: Vec<&str> =
        entries.iter().filter(|e| e["event"] == "fill").map(|e| e["trade_id"].as_str().unwrap()).collect();
    journal_fills.sort_unstable();

    // What the venue kept, asked over a connection of its own.
    let options = ticktrade_net::hot::HotOptions {
        roots: ticktrade_net::hot::TlsRoots::File(cert.clone()),
        ..Default::default()
    };
    let key = ticktrade_sim::ApiKey::default_key();
    let credentials = ticktrade_gateway::venue::Credentials {
        client_id: key.client_id,
        client_secret: ticktrade_gateway::venue::Secret::new(key.client_secret.expose()),
    };
    let mut query = ticktrade_gateway::live::Query::connect(&url, &options).unwrap();
    query.auth(&credentials).unwrap();
    let open = query.call("private/get_open_orders_by_instrument", r#"{"instrument_name":"BTC-PERPETUAL"}"#).unwrap();
    assert_eq!(open, "[]", "orders left open");
    let history = query
        .call("private/get_order_history_by_instrument", r#"{"instrument_name":"BTC-PERPETUAL","count":1000}"#)
        .unwrap();
    let history: serde_json::Value = serde_json::from_str(&history).unwrap();
    let mut venue_labels: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["label"].as_str())
        .filter(|l| l.starts_with("mine-"))
        .collect();
    let n = venue_labels.len();
    venue_labels.sort_unstable();
    venue_labels.dedup();
    assert_eq!(venue_labels.len(), n, "a label was used twice on the venue");
    let trades = query
        .call("private/get_user_trades_by_instrument", r#"{"instrument_name":"BTC-PERPETUAL","count":1000}"#)
        .unwrap();
    let trades: serde_json::Value = serde_json::from_str(&trades).unwrap();
    let mut venue_fills: Vec<&str> = trades["trades"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["label"].as_str().is_some_and(|l| l.starts_with("mine-")))
        .map(|t| t["trade_id"].as_str().unwrap())
        .collect();
    venue_fills.sort_unstable();
    assert_eq!(journal_fills, venue_fills, "the journal's fills differ from the venue's");
    runtime.block_on(sim.shutdown());
}

#[test]
fn a_bad_custom_table_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.toml");
    let text = std::fs::read_to_string(CONFIG).unwrap().replace(r#"amount = "10""#, r#"amount = "10.5""#);
    std::fs::write(&config, text).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_my-strategy"))
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(printed.contains("custom.amount"), "{printed}");
}
