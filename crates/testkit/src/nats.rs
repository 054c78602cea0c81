//! A real `nats-server` process for the bus tests: started on a free loopback port, killed
//! (and reaped) on drop, restartable on the same port.
//!
//! The binary is the project's pinned build (`./tests/nats/install.sh` puts it in
//! `.tools/bin/`), or `$NATS_SERVER_BIN`. A missing binary panics with how to install it: a
//! bus test that cannot run is a failure, not a skip.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `nats-server`.
#[derive(Debug)]
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    extra: Vec<String>,
}

/// The `nats-server` binary the tests run.
pub fn nats_server_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("NATS_SERVER_BIN") {
        return PathBuf::from(path);
    }
    let pinned = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/nats-server");
    assert!(
        pinned.exists(),
        "nats-server not found at {}: run ./tests/nats/install.sh (builds the pinned v2.15.2 with `go install`), \
         or set NATS_SERVER_BIN",
        pinned.display()
    );
    pinned
}

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding a free port");
    listener.local_addr().expect("local address").port()
}

impl NatsServer {
    /// `nats-server -a 127.0.0.1 -p <free port>`.
    pub fn start() -> NatsServer {
        NatsServer::start_with(&[])
    }

    /// The same with more arguments (`--user`, `--pass`, `--auth`, cluster flags…).
    pub fn start_with(extra: &[&str]) -> NatsServer {
        let mut server =
            NatsServer { child: None, port: free_port(), extra: extra.iter().map(|s| (*s).to_owned()).collect() };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let bin = nats_server_bin();
        let child = Command::new(&bin)
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("nats-server on port {} exited at start: {status}", self.port);
            }
            assert!(Instant::now() < deadline, "nats-server on port {} did not listen within 10 s", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills the server (SIGKILL: no goodbye to its clients) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts it again on the same port with the same arguments.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
