//! What `bench bus` needs from the host: a `nats-server` process it starts and stops, the
//! server's own counters (`/varz`), and CPU time per thread group and per process.
//!
//! CPU time is read from `/proc/<pid>/task/<tid>/schedstat`, whose first field is the
//! nanoseconds the thread has run on a CPU (the scheduler's own account, finer than the 10 ms
//! ticks of `/proc/…/stat` or `getrusage`). A thread group is this process's threads whose name
//! (`comm`) is exactly a runtime's thread name: each server runs on its own runtime with its
//! own name, and everything it spawns (NATS client included) runs on it.
//!
//! Owns: finding the binary, the child process and its monitoring port, the `/proc` readers.
//! Must not: measure latency (the servers record it).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// A `nats-server` child on loopback, killed and reaped on drop.
pub(super) struct NatsProcess {
    child: Child,
    port: u16,
    monitor: u16,
}

/// The `nats-server` to run: `explicit`, else `$NATS_SERVER_BIN`, else `.tools/bin/nats-server`
/// in the current directory or one above it (the project's pinned build), else `$PATH`.
pub(super) fn nats_server_bin(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        anyhow::ensure!(path.is_file(), "--nats-server {}: no such file", path.display());
        return Ok(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os("NATS_SERVER_BIN") {
        return Ok(PathBuf::from(path));
    }
    let cwd = std::env::current_dir().context("current directory")?;
    let pinned = cwd.ancestors().map(|d| d.join(".tools/bin/nats-server")).find(|p| p.is_file());
    let on_path = || {
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("nats-server")).find(|p| p.is_file()))
    };
    match pinned.or_else(on_path) {
        Some(path) => Ok(path),
        None => bail!(
            "nats-server not found (in .tools/bin/ of this directory or one above it, or on $PATH): run \
             ./tests/nats/install.sh from the repository (builds the pinned version into .tools/bin/), or pass \
             --nats-server PATH"
        ),
    }
}

fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding a free port")?;
    Ok(listener.local_addr().context("local address")?.port())
}

impl NatsProcess {
    /// `nats-server -a 127.0.0.1 -p <free> -m <free>`, once it accepts connections.
    pub(super) fn start(bin: &Path) -> anyhow::Result<NatsProcess> {
        let (port, monitor) = (free_port()?, free_port()?);
        let child = Command::new(bin)
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-m", &monitor.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut process = NatsProcess { child, port, monitor };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = process.child.try_wait().context("nats-server status")? {
                bail!("{} exited at start: {status}", bin.display());
            }
            if Instant::now() > deadline {
                bail!("{} did not listen on port {port} within 10 s", bin.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(process)
    }

    pub(super) fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's message and byte totals (`/varz` of its monitoring port).
    pub(super) fn varz(&self) -> anyhow::Result<Varz> {
        let mut tcp = TcpStream::connect(("127.0.0.1", self.monitor)).context("nats-server monitoring port")?;
        tcp.set_read_timeout(Some(Duration::from_secs(5))).context("read timeout")?;
        tcp.write_all(b"GET /varz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").context("asking /varz")?;
        let mut text = String::new();
        tcp.read_to_string(&mut text).context("reading /varz")?;
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let v: serde_json::Value = serde_json::from_str(body).context("/varz is not JSON")?;
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        Ok(Varz { in_msgs: n("in_msgs"), out_msgs: n("out_msgs"), in_bytes: n("in_bytes"), out_bytes: n("out_bytes") })
    }
}

impl Drop for NatsProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A NATS server's totals since it started.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Varz {
    pub in_msgs: u64,
    pub out_msgs: u64,
    pub in_bytes: u64,
    pub out_bytes: u64,
}

/// Nanoseconds on CPU of one task (`…/task/<tid>/schedstat`, first field).
fn task_ns(task: &Path) -> u64 {
    std::fs::read_to_string(task.join("schedstat"))
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Nanoseconds on CPU of this process's threads named exactly `name`.
pub(super) fn threads_cpu_ns(name: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks
        .flatten()
        .map(|t| t.path())
        .filter(|t| std::fs::read_to_string(t.join("comm")).is_ok_and(|c| c.trim_end() == name))
        .map(|t| task_ns(&t))
        .sum()
}

/// Nanoseconds on CPU of every thread of process `pid`.
pub(super) fn process_cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    tasks.flatten().map(|t| task_ns(&t.path())).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_thread_group_is_charged_its_own_cpu_only() {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let busy = std::thread::Builder::new()
            .name("bus-cpu-test".into())
            .spawn(move || {
                // Spins until the kernel has charged it 20 ms, then stays alive until measured.
                let mut x = 0u64;
                while task_ns(Path::new("/proc/thread-self")) < 20_000_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                ready_tx.send(()).unwrap();
                done_rx.recv().unwrap();
                x
            })
            .unwrap();
        ready_rx.recv().unwrap();
        let ns = threads_cpu_ns("bus-cpu-test");
        assert!(ns >= 20_000_000, "{ns} ns");
        assert_eq!(threads_cpu_ns("no-such-thread"), 0);
        assert!(process_cpu_ns(std::process::id()) >= ns);
        done_tx.send(()).unwrap();
        busy.join().unwrap();
    }

    #[test]
    fn a_missing_explicit_binary_is_a_clear_error() {
        let err = nats_server_bin(Some(Path::new("/nonexistent/nats-server"))).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/nats-server"), "{err}");
    }
}
