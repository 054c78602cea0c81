//! What the binary's integration tests share: a `ticktrade sim` (or `serve`) process as a user
//! starts it, and the check that every flag of a subcommand is passed by a test. Each test
//! binary uses part of it.

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
    /// Its stderr lines (the logs).
    pub log_lines: Receiver<String>,
    pub banner: Vec<String>,
}

/// Forwards each line of `stream` to the returned channel, from a thread.
fn line_channel(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

impl SimProcess {
    /// Starts `ticktrade sim ARGS` and reads its banner.
    pub fn start(args: &[&str]) -> SimProcess {
        SimProcess::start_with_env(args, &[])
    }

    /// Starts `ticktrade sim ARGS` with extra environment variables (`RUST_LOG`…).
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> SimProcess {
        SimProcess::start_subcommand("sim", args, env)
    }

    /// Starts `ticktrade SUBCOMMAND ARGS` (a server that prints a banner ending in "Ctrl-C").
    pub fn start_subcommand(subcommand: &str, args: &[&str], env: &[(&str, &str)]) -> SimProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ticktrade"))
            .arg(subcommand)
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ticktrade starts");
        let lines = line_channel(child.stdout.take().expect("piped stdout"));
        let log_lines = line_channel(child.stderr.take().expect("piped stderr"));
        let mut banner = Vec::new();
        loop {
            let line = lines.recv_timeout(Duration::from_secs(60)).expect("a banner line");
            let done = line.contains("Ctrl-C");
            banner.push(line);
            if done {
                break;
            }
        }
        SimProcess { child, lines, log_lines, banner }
    }

    /// The first banner word that starts with `prefix` (`http://`, `ws://`, `wss://`).
    pub fn url(&self, prefix: &str) -> Option<String> {
        self.banner.iter().flat_map(|line| line.split_whitespace()).find(|w| w.starts_with(prefix)).map(str::to_owned)
    }

    /// Kills the process; every stdout line it printed, banner first.
    pub fn stop(self) -> Vec<String> {
        self.stop_with_logs().0
    }

    /// Kills the process; every stdout line (banner first) and every stderr line it printed.
    pub fn stop_with_logs(mut self) -> (Vec<String>, Vec<String>) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut printed = std::mem::take(&mut self.banner);
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
            printed.push(line);
        }
        let mut logs = Vec::new();
        while let Ok(line) = self.log_lines.recv_timeout(Duration::from_millis(100)) {
            logs.push(line);
        }
        (printed, logs)
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The flags `ticktrade SUBCOMMAND --help` lists that no test file in `files` (under this
/// crate's `tests/`) passes as a string literal (`"--flag"`). Panics if fewer than `min`
/// flags were parsed from the help (a help format the parser no longer reads). `files` are
/// named relative to `tests/it/`.
pub fn untested_flags(subcommand: &str, files: &[&str], min: usize) -> Vec<String> {
    let help = Command::new(env!("CARGO_BIN_EXE_ticktrade")).args([subcommand, "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let flags: Vec<String> = help
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .map(|w| w.trim_end_matches(',').to_owned())
        .filter(|f| f != "--help" && f != "--version")
        .collect();
    assert!(flags.len() >= min, "flags parsed from --help: {flags:?}\n{help}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it");
    let tests: String =
        files.iter().map(|f| std::fs::read_to_string(format!("{dir}/{f}")).unwrap()).collect::<Vec<_>>().join("\n");
    flags.into_iter().filter(|f| !tests.contains(&format!("\"{f}\""))).collect()
}
