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

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// A `ticktrade sim` process: its stdout lines as they come, the banner it printed up to
/// "Ctrl-C", and the HTTP address the banner names.
struct SimProcess {
    child: Child,
    lines: Receiver<String>,
    banner: Vec<String>,
    addr: String,
}

impl SimProcess {
    fn start(args: &[&str]) -> SimProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ticktrade"))
            .arg("sim")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
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
            let line = lines.recv_timeout(Duration::from_secs(60)).expect("banner line");
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
        SimProcess { child, lines, banner, addr }
    }

    /// One HTTP/1.1 request on a fresh connection; the whole response.
    fn http(&self, head: &str, body: &str) -> String {
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(stream, "{head}\r\nHost: {}\r\nConnection: close\r\n\r\n{body}", self.addr).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    /// Kills the process; every stdout line it printed, banner first.
    fn stop(mut self) -> Vec<String> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let mut printed = self.banner;
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
            printed.push(line);
        }
        printed
    }
}

/// Starts `ticktrade sim --listen 127.0.0.1:0`, reads the banner, and asks `public/get_time`
/// over HTTP on the address it printed.
#[test]
fn ticktrade_sim_process_prints_its_address_and_serves_http() {
    let sim = SimProcess::start(&["--listen", "127.0.0.1:0", "--seed", "3"]);
    let text = sim.banner.join("\n");
    assert!(text.contains("LOCAL SIMULATOR"), "{text}");
    assert!(text.contains("client_id=ticktrade-sim"), "{text}");

    let response = sim.http("GET /api/v2/public/get_time HTTP/1.1", "");
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
        replies.push(sim.http(&head, &body));
    }
    assert!(replies[0].contains("access_token"), "{}", replies[0]);
    assert!(replies[1].contains("\"error\""), "{}", replies[1]);
    let printed = sim.stop();
    assert!(!printed.join("\n").contains(SECRET), "stdout contains the secret");
}
