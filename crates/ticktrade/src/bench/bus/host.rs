//! What `bench bus` needs from the host: a `nats-server` process it starts and stops, the
//! server's own counters (`/varz`), a stalled subscriber (an edge that stopped reading), and
//! CPU time per thread group and per process.
//!
//! CPU time is read from `/proc/<pid>/task/<tid>/schedstat`, whose first field is the
//! nanoseconds the thread has run on a CPU (the scheduler's own account, finer than the 10 ms
//! ticks of `/proc/…/stat` or `getrusage`). A thread group is this process's threads whose name
//! (`comm`) is exactly a runtime's thread name: each server runs on its own runtime with its
//! own name, and everything it spawns (NATS client included) runs on it.
//!
//! Owns: the run's server configuration and counters (`/varz`), the stalled subscriber's
//! socket, the `/proc` readers. The process itself (binary search, start, monitoring port,
//! kill) is `ticktrade_nats_process`'s, shared with the bus tests.
//! Must not: measure latency (the servers record it).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};

/// The run's `nats-server` (`ticktrade_nats_process`, with a configuration file and a
/// monitoring port), killed and reaped on drop.
pub(super) struct NatsProcess(ticktrade_nats_process::NatsProcess);

/// The server's configuration when publishers must not wait for slow subscribers: a
/// subscriber more than 75 % of `max_pending` behind loses messages (an edge sees the gap and
/// resyncs) instead of the server stalling every publisher that feeds it (its default, up to
/// 10 ms a read; `docs/SCALING.md`).
pub(super) const NO_PRODUCER_STALL: &str = "no_fast_producer_stall: true\n";

/// The `nats-server` to run: `--nats-server PATH`, else the pinned build or `$PATH`
/// (`ticktrade_nats_process::find_bin`).
pub(super) fn nats_server_bin(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    ticktrade_nats_process::find_bin(explicit).context("nats-server for bench bus (or pass --nats-server PATH)")
}

impl NatsProcess {
    /// `nats-server` on a free loopback port with a monitoring port, reading `config`
    /// (`NO_PRODUCER_STALL`, or empty for the defaults), once it accepts connections.
    pub(super) fn start(bin: &Path, config: &str) -> anyhow::Result<NatsProcess> {
        let options =
            ticktrade_nats_process::Options { config: Some(config.to_owned()), monitor: true, ..Default::default() };
        Ok(NatsProcess(ticktrade_nats_process::NatsProcess::start(bin, options)?))
    }

    pub(super) fn url(&self) -> String {
        self.0.url()
    }

    pub(super) fn pid(&self) -> u32 {
        self.0.pid().unwrap_or(0)
    }

    /// The server's message and byte totals (`/varz` of its monitoring port).
    pub(super) fn varz(&self) -> anyhow::Result<Varz> {
        let v = self.0.monitor("/varz")?;
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        Ok(Varz {
            in_msgs: n("in_msgs"),
            out_msgs: n("out_msgs"),
            in_bytes: n("in_bytes"),
            out_bytes: n("out_bytes"),
            slow_consumers: n("slow_consumers"),
            stalls: n("stalled_clients"),
        })
    }

    /// A connection to this server that subscribes to every subject and never reads (see
    /// [`Stalled`]).
    pub(super) fn stalled(&self) -> anyhow::Result<Stalled> {
        Stalled::connect(self.0.port())
    }
}

/// A NATS client that subscribes to every subject (`>`) and then never reads its socket: an
/// edge whose process stopped. Its receive buffer is made small (4 KiB asked) so that what
/// it does not read piles up in `nats-server` (up to its 64 MiB `max_pending`, which then
/// drops the client as a slow consumer; past 75 % of it the server stalls the publishers
/// that feed it by up to 2 ms a message, 10 ms a read) rather than in the kernel. Closed on drop.
pub(super) struct Stalled {
    _tcp: TcpStream,
}

impl Stalled {
    fn connect(port: u16) -> anyhow::Result<Stalled> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().context("a runtime")?;
        let tcp = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.set_recv_buffer_size(4 << 10)?;
            socket.connect(([127, 0, 0, 1], port).into()).await?.into_std()
        });
        let mut tcp = tcp.context("connecting the stalled subscriber")?;
        tcp.set_nonblocking(false).context("blocking mode")?;
        tcp.set_read_timeout(Some(Duration::from_secs(5))).context("read timeout")?;
        tcp.write_all(
            b"CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"bench-stalled-edge\"}\r\nSUB > 1\r\nPING\r\n",
        )
        .context("subscribing the stalled subscriber")?;
        // Read up to the PONG: the subscription is in place. Messages may come before it.
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !seen.windows(6).any(|w| w == b"PONG\r\n") {
            let n = tcp.read(&mut buf).context("the stalled subscriber's PONG")?;
            if n == 0 {
                bail!("nats-server closed the stalled subscriber: {}", String::from_utf8_lossy(&seen));
            }
            seen.extend_from_slice(&buf[..n]);
            anyhow::ensure!(seen.len() < 64 << 20, "no PONG in 64 MiB");
        }
        Ok(Stalled { _tcp: tcp })
    }
}

/// A NATS server's totals since it started.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Varz {
    pub in_msgs: u64,
    pub out_msgs: u64,
    pub in_bytes: u64,
    pub out_bytes: u64,
    /// Clients the server dropped as slow consumers.
    pub slow_consumers: u64,
    /// Times a publisher was stalled because a subscriber fell behind (`stalled_clients`).
    pub stalls: u64,
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

    /// Publishes 1 MiB chunks to a server with a stalled subscriber until the server drops it
    /// (or 256 MiB); returns the server's counters and the MiB sent.
    fn publish_past_a_stalled_subscriber(config: &str) -> (Varz, u32) {
        let nats = NatsProcess::start(&nats_server_bin(None).unwrap(), config).unwrap();
        let _stalled = nats.stalled().unwrap();
        let mut publisher = TcpStream::connect(("127.0.0.1", nats.0.port())).unwrap();
        publisher.write_all(b"CONNECT {\"verbose\":false}\r\n").unwrap();
        let mut chunk = Vec::new();
        for _ in 0..1024 {
            chunk.extend_from_slice(b"PUB bench.x 1024\r\n");
            chunk.extend_from_slice(&[b'x'; 1024]);
            chunk.extend_from_slice(b"\r\n");
        }
        // 1 MiB a chunk: past the server's 64 MiB max_pending for the subscriber well before 256.
        let mut sent = 0;
        while nats.varz().unwrap().slow_consumers == 0 && sent < 256 {
            for _ in 0..8 {
                publisher.write_all(&chunk).unwrap();
            }
            sent += 8;
        }
        (nats.varz().unwrap(), sent)
    }

    #[test]
    fn a_stalled_subscriber_piles_up_in_nats_server_until_it_is_dropped() {
        // The server's defaults: the publisher is stalled for it, then it is dropped.
        let (varz, sent) = publish_past_a_stalled_subscriber("");
        assert_eq!(varz.slow_consumers, 1, "{varz:?} after {sent} MiB");
        assert!(varz.stalls > 0, "the publisher was never stalled: {varz:?}");
        assert!(sent >= 48, "dropped after {sent} MiB: it must have piled up to its max_pending first");
        // With `NO_PRODUCER_STALL`: the subscriber loses messages instead; the publisher never waits.
        let (varz, sent) = publish_past_a_stalled_subscriber(NO_PRODUCER_STALL);
        assert_eq!(varz.stalls, 0, "{varz:?} after {sent} MiB");
        assert!(varz.in_msgs > varz.out_msgs + 100_000, "the stalled subscriber got everything: {varz:?}");
    }

    #[test]
    fn a_missing_explicit_binary_is_a_clear_error() {
        let err = nats_server_bin(Some(Path::new("/nonexistent/nats-server"))).unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/nats-server"), "{err:#}");
    }
}
