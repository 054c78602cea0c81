//! A real `nats-server` process for the bus tests: started on a free loopback port, killed
//! (and reaped) on drop, restartable on the same port, optionally with a configuration file
//! (limits the command line has no flag for, such as `write_deadline` and `max_pending`) and a
//! monitoring port ([`NatsServer::start_configured`]); and a cluster of them ([`NatsCluster`]:
//! each node with a route port, routes to all the others, one cluster name, and a monitoring
//! port that says which node a client is connected to).
//!
//! The binary is `$NATS_SERVER_BIN`, else the project's pinned build (`./tests/nats/install.sh`
//! puts it in `.tools/bin/`), else one on `$PATH` (`ticktrade_nats_process::find_bin`). A
//! missing binary panics with how to install it: a bus test that cannot run is a failure, not
//! a skip.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ticktrade_nats_process::{NatsProcess, Options};

/// A running `nats-server` (`ticktrade_nats_process`, with panics instead of errors).
#[derive(Debug)]
pub struct NatsServer {
    process: NatsProcess,
}

/// The `nats-server` binary the tests run (`ticktrade_nats_process::find_bin`).
pub fn nats_server_bin() -> PathBuf {
    ticktrade_nats_process::find_bin(None).unwrap_or_else(|e| panic!("{e}"))
}

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    ticktrade_nats_process::free_port().unwrap_or_else(|e| panic!("{e}"))
}

impl NatsServer {
    /// `nats-server -a 127.0.0.1 -p <free port>`.
    pub fn start() -> NatsServer {
        NatsServer::start_with(&[])
    }

    /// The same with more arguments (`--user`, `--pass`, `--auth`, cluster flags…).
    pub fn start_with(extra: &[&str]) -> NatsServer {
        NatsServer::start_options(Options {
            args: extra.iter().map(|s| (*s).to_owned()).collect(),
            ..Options::default()
        })
    }

    /// A server reading `config` (nats-server's configuration format, e.g.
    /// `write_deadline: "100ms"`) from a file of its own, with a monitoring port
    /// ([`NatsServer::monitor`]).
    pub fn start_configured(config: &str) -> NatsServer {
        NatsServer::start_options(Options { config: Some(config.to_owned()), monitor: true, ..Options::default() })
    }

    fn start_options(options: Options) -> NatsServer {
        let process = NatsProcess::start(&nats_server_bin(), options).unwrap_or_else(|e| panic!("{e}"));
        NatsServer { process }
    }

    pub fn port(&self) -> u16 {
        self.process.port()
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.process.url()
    }

    /// A monitoring endpoint (`/varz`, `/connz?state=closed`…) as JSON; `None` without a
    /// monitoring port or when it does not answer.
    pub fn monitor(&self, path: &str) -> Option<serde_json::Value> {
        self.process.monitor(path).ok()
    }

    /// Kills the server (SIGKILL: no goodbye to its clients) and reaps it.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Kills the server and starts it again on the same port with the same arguments.
    pub fn restart(&mut self) {
        self.process.restart().unwrap_or_else(|e| panic!("restarting nats-server: {e}"));
    }
}

/// A NATS cluster on loopback: `n` nodes, each routed to all the others
/// (`--cluster nats://127.0.0.1:<route port> --routes <the others> --cluster_name ticktrade`),
/// each with a monitoring port (`-m`).
#[derive(Debug)]
pub struct NatsCluster {
    nodes: Vec<NatsServer>,
}

impl NatsCluster {
    /// Starts `n` nodes and waits until every one has a route to every other.
    pub fn start(n: usize) -> NatsCluster {
        let routes: Vec<u16> = (0..n).map(|_| free_port()).collect();
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
                ];
                NatsServer::start_options(Options { monitor: true, args: Vec::from(args), ..Options::default() })
            })
            .collect();
        let cluster = NatsCluster { nodes };
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
        self.nodes[i].monitor(path)
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
