//! The scheduling class of the calling thread: real-time FIFO for the engine's threads when the
//! operator asks for it (`--rt-priority`), and back to the normal class.
//!
//! Owns: [`set_realtime`], [`set_normal`], [`current`]. Must not: be called inside a block's
//! work (each call is a system call; `bench hl` switches around each block's poll, outside the
//! timed region) or be on by default: a `SCHED_FIFO` thread that never sleeps starves every
//! normal thread of its CPU (the kernel's real-time throttling, 95% of each second by default,
//! is the only guard), so only threads that block between blocks (the engine's, woken by file
//! notifications) should run with it.
//!
//! Why it exists: on a shared 2-vCPU host, a block runs on both CPUs, and any other runnable
//! thread that the normal scheduler puts on one of them stalls that half of the block for a
//! time slice (1-1.5 ms seen in `ticktrade bench hl`'s slowest blocks, one stage inflated while
//! the others are not). A real-time thread is not preempted by normal ones. Threads created by
//! a real-time thread inherit its class (glibc's default `PTHREAD_INHERIT_SCHED`), so the
//! engine's helper thread, started from the engine thread, gets it too.

/// Why the scheduling class could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    #[error("real-time priority {0} is outside 1..=99")]
    Range(u8),
    #[error(
        "could not switch this thread to SCHED_FIFO priority {priority}: {reason} (it needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO that allows it)"
    )]
    Denied { priority: u8, reason: String },
    #[error("could not switch this thread back to the normal scheduling class: {0}")]
    Normal(String),
    #[error("real-time scheduling is only supported on Linux here")]
    Unsupported,
}

/// The calling thread's scheduling class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `SCHED_FIFO` at this priority.
    Fifo(u8),
    /// Anything else (the normal time-sharing class, batch, idle, round-robin).
    Other,
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{Class, SchedError};
    use thread_priority::{
        NormalThreadSchedulePolicy, RealtimeThreadSchedulePolicy, ThreadPriority, ThreadPriorityValue,
        ThreadSchedulePolicy, set_thread_priority_and_policy, thread_native_id, thread_schedule_policy_param,
    };

    pub fn set_realtime(priority: u8) -> Result<(), SchedError> {
        let value = ThreadPriorityValue::try_from(priority).map_err(|_| SchedError::Range(priority))?;
        set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Crossplatform(value),
            ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
        )
        .map_err(|e| SchedError::Denied { priority, reason: e.to_string() })
    }

    pub fn set_normal() -> Result<(), SchedError> {
        // Niceness 0: for the normal class `Crossplatform(p)` is niceness
        // `trunc(39 * (1 - p / 99)) - 20`, which is 0 for p = 47.
        let nice_zero = ThreadPriorityValue::try_from(47u8).map_err(|e| SchedError::Normal(e.to_string()))?;
        set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Crossplatform(nice_zero),
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other),
        )
        .map_err(|e| SchedError::Normal(e.to_string()))
    }

    pub fn current() -> Class {
        match thread_schedule_policy_param(thread_native_id()) {
            Ok((ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo), params)) => {
                Class::Fifo(u8::try_from(params.sched_priority).unwrap_or(0))
            }
            _ => Class::Other,
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Class, SchedError};

    pub fn set_realtime(_priority: u8) -> Result<(), SchedError> {
        Err(SchedError::Unsupported)
    }

    pub fn set_normal() -> Result<(), SchedError> {
        Ok(())
    }

    pub fn current() -> Class {
        Class::Other
    }
}

/// Switches the calling thread to `SCHED_FIFO` at `priority` (1..=99). Threads it creates
/// afterwards inherit the class.
pub fn set_realtime(priority: u8) -> Result<(), SchedError> {
    if !(1..=99).contains(&priority) {
        return Err(SchedError::Range(priority));
    }
    imp::set_realtime(priority)
}

/// Switches the calling thread back to the normal time-sharing class at niceness 0.
pub fn set_normal() -> Result<(), SchedError> {
    imp::set_normal()
}

/// The calling thread's scheduling class.
pub fn current() -> Class {
    imp::current()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_priorities_are_refused_before_any_system_call() {
        assert!(matches!(set_realtime(0), Err(SchedError::Range(0))));
        assert!(matches!(set_realtime(100), Err(SchedError::Range(100))));
        assert_eq!(current(), Class::Other);
    }

    #[test]
    fn realtime_then_normal_round_trips_when_permitted() {
        // A thread of its own, so the test runner's threads keep their class whatever happens.
        let seen = std::thread::spawn(|| match set_realtime(3) {
            Ok(()) => {
                let during = current();
                let child = std::thread::spawn(current).join().ok();
                let back = set_normal().map(|()| current());
                Some((during, child, back.ok()))
            }
            // Not permitted here (no root, no CAP_SYS_NICE): the error says so, nothing changed.
            Err(SchedError::Denied { .. }) | Err(SchedError::Unsupported) => {
                assert_eq!(current(), Class::Other);
                None
            }
            Err(other) => panic!("unexpected error: {other}"),
        })
        .join()
        .expect("test thread");
        if let Some((during, child, back)) = seen {
            assert_eq!(during, Class::Fifo(3));
            assert_eq!(child, Some(Class::Fifo(3)), "a thread started by a FIFO thread inherits its class");
            assert_eq!(back, Some(Class::Other));
        }
    }
}
