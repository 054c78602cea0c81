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

/// `ticktrade sim --key`: the banner shows the id and a masked secret, and no line of stdout
/// (banner, status lines around an auth that succeeds and one that fails) contains it.
#[test]
fn a_given_secret_is_never_printed() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Command, Stdio};

    const SECRET: &str = "s3cret-never-printed-7f1c";
    let mut child = Command::new(env!("CARGO_BIN_EXE_ticktrade"))
        .args(["sim", "--listen", "127.0.0.1:0", "--key", &format!("trader:{SECRET}")])
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
    let mut printed = Vec::new();
    let mut addr = None;
    loop {
        let line = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("banner line");
        if let Some(url) = line.trim().strip_prefix("http").map(str::trim).filter(|u| u.starts_with("http://")) {
            addr = Some(url.trim_start_matches("http://").split('/').next().unwrap().to_owned());
        }
        let done = line.contains("Ctrl-C");
        printed.push(line);
        if done {
            break;
        }
    }
    let addr = addr.expect("an http address in the banner");
    let banner = printed.join("\n");
    assert!(banner.contains("client_id=trader client_secret=********"), "{banner}");

    let mut replies = Vec::new();
    for secret in [SECRET.to_owned(), format!("{SECRET}-wrong")] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"public/auth","params":{{"grant_type":"client_credentials","client_id":"trader","client_secret":"{secret}"}}}}"#
        );
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
        write!(
            stream,
            "POST /api/v2/public/auth HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        replies.push(response);
    }
    assert!(replies[0].contains("access_token"), "{}", replies[0]);
    assert!(replies[1].contains("\"error\""), "{}", replies[1]);
    child.kill().unwrap();
    child.wait().unwrap();
    while let Ok(line) = rx.recv_timeout(std::time::Duration::from_millis(100)) {
        printed.push(line);
    }
    assert!(!printed.join("\n").contains(SECRET), "stdout contains the secret");
}
