//! Fan-out traces, off unless a benchmark turns them on: for each frame the hub fans out,
//! how long the hand-off from the upstream task took, how long the hub took before its first
//! write, and how the writes went (first write, all of them, the longest gap between two), so
//! a benchmark can say what its tail is made of.
//!
//! Owns: the bounded trace buffer in `Shared` and the hub's per-loop stamps.
//! Must not: add anything to the write loop (the stamps are the instants the loop takes
//! anyway, fed in after it), lock more than once per fanned-out frame, or record while off.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// One frame fanned out by the hub to its subscribers (all durations in ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FanoutTrace {
    /// Upstream frame received (upstream task) → the hub started on it (queue and task wake).
    pub handoff_ns: u64,
    /// Hub started → first write entered (JSON envelope, decode, apply, encode).
    pub prepare_ns: u64,
    /// The first write, entered → returned.
    pub first_write_ns: u64,
    /// First write entered → last write returned.
    pub writes_ns: u64,
    /// Writes in the loop (one per subscriber).
    pub writes: u32,
    /// Longest time between two consecutive writes returning (one write plus whatever ran
    /// between the two: a preemption shows here).
    pub max_gap_ns: u64,
    /// The write that ended the longest gap (1 = the second write).
    pub max_gap_at: u32,
}

/// Traces recorded while on, at most `capacity` (older ones are kept, newer dropped).
#[derive(Debug, Default)]
pub(crate) struct TraceBuf {
    on: AtomicBool,
    /// The traces and how many may be kept.
    items: Mutex<(Vec<FanoutTrace>, usize)>,
}

impl TraceBuf {
    pub(crate) fn start(&self, capacity: usize) {
        if let Ok(mut items) = self.items.lock() {
            *items = (Vec::with_capacity(capacity), capacity);
        }
        self.on.store(true, Ordering::Relaxed);
    }

    pub(crate) fn stop(&self) -> Vec<FanoutTrace> {
        self.on.store(false, Ordering::Relaxed);
        self.items.lock().map(|mut items| std::mem::take(&mut *items).0).unwrap_or_default()
    }

    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    fn push(&self, trace: FanoutTrace) {
        if let Ok(mut items) = self.items.lock()
            && items.0.len() < items.1
        {
            items.0.push(trace);
        }
    }
}

/// Stamps of one fan-out loop, kept by the hub while tracing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoopStamps {
    received: Instant,
    hub_start: Instant,
    first_entered: Option<Instant>,
    last_returned: Option<Instant>,
    trace: FanoutTrace,
}

impl LoopStamps {
    pub(crate) fn new(received: Instant, hub_start: Instant) -> LoopStamps {
        LoopStamps { received, hub_start, first_entered: None, last_returned: None, trace: FanoutTrace::default() }
    }

    /// The first write is about to be entered.
    pub(crate) fn loop_start(&mut self, at: Instant) {
        self.first_entered = Some(at);
    }

    /// A write (of the loop started with [`LoopStamps::loop_start`]) returned at `at`; writes
    /// come in the order they were made.
    pub(crate) fn written(&mut self, at: Instant) {
        let t = &mut self.trace;
        match self.last_returned {
            None => {
                t.first_write_ns = ns(self.first_entered.map_or(0, |e| at.saturating_duration_since(e).as_nanos()));
            }
            Some(prev) => {
                let gap = ns(at.saturating_duration_since(prev).as_nanos());
                if gap > t.max_gap_ns {
                    t.max_gap_ns = gap;
                    t.max_gap_at = t.writes;
                }
            }
        }
        t.writes += 1;
        self.last_returned = Some(at);
    }

    /// Records the loop in `buf` if it wrote anything.
    pub(crate) fn finish(mut self, buf: &TraceBuf) {
        let (Some(first), Some(last)) = (self.first_entered, self.last_returned) else { return };
        let t = &mut self.trace;
        t.handoff_ns = ns(self.hub_start.saturating_duration_since(self.received).as_nanos());
        t.prepare_ns = ns(first.saturating_duration_since(self.hub_start).as_nanos());
        t.writes_ns = ns(last.saturating_duration_since(first).as_nanos());
        buf.push(self.trace);
    }
}

fn ns(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_is_recorded_only_while_on_and_within_capacity() {
        let buf = TraceBuf::default();
        let t0 = Instant::now();
        let mut s = LoopStamps::new(t0, t0);
        s.loop_start(Instant::now());
        s.written(Instant::now());
        s.finish(&buf);
        assert!(buf.stop().is_empty(), "capacity 0 before start: nothing kept");

        buf.start(2);
        for writes in [3u32, 1, 5] {
            let mut s = LoopStamps::new(t0, Instant::now());
            s.loop_start(Instant::now());
            for _ in 0..writes {
                s.written(Instant::now());
            }
            s.finish(&buf);
        }
        // A loop that wrote nothing is not a fan-out.
        LoopStamps::new(t0, t0).finish(&buf);
        let got = buf.stop();
        assert_eq!(got.iter().map(|t| t.writes).collect::<Vec<_>>(), vec![3, 1]);
        assert!(got[0].max_gap_at >= 1 && got[0].max_gap_at <= 2);
        assert_eq!(got[1].max_gap_ns, 0, "one write has no gap");
        assert!(got[0].writes_ns >= got[0].first_write_ns);
        assert!(!buf.is_on());
    }
}
