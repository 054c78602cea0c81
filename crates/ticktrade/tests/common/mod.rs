//! What the binary's integration tests share: a `ticktrade sim` process as a user starts it.
//! Each test binary uses part of it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// A `ticktrade sim` process: its stdout lines as they come, and the banner it printed up to
/// "Ctrl-C". Killed when dropped.
pub struct SimProcess {
    pub child: Child,
    pub lines: Receiver<String>,
    pub banner: Vec<String>,
}

impl SimProcess {
    /// Starts `ticktrade sim ARGS` and reads its banner.
    pub fn start(args: &[&str]) -> SimProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ticktrade"))
            .arg("sim")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ticktrade sim starts");
        let stdout = child.stdout.take().expect("piped stdout");
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
        loop {
            let line = lines.recv_timeout(Duration::from_secs(60)).expect("a banner line");
            let done = line.contains("Ctrl-C");
            banner.push(line);
            if done {
                break;
            }
        }
        SimProcess { child, lines, banner }
    }

    /// The first banner word that starts with `prefix` (`http://`, `ws://`, `wss://`).
    pub fn url(&self, prefix: &str) -> Option<String> {
        self.banner.iter().flat_map(|line| line.split_whitespace()).find(|w| w.starts_with(prefix)).map(str::to_owned)
    }

    /// Kills the process; every stdout line it printed, banner first.
    pub fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut printed = std::mem::take(&mut self.banner);
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
            printed.push(line);
        }
        printed
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
