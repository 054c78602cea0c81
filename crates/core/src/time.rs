//! Time as integers: `Mono` (monotonic nanoseconds, for spans) and `Utc` (nanoseconds since
//! the Unix epoch, for exchange timestamps), and the `Clock` trait the I/O side passes in.
//!
//! Owns: the types, the `ManualClock` used by tests and replays, and `civil`, the one
//! calendar-date conversion.
//! Must not: read a system clock. Real clocks (TSC, `Instant`) live in `ticktrade-latency`.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

pub mod civil;

/// Monotonic nanoseconds from an arbitrary origin. Only differences mean anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mono(pub u64);

/// Nanoseconds since 1970-01-01T00:00:00Z.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Utc(pub i64);

impl Mono {
    /// Nanoseconds from `earlier` to `self`, zero if the clock went backwards.
    #[inline]
    pub fn since(self, earlier: Mono) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    #[inline]
    pub fn is_set(self) -> bool {
        self.0 != 0
    }
}

impl Utc {
    pub const fn from_millis(ms: i64) -> Utc {
        Utc(ms.saturating_mul(1_000_000))
    }
    pub const fn from_micros(us: i64) -> Utc {
        Utc(us.saturating_mul(1_000))
    }
    pub const fn from_nanos(ns: i64) -> Utc {
        Utc(ns)
    }
    pub const fn as_millis(self) -> i64 {
        self.0.div_euclid(1_000_000)
    }
    pub const fn as_micros(self) -> i64 {
        self.0.div_euclid(1_000)
    }
    pub const fn as_nanos(self) -> i64 {
        self.0
    }
    /// Signed nanoseconds from `earlier` to `self`.
    pub const fn nanos_since(self, earlier: Utc) -> i64 {
        self.0.saturating_sub(earlier.0)
    }
}

/// Where the I/O side gets time from. Pure code takes `Mono`/`Utc` values as arguments;
/// adapters hold a `Clock` and pass readings in.
pub trait Clock {
    fn mono(&self) -> Mono;
    fn utc(&self) -> Utc;
}

/// A clock that only moves when told to: deterministic tests and replays. Atomic, so one
/// clock can be shared (`Arc`) between a test and the server tasks it drives.
#[derive(Debug, Default)]
pub struct ManualClock {
    mono: AtomicU64,
    utc: AtomicI64,
}

impl ManualClock {
    pub fn new(start: Utc) -> ManualClock {
        ManualClock { mono: AtomicU64::new(1), utc: AtomicI64::new(start.0) }
    }

    pub fn advance_nanos(&self, nanos: u64) {
        self.mono.fetch_add(nanos, Ordering::Relaxed);
        self.utc.fetch_add(nanos as i64, Ordering::Relaxed);
    }

    pub fn set_utc(&self, utc: Utc) {
        self.utc.store(utc.0, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn mono(&self) -> Mono {
        Mono(self.mono.load(Ordering::Relaxed))
    }
    fn utc(&self) -> Utc {
        Utc(self.utc.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        let t = Utc::from_millis(1_554_373_962_454);
        assert_eq!(t.as_millis(), 1_554_373_962_454);
        assert_eq!(t.as_micros(), 1_554_373_962_454_000);
        assert_eq!(Utc::from_nanos(-1).as_millis(), -1);
        assert_eq!(Mono(5).since(Mono(7)), 0);
    }

    #[test]
    fn manual_clock_moves_when_told() {
        let clock = ManualClock::new(Utc::from_millis(1000));
        let m0 = clock.mono();
        clock.advance_nanos(1_500);
        assert_eq!(clock.mono().since(m0), 1_500);
        assert_eq!(clock.utc(), Utc(1_000_001_500));
    }
}
