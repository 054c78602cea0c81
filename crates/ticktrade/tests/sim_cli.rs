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

/// Starts `ticktrade sim --listen 127.0.0.1:0`, reads the banner, and asks `public/get_time`
/// over HTTP on the address it printed.
#[test]
fn ticktrade_sim_process_prints_its_address_and_serves_http() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Command, Stdio};

    let mut child = Command::new(env!("CARGO_BIN_EXE_ticktrade"))
        .args(["sim", "--listen", "127.0.0.1:0", "--seed", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut banner = Vec::new();
    let mut addr = None;
    loop {
        let line = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("banner line");
        if let Some(url) = line.trim().strip_prefix("http").map(str::trim).filter(|u| u.starts_with("http://")) {
            addr = Some(url.trim_start_matches("http://").split('/').next().unwrap().to_owned());
        }
        let done = line.contains("Ctrl-C");
        banner.push(line);
        if done {
            break;
        }
    }
    let addr = addr.expect("an http address in the banner");
    let text = banner.join("\n");
    assert!(text.contains("LOCAL SIMULATOR"), "{text}");
    assert!(text.contains("client_id=ticktrade-sim"), "{text}");

    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    write!(stream, "GET /api/v2/public/get_time HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"result\":"), "{response}");
    assert!(response.contains("\"usIn\":"), "{response}");
}
