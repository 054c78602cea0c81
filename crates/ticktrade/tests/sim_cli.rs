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

mod common;
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

    let mut replies = Vec::new();
    for secret in [SECRET.to_owned(), format!("{SECRET}-wrong")] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"public/auth","params":{{"grant_type":"client_credentials","client_id":"trader","client_secret":"{secret}"}}}}"#
        );
        let head = format!(
            "POST /api/v2/public/auth HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}",
            body.len()
        );
        replies.push(http(&sim, &head, &body));
    }
    assert!(replies[0].contains("access_token"), "{}", replies[0]);
    assert!(replies[1].contains("\"error\""), "{}", replies[1]);
    let printed = sim.stop();
    assert!(!printed.join("\n").contains(SECRET), "stdout contains the secret");
}
