//! `ticktrade run` as a user runs it, against `ticktrade sim` as a user starts it: two real
//! processes on loopback, plain and TLS, with and without the simulator's faults. Afterwards
//! the venue is asked, over a connection of its own, what the session left behind: no open
//! order, the same position and fills as the session's journal, every label unique, and no
//! position or order size beyond the configured limits at any point of the trade history.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ticktrade_gateway::live::Query;
use ticktrade_gateway::venue::{Credentials, Secret};
use ticktrade_net::hot::{HotOptions, TlsRoots};

/// Lots are 10 USD on BTC-PERPETUAL: quotes of 10 USD, position within 30 USD, orders
/// within 20 USD, one tick from the mid so that the synthetic market fills them.
const CONFIG: &str = r#"
strategy = "quote"
label_prefix = "it"
[capacity]
order_slots = 256
outbox = 64
trade_memory = 4096
[risk]
max_open_orders = 4
max_orders_per_window = 50
rate_window_ms = 1000
price_band_bps = 200
price_band_reference = "mid"
self_cross = true
[[risk.instrument]]
name = "BTC-PERPETUAL"
max_order_amount = "20"
max_position = "30"
[quote]
instrument = "BTC-PERPETUAL"
distance_ticks = 1
amount = "10"
max_position = "30"
skew_ticks = 2
requote_ticks = 1
[take]
instrument = "BTC-PERPETUAL"
levels = 3
imbalance = "2"
amount = "10"
max_position = "30"
cooldown_ms = 200
"#;

const MAX_POSITION_USD: i64 = 30;
const MAX_ORDER_USD: i64 = 20;
const LOT_USD: i64 = 10;

use crate::common;
use common::SimProcess;

struct Sim {
    /// Kept for its `Drop`: the process ends with the test.
    _process: SimProcess,
    url: String,
    cert: Option<PathBuf>,
}

impl Sim {
    fn start(dir: &Path, tls: bool, faults: &[&str]) -> Sim {
        let cert = dir.join("sim.pem");
        let mut args = vec!["--listen", "127.0.0.1:0", "--seed", "11", "--rate", "400"];
        let cert_text = cert.display().to_string();
        if tls {
            args.extend(["--tls", "--cert-out", &cert_text]);
        }
        for fault in faults {
            args.extend(["--fault", fault]);
        }
        let process = SimProcess::start(&args);
        let url = process.url("ws://").or_else(|| process.url("wss://")).expect("a ws:// URL in the banner");
        Sim { _process: process, url, cert: tls.then_some(cert) }
    }

    fn options(&self) -> HotOptions {
        let roots = self.cert.clone().map_or(TlsRoots::Webpki, TlsRoots::File);
        HotOptions { roots, ..HotOptions::default() }
    }

    /// A fresh authenticated connection (retried: a fault may cut one).
    fn query(&self, method: &str, params: &str) -> serde_json::Value {
        let key = ticktrade_sim::ApiKey::default_key();
        let credentials =
            Credentials { client_id: key.client_id, client_secret: Secret::new(key.client_secret.expose()) };
        let mut last = String::new();
        for _ in 0..10 {
            let answer = Query::connect(&self.url, &self.options()).and_then(|mut q| {
                q.auth(&credentials)?;
                q.call(method, params)
            });
            match answer {
                Ok(text) => return serde_json::from_str(&text).unwrap(),
                Err(e) => last = e.to_string(),
            }
        }
        panic!("{method}: {last}");
    }
}

fn run_args(sim: &Sim, dir: &Path, strategy: &str) -> Command {
    let config = dir.join("run.toml");
    std::fs::write(&config, CONFIG.replace("strategy = \"quote\"", &format!("strategy = \"{strategy}\""))).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_ticktrade"));
    command.args(["run", strategy, "--venue", &sim.url, "--quiet"]);
    command.arg("--config").arg(&config).arg("--journal").arg(dir.join("journal.jsonl"));
    if let Some(cert) = &sim.cert {
        command.arg("--ca-cert").arg(cert);
    }
    command.stdin(Stdio::null());
    command
}

fn journal(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Everything the venue says about the session, checked against its journal and the limits.
fn check_venue_agrees(sim: &Sim, dir: &Path, output: &Output) {
    let printed = text(output);
    assert!(output.status.success(), "{printed}");
    assert!(printed.contains("stopped cleanly"), "{printed}");
    let entries = journal(dir);
    let places: Vec<&serde_json::Value> =
        entries.iter().filter(|e| e["event"] == "sent" && e["request"] == "place").collect();
    let labels: Vec<&str> = places.iter().map(|e| e["label"].as_str().unwrap()).collect();
    let unique: BTreeSet<&str> = labels.iter().copied().collect();
    assert_eq!(unique.len(), labels.len(), "a label was sent twice");
    for place in &places {
        assert!(place["qty_lots"].as_i64().unwrap() * LOT_USD <= MAX_ORDER_USD, "{place}");
    }
    let prefix = labels.first().map(|l| l.rsplit_once('-').unwrap().0.to_owned());

    let open = sim.query("private/get_open_orders_by_instrument", r#"{"instrument_name":"BTC-PERPETUAL"}"#);
    assert_eq!(open.as_array().unwrap().len(), 0, "orders left open: {open}");

    // The venue's trades of this run, oldest first.
    let trades = sim.query(
        "private/get_user_trades_by_instrument",
        r#"{"instrument_name":"BTC-PERPETUAL","count":1000,"sorting":"asc"}"#,
    );
    let trades: Vec<&serde_json::Value> = trades["trades"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| prefix.as_deref().is_some_and(|p| t["label"].as_str().unwrap_or("").starts_with(p)))
        .collect();
    let mut position = 0i64;
    for trade in &trades {
        let amount = trade["amount"].as_f64().unwrap() as i64;
        position += if trade["direction"] == "buy" { amount } else { -amount };
        assert!(position.abs() <= MAX_POSITION_USD, "position {position} after {trade}");
    }
    let venue_ids: BTreeSet<&str> = trades.iter().map(|t| t["trade_id"].as_str().unwrap()).collect();
    let journal_ids: BTreeSet<&str> =
        entries.iter().filter(|e| e["event"] == "fill").map(|e| e["trade_id"].as_str().unwrap()).collect();
    assert_eq!(
        journal_ids,
        venue_ids,
        "the session's fills differ from the venue's: {trades:?}\n{}",
        std::fs::read_to_string(dir.join("journal.jsonl")).unwrap()
    );

    let venue_position = sim.query("private/get_position", r#"{"instrument_name":"BTC-PERPETUAL"}"#);
    let venue_size = venue_position["size"].as_f64().unwrap() as i64;
    assert_eq!(venue_size, position, "the venue's position is not the sum of this run's trades");
    let reported = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("BTC-PERPETUAL: position "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<i64>().ok())
        .unwrap_or_else(|| panic!("no position line: {printed}"));
    assert_eq!(reported * LOT_USD, venue_size, "{printed}");

    // Every order of the run, as the venue kept it: labels unique there too.
    let history =
        sim.query("private/get_order_history_by_instrument", r#"{"instrument_name":"BTC-PERPETUAL","count":1000}"#);
    let mut by_label: BTreeMap<String, usize> = BTreeMap::new();
    for order in history.as_array().unwrap() {
        let label = order["label"].as_str().unwrap_or("").to_owned();
        if prefix.as_deref().is_some_and(|p| label.starts_with(p)) {
            *by_label.entry(label).or_default() += 1;
            assert!(order["amount"].as_f64().unwrap() as i64 <= MAX_ORDER_USD, "{order}");
        }
    }
    assert!(by_label.values().all(|n| *n == 1), "labels used twice on the venue: {by_label:?}");
}

fn run_for(sim: &Sim, dir: &Path, strategy: &str, seconds: u64) -> Output {
    let mut command = run_args(sim, dir, strategy);
    command.args(["--duration", &seconds.to_string()]);
    command.output().unwrap()
}

#[test]
fn quote_on_a_plain_simulator_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path(), false, &[]);
    let output = run_for(&sim, dir.path(), "quote", 4);
    check_venue_agrees(&sim, dir.path(), &output);
    let entries = journal(dir.path());
    assert!(entries.iter().any(|e| e["event"] == "link" && e["state"] == "Live"), "never went live");
    assert!(entries.iter().any(|e| e["event"] == "sent" && e["request"] == "place"), "no order sent");
}

#[test]
fn busy_polling_over_tls_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path(), true, &[]);
    let mut command = run_args(&sim, dir.path(), "quote");
    let output = command.args(["--duration", "4", "--busy-poll"]).output().unwrap();
    assert!(text(&output).contains("busy polling"), "the banner names the read mode: {}", text(&output));
    check_venue_agrees(&sim, dir.path(), &output);
    let entries = journal(dir.path());
    assert!(entries.iter().any(|e| e["event"] == "sent" && e["request"] == "place"), "no order sent");
}

#[test]
fn take_over_tls_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path(), true, &[]);
    assert!(sim.url.starts_with("wss://"), "{}", sim.url);
    let output = run_for(&sim, dir.path(), "take", 4);
    check_venue_agrees(&sim, dir.path(), &output);
}

#[test]
fn quote_over_tls_with_faults_reconciles_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let faults = [
        "disconnect:every=1500",
        "drop_change:every=400",
        "restart_book:every=700",
        "malformed_frame:every=900",
        "delay:every=300:ms=20",
        "too_many_requests:every=2000",
    ];
    let sim = Sim::start(dir.path(), true, &faults);
    let output = run_for(&sim, dir.path(), "quote", 6);
    check_venue_agrees(&sim, dir.path(), &output);
}

/// Polls the journal until a line matches (the session writes it as it goes).
fn wait_for_journal(dir: &Path, what: &str, needle: &str) {
    let started = Instant::now();
    loop {
        let seen = std::fs::read_to_string(dir.join("journal.jsonl")).is_ok_and(|text| text.contains(needle));
        if seen {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{what} never showed in the journal");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Another client trading on the same account: the session neither adopts nor touches that
/// client's order while it runs, journals each report of it as `not_ours`, counts them in its
/// report, and still agrees with the venue (`take` on plain ws).
#[test]
fn another_clients_order_is_left_alone_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path(), false, &[]);
    let mut command = run_args(&sim, dir.path(), "take");
    command.args(["--duration", "5"]).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    wait_for_journal(dir.path(), "the session going live", r#""state":"Live""#);
    let ticker = sim.query("public/ticker", r#"{"instrument_name":"BTC-PERPETUAL"}"#);
    let bid = ticker["best_bid_price"].as_f64().unwrap();
    // Far under the market, on the 0.5 tick: it rests until the session's stop cancels it.
    let price = ((bid * 0.9) / 0.5).floor() * 0.5;
    let placed = sim.query(
        "private/buy",
        &format!(
            r#"{{"instrument_name":"BTC-PERPETUAL","amount":10,"type":"limit","price":{price},"label":"manual-1"}}"#
        ),
    );
    assert_eq!(placed["order"]["order_state"], "open", "{placed}");
    let output = child.wait_with_output().unwrap();
    check_venue_agrees(&sim, dir.path(), &output);
    let entries = journal(dir.path());
    assert!(entries.iter().any(|e| e["event"] == "not_ours" && e["label"] == "manual-1"), "no not_ours entry");
    assert!(
        !entries.iter().any(|e| e["event"] != "not_ours" && e["label"] == "manual-1"),
        "the session acted on another client's order"
    );
    let printed = text(&output);
    let counted = printed
        .split("other clients' reports ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no count of other clients' reports: {printed}"));
    assert!(counted >= 1, "{printed}");
}

#[test]
fn sigterm_mid_run_cancels_every_order() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path(), false, &[]);
    let mut child = run_args(&sim, dir.path(), "quote").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Wait until the session has orders resting, then terminate it as a supervisor would.
    wait_for_journal(dir.path(), "an accepted order", r#""change":"Accepted""#);
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "still running after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    check_venue_agrees(&sim, dir.path(), &output);
    assert!(journal(dir.path()).iter().any(|e| e["event"] == "kill_switch"));
}

#[test]
fn a_bad_config_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path(), false, &[]);
    for (change, field) in [
        (("max_open_orders = 4", "max_open_orders = -1"), "risk.max_open_orders"),
        (("[quote]\ninstrument = \"BTC-PERPETUAL\"", "[quote]\ninstrument = \"NOPE-PERPETUAL\""), "quote.instrument"),
        (("self_cross = true", "self_cross = true\nspeed = 3"), "speed"),
    ] {
        let config = dir.path().join("bad.toml");
        std::fs::write(&config, CONFIG.replace(change.0, change.1)).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_ticktrade"))
            .args(["run", "quote", "--venue", &sim.url, "--quiet", "--config"])
            .arg(&config)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let printed = text(&output);
        assert!(!output.status.success(), "{printed}");
        assert!(printed.contains(field), "{field}: {printed}");
        assert!(!printed.contains("connecting to") || !printed.contains("journal"), "{printed}");
    }
}

#[test]
fn an_unreachable_venue_fails_fast_with_the_reason() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_ticktrade"))
        .args(["run", "quote", "--quiet", "--venue", &format!("ws://127.0.0.1:{port}/ws/api/v2")])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let printed = text(&output);
    assert!(!output.status.success());
    assert!(printed.contains(&format!("connecting to ws://127.0.0.1:{port}")), "{printed}");
    assert!(printed.contains("refused"), "{printed}");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}
