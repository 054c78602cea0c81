//! The seeded random draws of fault schedules and token strings.
//!
//! Owns: `Rng`, the core's `SplitMix64` with the two draws the simulator needs.
//! Must not: be used for anything that must be unpredictable to an attacker (tokens here only
//! need to be unique on a local simulator).

use ticktrade_core::SplitMix64;

/// The core's splitmix64 with `below` and `chance`.
#[derive(Clone, Debug)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed ^ 0x9E37_79B9_7F4A_7C15))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `p_per_million / 1e6`.
    pub fn chance(&mut self, p_per_million: u64) -> bool {
        self.below(1_000_000) < p_per_million
    }
}
