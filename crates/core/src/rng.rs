//! `SplitMix64`: the one small seeded generator behind every synthetic stream (book workloads,
//! synthetic markets, the hl-node generator, benchmark workloads).
//!
//! Owns: the generator step and the draws the streams share (`below`, `chance`, `range`,
//! `unit`), each one `next_u64` taken as every stream has always taken it, so each stream's
//! sequence is what it was; draws only one stream uses (normals, heavy tails) stay with it.
//! Must not: read entropy from the system: the same state gives the same numbers everywhere.

/// Steele, Lea and Flood's splitmix64: tiny, fast, and the same on every platform.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose internal state starts at `state`.
    pub const fn new(state: u64) -> SplitMix64 {
        SplitMix64(state)
    }

    /// A generator for a user's seed (`--seed`): the state is the seed mixed with the golden
    /// ratio, so small seeds do not start next to each other's states.
    pub const fn seeded(seed: u64) -> SplitMix64 {
        SplitMix64(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` by remainder (`0` when `n == 0`): the draw every stream has used, so
    /// sequences are unchanged; the modulo bias is irrelevant for synthetic data.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        let x = self.next_u64();
        if n == 0 { 0 } else { x % n }
    }

    /// True with probability `numerator / denominator` (one `below(denominator)` draw).
    #[inline]
    pub fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        self.below(denominator) < numerator
    }

    /// Uniform in `lo..=hi` by remainder, one draw (`lo` when `hi < lo`).
    #[inline]
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let x = self.next_u64();
        if hi < lo {
            return lo;
        }
        // The span overflows to 0 only for the whole of i64: every draw is in range.
        match (hi.wrapping_sub(lo) as u64).wrapping_add(1) {
            0 => x as i64,
            span => lo.wrapping_add((x % span) as i64),
        }
    }

    /// Uniform in `[0, 1)` from the top 53 bits (synthetic prices and sizes only: no order
    /// value is ever an `f64`).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // The reference algorithm's outputs for state 1234567 (computed independently).
        let mut rng = SplitMix64::new(1234567);
        assert_eq!(rng.next_u64(), 6457827717110365317);
        assert_eq!(rng.next_u64(), 3203168211198807973);
        assert_eq!(rng.next_u64(), 9817491932198370423);
    }

    #[test]
    fn below_and_chance_draw_once_by_remainder() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        assert_eq!(a.below(1000), b.next_u64() % 1000);
        assert_eq!(a.below(0), 0);
        b.next_u64();
        let x = b.next_u64() % 100;
        assert_eq!(a.chance(30, 100), x < 30);
        assert!(!a.chance(0, 100));
        assert!(a.chance(100, 100));
    }

    #[test]
    fn range_and_unit_draw_once() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for (lo, hi) in [(1, 20), (-3, 3), (1001, 40_000), (5, 5)] {
            let r = a.range(lo, hi);
            assert_eq!(r, lo + (b.next_u64() % (hi - lo + 1) as u64) as i64);
            assert!((lo..=hi).contains(&r));
        }
        assert_eq!(a.range(i64::MIN, i64::MAX), b.next_u64() as i64);
        assert_eq!(a.range(3, 2), 3);
        b.next_u64();
        let u = a.unit();
        assert_eq!(u, (b.next_u64() >> 11) as f64 / 9_007_199_254_740_992.0);
        assert!((0.0..1.0).contains(&u));
    }
}
