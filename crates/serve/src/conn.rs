//! Downstream connections: the accept loop, the WebSocket upgrade at `/ws/api/v2` done here on
//! the bare socket, and each client's [`Outbound`]: the hub writes a frame straight to the
//! client's socket (one `write` per frame per client, no task wake-up, no copy: every client
//! gets the same framed bytes); only what the socket does not take at once is queued, bounded,
//! and flushed by the client's own task when the socket is writable again. Every other HTTP
//! request is handed to the axum router in `client`, bytes already read included.
//!
//! Owns: the client sockets (each the sink of its client's `ticktrade_net::outbound` queue,
//! which holds the bound and the slow-client policy), the fan-out delay stamps (taken when a
//! frame's last byte is handed to the kernel).
//! Must not: interpret requests (the hub does), or block the hub (writes are non-blocking).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use hdrhistogram::Histogram;
use ticktrade_net::frame;
use ticktrade_net::outbound::{Flushed, Frame, Offer, Outbound as Queue};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};

use crate::hub::HubMsg;
use crate::wire::{self, FrameReader, Incoming};
use crate::{ServeConfig, Shared, bump, now_us};

/// Largest request head read before deciding where a connection goes.
const MAX_HEAD: usize = 16 << 10;

/// A frame for one client: the bytes on the wire, and when the upstream frame it came from
/// arrived (its fan-out delay is counted from there).
#[derive(Clone)]
pub(crate) struct Stamped {
    pub bytes: Bytes,
    pub upstream_at: Option<Instant>,
}

impl Frame for Stamped {
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn advance(&mut self, n: usize) {
        Buf::advance(&mut self.bytes, n);
    }
}

/// A client's outgoing side, shared by the hub (writes) and the client's task (flushes what
/// the socket did not take, and reads): the shared queue in front of the socket, and the
/// fan-out delays of the frames the client's task wrote.
///
/// The delays of frames the hub wrote at once are not here but in the hub's own record of
/// the client ([`Delays`]), written without a lock: a second lock per client per frame,
/// beside the queue's, was the one thing the fan-out's bookkeeping added per client when the
/// queue moved to `ticktrade_net::outbound`.
pub(crate) struct Outbound {
    queue: Queue<Stamped, Option<Arc<TcpStream>>>,
    /// Fan-out delays (ns) of the frames this client's task wrote (they had been queued).
    flushed: Mutex<Delays>,
    shared: Arc<Shared>,
}

/// One client's fan-out delay histogram (ns, 2 significant digits), made at its first delay:
/// each client has two (the hub's and its task's, so neither writer waits on the other's lock),
/// about 15 KiB each, and a client whose frames all go one way never needs the other.
#[derive(Default)]
pub(crate) struct Delays(Option<Histogram<u32>>);

impl Delays {
    /// Records the delay of a frame from upstream (received at `upstream_at`) whose last byte
    /// the socket took at `done`, and returns it (ns) for the server's histogram.
    pub(crate) fn record(&mut self, upstream_at: Instant, done: Instant) -> u64 {
        let ns = u64::try_from(done.saturating_duration_since(upstream_at).as_nanos()).unwrap_or(u64::MAX).max(1);
        if self.0.is_none() {
            self.0 = Histogram::new_with_bounds(1, 60_000_000_000, 2).ok();
        }
        if let Some(h) = self.0.as_mut() {
            h.saturating_record(ns);
        }
        ns
    }

    /// The quantiles of these delays together with `other`'s.
    pub(crate) fn summary_with(&self, other: &Delays) -> DelaySummary {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => {
                let mut both = a.clone();
                if both.add(b).is_err() {
                    return DelaySummary::of(Some(a));
                }
                DelaySummary::of(Some(&both))
            }
            (one, None) | (None, one) => DelaySummary::of(one.as_ref()),
        }
    }
}

/// Quantiles of one client's fan-out delays, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DelaySummary {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl DelaySummary {
    /// The quantiles of `h`; all zero when there is no histogram or it is empty.
    pub(crate) fn of<C: hdrhistogram::Counter>(h: Option<&Histogram<C>>) -> DelaySummary {
        match h {
            Some(h) if !h.is_empty() => DelaySummary {
                count: h.len(),
                p50_ns: h.value_at_quantile(0.5),
                p99_ns: h.value_at_quantile(0.99),
                p999_ns: h.value_at_quantile(0.999),
                max_ns: h.max(),
            },
            _ => DelaySummary::default(),
        }
    }
}

impl Outbound {
    fn new(stream: Option<Arc<TcpStream>>, cfg: &ServeConfig, shared: Arc<Shared>) -> Outbound {
        Outbound { queue: Queue::new(stream, cfg.queue_capacity, cfg.slow_policy), flushed: Mutex::default(), shared }
    }

    /// An outbound with no socket: frames stay queued until [`Outbound::take_queued`] (hub tests).
    #[cfg(test)]
    pub(crate) fn detached(cfg: &ServeConfig) -> Arc<Outbound> {
        Arc::new(Outbound::new(None, cfg, Arc::new(Shared::default())))
    }

    /// Takes every queued frame (hub tests).
    #[cfg(test)]
    pub(crate) fn take_queued(&self) -> Vec<Bytes> {
        self.queue.take_queued().into_iter().map(|f| f.bytes).collect()
    }

    /// The shared queue (the hub's fan-out loop offers to it).
    pub(crate) fn queue(&self) -> &Queue<Stamped, Option<Arc<TcpStream>>> {
        &self.queue
    }

    /// Frames waiting for the socket.
    pub(crate) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// This client's fan-out delay quantiles so far: `written` (the hub's record of the
    /// frames it wrote at once) with those the client's task wrote.
    pub(crate) fn delays(&self, written: &Delays) -> DelaySummary {
        let Ok(flushed) = self.flushed.lock() else { return DelaySummary::default() };
        written.summary_with(&flushed)
    }

    /// Records the delay of a frame the client's task wrote, in its histogram and the server's.
    fn record_flushed(&self, upstream_at: Option<Instant>, done: Instant) {
        let Some(at) = upstream_at else { return };
        let Ok(mut flushed) = self.flushed.lock() else { return };
        let ns = flushed.record(at, done);
        drop(flushed);
        if let Ok(mut guard) = self.shared.fanout_ns.lock()
            && let Some(h) = guard.as_mut()
        {
            h.saturating_record(ns);
        }
    }

    /// Writes `frame` now if nothing is queued and the socket takes it; otherwise queues it
    /// (the queue's bound and policy apply). The caller records the delay of a frame written
    /// at once ([`Offer::Written`]).
    pub(crate) fn send(&self, frame: &Bytes, upstream_at: Option<Instant>) -> Offer {
        self.queue.send(&Stamped { bytes: frame.clone(), upstream_at }, None)
    }

    /// Closes the connection with `code` and `reason` once what is queued is written.
    pub(crate) fn close(&self, code: u16, reason: &str) {
        self.control(wire::close_frame(code, reason), true);
    }

    /// Queues a control frame past the bound (pong, close); `last` = nothing after it.
    fn control(&self, frame: Bytes, last: bool) {
        self.queue.control(Stamped { bytes: frame, upstream_at: None }, last);
    }

    /// Writes what is queued until the queue is empty (`Ok(true)` if the connection is closing).
    async fn flush(&self) -> io::Result<bool> {
        let Some(stream) = self.queue.sink() else { return Ok(false) };
        loop {
            match self.queue.flush(|f| self.record_flushed(f.upstream_at, Instant::now()))? {
                Flushed::Idle => return Ok(false),
                Flushed::Closing => return Ok(true),
                Flushed::Blocked => stream.writable().await?,
            }
        }
    }
}

/// Connections that are not WebSocket upgrades at `/ws/api/v2`, for axum.
pub(crate) struct Handoff {
    rx: mpsc::Receiver<(Prefixed, SocketAddr)>,
    addr: SocketAddr,
}

impl axum::serve::Listener for Handoff {
    type Io = Prefixed;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Prefixed, SocketAddr) {
        match self.rx.recv().await {
            Some(conn) => conn,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

/// A socket whose first bytes were already read: they are read again first.
pub(crate) struct Prefixed {
    prefix: Bytes,
    inner: TcpStream,
}

impl AsyncRead for Prefixed {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            let head = self.prefix.split_to(n);
            buf.put_slice(&head);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[derive(Clone)]
struct ConnState {
    cfg: Arc<ServeConfig>,
    hub: mpsc::Sender<HubMsg>,
    shared: Arc<Shared>,
    http: mpsc::Sender<(Prefixed, SocketAddr)>,
}

/// Accepts connections on `listener`: WebSocket upgrades at `/ws/api/v2` are served here,
/// everything else goes to the returned [`Handoff`] (for axum).
pub(crate) fn split(
    listener: TcpListener,
    cfg: Arc<ServeConfig>,
    hub: mpsc::Sender<HubMsg>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) -> io::Result<(impl Future<Output = ()> + Send, Handoff)> {
    let addr = listener.local_addr()?;
    let (http, rx) = mpsc::channel(256);
    let state = ConnState { cfg, hub, shared, http };
    let accept = async move {
        let stop = async move {
            let _ = shutdown.wait_for(|s| *s).await;
        };
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => return,
                conn = listener.accept() => match conn {
                    Ok((stream, peer)) => {
                        let _ = stream.set_nodelay(true);
                        tokio::spawn(route(stream, peer, state.clone()));
                    }
                    Err(e) => {
                        tracing::warn!("accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }
    };
    Ok((accept, Handoff { rx, addr }))
}

/// Reads the request head and sends the connection where it belongs.
async fn route(mut stream: TcpStream, peer: SocketAddr, state: ConnState) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    let read_head = async {
        loop {
            if let Some(end) = wire::head_end(&buf) {
                return Some(end);
            }
            if buf.len() >= MAX_HEAD {
                return None;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let end = match tokio::time::timeout(Duration::from_secs(10), read_head).await {
        Ok(Some(end)) => Some(end),
        Ok(None) if buf.len() >= MAX_HEAD => None,
        _ => return,
    };
    let head = end.and_then(|end| wire::parse_head(&buf[..end]));
    match (end, head) {
        (Some(end), Some(wire::Head { path, ws_key: Some(key) })) if path == "/ws/api/v2" => {
            let rest = buf.split_off(end);
            upgrade(stream, &key, rest, &state).await;
        }
        _ => {
            let _ = state.http.send((Prefixed { prefix: Bytes::from(buf), inner: stream }, peer)).await;
        }
    }
}

async fn upgrade(mut stream: TcpStream, key: &str, rest: Vec<u8>, state: &ConnState) {
    let limit = state.cfg.max_connections;
    if bump(&state.shared.connections, 1) > limit {
        bump(&state.shared.connections, -1);
        let body = format!("too many connections (limit {limit})");
        let _ = stream.write_all(&wire::http_reply("503 Service Unavailable", &body)).await;
        let _ = stream.shutdown().await;
        return;
    }
    if stream.write_all(&wire::accept_reply(key)).await.is_ok() {
        run_client(stream, rest, state).await;
    }
    bump(&state.shared.connections, -1);
}

async fn run_client(stream: TcpStream, rest: Vec<u8>, state: &ConnState) {
    let id = state.shared.next_client.fetch_add(1, Ordering::Relaxed) + 1;
    let stream = Arc::new(stream);
    let out = Arc::new(Outbound::new(Some(Arc::clone(&stream)), &state.cfg, Arc::clone(&state.shared)));
    let (kill_tx, mut kill_rx) = oneshot::channel::<String>();
    if state.hub.send(HubMsg::Join { id, out: Arc::clone(&out), kill: kill_tx }).await.is_err() {
        return;
    }
    let mut reader = FrameReader::new(state.cfg.max_message_bytes);
    reader.push(&rest);
    let mut chunk = vec![0u8; 16 << 10];
    'conn: loop {
        // Whole messages already read.
        loop {
            match reader.next() {
                Ok(Some(Incoming::Text(text))) => {
                    if state.hub.send(HubMsg::Request { id, text, us_in: now_us() }).await.is_err() {
                        break 'conn;
                    }
                }
                Ok(Some(Incoming::Ping(data))) => out.control(wire::pong_frame(&data), false),
                Ok(Some(Incoming::Close)) => {
                    out.control(wire::close_frame(frame::close::NORMAL, ""), true);
                    break 'conn;
                }
                Ok(Some(Incoming::Binary | Incoming::Pong)) => {}
                Ok(None) => break,
                Err(e) => {
                    out.control(wire::close_frame(e.close_code(), &e.to_string()), true);
                    break 'conn;
                }
            }
        }
        tokio::select! {
            biased;
            reason = &mut kill_rx => {
                let reason = reason.unwrap_or_else(|_| "server closing".to_owned());
                out.control(wire::close_frame(frame::close::POLICY, &reason), true);
                break 'conn;
            }
            () = out.queue.notified() => match out.flush().await {
                Ok(false) => {}
                Ok(true) | Err(_) => break 'conn,
            },
            ready = stream.readable() => {
                if ready.is_err() {
                    break 'conn;
                }
                match stream.try_read(&mut chunk) {
                    Ok(0) => break 'conn,
                    Ok(n) => reader.push(&chunk[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(_) => break 'conn,
                }
            }
        }
    }
    let _ = state.hub.send(HubMsg::Leave { id }).await;
    // Send what is left (a close frame at least), briefly.
    let _ = tokio::time::timeout(Duration::from_secs(2), out.flush()).await;
    out.queue.shutdown();
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::Delays;

    #[test]
    fn a_summary_counts_the_delays_of_whichever_side_recorded_them() {
        let t0 = Instant::now();
        let (mut hub, mut task) = (Delays::default(), Delays::default());
        assert!(hub.0.is_none() && task.0.is_none(), "no histogram before the first delay");
        assert_eq!(hub.summary_with(&task).count, 0);
        task.record(t0, t0 + Duration::from_micros(5));
        assert_eq!(hub.summary_with(&task).count, 1, "only the task's side");
        hub.record(t0, t0 + Duration::from_micros(7));
        hub.record(t0, t0 + Duration::from_micros(9));
        let both = hub.summary_with(&task);
        assert_eq!(both.count, 3);
        assert!(both.max_ns >= 9_000 && both.max_ns < 9_100, "{both:?}");
        assert_eq!(hub.summary_with(&Delays::default()).count, 2, "only the hub's side");
    }
}
