//! `ticktrade hl` as real processes: the generator writes files, the server (bound to
//! 127.0.0.1:0) follows them, and a client speaking Hyperliquid's format sees the blocks.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use ticktrade_testkit::WsClient;

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_ticktrade");

fn generate(dir: &std::path::Path, blocks: u32) {
    let status = Command::new(BIN)
        .args([
            "hl",
            "gen",
            "--coins",
            "10",
            "--block-ms",
            "1",
            "--seed",
            "3",
            "--blocks",
            &blocks.to_string(),
            "--out",
        ])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ticktrade hl` on `dir`, bound to a free loopback port: the process, its `ws://` URL and
/// the first line it printed.
fn start_server(dir: &std::path::Path) -> (Server, String, String) {
    start_server_with(dir, &[])
}

/// `ticktrade hl --data-dir DIR --listen 127.0.0.1:0 EXTRA…` (see `start_server`).
fn start_server_with(dir: &std::path::Path, extra: &[&str]) -> (Server, String, String) {
    let mut child = Command::new(BIN)
        .args(["hl", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("ws://"))
        .unwrap_or_else(|| panic!("no url in {line:?}"))
        .to_owned();
    (server, url, line)
}

/// The `host:port` of a server's `ws://…/ws` URL.
fn addr_of(url: &str) -> String {
    url.trim_start_matches("ws://").trim_end_matches("/ws").to_owned()
}

/// A client of the server process (30 s a frame: the process may still be starting).
async fn client(url: &str) -> WsClient {
    let mut ws = WsClient::connect(url).await;
    ws.set_wait(Duration::from_secs(30));
    ws
}

/// Subscribes to BTC's `l4Book` and returns the height of the snapshot the server answers with.
async fn subscribe_l4_btc(ws: &mut WsClient) -> u64 {
    ws.send_json(&json!({"method": "subscribe", "subscription": {"type": "l4Book", "coin": "BTC"}})).await;
    assert_eq!(ws.next_json().await["channel"], "subscriptionResponse");
    ws.next_json().await["data"]["Snapshot"]["height"].as_u64().expect("a snapshot height")
}

#[tokio::test]
async fn server_process_follows_generator_process() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), 1);
    let (_server, url, line) = start_server(tmp.path());
    assert!(line.contains("snapshot at block 1000000"), "{line}");

    let mut ws = client(&url).await;
    // The engine reads the files already there before it answers anyone: block 1 is applied.
    assert_eq!(subscribe_l4_btc(&mut ws).await, 1_000_001);
    ws.send_json(&json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC", "nSigFigs": 3}}))
        .await;
    assert_eq!(ws.next_json().await["channel"], "subscriptionResponse");
    let book = ws.next_json().await;
    assert_eq!(book["channel"], "l2Book");
    assert!(!book["data"]["levels"][0].as_array().unwrap().is_empty());

    // The same seed regenerates the same market, so the second run continues the first.
    generate(tmp.path(), 4);
    let mut heights = Vec::new();
    while heights.last() != Some(&1_000_004) {
        let msg = ws.next_json().await;
        if msg["channel"] == "l4Book" {
            heights.push(msg["data"]["Updates"]["height"].as_u64().unwrap());
        }
    }
    assert_eq!(heights, vec![1_000_002, 1_000_003, 1_000_004]);
}

/// `ticktrade hl stats` against a live server fed by a real-time generator: book and trade
/// latencies from the WebSocket, and the file-level floor from its own notified reader.
#[test]
fn stats_measures_a_live_server_and_the_file_floor() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), 1);
    let (_server, url, _) = start_server(tmp.path());
    // The same seed continues the market of the bootstrap; blocks are stamped with the wall
    // clock, one every 20 ms, for longer than stats measures.
    let writer = Command::new(BIN)
        .args(["hl", "gen", "--coins", "10", "--block-ms", "20", "--seed", "3", "--blocks", "400", "--out"])
        .arg(tmp.path())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _writer = Server(writer);
    let out = Command::new(BIN)
        .args(["hl", "stats", "--url", &url, "--coins", "BTC,ETH", "--duration", "3", "--json", "--data-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "hl book (block time → received)",
            "hl trade (block time → received)",
            "hl file floor (block time → line read)"
        ]
    );
    for l in &lines {
        assert_eq!(l["unit"], "ns");
        let count = l["count"].as_u64().unwrap();
        assert!(count > 0, "{l}");
        let (p50, max) = (l["p50"].as_u64().unwrap(), l["max"].as_u64().unwrap());
        assert!(p50 > 0 && p50 <= max, "{l}");
    }
    // Two coins' books over ~3 s of 20 ms blocks, and three streams' lines for the floor.
    assert!(lines[0]["count"].as_u64().unwrap() >= 20, "{}", lines[0]);
    assert!(lines[2]["count"].as_u64().unwrap() >= 30, "{}", lines[2]);
}

/// `POST /info` with `body` over a plain HTTP/1.1 connection; the response's JSON body.
fn post_info(addr: &str, body: &Value) -> Value {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    let body = body.to_string();
    write!(
        tcp,
        "POST /info HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test]
async fn demo_generates_and_serves_in_one_process() {
    let mut child = Command::new(BIN)
        .args(["hl", "--demo", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let pid = child.id();
    let server = Server(child);
    let mut lines = Vec::new();
    while !lines.last().is_some_and(|l: &String| l.contains("Ctrl-C")) {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "output ended: {lines:?}");
        lines.push(line);
    }
    let url = lines[0].split_whitespace().find(|w| w.starts_with("ws://")).unwrap().to_owned();
    let addr = url.trim_start_matches("ws://").trim_end_matches("/ws").to_owned();
    assert!(lines[0].contains("snapshot at block 1000000, 24 coins"), "{}", lines[0]);
    let dir = lines[1].split(" in ").last().unwrap().trim().to_owned();
    assert!(std::path::Path::new(&dir).join("snapshot.json").exists(), "{dir}");
    // The hints name this server's own address.
    assert!(lines.iter().any(|l| l.contains(&format!("http://{addr}/info"))), "{lines:?}");

    // The generator runs on: l4Book updates arrive block after block.
    let mut ws = client(&url).await;
    let start = subscribe_l4_btc(&mut ws).await;
    let mut heights = Vec::new();
    while heights.len() < 3 {
        let msg = ws.next_json().await;
        if msg["channel"] == "l4Book" {
            heights.push(msg["data"]["Updates"]["height"].as_u64().unwrap());
        }
    }
    assert!(heights[0] > start && heights.windows(2).all(|w| w[0] < w[1]), "{start} {heights:?}");
    let mids = post_info(&addr, &json!({"type": "allMids"}));
    assert!(mids["BTC"].as_str().is_some(), "{mids}");
    check_asset_ctxs(&addr);

    // Ctrl-C stops the generator and removes its directory.
    let status = Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap();
    assert!(status.success());
    let mut server = server;
    assert!(server.0.wait().unwrap().success());
    assert!(!std::path::Path::new(&dir).exists(), "{dir} left behind");
}

#[test]
fn missing_snapshot_suggests_the_demo() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN).args(["hl", "--listen", "127.0.0.1:0", "--data-dir"]).arg(tmp.path()).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no snapshot") && stderr.contains("ticktrade hl --demo"), "{stderr}");
}

/// `metaAndAssetCtxs`, `spotMetaAndAssetCtxs` and `exchangeStatus` have Hyperliquid's documented
/// shapes; mids and impact prices come from the books, the rest from the `hl gen` metadata.
fn check_asset_ctxs(addr: &str) {
    let perp_keys = [
        "dayBaseVlm",
        "dayNtlVlm",
        "funding",
        "impactPxs",
        "markPx",
        "midPx",
        "openInterest",
        "oraclePx",
        "premium",
        "prevDayPx",
    ];
    let doc = post_info(addr, &json!({"type": "metaAndAssetCtxs"}));
    let universe = doc[0]["universe"].as_array().unwrap();
    let ctxs = doc[1].as_array().unwrap();
    assert_eq!(universe.len(), ctxs.len());
    assert_eq!(universe[0]["name"], "BTC");
    for ctx in ctxs {
        let mut keys: Vec<&str> = ctx.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, perp_keys, "{ctx}");
        assert!(ctx["funding"].as_str().unwrap().parse::<f64>().is_ok(), "{ctx}");
    }
    let btc = &ctxs[0];
    let (mid, [bid, ask]) = (
        btc["midPx"].as_str().unwrap().parse::<f64>().unwrap(),
        [0, 1].map(|i| btc["impactPxs"][i].as_str().unwrap().parse::<f64>().unwrap()),
    );
    assert!(bid < mid && mid < ask, "{btc}");
    let spot = post_info(addr, &json!({"type": "spotMetaAndAssetCtxs"}));
    let pairs = spot[0]["universe"].as_array().unwrap();
    let ctxs = spot[1].as_array().unwrap();
    assert_eq!(pairs.len(), ctxs.len());
    assert_eq!(ctxs[0]["coin"], "PURR/USDC");
    for ctx in ctxs {
        for key in ["prevDayPx", "dayNtlVlm", "markPx", "midPx", "circulatingSupply", "totalSupply", "dayBaseVlm"] {
            assert!(ctx[key].is_string(), "{key} in {ctx}");
        }
    }
    let status = post_info(addr, &json!({"type": "exchangeStatus"}));
    assert!(status["time"].as_u64().unwrap() > 1_600_000_000_000, "{status}");
    assert!(status["specialStatuses"].is_null(), "{status}");
}

/// `--coins` keeps only the listed coins; `--snapshot`, `--meta` and `--spot-meta` name the
/// bootstrap files; `--queue`, `--poll-ms` and `--threads` tune the engine, which serves on.
#[tokio::test]
async fn coins_and_explicit_bootstrap_files() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), 1);
    let elsewhere = tempfile::tempdir().unwrap();
    for file in ["snapshot.json", "meta.json", "spotMeta.json"] {
        std::fs::rename(tmp.path().join(file), elsewhere.path().join(file)).unwrap();
    }
    let path = |f: &str| elsewhere.path().join(f).to_str().unwrap().to_owned();
    let (snapshot, meta, spot_meta) = (path("snapshot.json"), path("meta.json"), path("spotMeta.json"));
    let (_server, url, line) = start_server_with(
        tmp.path(),
        &[
            "--coins",
            "BTC,ETH",
            "--snapshot",
            &snapshot,
            "--meta",
            &meta,
            "--spot-meta",
            &spot_meta,
            "--queue",
            "64",
            "--poll-ms",
            "20",
            "--threads",
            "1",
        ],
    );
    assert!(line.contains("snapshot at block 1000000, 10 coins"), "{line}");
    let addr = addr_of(&url);
    let mut mids: Vec<String> =
        post_info(&addr, &json!({"type": "allMids"})).as_object().unwrap().keys().cloned().collect();
    mids.sort();
    assert_eq!(mids, ["BTC", "ETH"]);
    let mut ws = client(&url).await;
    let other = post_info(&addr, &json!({"type": "meta"}))["universe"][2]["name"].as_str().unwrap().to_owned();
    ws.send_json(&json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": other}})).await;
    assert!(ws.next_json().await["data"].as_str().unwrap().starts_with("Invalid subscription"));
    let start = subscribe_l4_btc(&mut ws).await;
    generate(tmp.path(), 3);
    let mut heights = Vec::new();
    while heights.last() != Some(&1_000_003) {
        let msg = ws.next_json().await;
        assert_eq!(msg["channel"], "l4Book", "{msg}");
        heights.push(msg["data"]["Updates"]["height"].as_u64().unwrap());
    }
    assert!(heights[0] > start, "{start} {heights:?}");
}

/// `--raw` relays each node line to every client as it is read, and keeps no books.
#[tokio::test]
async fn raw_relays_the_node_lines() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), 1);
    let (_server, url, _) = start_server_with(tmp.path(), &["--raw"]);
    let mut ws = client(&url).await;
    ws.send_json(&json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC"}})).await;
    assert!(ws.next_json().await["data"].as_str().unwrap().starts_with("Invalid subscription"));
    // The same seed appends blocks 1 to 3 again: every line read is relayed, as read.
    generate(tmp.path(), 3);
    let mut last_block = std::collections::BTreeSet::new();
    while last_block.len() < 3 {
        let msg = ws.next_json().await;
        assert_eq!(msg["channel"], "raw", "{msg}");
        let block = msg["data"]["block"]["block_number"].as_u64().unwrap();
        assert!((1_000_001..=1_000_003).contains(&block), "{msg}");
        assert!(msg["data"]["block"]["events"].is_array(), "{msg}");
        if block == 1_000_003 {
            last_block.insert(msg["data"]["stream"].as_str().unwrap().to_owned());
        }
    }
    assert!(last_block.iter().all(|s| s.starts_with("node_") && s.ends_with("_by_block")), "{last_block:?}");
}

/// A stand-in for hl-node's info server (`--serve-info`): it answers `fileSnapshot` the way the
/// node does (it writes the snapshot to the request's `outPath` and replies 200), and `meta`,
/// `spotMeta` and the asset contexts from the files `hl gen` wrote. It records each request.
fn stand_in_info_server(dir: std::path::PathBuf) -> (String, std::sync::mpsc::Receiver<Value>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/info", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let body = loop {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if body.len() >= len {
                        break body[..len].to_owned();
                    }
                }
                assert!(n > 0, "request cut short");
            };
            let request: Value = serde_json::from_str(&body).unwrap();
            let answer = match request["type"].as_str().unwrap() {
                "fileSnapshot" => {
                    let out = request["outPath"].as_str().unwrap();
                    std::fs::copy(dir.join("snapshot.json"), out).unwrap();
                    "{}".to_owned()
                }
                "meta" => std::fs::read_to_string(dir.join("meta.json")).unwrap(),
                "spotMeta" => std::fs::read_to_string(dir.join("spotMeta.json")).unwrap(),
                "metaAndAssetCtxs" => std::fs::read_to_string(dir.join("metaAndAssetCtxs.json")).unwrap(),
                "spotMetaAndAssetCtxs" => std::fs::read_to_string(dir.join("spotMetaAndAssetCtxs.json")).unwrap(),
                other => panic!("unexpected request {other}"),
            };
            let _ = tx.send(request);
            write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
        }
    });
    (url, rx)
}

/// `--info-url` bootstraps from the node's info server: one `fileSnapshot` request written to
/// `--snapshot-out`, the metadata, and the asset contexts' base fields.
#[tokio::test]
async fn info_url_bootstraps_from_the_node() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), 1);
    let node = tempfile::tempdir().unwrap();
    for file in ["snapshot.json", "meta.json", "spotMeta.json", "metaAndAssetCtxs.json", "spotMetaAndAssetCtxs.json"] {
        std::fs::rename(tmp.path().join(file), node.path().join(file)).unwrap();
    }
    let (info_url, requests) = stand_in_info_server(node.path().to_owned());
    let out = tmp.path().join("out.json");
    let (_server, url, line) =
        start_server_with(tmp.path(), &["--info-url", &info_url, "--snapshot-out", out.to_str().unwrap()]);
    assert!(line.contains("snapshot at block 1000000, 10 coins"), "{line}");
    let asked: Vec<Value> = requests.try_iter().collect();
    let kinds: Vec<&str> = asked.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["meta", "spotMeta", "fileSnapshot", "metaAndAssetCtxs", "spotMetaAndAssetCtxs"]);
    let snapshot_request = &asked[2];
    assert_eq!(
        snapshot_request["request"],
        json!({"type": "l4Snapshots", "includeUsers": true, "includeTriggerOrders": false})
    );
    assert_eq!(
        (&snapshot_request["outPath"], &snapshot_request["includeHeightInOutput"]),
        (&json!(out.to_str().unwrap()), &json!(true))
    );
    // The base fields are the node's.
    let node_ctxs: Value =
        serde_json::from_str(&std::fs::read_to_string(node.path().join("metaAndAssetCtxs.json")).unwrap()).unwrap();
    let served = post_info(&addr_of(&url), &json!({"type": "metaAndAssetCtxs"}));
    assert_eq!(served[1][0]["funding"], node_ctxs[1][0]["funding"]);
    assert_eq!(served[1][0]["openInterest"], node_ctxs[1][0]["openInterest"]);
    let mut ws = client(&url).await;
    assert_eq!(subscribe_l4_btc(&mut ws).await, 1_000_001);
}

/// `--rt-priority` either runs the blocks under SCHED_FIFO (the server serves) or, where the
/// kernel refuses, stops at start with the reason.
#[tokio::test]
async fn rt_priority_serves_or_says_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), 1);
    let out = Command::new(BIN)
        .args(["hl", "--listen", "127.0.0.1:0", "--rt-priority", "1", "--data-dir"])
        .arg(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = Server(out);
    let mut line = String::new();
    BufReader::new(out.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
    if line.is_empty() {
        let status = out.0.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut out.0.stderr.take().unwrap(), &mut stderr).unwrap();
        assert!(!status.success() && stderr.to_lowercase().contains("fifo"), "{stderr}");
    } else {
        let url = line.split_whitespace().find(|w| w.starts_with("ws://")).unwrap().to_owned();
        let mut ws = client(&url).await;
        assert_eq!(subscribe_l4_btc(&mut ws).await, 1_000_001);
    }
}

/// Every flag `ticktrade hl --help` lists is passed by a test in this file, so a new flag
/// cannot ship untested.
#[test]
fn every_hl_flag_is_used_by_a_test() {
    let untested = common::untested_flags("hl", &["hl_cli.rs"], 10);
    assert!(untested.is_empty(), "flags of `ticktrade hl --help` no test passes: {untested:?}");
}

/// `ticktrade hl ARGS…` (no data dir): the process and the first line it printed; `None` and
/// what it wrote to stderr when it exited instead.
fn start_hl(args: &[&str]) -> Result<(Server, String), String> {
    let mut child =
        Command::new(BIN).arg("hl").args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    if line.is_empty() {
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success());
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok((Server(child), line))
}

/// `--publish` on a server of generated files and `--upstream` on an edge, through a real
/// nats-server: an edge client's l2Book is the direct server's; a bad bus address or CA is an
/// error at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publisher_and_edge_processes_share_books_over_nats() {
    let nats = ticktrade_testkit::NatsServer::start();
    let url = nats.url();
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), 3);
    let (_publisher, direct_url, _) =
        start_server_with(tmp.path(), &["--publish", &url, "--nats-subjects", "test.hl", "--bus-queue", "1024"]);
    let (_edge, line) =
        start_hl(&["--listen", "127.0.0.1:0", "--upstream", &url, "--nats-subjects", "test.hl"]).unwrap();
    assert!(line.contains("edge of NATS at nats://127.0.0.1:"), "{line}");
    let edge_url = line.split_whitespace().find(|w| w.starts_with("ws://")).unwrap().to_owned();

    let sub = json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC", "nSigFigs": 4}});
    let mut direct = client(&direct_url).await;
    direct.send_json(&sub).await;
    assert_eq!(direct.next_json().await["channel"], "subscriptionResponse");
    let want = direct.next_json().await;
    let mut at_edge = client(&edge_url).await;
    at_edge.send_json(&sub).await;
    assert_eq!(at_edge.next_json().await["channel"], "subscriptionResponse");
    assert_eq!(at_edge.next_json().await, want, "the edge's book is the publisher's");

    // Nobody at the address, or a CA with a plain server: an error at start, not a hang.
    let nobody = format!("nats://127.0.0.1:{}", ticktrade_testkit::nats::free_port());
    let err = start_hl(&["--listen", "127.0.0.1:0", "--upstream", &nobody]).err().unwrap();
    assert!(err.contains("connecting to NATS at"), "{err}");
    let err =
        start_hl(&["--listen", "127.0.0.1:0", "--upstream", &url, "--nats-ca", "/nonexistent/ca.pem"]).err().unwrap();
    assert!(err.contains("connecting to NATS"), "{err}");
    let err = start_server_err(tmp.path(), &["--publish", "http://127.0.0.1:4222"]);
    assert!(err.contains("--publish"), "{err}");
}

/// What `ticktrade hl --data-dir DIR EXTRA…` printed to stderr when it failed at start.
fn start_server_err(dir: &std::path::Path, extra: &[&str]) -> String {
    let out =
        Command::new(BIN).args(["hl", "--listen", "127.0.0.1:0", "--data-dir"]).arg(dir).args(extra).output().unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}
