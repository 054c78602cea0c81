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
//! Pacing: one tick every `gap` (a `thread::sleep`, so ≈60–110 µs on Linux for a 50 µs gap, or
//! a TSC spin with `spin`), so each tick finds the client blocked in `read`, as a real feed
//! usually does; a flood would measure queueing instead (research/limits.md §1(a)).

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use ticktrade_deribit_proto::order::find_label;
use ticktrade_latency::{Histogram, RawTicks, TscClock};

use super::engine::FLOOR_PROBE;
use super::feed::SyntheticFeed;
use super::handshake::{self, HandshakeError};
use super::ws::{Opcode, Role, WsError, WsReader, WsWriter};

/// How the exchange side publishes.
#[derive(Clone, Copy, Debug)]
pub struct ExchangeConfig {
    /// Pause before each tick.
    pub gap: Duration,
    /// After every `floor_every`-th tick, one more pause and a `FLOOR_PROBE` frame (0: never).
    pub floor_every: u32,
    /// Ticks to publish (at most the feed's length).
    pub ticks: usize,
    /// Wait out each gap spinning on the TSC instead of sleeping: exact gaps and a publisher
    /// that never idles its core, at the cost of one busy core (see docs/PERFORMANCE.md).
    pub spin: bool,
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
    let (mut stream, _) = listener.accept()?;
    let (_path, reader) = handshake::accept(&mut stream)?;
    let n = config.ticks.min(feed.changes.len());
    let sent_at: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let read_stream = stream.try_clone()?;
    let reader_sent_at = Arc::clone(&sent_at);
    let reader_feed_ids: Vec<u64> = feed.change_ids[..n].to_vec();
    let reader_clock = clock.clone();
    let orders = std::thread::Builder::new()
        .name("tt-exchange-rx".into())
        .spawn(move || read_orders(read_stream, reader, &reader_feed_ids, &reader_sent_at, &reader_clock))?;

    let mut writer = WsWriter::new(Role::Server, 1 << 16, 1);
    writer.frame_of(Opcode::Text, &feed.snapshot);
    writer.write_to(&mut stream)?;
    let mut probes = 0u64;
    let pause = |clock: &TscClock| {
        if config.spin {
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
        if config.floor_every != 0 && (i as u64 + 1).is_multiple_of(u64::from(config.floor_every)) {
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

fn read_orders(
    mut stream: std::net::TcpStream,
    mut reader: WsReader,
    change_ids: &[u64],
    sent_at: &[AtomicU64],
    clock: &TscClock,
) -> Result<ExchangeReport, ExchangeError> {
    let mut report = ExchangeReport::default();
    let mut seen = vec![false; change_ids.len()];
    let mut received = clock.raw();
    loop {
        loop {
            let message = match reader.next_message() {
                Ok(Some(message)) => message,
                Ok(None) => break,
                Err(error) => return Err(error.into()),
            };
            match message.opcode {
                Opcode::Close => return Ok(report),
                Opcode::Text | Opcode::Binary => {}
                _ => continue,
            }
            let index = find_label(message.payload).and_then(|label| change_ids.binary_search(&label.change_id).ok());
            match index {
                Some(i) if seen[i] => report.repeats += 1,
                Some(i) => {
                    seen[i] = true;
                    report.orders += 1;
                    let sent = sent_at[i].load(Ordering::Acquire);
                    if sent != 0 {
                        report.tick_to_order.record(clock.nanos_between(RawTicks(sent), received));
                    }
                }
                None => report.unmatched += 1,
            }
        }
        match reader.fill(&mut stream) {
            Ok(_) => received = clock.raw(),
            Err(WsError::Eof | WsError::Io(_)) => return Ok(report),
            Err(error) => return Err(error.into()),
        }
    }
}
