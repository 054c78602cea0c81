//! Real clocks: `TscClock` (the CPU's time-stamp counter through `quanta`) and `SystemClock`
//! (`std::time::Instant` + `SystemTime`). Both implement `ticktrade_core::Clock`.
//!
//! Owns: every read of hardware or OS time in ticktrade's pure crates; the tidy test allows
//! `Instant::now`/`SystemTime::now` in this file and nowhere else in them.
//! Must not: be called from pure code; I/O code reads a clock and passes `Mono`/`Utc` values in.
//!
//! Cost on the calibration host (docs/PERFORMANCE.md §2, quiet machine): a raw TSC read
//! (`TscClock::raw`) ≈9 ns, `TscClock::mono` (read + scale to ns) ≈11 ns, `Instant::now` ≈23 ns,
//! `SystemTime::now` ≈21 ns. `cargo bench -p ticktrade-latency --bench hot_path` measures the
//! same beside each other (on a busy machine: raw 9.7–13 ns, `to_mono` alone 2 ns, `mono`
//! 17 ns, `Instant::now` 38 ns). On the hot path take `raw()` readings and convert them with
//! `to_mono` after t5, outside the timed region; or call `mono()` when the 2 ns of scaling do
//! not matter. `Mono` values from different clock instances share no origin:
//! never subtract one clock's reading from another's.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ticktrade_core::{Clock, Mono, Utc};

/// An unscaled TSC reading from `TscClock::raw`. Only `TscClock::to_mono` gives it meaning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RawTicks(pub u64);

/// The fastest monotonic clock here: the TSC, calibrated against the OS monotonic clock by
/// `quanta` at construction (the first one in a process takes up to ~200 ms for calibration).
/// Falls back to the OS clock on CPUs without an invariant TSC.
#[derive(Clone, Debug)]
pub struct TscClock {
    inner: quanta::Clock,
    origin: u64,
}

impl TscClock {
    pub fn new() -> TscClock {
        let inner = quanta::Clock::new();
        // One tick before now, so the first reading is at least 1 ns: `Mono(0)` means "unset".
        let origin = inner.raw().saturating_sub(1);
        TscClock { inner, origin }
    }

    /// An unscaled reading: the cheapest way to stamp a stage.
    #[inline(always)]
    pub fn raw(&self) -> RawTicks {
        RawTicks(self.inner.raw())
    }

    /// Converts a reading of this clock to monotonic nanoseconds (a multiply and a shift).
    #[inline]
    pub fn to_mono(&self, raw: RawTicks) -> Mono {
        Mono(self.inner.delta_as_nanos(self.origin, raw.0).max(1))
    }

    /// Nanoseconds between two readings of this clock; zero if `end` is not after `start`.
    #[inline]
    pub fn nanos_between(&self, start: RawTicks, end: RawTicks) -> u64 {
        self.inner.delta_as_nanos(start.0, end.0)
    }
}

impl Default for TscClock {
    fn default() -> TscClock {
        TscClock::new()
    }
}

impl Clock for TscClock {
    #[inline]
    fn mono(&self) -> Mono {
        self.to_mono(self.raw())
    }

    /// Wall-clock time from the OS on every call (≈21 ns), so NTP corrections apply; TSC-derived
    /// wall time would drift from the exchange's clock over a long session.
    #[inline]
    fn utc(&self) -> Utc {
        system_utc()
    }
}

/// The portable clock: `Instant` for `mono`, `SystemTime` for `utc`.
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    pub fn new() -> SystemClock {
        SystemClock { origin: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    #[inline]
    fn mono(&self) -> Mono {
        // +1 so no reading is `Mono(0)` ("unset"); u64 nanoseconds last 584 years.
        Mono(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX - 1) + 1)
    }

    #[inline]
    fn utc(&self) -> Utc {
        system_utc()
    }
}

/// Nanoseconds since the Unix epoch; negative before it.
fn system_utc() -> Utc {
    let now = SystemTime::now();
    let nanos = match now.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_nanos()).map_or(i64::MIN, |ns| -ns),
    };
    Utc(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2020-01-01 and 2100-01-01: any machine running these tests is in between.
    const Y2020: i64 = 1_577_836_800_000_000_000;
    const Y2100: i64 = 4_102_444_800_000_000_000;

    fn check_clock(clock: &impl Clock) {
        let a = clock.mono();
        let b = clock.mono();
        assert!(a.is_set());
        assert!(b >= a, "{b:?} < {a:?}");
        let utc = clock.utc().as_nanos();
        assert!((Y2020..Y2100).contains(&utc), "{utc}");
    }

    #[test]
    fn tsc_clock_is_monotonic_and_wall_time_is_sane() {
        check_clock(&TscClock::new());
    }

    #[test]
    fn system_clock_is_monotonic_and_wall_time_is_sane() {
        check_clock(&SystemClock::new());
    }

    #[test]
    fn raw_readings_convert_in_order() {
        let clock = TscClock::new();
        let first = clock.raw();
        let second = clock.raw();
        assert!(clock.to_mono(second) >= clock.to_mono(first));
        assert_eq!(clock.nanos_between(second, first), 0);
        let direct = clock.nanos_between(first, second);
        let via_origin = clock.to_mono(second).since(clock.to_mono(first));
        assert!(direct.abs_diff(via_origin) <= 2, "{direct} vs {via_origin}: scaling is linear");
    }

    #[test]
    fn tsc_and_system_clocks_agree_on_a_span() {
        // Each TSC reading is bracketed by two system readings, so preemption only widens the
        // brackets and cannot make the check fail; the TSC is calibrated against the same OS
        // clock, so its span must fall inside the brackets give or take 5% calibration error.
        let tsc = TscClock::new();
        let sys = SystemClock::new();
        let (s0a, t0, s0b) = (sys.mono(), tsc.mono(), sys.mono());
        let mut spin = 0u64;
        while sys.mono().since(s0b) < 2_000_000 {
            spin = spin.wrapping_add(1);
        }
        let (s1a, t1, s1b) = (sys.mono(), tsc.mono(), sys.mono());
        let tsc_ns = t1.since(t0) as f64;
        let (shortest, longest) = (s1a.since(s0b) as f64, s1b.since(s0a) as f64);
        assert!(spin > 0);
        assert!(
            tsc_ns >= shortest * 0.95 && tsc_ns <= longest * 1.05,
            "tsc {tsc_ns} ns outside system [{shortest}, {longest}] ns"
        );
    }
}
