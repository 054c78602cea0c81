//! `ticktrade serve` as a user runs it, with every flag its `--help` lists: a publisher over
//! the embedded simulator on a real `nats-server` and an edge that serves a client from the
//! bus; flag combinations that cannot work fail at start with a clear message.
#![allow(clippy::unwrap_used)]

use crate::common;
use common::SimProcess;

use std::process::Command;

use serde_json::json;
use ticktrade_testkit::{NatsServer, WsClient};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publisher_and_an_edge_from_the_command_line() {
    let nats = NatsServer::start();
    let url = nats.url();
    #[rustfmt::skip]
    let publisher = SimProcess::start_subcommand("serve", &[
        "--upstream", "sim", "--sim-rate", "400", "--instruments", "BTC-PERPETUAL,ETH-PERPETUAL",
        "--listen", "127.0.0.1:0", "--publish", &url, "--nats-subjects", "cli.deribit", "--bus-queue", "4096",
        "--queue", "256", "--slow", "conflate", "--max-subscriptions", "20", "--max-message-bytes", "16384",
        "--max-connections", "50", "--linger-s", "2", "--stats-interval-s", "1", "--stats-clients", "3",
    ], &[]);
    assert!(
        publisher.banner.iter().any(|l| l.contains("publishing to") && l.contains("cli.deribit")),
        "{:?}",
        publisher.banner
    );
    #[rustfmt::skip]
    let edge = SimProcess::start_subcommand("serve", &[
        "--upstream", &url, "--nats-subjects", "cli.deribit", "--listen", "127.0.0.1:0", "--stats-interval-s", "0",
    ], &[]);
    let mut ws = WsClient::connect(&edge.url("ws://").unwrap()).await;
    let reply = ws.call("public/subscribe", json!({"channels": ["book.ETH-PERPETUAL.raw"]})).await;
    assert_eq!(reply["result"], json!(["book.ETH-PERPETUAL.raw"]));
    let snapshot = ws.notification("book.ETH-PERPETUAL.raw").await;
    assert_eq!(snapshot["params"]["data"]["type"], "snapshot");
    let change = ws.notification("book.ETH-PERPETUAL.raw").await;
    assert_eq!(change["params"]["data"]["prev_change_id"], snapshot["params"]["data"]["change_id"]);
    // Methods the hub does not answer itself reach the venue through the publisher.
    let time = ws.call("public/get_time", json!({})).await;
    assert!(time["result"].as_u64().unwrap() > 0, "{time}");
    drop(ws);
    edge.stop();
    let status = (0..50).find_map(|_| {
        publisher.lines.recv_timeout(std::time::Duration::from_millis(200)).ok().filter(|l| l.starts_with("clients"))
    });
    assert!(status.is_some(), "the publisher prints a status line every --stats-interval-s");
    publisher.stop();
}

/// The bus as a secured deployment runs it: nats-server speaking only TLS, with a password;
/// the publisher and the edge trust its certificate through `--nats-ca` and take the
/// credentials from the environment, which never show up in what they print.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_with_credentials_from_the_environment() {
    const PASSWORD: &str = "nats-pw-5521-secret";
    let dir = tempfile::tempdir().unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.path().join("nats.pem"), dir.path().join("nats.key"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    #[rustfmt::skip]
    let nats = NatsServer::start_with(&[
        "--tls", "--tlscert", &cert, "--tlskey", &key, "--user", "bob", "--pass", PASSWORD,
    ]);
    let url = format!("tls://127.0.0.1:{}", nats.port());
    let env = [("NATS_USER", "bob"), ("NATS_PASSWORD", PASSWORD)];
    #[rustfmt::skip]
    let publisher = SimProcess::start_subcommand("serve", &[
        "--upstream", "sim", "--sim-rate", "400", "--instruments", "BTC-PERPETUAL", "--listen", "127.0.0.1:0",
        "--publish", &url, "--nats-ca", &cert, "--stats-interval-s", "0",
    ], &env);
    #[rustfmt::skip]
    let edge = SimProcess::start_subcommand("serve", &[
        "--upstream", &url, "--nats-ca", &cert, "--listen", "127.0.0.1:0", "--stats-interval-s", "0",
    ], &env);
    let mut ws = WsClient::connect(&edge.url("ws://").unwrap()).await;
    let reply = ws.call("public/subscribe", json!({"channels": ["book.BTC-PERPETUAL.raw"]})).await;
    assert_eq!(reply["result"], json!(["book.BTC-PERPETUAL.raw"]));
    let snapshot = ws.notification("book.BTC-PERPETUAL.raw").await;
    assert_eq!(snapshot["params"]["data"]["type"], "snapshot");
    let change = ws.notification("book.BTC-PERPETUAL.raw").await;
    assert_eq!(change["params"]["data"]["prev_change_id"], snapshot["params"]["data"]["change_id"]);
    drop(ws);
    let (edge_out, edge_log) = edge.stop_with_logs();
    let (publisher_out, publisher_log) = publisher.stop_with_logs();
    for line in edge_out.iter().chain(&edge_log).chain(&publisher_out).chain(&publisher_log) {
        assert!(!line.contains(PASSWORD), "the NATS password was printed: {line}");
    }

    // Without the certificate, the edge refuses the server's (no skip switch), at start.
    let with_password = format!("tls://bob:{PASSWORD}@127.0.0.1:{}", nats.port());
    let text = fails(&["--listen", "127.0.0.1:0", "--upstream", &with_password]);
    assert!(text.contains(&format!("127.0.0.1:{}", nats.port())) && text.contains("certificate"), "{text}");
    assert!(!text.contains(PASSWORD), "{text}");
}

/// Runs `ticktrade serve ARGS`, which must fail at start; returns what it printed.
fn fails(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ticktrade")).arg("serve").args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} started");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn bad_bus_settings_fail_at_start_with_a_clear_message() {
    let nats = NatsServer::start_with(&["--user", "a", "--pass", "right"]);
    let port = nats.port();
    let text = fails(&["--listen", "127.0.0.1:0", "--raw", "--publish", &nats.url()]);
    assert!(text.contains("--raw"), "{text}");
    let text = fails(&["--listen", "127.0.0.1:0", "--upstream", &format!("nats://a:wrong@127.0.0.1:{port}")]);
    assert!(text.contains(&format!("127.0.0.1:{port}")) && !text.contains("wrong"), "{text}");
    let text = fails(&["--upstream", &format!("tls://127.0.0.1:{port}"), "--nats-ca", "/nonexistent/ca.pem"]);
    assert!(text.contains("NATS"), "{text}");
    let text = fails(&["--nats-subjects", "bad..root"]);
    assert!(text.contains("--nats-subjects"), "{text}");
}

/// Every flag `ticktrade serve --help` lists is passed by a test of this file.
#[test]
fn every_serve_flag_is_used_by_a_test() {
    // This test's own source names no flag literally, so it cannot claim one.
    let untested = common::untested_flags("serve", &["serve_cli.rs"], 15);
    assert!(untested.is_empty(), "flags of `ticktrade serve --help` no test passes: {untested:?}");
}
