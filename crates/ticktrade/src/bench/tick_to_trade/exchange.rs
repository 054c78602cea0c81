//! `ExchangeSide`: a small in-process exchange on 127.0.0.1 for the hot path's benchmarks and
//! tests. One thread publishes Deribit book frames over a real WebSocket at a steady pace; a
//! second reads the orders that come back and measures tick sent → order received from the
//! `change_id` in each order's label (the exchange's view, wire-to-wire on loopback).
//!
//! Owns: the listening socket, one accepted connection, the send times of every tick, the
//! exchange-side histogram.
//! Must not: match orders or answer them (that is the simulator's job); it only publishes and
//! timestamps. It replaces `ticktrade_sim::spawn_loopback` where the simulator is not needed or
//! not available, and speaks the same bytes (`SyntheticFeed` frames are the simulator's
//! encoder's output).
//!
//! Pacing ([`Pace`]): every tick must find the client blocked in `read`, as a real feed usually
//! does; a flood would measure queueing instead.
//! - `Sleep`: one tick every `gap` (a `thread::sleep`, so ≈60–110 µs on Linux for a 50 µs gap):
//!   the hot thread idles between ticks and wakes on a vCPU others have used (a quiet feed).
//! - `Spin`: the same gaps waited out on the TSC (exact, one core busy).
//! - `Reply`: closed loop: one thread writes a tick, blocks
//!   in `read` until the order for that tick arrives, and writes the next one at once. The hot
//!   thread then waits only one round trip between ticks (a busy feed). A tick that gets no
//!   order within `reply_timeout` (a non-qualifying tick) is followed by the next one after
//!   that bounded wait.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use ticktrade_deribit_proto::order::find_label;
use ticktrade_latency::{Histogram, RawTicks, TscClock};

use ticktrade_gateway::hot::feed::SyntheticFeed;
use ticktrade_gateway::hot::{FLOOR_PROBE, pin_current_thread};
use ticktrade_net::frame::{Opcode, Role, WsError, WsReader, WsWriter};
use ticktrade_net::handshake::{self, HandshakeError};

/// How the exchange side publishes.
#[derive(Clone, Copy, Debug)]
pub struct ExchangeConfig {
    /// How ticks are paced.
    pub pace: Pace,
    /// Pause before each tick (`Pace::Sleep`, `Pace::Spin`).
    pub gap: Duration,
    /// `Pace::Reply`: the longest wait for an order before the next tick goes out anyway
    /// (Linux rounds socket timeouts up to the scheduler tick, 1–4 ms).
    pub reply_timeout: Duration,
    /// After every `floor_every`-th tick, one more pause and a `FLOOR_PROBE` frame (0: never).
    pub floor_every: u32,
    /// Ticks to publish (at most the feed's length).
    pub ticks: usize,
    /// Pin the exchange side's threads to this core (index in `core_affinity::get_core_ids`).
    /// On the same core as the hot thread, a write wakes its peer without a cross-CPU
    /// interrupt (docs/PERFORMANCE.md measures what that interrupt costs in a VM).
    pub pin_core: Option<usize>,
}

impl ExchangeConfig {
    /// Whether a `FLOOR_PROBE` follows the tick at index `i` (every `floor_every`-th tick).
    fn probe_after(&self, i: usize) -> bool {
        self.floor_every != 0 && (i as u64 + 1).is_multiple_of(u64::from(self.floor_every))
    }
}

/// How the exchange side paces its ticks (module docs; docs/PERFORMANCE.md measures each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pace {
    /// `thread::sleep(gap)` before each tick.
    #[default]
    Sleep,
    /// Wait out each gap spinning on the TSC instead of sleeping: exact gaps and a publisher
    /// that never idles its core, at the cost of one busy core.
    Spin,
    /// Closed loop: the next tick goes out as soon as the order for the previous one has been
    /// read (or after `reply_timeout`).
    Reply,
}

/// What the exchange side measured.
#[derive(Clone, Debug, Default)]
pub struct ExchangeReport {
    pub ticks_sent: u64,
    pub probes_sent: u64,
    /// Orders whose label named a tick we sent, first order per tick.
    pub orders: u64,
    /// Later copies of an order for the same tick (the floor probe's re-sent bytes).
    pub repeats: u64,
    /// Frames that were not orders for one of our ticks.
    pub unmatched: u64,
    /// `Pace::Reply`: ticks (and probes) after which the wait for an order timed out.
    pub unanswered: u64,
    /// Tick written → order read, ns (both stamps taken on this side, same TSC clock).
    pub tick_to_order: Histogram,
}

/// Why the exchange side failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("handshake: {0}")]
    Handshake(#[from] HandshakeError),
    #[error("websocket: {0}")]
    Ws(#[from] WsError),
    #[error("a thread panicked")]
    Panicked,
}

/// A running exchange side: connect a client to `addr` (path `/ws/api/v2`), then `join`.
pub struct ExchangeSide {
    pub addr: SocketAddr,
    handle: JoinHandle<Result<ExchangeReport, ExchangeError>>,
}

impl ExchangeSide {
    /// Binds 127.0.0.1:0 and starts the publisher thread; it waits for one client.
    pub fn spawn(
        feed: Arc<SyntheticFeed>,
        clock: TscClock,
        config: ExchangeConfig,
    ) -> Result<ExchangeSide, ExchangeError> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let handle = std::thread::Builder::new()
            .name("tt-exchange".into())
            .spawn(move || publish(listener, &feed, clock, config))?;
        Ok(ExchangeSide { addr, handle })
    }

    /// Waits for the run to end (all ticks sent, close answered or connection gone).
    pub fn join(self) -> Result<ExchangeReport, ExchangeError> {
        self.handle.join().map_err(|_| ExchangeError::Panicked)?
    }
}

fn publish(
    listener: TcpListener,
    feed: &SyntheticFeed,
    clock: TscClock,
    config: ExchangeConfig,
) -> Result<ExchangeReport, ExchangeError> {
    if let Some(core) = config.pin_core {
        pin_current_thread(core);
    }
    let (mut stream, _) = listener.accept()?;
    let (_path, reader) = handshake::accept(&mut stream)?;
    let n = config.ticks.min(feed.changes.len());
    if config.pace == Pace::Reply {
        return publish_closed_loop(stream, reader, feed, clock, config, n);
    }
    let sent_at: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let read_stream = stream.try_clone()?;
    let reader_sent_at = Arc::clone(&sent_at);
    let reader_feed_ids: Vec<u64> = feed.change_ids[..n].to_vec();
    let reader_clock = clock.clone();
    let orders = std::thread::Builder::new().name("tt-exchange-rx".into()).spawn(move || {
        if let Some(core) = config.pin_core {
            pin_current_thread(core);
        }
        read_orders(read_stream, reader, &reader_feed_ids, &reader_sent_at, &reader_clock)
    })?;

    let mut writer = WsWriter::new(Role::Server, 1 << 16, 1);
    writer.frame_of(Opcode::Text, &feed.snapshot);
    writer.write_to(&mut stream)?;
    let mut probes = 0u64;
    let pause = |clock: &TscClock| {
        if config.pace == Pace::Spin {
            let start = clock.raw();
            let gap = u64::try_from(config.gap.as_nanos()).unwrap_or(u64::MAX);
            while clock.nanos_between(start, clock.raw()) < gap {
                std::hint::spin_loop();
            }
        } else {
            std::thread::sleep(config.gap);
        }
    };
    for (i, frame) in feed.changes[..n].iter().enumerate() {
        pause(&clock);
        writer.frame_of(Opcode::Text, frame);
        sent_at[i].store(clock.raw().0, Ordering::Release);
        writer.write_to(&mut stream)?;
        if config.probe_after(i) {
            pause(&clock);
            writer.frame_of(Opcode::Text, FLOOR_PROBE);
            writer.write_to(&mut stream)?;
            probes += 1;
        }
    }
    std::thread::sleep(config.gap * 4);
    writer.frame_of(Opcode::Close, &[0x03, 0xE8]);
    // The client may have gone already; the reader thread sees that.
    let _ = writer.write_to(&mut stream);
    let _ = stream.flush();
    let mut report = orders.join().map_err(|_| ExchangeError::Panicked)??;
    let _ = stream.shutdown(std::net::Shutdown::Both);
    report.ticks_sent = n as u64;
    report.probes_sent = probes;
    Ok(report)
}

/// `Pace::Reply`: write a tick, read until its order arrives, write the next one. One thread,
/// blocking reads with `reply_timeout`.
fn publish_closed_loop(
    mut stream: std::net::TcpStream,
    mut reader: WsReader,
    feed: &SyntheticFeed,
    clock: TscClock,
    config: ExchangeConfig,
    n: usize,
) -> Result<ExchangeReport, ExchangeError> {
    stream.set_read_timeout(Some(config.reply_timeout.max(Duration::from_micros(1))))?;
    let mut tally = Tally::new(&feed.change_ids[..n]);
    let mut sent_at = vec![0u64; n];
    let mut writer = WsWriter::new(Role::Server, 1 << 16, 1);
    writer.frame_of(Opcode::Text, &feed.snapshot);
    writer.write_to(&mut stream)?;
    // The snapshot's order (if any) carries a change id that is not one of the ticks'.
    if await_reply(&mut stream, &mut reader, &mut tally, &sent_at, &clock, None)? == Reply::Closed {
        return Ok(tally.finish(0, 0));
    }
    let mut probes = 0u64;
    for (i, frame) in feed.changes[..n].iter().enumerate() {
        writer.frame_of(Opcode::Text, frame);
        sent_at[i] = clock.raw().0;
        writer.write_to(&mut stream)?;
        if await_reply(&mut stream, &mut reader, &mut tally, &sent_at, &clock, Some(i))? == Reply::Closed {
            return Ok(tally.finish(i as u64 + 1, probes));
        }
        if config.probe_after(i) {
            writer.frame_of(Opcode::Text, FLOOR_PROBE);
            writer.write_to(&mut stream)?;
            probes += 1;
            // The loop re-sends the last order's bytes: a repeat of tick `i`'s order.
            if await_reply(&mut stream, &mut reader, &mut tally, &sent_at, &clock, Some(i))? == Reply::Closed {
                return Ok(tally.finish(i as u64 + 1, probes));
            }
        }
    }
    writer.frame_of(Opcode::Close, &[0x03, 0xE8]);
    // The client may have gone already; then there is nothing more to read.
    if writer.write_to(&mut stream).is_ok() {
        stream.set_read_timeout(Some(Duration::from_millis(200)))?;
        while await_reply(&mut stream, &mut reader, &mut tally, &sent_at, &clock, None)? == Reply::Frame {}
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
    Ok(tally.finish(n as u64, probes))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reply {
    /// The awaited order (or, with no tick awaited, any data frame) was read.
    Frame,
    /// The wait timed out.
    TimedOut,
    /// Close frame, end of stream or a reset.
    Closed,
}

/// How [`drain_data`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Drained {
    /// Every complete frame in the reader's buffer was handled; read more.
    NeedMore,
    /// `on_data` asked to stop after a data frame.
    Stopped,
    /// A close frame.
    Close,
}

/// Hands each complete data frame already in `reader`'s buffer to `on_data` (control frames
/// other than close are skipped) until it returns true, a close frame arrives, or the buffer
/// holds no complete frame.
fn drain_data(reader: &mut WsReader, mut on_data: impl FnMut(&[u8]) -> bool) -> Result<Drained, WsError> {
    while let Some(message) = reader.next_message()? {
        match message.opcode {
            Opcode::Close => return Ok(Drained::Close),
            Opcode::Text | Opcode::Binary if on_data(message.payload) => return Ok(Drained::Stopped),
            _ => {}
        }
    }
    Ok(Drained::NeedMore)
}

/// Reads frames (tallying each) until a data frame for tick `awaited` arrives (any data frame
/// when `None`), the read times out, or the peer closes.
fn await_reply(
    stream: &mut std::net::TcpStream,
    reader: &mut WsReader,
    tally: &mut Tally<'_>,
    sent_at: &[u64],
    clock: &TscClock,
    awaited: Option<usize>,
) -> Result<Reply, ExchangeError> {
    let mut received = clock.raw();
    loop {
        let drained = drain_data(reader, |payload| {
            let index = tally.record(payload, received, clock, |i| sent_at[i]);
            awaited.is_none() || index == awaited
        })?;
        match drained {
            Drained::Close => return Ok(Reply::Closed),
            Drained::Stopped => return Ok(Reply::Frame),
            Drained::NeedMore => {}
        }
        match reader.fill(stream) {
            Ok(_) => received = clock.raw(),
            Err(WsError::Io(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)) => {
                tally.report.unanswered += 1;
                return Ok(Reply::TimedOut);
            }
            Err(WsError::Eof | WsError::Io(_)) => return Ok(Reply::Closed),
            Err(error) => return Err(error.into()),
        }
    }
}

/// Matches orders to ticks by the `change_id` in their labels.
struct Tally<'a> {
    change_ids: &'a [u64],
    seen: Vec<bool>,
    report: ExchangeReport,
}

impl<'a> Tally<'a> {
    fn new(change_ids: &'a [u64]) -> Tally<'a> {
        Tally { change_ids, seen: vec![false; change_ids.len()], report: ExchangeReport::default() }
    }

    /// Counts one data frame read at `received`; returns the tick it answers, if any.
    fn record(
        &mut self,
        payload: &[u8],
        received: RawTicks,
        clock: &TscClock,
        sent_at: impl Fn(usize) -> u64,
    ) -> Option<usize> {
        let index = find_label(payload).and_then(|label| self.change_ids.binary_search(&label.change_id).ok());
        match index {
            Some(i) if self.seen[i] => self.report.repeats += 1,
            Some(i) => {
                self.seen[i] = true;
                self.report.orders += 1;
                let sent = sent_at(i);
                if sent != 0 {
                    self.report.tick_to_order.record(clock.nanos_between(RawTicks(sent), received));
                }
            }
            None => self.report.unmatched += 1,
        }
        index
    }

    fn finish(self, ticks_sent: u64, probes_sent: u64) -> ExchangeReport {
        ExchangeReport { ticks_sent, probes_sent, ..self.report }
    }
}

fn read_orders(
    mut stream: std::net::TcpStream,
    mut reader: WsReader,
    change_ids: &[u64],
    sent_at: &[AtomicU64],
    clock: &TscClock,
) -> Result<ExchangeReport, ExchangeError> {
    let mut tally = Tally::new(change_ids);
    let mut received = clock.raw();
    loop {
        let drained = drain_data(&mut reader, |payload| {
            tally.record(payload, received, clock, |i| sent_at[i].load(Ordering::Acquire));
            false
        })?;
        if drained == Drained::Close {
            return Ok(tally.report);
        }
        match reader.fill(&mut stream) {
            Ok(_) => received = clock.raw(),
            Err(WsError::Eof | WsError::Io(_)) => return Ok(tally.report),
            Err(error) => return Err(error.into()),
        }
    }
}
