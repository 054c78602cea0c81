//! A `nats-server` child process on loopback, for `bench bus` and the bus tests: where the
//! binary is, how it is started (a free port, an optional configuration file and monitoring
//! port, extra flags), when it is ready (it accepts connections), its monitoring endpoints as
//! JSON, and its end (killed and reaped on drop, its configuration file removed).
//!
//! Owns: the search order for the binary ([`find_bin`]), the child process ([`NatsProcess`]),
//! the monitoring request ([`monitor_json`]), and free loopback ports ([`free_port`]).
//! Must not: depend on any other ticktrade crate (`ticktrade-testkit` builds on it and must
//! stay free of dependency cycles), or bind anything but 127.0.0.1.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started server has to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Why a server could not be found, started or asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("nats-server {0}: no such file")]
    Missing(PathBuf),
    #[error(
        "nats-server not found ($NATS_SERVER_BIN, .tools/bin/ of this directory or one above it, $PATH): run \
         ./tests/nats/install.sh from the repository (builds the pinned version into .tools/bin/)"
    )]
    NotFound,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{bin} exited at start: {status}")]
    Exited { bin: PathBuf, status: std::process::ExitStatus },
    #[error("{bin} did not listen on 127.0.0.1:{port} within {READY_WITHIN:?}")]
    NotListening { bin: PathBuf, port: u16 },
    #[error("monitoring {path} on port {port}: {reason}")]
    Monitor { port: u16, path: String, reason: String },
    #[error("this server has no monitoring port")]
    NoMonitor,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// The `nats-server` to run: `explicit` (which must exist), else `$NATS_SERVER_BIN`, else
/// `.tools/bin/nats-server` in the current directory or one above it (the project's pinned
/// build), else the first on `$PATH`.
pub fn find_bin(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(path) = explicit {
        return match path.is_file() {
            true => Ok(path.to_path_buf()),
            false => Err(Error::Missing(path.to_path_buf())),
        };
    }
    if let Some(path) = std::env::var_os("NATS_SERVER_BIN") {
        return Ok(PathBuf::from(path));
    }
    let cwd = std::env::current_dir().map_err(io("the current directory"))?;
    let pinned = cwd.ancestors().map(|d| d.join(".tools/bin/nats-server")).find(|p| p.is_file());
    let on_path = || {
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("nats-server")).find(|p| p.is_file()))
    };
    pinned.or_else(on_path).ok_or(Error::NotFound)
}

/// A loopback port nobody listens on now.
pub fn free_port() -> Result<u16, Error> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io("binding a free port"))?;
    Ok(listener.local_addr().map_err(io("a free port's address"))?.port())
}

/// How to start a server.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// nats-server's configuration format (e.g. `no_fast_producer_stall: true`), written to a
    /// file of the server's own and passed with `-c`.
    pub config: Option<String>,
    /// Open a monitoring port (`-m`, for [`NatsProcess::monitor`]).
    pub monitor: bool,
    /// More flags (`--user`, cluster routes…).
    pub args: Vec<String>,
}

/// A running `nats-server` on 127.0.0.1, killed and reaped on drop.
#[derive(Debug)]
pub struct NatsProcess {
    bin: PathBuf,
    child: Option<Child>,
    port: u16,
    monitor: Option<u16>,
    /// Every flag after `-a 127.0.0.1 -p <port>` (restarts reuse them).
    args: Vec<String>,
    /// The configuration file this server owns: removed on drop.
    config: Option<PathBuf>,
}

impl NatsProcess {
    /// Starts `bin` on a free port with `options` and returns once it accepts connections.
    pub fn start(bin: &Path, options: Options) -> Result<NatsProcess, Error> {
        let port = free_port()?;
        let mut args = Vec::new();
        let mut config = None;
        if let Some(text) = &options.config {
            let path = std::env::temp_dir().join(format!("ticktrade-nats-{}-{port}.conf", std::process::id()));
            std::fs::write(&path, text).map_err(io(format!("writing {}", path.display())))?;
            args.extend(["-c".to_owned(), path.display().to_string()]);
            config = Some(path);
        }
        let monitor = match options.monitor {
            true => Some(free_port()?),
            false => None,
        };
        if let Some(m) = monitor {
            args.extend(["-m".to_owned(), m.to_string()]);
        }
        args.extend(options.args);
        let mut process = NatsProcess { bin: bin.to_path_buf(), child: None, port, monitor, args, config };
        process.spawn()?;
        Ok(process)
    }

    fn spawn(&mut self) -> Result<(), Error> {
        let child = Command::new(&self.bin)
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io(format!("starting {}", self.bin.display())))?;
        let child = self.child.insert(child);
        let deadline = Instant::now() + READY_WITHIN;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = child.try_wait().map_err(io("nats-server's status"))? {
                self.child = None;
                return Err(Error::Exited { bin: self.bin.clone(), status });
            }
            if Instant::now() > deadline {
                return Err(Error::NotListening { bin: self.bin.clone(), port: self.port });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A monitoring endpoint (`/varz`, `/connz?state=closed`, `/routez`…) as JSON.
    pub fn monitor(&self, path: &str) -> Result<serde_json::Value, Error> {
        monitor_json(self.monitor.ok_or(Error::NoMonitor)?, path)
    }

    /// Kills the server (SIGKILL: no goodbye to its clients) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Already gone is as good as killed.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts it again on the same ports with the same flags.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.kill();
        self.spawn()
    }
}

impl Drop for NatsProcess {
    fn drop(&mut self) {
        self.kill();
        if let Some(path) = self.config.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `GET path` on the monitoring port `port` of 127.0.0.1, as JSON.
pub fn monitor_json(port: u16, path: &str) -> Result<serde_json::Value, Error> {
    let fail = |reason: String| Error::Monitor { port, path: path.to_owned(), reason };
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).map_err(|e| fail(e.to_string()))?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| fail(e.to_string()))?;
    tcp.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .map_err(|e| fail(e.to_string()))?;
    let mut text = String::new();
    tcp.read_to_string(&mut text).map_err(|e| fail(e.to_string()))?;
    let body = text.split_once("\r\n\r\n").map(|(_, body)| body).ok_or_else(|| fail("no HTTP body".to_owned()))?;
    serde_json::from_str(body).map_err(|e| fail(format!("not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_explicit_binary_is_named() {
        let err = find_bin(Some(Path::new("/nonexistent/nats-server"))).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/nats-server"), "{err}");
    }

    #[test]
    fn a_binary_that_exits_at_once_is_an_error_not_a_hang() {
        let err = NatsProcess::start(Path::new("/bin/false"), Options::default()).unwrap_err();
        assert!(matches!(err, Error::Exited { .. }), "{err}");
    }

    #[test]
    fn monitoring_without_a_port_says_so() {
        assert!(matches!(monitor_json(free_port().unwrap(), "/varz"), Err(Error::Monitor { .. })));
    }
}
