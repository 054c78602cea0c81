//! `ticktrade trade` as a script runs it: commands on stdin (not a terminal), results on
//! stdout, exit status non-zero when any command failed; `--json` for machines; credentials
//! from the environment that never show up in any output.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use ticktrade_gateway::venue::{Credentials, Filter, Secret, Venue};
use ticktrade_gateway::venues::{self, SessionOptions};

const INSTRUMENT: &str = "BTC-PERPETUAL";

struct Run {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

async fn ticktrade(args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ticktrade"));
    command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    command.env_remove("DERIBIT_CLIENT_ID").env_remove("DERIBIT_CLIENT_SECRET").env("RUST_LOG", "trace");
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await.unwrap().unwrap();
    Run {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// buy, sell, edit, orders, cancel, positions, book, account — with a resting order far
/// below the market so edit and cancel have something to act on.
const SESSION: &str = "\
buy BTC-PERPETUAL 100 market label=s1
sell BTC-PERPETUAL 30 market
buy BTC-PERPETUAL 10 @ 1000 post-only label=rest
edit rest 20 @ 1000.5
orders
cancel rest
positions
book BTC-PERPETUAL 5
account BTC
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_session_on_the_embedded_simulator() {
    let run = ticktrade(&["trade", "--venue", "sim"], &[], SESSION).await;
    assert!(run.status.success(), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("latency: round trip"), "{}", run.stdout);
    let positions = run.stdout.lines().find(|l| l.starts_with(INSTRUMENT) && l.contains("future")).unwrap();
    assert!(positions.split_whitespace().nth(2) == Some("70"), "{positions}");

    let run = ticktrade(&["trade", "--venue", "sim", "--json"], &[], SESSION).await;
    assert!(run.status.success(), "{}\n{}", run.stdout, run.stderr);
    let results: Vec<Value> = run.stdout.lines().map(|l| serde_json::from_str(l).expect(l)).collect();
    assert_eq!(results.len(), 9);
    assert!(results.iter().all(|r| r["ok"] == true), "{}", run.stdout);
    let commands: Vec<&str> = results.iter().map(|r| r["command"].as_str().unwrap()).collect();
    assert_eq!(commands, ["buy", "sell", "buy", "edit", "orders", "cancel", "positions", "book", "account"]);
    assert_eq!(results[3]["rows"][0]["price"], "1000.5");
    assert_eq!(results[5]["rows"][0]["state"], "cancelled");
    assert_eq!(results[6]["rows"][0]["size"], "70");
    assert!(results[0]["latency"]["local_ns"].as_u64().unwrap() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_session_ends_equal_to_the_simulators_account_and_leaks_no_secret() {
    const SECRET: &str = "zq-secret-value-8841";
    let key = ticktrade_sim::ApiKey { client_id: "bob".into(), client_secret: ticktrade_sim::Secret::new(SECRET) };
    // A still market (no synthetic activity): equity moves with the mark, and the script's
    // `account` and the auditor's read must see the same one.
    let config = ticktrade_sim::SimConfig { keys: vec![key], rate_per_s: 0, ..Default::default() };
    let sim = ticktrade_sim::spawn_loopback(config).await.unwrap();
    let env = [("DERIBIT_CLIENT_ID", "bob"), ("DERIBIT_CLIENT_SECRET", SECRET)];
    let script = format!("{SESSION}status\nbogus-command\nbuy {INSTRUMENT} 10 @ 1.3\n");
    let run = ticktrade(&["trade", "--url", &sim.ws_url(), "--json"], &env, &script).await;
    assert_eq!(run.status.code(), Some(1), "two commands failed: {}\n{}", run.stdout, run.stderr);
    let results: Vec<Value> = run.stdout.lines().map(|l| serde_json::from_str(l).expect(l)).collect();
    assert_eq!(results.iter().filter(|r| r["ok"] == false).count(), 2);

    // The venue's own account, read by a separate session.
    let mut config = SessionOptions::new(sim.ws_url());
    config.credentials = Some(Credentials { client_id: "bob".into(), client_secret: Secret::new(SECRET) });
    let auditor = venues::open(config);
    auditor.connect().await.unwrap();
    let truth = auditor.positions(Filter::All).await.unwrap();
    let truth = truth.iter().find(|p| p.instrument == INSTRUMENT).unwrap();
    let shown = results.iter().find(|r| r["command"] == "positions").unwrap();
    assert_eq!(shown["rows"][0]["size"], truth.size.to_string());
    assert_eq!(shown["rows"][0]["average_price"], truth.average_price.to_string());
    let balance = &auditor.account(Some("BTC")).await.unwrap()[0];
    let shown = results.iter().find(|r| r["command"] == "account").unwrap();
    assert_eq!(shown["rows"][0]["balance"], balance.balance.to_string());
    assert_eq!(shown["rows"][0]["equity"], balance.equity.to_string());

    // The same with the secret itself on the wire (client_credentials): the WebSocket
    // crates' frame dumps at trace level must not reach the log.
    let sent = ticktrade(&["trade", "--url", &sim.ws_url(), "--client-credentials"], &env, "positions\n").await;
    assert!(sent.status.success(), "{}\n{}", sent.stdout, sent.stderr);

    // Wrong secret: a clear error, still no secret.
    let bad = [("DERIBIT_CLIENT_ID", "bob"), ("DERIBIT_CLIENT_SECRET", "zq-wrong-secret-3317")];
    let failed = ticktrade(&["trade", "--url", &sim.ws_url()], &bad, "status\n").await;
    assert!(!failed.status.success());
    assert!(failed.stderr.contains("not authenticated"), "{}", failed.stderr);

    // Every run logged at trace level (RUST_LOG=trace), so the grep covers the logs too.
    assert!(run.stderr.contains("session ready") && run.stderr.contains("authenticated"), "{}", run.stderr);
    for text in [&run.stdout, &run.stderr, &sent.stdout, &sent.stderr, &failed.stdout, &failed.stderr] {
        assert!(!text.contains(SECRET) && !text.contains("zq-wrong-secret-3317"), "secret leaked:\n{text}");
        assert!(find_token(text).is_none(), "access or refresh token leaked: {:?}", find_token(text));
    }
    sim.shutdown().await;
}

/// Something shaped like a token the simulator issues (`<13-digit ms>.<32 hex>`).
fn find_token(text: &str) -> Option<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.')).find(|word| {
        word.split_once('.').is_some_and(|(ms, hex)| {
            ms.len() == 13
                && ms.bytes().all(|b| b.is_ascii_digit())
                && hex.len() == 32
                && hex.bytes().all(|b| b.is_ascii_hexdigit())
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_readable_by_others_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deribit.conf");
    std::fs::write(&path, "client_id = x\nclient_secret = y-secret-5521\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let url = "ws://127.0.0.1:9/ws/api/v2";
    let run = ticktrade(&["trade", "--url", url, "--config", path.to_str().unwrap()], &[], "status\n").await;
    assert!(!run.status.success());
    assert!(run.stderr.contains("readable by other users"), "{}", run.stderr);
    assert!(!run.stderr.contains("y-secret-5521"));
}

/// A venue nobody listens on: `trade` says where it connects at once and fails within the
/// 10 s connect budget, with the reason.
#[tokio::test]
async fn an_unreachable_venue_fails_within_the_connect_budget_with_the_reason() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/ws/api/v2", listener.local_addr().unwrap());
    drop(listener);
    let started = std::time::Instant::now();
    let run = ticktrade(&["trade", "--url", &url], &[], "time\n").await;
    assert!(!run.status.success(), "{}", run.stdout);
    assert!(run.stderr.contains(&format!("connecting to {url}")), "{}", run.stderr);
    assert!(run.stderr.to_lowercase().contains("refused"), "{}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}
