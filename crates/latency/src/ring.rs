//! `spsc_ring`: a bounded, wait-free single-producer single-consumer ring that hands `Stamps`
//! (or any `Copy` record) from the hot thread to a histogram thread.
//!
//! Owns: the drop policy. `push` never blocks and never allocates: when the ring is full the
//! record is dropped and counted, because a latency sample is worth less than the hot path's
//! time. The consumer can read the drop count to say how many samples a report is missing.
//! Must not: spawn threads or wait; the I/O side owns both threads.
//!
//! Why `rtrb`: a maintained, audited, wait-free SPSC ring (cached indices, cache-padded head and
//! tail) so this crate needs no `unsafe` of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Creates a ring of `capacity` slots (at least 1) and returns its two ends.
pub fn spsc_ring<T: Copy>(capacity: usize) -> (RingProducer<T>, RingConsumer<T>) {
    let (producer, consumer) = rtrb::RingBuffer::new(capacity.max(1));
    let dropped = Arc::new(AtomicU64::new(0));
    (
        RingProducer { inner: producer, dropped: Arc::clone(&dropped), n_dropped: 0 },
        RingConsumer { inner: consumer, dropped },
    )
}

/// The hot thread's end.
pub struct RingProducer<T> {
    inner: rtrb::Producer<T>,
    /// Shared with the consumer; written only by this end.
    dropped: Arc<AtomicU64>,
    /// This end's own count, so publishing it is a plain store, not a locked add.
    n_dropped: u64,
}

impl<T: Copy> RingProducer<T> {
    /// Enqueues `value`; returns `false` (and counts a drop) if the ring is full.
    #[inline]
    pub fn push(&mut self, value: T) -> bool {
        match self.inner.push(value) {
            Ok(()) => true,
            Err(_) => {
                self.record_drop();
                false
            }
        }
    }

    /// Enqueues `value`, or hands it back when the ring is full, without counting a drop:
    /// for records that must not be lost (an audit journal), whose producer waits instead.
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<(), T> {
        self.inner.push(value).map_err(|rtrb::PushError::Full(value)| value)
    }

    #[cold]
    fn record_drop(&mut self) {
        self.n_dropped += 1;
        self.dropped.store(self.n_dropped, Ordering::Relaxed);
    }

    /// Records dropped so far by this end.
    pub fn dropped(&self) -> u64 {
        self.n_dropped
    }

    pub fn capacity(&self) -> usize {
        self.inner.buffer().capacity()
    }

    /// True once the consumer has been dropped: nobody will read what is pushed.
    pub fn is_abandoned(&self) -> bool {
        self.inner.is_abandoned()
    }
}

/// The histogram thread's end.
pub struct RingConsumer<T> {
    inner: rtrb::Consumer<T>,
    dropped: Arc<AtomicU64>,
}

impl<T: Copy> RingConsumer<T> {
    /// The oldest record, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        self.inner.pop().ok()
    }

    /// Hands every record available now to `f`, oldest first; returns how many.
    pub fn drain(&mut self, mut f: impl FnMut(T)) -> usize {
        let mut n = 0;
        while let Ok(value) = self.inner.pop() {
            f(value);
            n += 1;
        }
        n
    }

    /// Records the producer has dropped because the ring was full (eventually consistent).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Records waiting now.
    pub fn len(&self) -> usize {
        self.inner.slots()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// True once the producer has been dropped: after draining, nothing more will come.
    pub fn is_abandoned(&self) -> bool {
        self.inner.is_abandoned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stamps;
    use ticktrade_core::{Mono, Utc};

    #[test]
    fn full_ring_drops_and_counts() {
        let (mut tx, mut rx) = spsc_ring::<u64>(4);
        assert_eq!(tx.capacity(), 4);
        for i in 0..10 {
            assert_eq!(tx.push(i), i < 4, "push {i}");
        }
        assert_eq!(tx.dropped(), 6);
        assert_eq!(rx.dropped(), 6);
        assert_eq!(rx.len(), 4);
        let mut seen = Vec::new();
        assert_eq!(rx.drain(|v| seen.push(v)), 4);
        assert_eq!(seen, vec![0, 1, 2, 3]);
        assert!(rx.is_empty());
        // Room again after draining: nothing more is dropped.
        assert!(tx.push(42));
        assert_eq!(rx.pop(), Some(42));
        assert_eq!(rx.pop(), None);
        assert_eq!(rx.dropped(), 6);
    }

    #[test]
    fn carries_stamps_unchanged() {
        let (mut tx, mut rx) = spsc_ring::<Stamps>(2);
        let stamps = Stamps::received(Mono(5), Utc(6));
        assert!(tx.push(stamps));
        assert_eq!(rx.pop(), Some(stamps));
    }

    #[test]
    fn zero_capacity_means_one_slot() {
        let (mut tx, _rx) = spsc_ring::<u8>(0);
        assert!(tx.push(1));
        assert!(!tx.push(2));
    }

    #[test]
    fn ends_see_each_other_go() {
        let (tx, rx) = spsc_ring::<u8>(1);
        assert!(!rx.is_abandoned());
        drop(tx);
        assert!(rx.is_abandoned());
    }
}
