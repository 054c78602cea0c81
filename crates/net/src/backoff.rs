//! Exponential backoff with full jitter ("AWS architecture blog" style): the n-th delay is
//! uniform in `[base/2, min(max, base·2ⁿ)]`, so many clients that lost the same venue do not
//! reconnect in lockstep.
//!
//! Owns: the attempt counter and the jitter's generator (the core's `SplitMix64`, seeded per
//! process by std's `RandomState`; jitter needs spread, not cryptographic quality).
//! Must not: sleep; the caller sleeps for the returned duration.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use ticktrade_core::SplitMix64;

/// Reconnect delay schedule.
#[derive(Clone, Debug)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    attempt: u32,
    rng: SplitMix64,
}

impl Backoff {
    /// A schedule starting near `base` and capped at `max`, seeded per process.
    pub fn new(base: Duration, max: Duration) -> Backoff {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(0x9e37_79b9_7f4a_7c15);
        Backoff::with_seed(base, max, hasher.finish())
    }

    /// A schedule with a fixed seed (tests).
    pub fn with_seed(base: Duration, max: Duration, seed: u64) -> Backoff {
        Backoff { base, max: max.max(base), attempt: 0, rng: SplitMix64::seeded(seed) }
    }

    /// The delay before the next attempt; each call doubles the ceiling up to `max`.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self.base.saturating_mul(1u32 << self.attempt.min(20)).min(self.max);
        self.attempt = self.attempt.saturating_add(1);
        let floor = (self.base / 2).min(ceiling);
        let span = ceiling.saturating_sub(floor).as_micros() as u64;
        let jitter = self.rng.below(span + 1);
        floor + Duration::from_micros(jitter)
    }

    /// Attempts since the last [`Backoff::reset`].
    pub fn attempts(&self) -> u32 {
        self.attempt
    }

    /// Back to the first delay (after a connection stayed up).
    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_within_bounds_and_resets() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(5);
        let mut backoff = Backoff::with_seed(base, max, 42);
        let mut ceilings = Vec::new();
        for n in 0..12u32 {
            let delay = backoff.next_delay();
            let ceiling = base.saturating_mul(1 << n).min(max);
            assert!(delay >= base / 2 && delay <= ceiling, "attempt {n}: {delay:?} > {ceiling:?}");
            ceilings.push(delay);
        }
        assert_eq!(backoff.attempts(), 12);
        assert!(ceilings.iter().skip(8).any(|d| *d > Duration::from_secs(1)), "{ceilings:?}");
        backoff.reset();
        assert!(backoff.next_delay() <= base);
    }

    #[test]
    fn jitter_spreads_clients() {
        let delays: Vec<Duration> = (1..20u64)
            .map(|seed| {
                let mut b = Backoff::with_seed(Duration::from_millis(100), Duration::from_secs(10), seed * 7919);
                for _ in 0..5 {
                    b.next_delay();
                }
                b.next_delay()
            })
            .collect();
        let distinct: std::collections::HashSet<_> = delays.iter().collect();
        assert!(distinct.len() > 10, "{delays:?}");
    }
}
