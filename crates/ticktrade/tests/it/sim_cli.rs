//! `ticktrade sim` as a user starts it: a real process on loopback that prints where it
//! listens and the key to use, and answers on both protocols; plus the library it wraps.

#![allow(clippy::unwrap_used)]

#[tokio::test]
async fn the_simulator_the_cli_starts_serves_ws_and_http() {
    let handle = ticktrade_sim::spawn_loopback(ticktrade_sim::SimConfig::default()).await.unwrap();
    assert!(handle.ws_url().starts_with("ws://127.0.0.1:"));
    assert!(handle.http_url().ends_with("/api/v2"));
    assert_eq!(handle.keys()[0].client_id, "ticktrade-sim");
    assert_eq!(format!("{:?}", handle.keys()[0].client_secret), "***");
    handle.shutdown().await;
}

use std::io::{Read, Write};
use std::time::Duration;

use crate::common;
use common::SimProcess;

/// One HTTP/1.1 request to the address the banner names, on a fresh connection; the whole
/// response.
fn http(sim: &SimProcess, head: &str, body: &str) -> String {
    let url = sim.url("http://").expect("an http address in the banner");
    let addr = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "{head}\r\nHost: {addr}\r\nConnection: close\r\n\r\n{body}").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// `public/auth` with client credentials over HTTP; the whole response.
fn http_auth(sim: &SimProcess, client_id: &str, secret: &str) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"public/auth","params":{{"grant_type":"client_credentials","client_id":"{client_id}","client_secret":"{secret}"}}}}"#
    );
    let head = format!(
        "POST /api/v2/public/auth HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}",
        body.len()
    );
    http(sim, &head, &body)
}

/// Starts `ticktrade sim --listen 127.0.0.1:0`, reads the banner, and asks `public/get_time`
/// over HTTP on the address it printed.
#[test]
fn ticktrade_sim_process_prints_its_address_and_serves_http() {
    let sim = SimProcess::start(&["--listen", "127.0.0.1:0", "--seed", "3"]);
    let text = sim.banner.join("\n");
    assert!(text.contains("LOCAL SIMULATOR"), "{text}");
    assert!(text.contains("client_id=ticktrade-sim"), "{text}");

    let response = http(&sim, "GET /api/v2/public/get_time HTTP/1.1", "");
    sim.stop();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"result\":"), "{response}");
    assert!(response.contains("\"usIn\":"), "{response}");
}

/// `ticktrade sim --key`: the banner shows the id and a masked secret, and no line of stdout
/// (banner, status lines around an auth that succeeds and one that fails) contains it.
#[test]
fn a_given_secret_is_never_printed() {
    const SECRET: &str = "s3cret-never-printed-7f1c";
    let key = format!("trader:{SECRET}");
    let sim = SimProcess::start(&["--listen", "127.0.0.1:0", "--key", &key]);
    let banner = sim.banner.join("\n");
    assert!(banner.contains("client_id=trader client_secret=********"), "{banner}");

    let replies: Vec<String> =
        [SECRET.to_owned(), format!("{SECRET}-wrong")].iter().map(|secret| http_auth(&sim, "trader", secret)).collect();
    assert!(replies[0].contains("access_token"), "{}", replies[0]);
    assert!(replies[1].contains("\"error\""), "{}", replies[1]);
    let printed = sim.stop();
    assert!(!printed.join("\n").contains(SECRET), "stdout contains the secret");
}

/// With every log at trace level (`RUST_LOG=trace`, the simulator's and its libraries'), no
/// line of stdout or stderr holds a secret given with `--key`, around WebSocket and HTTP
/// logins that succeed and fail and a request signed with HTTP Basic auth.
#[test]
fn trace_logs_never_hold_a_given_secret() {
    const SECRET: &str = "tr4ce-secret-never-logged-91d2";
    let key = format!("tracer:{SECRET}");
    let sim = SimProcess::start_with_env(&["--listen", "127.0.0.1:0", "--key", &key], &[("RUST_LOG", "trace")]);
    for secret in [SECRET.to_owned(), format!("{SECRET}-wrong")] {
        http_auth(&sim, "tracer", &secret);
    }
    let basic = base64(format!("tracer:{SECRET}").as_bytes());
    let head = format!(
        "GET /api/v2/private/get_open_orders_by_currency?currency=BTC HTTP/1.1\r\nAuthorization: Basic {basic}"
    );
    let reply = http(&sim, &head, "");
    assert!(reply.contains("\"result\":[]"), "{reply}");
    let ws_url = sim.url("ws://").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut c = ticktrade_testkit::WsClient::connect(&ws_url).await;
        let params =
            serde_json::json!({"grant_type": "client_credentials", "client_id": "tracer", "client_secret": SECRET});
        let v = c.call("public/auth", params).await;
        assert!(v["result"]["access_token"].is_string(), "{v}");
        let v = c.call("private/get_positions", serde_json::json!({"currency": "BTC"})).await;
        assert!(v["result"].is_array(), "{v}");
    });
    let (printed, logs) = sim.stop_with_logs();
    assert!(logs.iter().any(|l| l.contains("TRACE")), "trace logging is on: {} stderr lines", logs.len());
    for (name, lines) in [("stdout", &printed), ("stderr", &logs)] {
        for line in lines.iter() {
            assert!(!line.contains(SECRET) && !line.contains(&basic), "{name} holds the secret: {line}");
        }
    }
}

/// Standard base64 (the Basic auth header), written out to keep the test free of a crate.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `--instruments FILE --testnet`: the simulator trades exactly the recorded instruments (none
/// of the built-in ones) and marks every response `testnet: true`.
#[test]
fn instruments_file_replaces_the_catalogue_and_testnet_marks_replies() {
    let file =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/deribit/examples/public_get_instruments.response.json");
    let recorded: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let names: Vec<&str> =
        recorded["result"].as_array().unwrap().iter().map(|i| i["instrument_name"].as_str().unwrap()).collect();
    let sim = SimProcess::start(&["--listen", "127.0.0.1:0", "--instruments", file, "--testnet"]);
    let reply = http(&sim, "GET /api/v2/public/get_instruments?currency=any HTTP/1.1", "");
    sim.stop();
    let body: serde_json::Value = serde_json::from_str(&reply[reply.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    assert_eq!(body["testnet"], true, "{body}");
    let served: Vec<&str> =
        body["result"].as_array().unwrap().iter().map(|i| i["instrument_name"].as_str().unwrap()).collect();
    assert!(!served.is_empty(), "{body}");
    assert!(served.iter().all(|n| names.contains(n)), "served {served:?}, recorded {names:?}");
    assert!(!served.contains(&"ETH-PERPETUAL"), "a built-in instrument is still served");
}

/// `--tls --cert FILE --cert-key FILE`: wss:// with the given certificate (a client trusting
/// only it completes a handshake and an RPC), and no generated certificate is written.
#[test]
fn tls_serves_the_given_certificate_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, certified.cert.pem()).unwrap();
    std::fs::write(&key_path, certified.signing_key.serialize_pem()).unwrap();
    let sim = SimProcess::start(&[
        "--listen",
        "127.0.0.1:0",
        "--tls",
        "--cert",
        cert_path.to_str().unwrap(),
        "--cert-key",
        key_path.to_str().unwrap(),
    ]);
    let banner = sim.banner.join("\n");
    assert!(!banner.contains("self-signed certificate"), "{banner}");
    let url = sim.url("wss://").expect("a wss:// address");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let connector = ticktrade_testkit::ws::Connector::Rustls(std::sync::Arc::new(config));
        let mut c = ticktrade_testkit::WsClient::connect_tls(&url, connector).await;
        let v = c.call("public/get_time", serde_json::json!({})).await;
        assert!(v["result"].is_i64(), "{v}");
    });
    sim.stop();
}

/// Every flag `ticktrade sim --help` lists is passed by a process test of `ticktrade sim`
/// (this file or `run_sim.rs`), so a new flag cannot ship untested.
#[test]
fn every_sim_flag_is_used_by_a_test() {
    // This test's own source names no flag literally, so it cannot claim one.
    let untested = common::untested_flags("sim", &["sim_cli.rs", "run_sim.rs"], 10);
    assert!(untested.is_empty(), "flags of `ticktrade sim --help` no test passes: {untested:?}");
}
