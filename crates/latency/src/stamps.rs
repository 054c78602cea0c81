//! `Stamps`: the stage times of one inbound frame and the order it caused, in one cache line.
//!
//! Owns: the layout of the stamps (t0 `recv` … t5 `sent`, plus three wall-clock times after
//! roq's `MessageInfo`: when we received it, when the exchange stamped it, when its origin was
//! created) and the spans between them.
//! Must not: read a clock, allocate or format. The hot path fills a `Stamps` with readings it
//! takes itself and hands it to a `RingProducer` after t5.
//!
//! Why not nine `pub` fields: six `Mono` and three `Utc` are 72 bytes, one more word than a
//! cache line. `recv` is stored whole and the five later stages as `u32` nanosecond offsets from
//! it (up to 4.29 s; longer spans saturate, and a stage that never happened stays unset), which
//! keeps the whole record in 64 bytes. Setters and getters still take and return `Mono`.

use ticktrade_core::{Mono, Utc};

/// One of the six hot-path stages t0…t5, in the order they happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// t0: the frame's bytes were handed to user space.
    Recv,
    /// t1: the frame was decoded.
    Decoded,
    /// t2: the decoded update was applied to the book.
    Applied,
    /// t3: the strategy decided (to send an order, or not).
    Decided,
    /// t4: the order was encoded into the write buffer.
    Encoded,
    /// t5: the write returned.
    Sent,
}

impl Stage {
    pub const ALL: [Stage; 6] =
        [Stage::Recv, Stage::Decoded, Stage::Applied, Stage::Decided, Stage::Encoded, Stage::Sent];

    /// Short lower-case name (`"recv"`, `"decoded"`, …) for tables and logs.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Recv => "recv",
            Stage::Decoded => "decoded",
            Stage::Applied => "applied",
            Stage::Decided => "decided",
            Stage::Encoded => "encoded",
            Stage::Sent => "sent",
        }
    }
}

/// Offset value meaning "this stage did not happen".
const UNSET: u32 = u32::MAX;
/// Largest offset we store; longer spans saturate here (≈4.29 s).
const MAX_OFFSET: u32 = u32::MAX - 1;

/// Stage times of one frame and the order it caused. `Copy`, one cache line, no heap.
///
/// ```
/// use ticktrade_core::{Mono, Utc};
/// use ticktrade_latency::{Stage, Stamps};
///
/// let mut stamps = Stamps::received(Mono(1_000), Utc(1_700_000_000_000_000_000));
/// stamps.exch_utc = Utc(1_699_999_999_999_000_000);
/// stamps.set(Stage::Decoded, Mono(1_300));
/// stamps.set(Stage::Sent, Mono(4_000));
/// assert_eq!(stamps.span(Stage::Recv, Stage::Decoded), Some(300));
/// assert_eq!(stamps.tick_to_trade_ns(), Some(3_000));
/// assert_eq!(stamps.span(Stage::Decoded, Stage::Applied), None); // never applied
/// assert_eq!(stamps.market_data_ns(), Some(1_000_000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Stamps {
    /// t0. `Mono(0)` means "not received" and leaves every span unset.
    recv: Mono,
    /// Wall-clock time at t0 (roq: receive time).
    pub recv_utc: Utc,
    /// The exchange's own timestamp on the frame (roq: send time). `Utc(0)` when absent.
    pub exch_utc: Utc,
    /// When the event that triggered this one was first created, e.g. the client order's
    /// creation time carried through a simulator (roq: origin create time). `Utc(0)` when absent.
    pub origin_create_utc: Utc,
    /// Offsets of t1..t5 from t0 in nanoseconds; `UNSET` when the stage did not happen.
    offsets: [u32; 5],
}

const _: () = assert!(std::mem::size_of::<Stamps>() == 64);
const _: () = assert!(std::mem::align_of::<Stamps>() == 64);

impl Default for Stamps {
    fn default() -> Stamps {
        Stamps { recv: Mono(0), recv_utc: Utc(0), exch_utc: Utc(0), origin_create_utc: Utc(0), offsets: [UNSET; 5] }
    }
}

impl Stamps {
    /// Stamps for a frame read at `recv` (t0) and wall-clock `recv_utc`; later stages unset.
    #[inline]
    pub fn received(recv: Mono, recv_utc: Utc) -> Stamps {
        Stamps { recv, recv_utc, ..Stamps::default() }
    }

    /// t0, or `None` if this record was never stamped.
    #[inline]
    pub fn recv(&self) -> Option<Mono> {
        self.recv.is_set().then_some(self.recv)
    }

    /// Records that `stage` happened at `at`. Setting `Stage::Recv` restarts the record: the
    /// later stages are cleared, because they are stored relative to t0. A time before t0
    /// counts as t0 (the clock is monotonic; this only guards against mixing clocks).
    #[inline]
    pub fn set(&mut self, stage: Stage, at: Mono) {
        match stage {
            Stage::Recv => {
                self.recv = at;
                self.offsets = [UNSET; 5];
            }
            _ => {
                let offset = at.since(self.recv).min(u64::from(MAX_OFFSET)) as u32;
                self.offsets[stage as usize - 1] = offset;
            }
        }
    }

    /// When `stage` happened, if it did (and t0 is set).
    #[inline]
    pub fn get(&self, stage: Stage) -> Option<Mono> {
        let recv = self.recv()?;
        match stage {
            Stage::Recv => Some(recv),
            _ => match self.offsets[stage as usize - 1] {
                UNSET => None,
                offset => Some(Mono(recv.0 + u64::from(offset))),
            },
        }
    }

    /// Nanoseconds from `from` to `to`, if both happened; zero if `to` was stamped earlier.
    #[inline]
    pub fn span(&self, from: Stage, to: Stage) -> Option<u64> {
        Some(self.get(to)?.since(self.get(from)?))
    }

    /// The time each stage took: `(stage, ns from the previous stamped stage)` for t1..t5,
    /// skipping stages that did not happen. A frame that caused no order has only t1, t2, t3.
    pub fn stage_spans(&self) -> impl Iterator<Item = (Stage, u64)> + '_ {
        let mut previous = self.recv();
        Stage::ALL[1..].iter().filter_map(move |&stage| {
            let at = self.get(stage)?;
            let span = at.since(previous?);
            previous = Some(at);
            Some((stage, span))
        })
    }

    /// t0 → t5: from the frame reaching user space to the order's write returning.
    #[inline]
    pub fn tick_to_trade_ns(&self) -> Option<u64> {
        self.span(Stage::Recv, Stage::Sent)
    }

    /// t0 → t3: time to a decision, whether or not an order followed.
    #[inline]
    pub fn tick_to_decision_ns(&self) -> Option<u64> {
        self.span(Stage::Recv, Stage::Decided)
    }

    /// Market-data latency: our receive time minus the exchange's timestamp. Signed, because
    /// the two clocks differ; `None` when either is missing.
    #[inline]
    pub fn market_data_ns(&self) -> Option<i64> {
        (self.recv_utc.0 != 0 && self.exch_utc.0 != 0).then(|| self.recv_utc.nanos_since(self.exch_utc))
    }

    /// Age of the triggering event when we received this one: `recv_utc - origin_create_utc`.
    #[inline]
    pub fn origin_age_ns(&self) -> Option<i64> {
        (self.recv_utc.0 != 0 && self.origin_create_utc.0 != 0)
            .then(|| self.recv_utc.nanos_since(self.origin_create_utc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_cache_line() {
        assert_eq!(std::mem::size_of::<Stamps>(), 64);
        assert_eq!(std::mem::align_of::<Stamps>(), 64);
    }

    #[test]
    fn default_is_unset() {
        let stamps = Stamps::default();
        assert_eq!(stamps.recv(), None);
        for stage in Stage::ALL {
            assert_eq!(stamps.get(stage), None, "{stage:?}");
        }
        assert_eq!(stamps.tick_to_trade_ns(), None);
        assert_eq!(stamps.market_data_ns(), None);
        assert_eq!(stamps.stage_spans().count(), 0);
    }

    #[test]
    fn spans_between_stages() {
        let mut stamps = Stamps::received(Mono(10_000), Utc(5_000));
        for (i, stage) in Stage::ALL.iter().enumerate().skip(1) {
            stamps.set(*stage, Mono(10_000 + 100 * i as u64 * i as u64));
        }
        assert_eq!(stamps.get(Stage::Sent), Some(Mono(12_500)));
        assert_eq!(stamps.tick_to_trade_ns(), Some(2_500));
        assert_eq!(stamps.tick_to_decision_ns(), Some(900));
        let spans: Vec<_> = stamps.stage_spans().collect();
        assert_eq!(
            spans,
            vec![
                (Stage::Decoded, 100),
                (Stage::Applied, 300),
                (Stage::Decided, 500),
                (Stage::Encoded, 700),
                (Stage::Sent, 900)
            ]
        );
    }

    #[test]
    fn skipped_stage_spans_from_previous_stamped_one() {
        let mut stamps = Stamps::received(Mono(1), Utc(0));
        stamps.set(Stage::Decoded, Mono(11));
        stamps.set(Stage::Decided, Mono(41));
        let spans: Vec<_> = stamps.stage_spans().collect();
        assert_eq!(spans, vec![(Stage::Decoded, 10), (Stage::Decided, 30)]);
    }

    #[test]
    fn zero_length_stage_is_not_unset() {
        let mut stamps = Stamps::received(Mono(7), Utc(0));
        stamps.set(Stage::Decoded, Mono(7));
        assert_eq!(stamps.span(Stage::Recv, Stage::Decoded), Some(0));
    }

    #[test]
    fn long_spans_saturate_and_earlier_times_clamp() {
        let mut stamps = Stamps::received(Mono(1_000), Utc(0));
        stamps.set(Stage::Sent, Mono(1_000 + 10_000_000_000));
        assert_eq!(stamps.tick_to_trade_ns(), Some(u64::from(MAX_OFFSET)));
        stamps.set(Stage::Decoded, Mono(5));
        assert_eq!(stamps.span(Stage::Recv, Stage::Decoded), Some(0));
    }

    #[test]
    fn setting_recv_restarts() {
        let mut stamps = Stamps::received(Mono(1_000), Utc(0));
        stamps.set(Stage::Sent, Mono(2_000));
        stamps.set(Stage::Recv, Mono(3_000));
        assert_eq!(stamps.get(Stage::Sent), None);
    }

    #[test]
    fn wall_clock_latencies_are_signed() {
        let mut stamps = Stamps::received(Mono(1), Utc(1_000));
        stamps.exch_utc = Utc(1_500);
        stamps.origin_create_utc = Utc(400);
        assert_eq!(stamps.market_data_ns(), Some(-500));
        assert_eq!(stamps.origin_age_ns(), Some(600));
    }

    proptest! {
        #[test]
        fn get_returns_what_was_set(recv in 1u64..1 << 62, offsets in proptest::array::uniform5(0u64..(1 << 32) - 1)) {
            let mut stamps = Stamps::received(Mono(recv), Utc(0));
            for (stage, offset) in Stage::ALL[1..].iter().zip(offsets) {
                stamps.set(*stage, Mono(recv + offset));
            }
            for (stage, offset) in Stage::ALL[1..].iter().zip(offsets) {
                prop_assert_eq!(stamps.get(*stage), Some(Mono(recv + offset)));
                prop_assert_eq!(stamps.span(Stage::Recv, *stage), Some(offset));
            }
        }
    }
}
