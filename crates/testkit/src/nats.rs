//! A real `nats-server` process for the bus tests: started on a free loopback port, killed
//! (and reaped) on drop, restartable on the same port, optionally with a configuration file
//! (limits the command line has no flag for, such as `write_deadline` and `max_pending`) and a
//! monitoring port ([`NatsServer::start_configured`]); and a cluster of them ([`NatsCluster`]:
//! each node with a route port, routes to all the others, one cluster name, and a monitoring
//! port that says which node a client is connected to).
//!
//! The binary is the project's pinned build (`./tests/nats/install.sh` puts it in
//! `.tools/bin/`), or `$NATS_SERVER_BIN`. A missing binary panics with how to install it: a
//! bus test that cannot run is a failure, not a skip.

use std::io::{Read as _, Write as _};
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
    /// The configuration file (`-c`) this server owns: removed on drop.
    config: Option<PathBuf>,
    /// The monitoring port (`-m`), if any.
    monitor: Option<u16>,
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
        let mut server = NatsServer {
            child: None,
            port: free_port(),
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
            config: None,
            monitor: None,
        };
        server.spawn();
        server
    }

    /// A server reading `config` (nats-server's configuration format, e.g.
    /// `write_deadline: "100ms"`) from a file of its own, with a monitoring port
    /// ([`NatsServer::monitor`]).
    pub fn start_configured(config: &str) -> NatsServer {
        let port = free_port();
        let monitor = free_port();
        let path = std::env::temp_dir().join(format!("ticktrade-nats-{}-{port}.conf", std::process::id()));
        std::fs::write(&path, config).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        let extra = vec!["-c".to_owned(), path.display().to_string(), "-m".to_owned(), monitor.to_string()];
        let mut server = NatsServer { child: None, port, extra, config: Some(path), monitor: Some(monitor) };
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

    /// A monitoring endpoint (`/varz`, `/connz?state=closed`…) as JSON; `None` without a
    /// monitoring port or when it does not answer.
    pub fn monitor(&self, path: &str) -> Option<serde_json::Value> {
        monitor_json(self.monitor?, path)
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
        if let Some(path) = self.config.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `GET path` on a monitoring port, as JSON.
fn monitor_json(port: u16, path: &str) -> Option<serde_json::Value> {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    tcp.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).ok()?;
    let mut text = String::new();
    tcp.read_to_string(&mut text).ok()?;
    serde_json::from_str(text.split_once("\r\n\r\n")?.1).ok()
}

/// A NATS cluster on loopback: `n` nodes, each routed to all the others
/// (`--cluster nats://127.0.0.1:<route port> --routes <the others> --cluster_name ticktrade`),
/// each with a monitoring port (`-m`).
#[derive(Debug)]
pub struct NatsCluster {
    nodes: Vec<NatsServer>,
    monitors: Vec<u16>,
}

impl NatsCluster {
    /// Starts `n` nodes and waits until every one has a route to every other.
    pub fn start(n: usize) -> NatsCluster {
        let routes: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let monitors: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let route_url = |p: &u16| format!("nats://127.0.0.1:{p}");
        let nodes = (0..n)
            .map(|i| {
                let others: Vec<String> =
                    routes.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, p)| route_url(p)).collect();
                let args = [
                    "--cluster".to_owned(),
                    route_url(&routes[i]),
                    "--routes".to_owned(),
                    others.join(","),
                    "--cluster_name".to_owned(),
                    "ticktrade".to_owned(),
                    "--server_name".to_owned(),
                    format!("node{i}"),
                    "-m".to_owned(),
                    monitors[i].to_string(),
                ];
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                NatsServer::start_with(&args)
            })
            .collect();
        let cluster = NatsCluster { nodes, monitors };
        let deadline = Instant::now() + Duration::from_secs(20);
        for i in 0..n {
            while cluster.monitor(i, "/routez").map_or(0, |v| v["num_routes"].as_u64().unwrap_or(0)) < (n - 1) as u64 {
                assert!(Instant::now() < deadline, "NATS node {i} has no route to every other within 20 s");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        cluster
    }

    /// Every node's client URL, comma-separated (`nats://127.0.0.1:a,nats://127.0.0.1:b,…`).
    pub fn urls(&self) -> String {
        self.nodes.iter().map(NatsServer::url).collect::<Vec<_>>().join(",")
    }

    pub fn node(&mut self, i: usize) -> &mut NatsServer {
        &mut self.nodes[i]
    }

    /// A node's monitoring endpoint (`/routez`, `/connz`…) as JSON; `None` if it does not answer.
    pub fn monitor(&self, i: usize, path: &str) -> Option<serde_json::Value> {
        monitor_json(self.monitors[i], path)
    }

    /// The nodes a client named `name` (its NATS connection name) is connected to now.
    pub fn nodes_of(&self, name: &str) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| {
                self.monitor(i, "/connz").is_some_and(|v| {
                    v["connections"].as_array().is_some_and(|c| c.iter().any(|c| c["name"].as_str() == Some(name)))
                })
            })
            .collect()
    }
}
