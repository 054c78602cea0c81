//! The compute part of tick-to-trade: one market-data frame in, at most one order frame out.
//! decode (t1) → book apply (t2) → strategy (t3) → encode + frame (t4).
//!
//! Owns: the instrument's `L2Book`, the decode buffer, the strategy, the order encoder and the
//! request ids; the raw stage readings of the frame being processed.
//! Must not: touch a socket, allocate once warm, format, log, or convert clock readings
//! (stamps stay raw TSC ticks until after t5). The clock is a parameter so tests can count.

use ticktrade_book::l2::{ApplyError, L2Book, LevelUpdate};
use ticktrade_core::InstrumentSpec;
use ticktrade_deribit_proto::book_fast::FastBookDecoder;
use ticktrade_deribit_proto::order::{LimitOrder, OrderLabel};
use ticktrade_deribit_proto::{BookKind, DecodeError};
use ticktrade_latency::{RawTicks, TscClock};

use super::order_frame::{OrderFrame, OrderFramer};
use super::strategy::{BookEvent, OrderSink, Strategy};
use ticktrade_net::frame::WsWriter;

/// A clock the hot path can stamp with. `TscClock` in production (≈9 ns per reading).
pub trait StageClock {
    fn stamp(&self) -> RawTicks;
}

impl StageClock for TscClock {
    #[inline(always)]
    fn stamp(&self) -> RawTicks {
        self.raw()
    }
}

/// Raw readings of t0…t5 for one frame (index = `ticktrade_latency::Stage as usize`), 0 when
/// the stage did not happen, plus the origin data that travels with the order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawStamps {
    pub t: [u64; 6],
    /// Our wall-clock time at t0, ns since the epoch.
    pub recv_utc_ns: i64,
    /// The exchange's timestamp on the frame, ms since the epoch (0 if none).
    pub exch_ms: u64,
    pub change_id: u64,
}

impl RawStamps {
    #[inline]
    pub fn received(t0: RawTicks, recv_utc_ns: i64) -> RawStamps {
        RawStamps { t: [t0.0, 0, 0, 0, 0, 0], recv_utc_ns, exch_ms: 0, change_id: 0 }
    }
}

/// What a frame led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// An order frame is ready: [`Pipeline::order_frame`]; write it, then stamp t5.
    Order,
    /// The book was updated; the strategy sent nothing.
    NoOrder,
    /// Not a book notification (a response, heartbeat, other channel): the caller's business.
    NotBook,
    /// A book notification for another instrument.
    OtherInstrument,
    /// The book is stale (gap, negative amount, or no snapshot yet): resubscribe.
    Stale(ApplyError),
    /// A book notification that did not decode (off-grid price, malformed JSON).
    Malformed(DecodeError),
}

/// Counters kept outside the timed path's hot data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineStats {
    pub frames: u64,
    pub orders: u64,
    pub not_book: u64,
    pub stale: u64,
    pub malformed: u64,
}

/// Decode → book → strategy → encode for one instrument.
pub struct Pipeline<S> {
    spec: InstrumentSpec,
    decoder: FastBookDecoder,
    /// The order is built here (one compact block, `OrderFrame`), or in the caller's
    /// `WsWriter` for an order its fixed encoder declines.
    orders: OrderFramer,
    book: L2Book,
    updates: Vec<LevelUpdate>,
    strategy: S,
    sink: OrderSink,
    next_id: u64,
    stats: PipelineStats,
    /// The last order encoded, re-built in `scratch_frame` by [`Pipeline::prewarm`].
    last_order: Option<LimitOrder>,
    scratch_updates: Vec<LevelUpdate>,
    scratch_frame: Box<OrderFrame>,
    /// Touch the data the frame will need as soon as it arrives (`set_touch_ahead`).
    touch_ahead: bool,
}

/// A subscription notification in Deribit's usual key order starts with this; anything else
/// goes to the caller without a decode attempt.
const NOTIFICATION_PREFIX: &[u8] = br#"{"jsonrpc":"2.0","method":"subscription""#;

/// Whether `frame` starts with [`NOTIFICATION_PREFIX`]: its words XORed with the constant's
/// (the last one overlapping), inline, instead of a call into libc's `bcmp`, whose code is one
/// more run of cold cache lines after each wait in `read` (docs/PERFORMANCE.md §8).
#[inline(always)]
fn is_notification(frame: &[u8]) -> bool {
    const N: usize = NOTIFICATION_PREFIX.len();
    let Some(head) = frame.get(..N) else { return false };
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let mut diff = word(head, N - 8) ^ word(NOTIFICATION_PREFIX, N - 8);
    let mut at = 0;
    while at + 8 <= N {
        diff |= word(head, at) ^ word(NOTIFICATION_PREFIX, at);
        at += 8;
    }
    diff == 0
}

impl<S: Strategy> Pipeline<S> {
    /// A pipeline for `spec`'s instrument; `max_updates` sizes the decode buffer (a snapshot's
    /// level count), so the first frames do not allocate either.
    pub fn new(spec: &InstrumentSpec, strategy: S, max_updates: usize) -> Pipeline<S> {
        Pipeline {
            spec: spec.clone(),
            decoder: FastBookDecoder::new(spec),
            orders: OrderFramer::new(spec, 0x9E37_79B9),
            book: L2Book::new(),
            updates: Vec::with_capacity(max_updates),
            strategy,
            sink: OrderSink::default(),
            next_id: 1,
            stats: PipelineStats::default(),
            last_order: None,
            scratch_updates: Vec::with_capacity(max_updates),
            scratch_frame: OrderFrame::new(spec, 1),
            touch_ahead: false,
        }
    }

    pub fn book(&self) -> &L2Book {
        &self.book
    }

    pub fn strategy(&self) -> &S {
        &self.strategy
    }

    pub fn stats(&self) -> PipelineStats {
        self.stats
    }

    /// Whether `on_frame` starts by loading one byte of every cache line the frame's compute
    /// will read besides the frame (decoder and encoder constants, the decode buffer, the
    /// book's top, the order frame buffer), so that after an idle wait the cache misses
    /// overlap instead of coming one at a time (off by default: not measurably better on the build
    /// VM; docs/PERFORMANCE.md §6).
    pub fn set_touch_ahead(&mut self, on: bool) {
        self.touch_ahead = on;
    }

    /// The request id the next order will carry.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// The last order frame `on_frame` built: in the pipeline's own block, or in `out` (the
    /// writer passed to `on_frame`) for an order the fixed encoder declined.
    #[inline(always)]
    pub fn order_frame<'a>(&'a self, out: &'a WsWriter) -> &'a [u8] {
        self.orders.frame(out)
    }

    /// Processes one complete text frame read at `stamps.t[0]`. On `Outcome::Order` the order
    /// frame is [`Self::order_frame`] and t1…t4 are stamped.
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub fn on_frame<C: StageClock>(
        &mut self,
        frame: &[u8],
        clock: &C,
        stamps: &mut RawStamps,
        out: &mut WsWriter,
    ) -> Outcome {
        self.stats.frames += 1;
        if self.touch_ahead {
            let updates = self.updates.iter().step_by(2).fold(0i64, |x, u| x ^ u.price.raw());
            std::hint::black_box((
                self.decoder.touch() ^ self.orders.touch(),
                updates,
                self.book.best_bid(),
                self.book.best_ask(),
            ));
        }
        if !is_notification(frame) {
            self.stats.not_book += 1;
            return Outcome::NotBook;
        }
        let header = match self.decoder.decode(frame, &mut self.updates) {
            Ok(header) => header,
            Err(error) => return self.malformed(error),
        };
        stamps.t[1] = clock.stamp().0;
        // The fixed-layout decode returns the decoder's own name: equal by address, no compare.
        let own = std::ptr::eq(header.instrument, self.decoder.spec().name.as_str());
        if !own && header.instrument != self.spec.name {
            return Outcome::OtherInstrument;
        }
        stamps.exch_ms = header.timestamp_ms;
        stamps.change_id = header.change_id;
        let applied = match (header.kind, header.prev_change_id) {
            (BookKind::Change, Some(prev)) => self.book.apply_change(header.change_id, prev, &self.updates),
            (BookKind::Change, None) => Err(ApplyError::Gap { expected_prev: 0, got_prev: 0 }),
            (BookKind::Snapshot | BookKind::Window, _) => {
                self.book.apply_snapshot(header.change_id, &self.updates);
                Ok(())
            }
        };
        stamps.t[2] = clock.stamp().0;
        if let Err(error) = applied {
            return self.stale(error);
        }
        let event = BookEvent {
            instrument: header.instrument,
            kind: header.kind,
            change_id: header.change_id,
            timestamp_ms: header.timestamp_ms,
            updates: &self.updates,
        };
        self.sink.clear();
        self.strategy.on_book(&self.book, &event, &mut self.sink);
        stamps.t[3] = clock.stamp().0;
        let Some(intent) = self.sink.take() else { return Outcome::NoOrder };
        let order = LimitOrder {
            side: intent.side,
            price: intent.price,
            qty: intent.qty,
            post_only: intent.post_only,
            label: OrderLabel { recv_utc_ns: stamps.recv_utc_ns, change_id: header.change_id },
        };
        let id = self.next_id;
        self.next_id += 1;
        self.orders.build(id, &order, out);
        stamps.t[4] = clock.stamp().0;
        self.stats.orders += 1;
        self.last_order = Some(order);
        Outcome::Order
    }

    /// Runs the decode and encode code over `frame` and the last order again without changing
    /// any state (scratch buffers only) and reads the book's top, so that their code, tables and
    /// data are in cache and the branch predictors trained when the next frame arrives. Call it
    /// after t5, before blocking in `read` (`HotConfig::prewarm`); it costs about one frame's
    /// compute, off the timed path.
    #[inline(never)]
    pub fn prewarm(&mut self, frame: &[u8]) {
        if let Ok(header) = self.decoder.decode(frame, &mut self.scratch_updates) {
            std::hint::black_box(header.change_id);
        }
        std::hint::black_box((self.book.best_bid(), self.book.best_ask()));
        if let Some(order) = self.last_order.as_ref() {
            std::hint::black_box(self.scratch_frame.build(self.next_id, order));
        }
    }

    #[cold]
    #[inline(never)]
    fn malformed(&mut self, error: DecodeError) -> Outcome {
        self.stats.malformed += 1;
        Outcome::Malformed(error)
    }

    #[cold]
    #[inline(never)]
    fn stale(&mut self, error: ApplyError) -> Outcome {
        self.stats.stale += 1;
        Outcome::Stale(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notification_prefix_check_agrees_with_starts_with() {
        let full = br#"{"jsonrpc":"2.0","method":"subscription","params":{}}"#;
        assert!(is_notification(full));
        for len in 0..full.len() {
            assert_eq!(is_notification(&full[..len]), full[..len].starts_with(NOTIFICATION_PREFIX), "len {len}");
        }
        for at in 0..NOTIFICATION_PREFIX.len() {
            let mut frame = full.to_vec();
            frame[at] ^= 0x20;
            assert!(!is_notification(&frame), "byte {at} changed");
        }
        assert!(!is_notification(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#));
    }
}
