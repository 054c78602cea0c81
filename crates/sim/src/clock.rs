//! The simulator's one source of time: every timestamp, token expiry, credit refill and idle
//! check reads the `SimClock` in `SimConfig`, never the OS directly.
//!
//! Owns: `SimClock` (a shared `ticktrade_core::Clock`) and `TokioClock`, the clock that follows
//! tokio's timer, so a test that pauses tokio time (`#[tokio::test(start_paused = true)]`,
//! `tokio::time::advance`) moves the simulator's timestamps and token expiry together with its
//! heartbeat and engine timers.
//! Must not: wait or wake anything (waiting is tokio's timer, see below), or be read inside
//! the exchange: the engine reads it once per command or tick and passes the `Utc` in.
//!
//! The default is `ticktrade_latency::SystemClock` (`Instant` + `SystemTime`), which is what the
//! running binary uses. A `ManualClock` fits tests of time *readings* (token expiry, `get_time`);
//! what *waits* (heartbeat intervals, the engine's 10 ms tick) waits on tokio's timer, which only
//! a paused tokio clock controls: use `TokioClock` for those.

use std::fmt;
use std::sync::Arc;

use ticktrade_core::{Clock, Mono, Utc};

/// A clock the simulator's tasks share. Cheap to clone.
#[derive(Clone)]
pub struct SimClock(Arc<dyn Clock + Send + Sync>);

impl SimClock {
    pub fn new(clock: impl Clock + Send + Sync + 'static) -> SimClock {
        SimClock(Arc::new(clock))
    }

    /// A clock shared with the caller (a test keeps its `Arc<ManualClock>` to move it).
    pub fn shared(clock: Arc<dyn Clock + Send + Sync>) -> SimClock {
        SimClock(clock)
    }

    /// The OS clock: what `ticktrade sim` runs on.
    pub fn system() -> SimClock {
        SimClock::new(ticktrade_latency::SystemClock::new())
    }

    /// tokio's clock, starting at `start`; see [`TokioClock`].
    pub fn tokio(start: Utc) -> SimClock {
        SimClock::new(TokioClock::new(start))
    }

    pub fn mono(&self) -> Mono {
        self.0.mono()
    }

    pub fn utc(&self) -> Utc {
        self.0.utc()
    }

    /// Microseconds since the epoch (the `usIn`/`usOut` of responses).
    pub fn micros(&self) -> i64 {
        self.utc().as_micros()
    }
}

impl Default for SimClock {
    fn default() -> SimClock {
        SimClock::system()
    }
}

impl fmt::Debug for SimClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SimClock({:?})", self.utc())
    }
}

/// Wall time as `start` plus the time tokio's clock has moved since construction. Real time
/// when tokio's clock runs; virtual time when a test pauses it. Build it inside the runtime
/// whose clock it should follow.
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    origin: tokio::time::Instant,
    start: Utc,
}

impl TokioClock {
    pub fn new(start: Utc) -> TokioClock {
        TokioClock { origin: tokio::time::Instant::now(), start }
    }

    fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX - 1)
    }
}

impl Clock for TokioClock {
    fn mono(&self) -> Mono {
        // +1: `Mono(0)` means "unset".
        Mono(self.elapsed_ns() + 1)
    }

    fn utc(&self) -> Utc {
        Utc(self.start.0.saturating_add(i64::try_from(self.elapsed_ns()).unwrap_or(i64::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ticktrade_core::ManualClock;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_moves_with_paused_time_only() {
        let clock = SimClock::tokio(Utc::from_millis(1_000));
        let (m0, u0) = (clock.mono(), clock.utc());
        assert_eq!(u0, Utc::from_millis(1_000));
        tokio::time::advance(Duration::from_millis(1_500)).await;
        assert_eq!(clock.mono().since(m0), 1_500_000_000);
        assert_eq!(clock.utc(), Utc::from_millis(2_500));
    }

    #[test]
    fn a_shared_manual_clock_is_read_through() {
        let manual = Arc::new(ManualClock::new(Utc::from_millis(7)));
        let clock = SimClock::shared(manual.clone());
        manual.advance_nanos(3_000_000);
        assert_eq!(clock.utc(), Utc::from_millis(10));
        assert_eq!(clock.micros(), 10_000);
    }

    #[test]
    fn the_default_is_the_system_clock() {
        // 2020-01-01: any machine running this is later.
        assert!(SimClock::default().utc() > Utc::from_millis(1_577_836_800_000));
    }
}
