//! The scheduling class of the engine's threads: real-time FIFO while they work on a block
//! when the operator asks for it (`--rt-priority`), and the normal class otherwise.
//!
//! Owns: [`set_realtime`], [`set_normal`], [`current`] for the calling thread, the same for
//! another thread of the process ([`ThreadRef`]), all over the `thread-priority` crate's safe
//! API, and [`BlockClass`], which switches the engine thread and its helper to `SCHED_FIFO` at
//! the start of each block and back to the normal class at its end: `server::start` checks
//! the permission first with a switch up and down (`BlockClass::probe`); at each block the
//! engine thread switches itself and the helper up, the helper switches itself back when its
//! share is done, and the engine thread itself at the end. Must not: leave a thread real-time
//! between blocks. A
//! `SCHED_FIFO` thread that spins (the helper keeps itself awake up to 400 µs after each pass
//! over the files) or that sleeps in a wake-up starves every normal thread of its CPU while it
//! runs (the kernel's real-time throttling, 95% of each second by default, is the only guard),
//! so the class lasts only as long as a block's bounded work.
//!
//! Why it exists: on a shared 2-vCPU host, a block runs on both CPUs, and any other runnable
//! thread that the normal scheduler runs on one of them stalls that half of the block: the
//! kernel's DAMON thread (`kdamond`, about 2 ms twice a second on this VM), kernel workers.
//! When the helper's CPU is taken as the block starts, the engine thread does the whole block
//! alone: in `bench hl` runs of 2026-11-27, about half of the blocks over 1 ms had the helper
//! run for under 60 µs of CPU in them, at the cost of a block on one thread (0.8-1.5 ms). A
//! real-time thread is not preempted by normal ones and, switched to it while runnable,
//! preempts them at once. The price, on 2 vCPUs: the connection tasks wait for the end of the
//! block (docs/PERFORMANCE.md §6), so it is off by default.

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

    pub type Native = thread_priority::ThreadId;

    pub fn native() -> Native {
        thread_native_id()
    }

    pub fn set_realtime_of(thread: Native, priority: u8) -> Result<(), SchedError> {
        let value = ThreadPriorityValue::try_from(priority).map_err(|_| SchedError::Range(priority))?;
        set_thread_priority_and_policy(
            thread,
            ThreadPriority::Crossplatform(value),
            ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
        )
        .map_err(|e| SchedError::Denied { priority, reason: e.to_string() })
    }

    /// The normal class for `thread`, its niceness untouched. The crate's call also sets the
    /// *calling* thread's niceness to 0 (its `setpriority` applies to the caller), which is
    /// what [`super::set_normal`] leaves the engine thread at anyway.
    pub fn set_normal_of(thread: Native) -> Result<(), SchedError> {
        // Niceness 0: for the normal class `Crossplatform(p)` is niceness
        // `trunc(39 * (1 - p / 99)) - 20`, which is 0 for p = 47.
        let nice_zero = ThreadPriorityValue::try_from(47u8).map_err(|e| SchedError::Normal(e.to_string()))?;
        set_thread_priority_and_policy(
            thread,
            ThreadPriority::Crossplatform(nice_zero),
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other),
        )
        .map_err(|e| SchedError::Normal(e.to_string()))
    }

    pub fn class_of(thread: Native) -> Class {
        match thread_schedule_policy_param(thread) {
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

    pub type Native = ();

    pub fn native() -> Native {}

    pub fn set_realtime_of(_thread: Native, _priority: u8) -> Result<(), SchedError> {
        Err(SchedError::Unsupported)
    }

    pub fn set_normal_of(_thread: Native) -> Result<(), SchedError> {
        Ok(())
    }

    pub fn class_of(_thread: Native) -> Class {
        Class::Other
    }
}

/// Switches the calling thread to `SCHED_FIFO` at `priority` (1..=99). Threads it creates
/// afterwards inherit the class.
pub fn set_realtime(priority: u8) -> Result<(), SchedError> {
    ThreadRef::current().set_realtime(priority)
}

/// Switches the calling thread back to the normal time-sharing class at niceness 0.
pub fn set_normal() -> Result<(), SchedError> {
    ThreadRef::current().set_normal()
}

/// The calling thread's scheduling class.
pub fn current() -> Class {
    ThreadRef::current().class()
}

/// A thread of this process whose class another thread may switch (the engine's helper,
/// switched by the engine thread).
#[derive(Clone, Copy, Debug)]
pub struct ThreadRef(imp::Native);

impl ThreadRef {
    /// The calling thread.
    pub fn current() -> ThreadRef {
        ThreadRef(imp::native())
    }

    /// Switches this thread to `SCHED_FIFO` at `priority` (1..=99). A runnable thread switched
    /// to it takes its CPU from a normal thread at once.
    pub fn set_realtime(self, priority: u8) -> Result<(), SchedError> {
        if !(1..=99).contains(&priority) {
            return Err(SchedError::Range(priority));
        }
        imp::set_realtime_of(self.0, priority)
    }

    /// Switches this thread back to the normal time-sharing class.
    pub fn set_normal(self) -> Result<(), SchedError> {
        imp::set_normal_of(self.0)
    }

    /// This thread's scheduling class.
    pub fn class(self) -> Class {
        imp::class_of(self.0)
    }
}

/// Runs each block of the engine under `SCHED_FIFO` (see the module's doc). [`raise`], on the
/// engine thread at the start of a block, switches it and the helper (once the helper has
/// recorded itself in [`helper_slot`]) to real-time. The helper switches itself back when its
/// share of the block is done ([`helper_done`], on the helper thread: switching a thread that
/// runs on the other CPU back from outside cost about 42 µs a block on this VM, against 9.5
/// µs for a thread switching itself); [`lower`], at the end of the block on the engine thread,
/// switches the engine thread back, and the helper too if it did not.
///
/// A switch the kernel refuses mid-run (the permission is checked at start with [`probe`])
/// turns the switching off: both threads are put back in the normal class, the error is
/// returned once for the caller to report, and the engine goes on in the normal class.
///
/// [`raise`]: BlockClass::raise
/// [`lower`]: BlockClass::lower
/// [`helper_done`]: BlockClass::helper_done
/// [`helper_slot`]: BlockClass::helper_slot
/// [`probe`]: BlockClass::probe
#[derive(Debug)]
pub struct BlockClass {
    priority: u8,
    helper: std::sync::Arc<std::sync::OnceLock<ThreadRef>>,
    /// The helper is real-time and has not been switched back yet (by itself or by `lower`).
    helper_raised: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Blocks whose engine thread, and whose helper, were switched to real-time.
    raised_blocks: u64,
    raised_helper_blocks: u64,
    off: bool,
}

impl BlockClass {
    /// Per-block `SCHED_FIFO` at `priority` (1..=99). Checks the range only; [`probe`]
    /// checks the permission.
    ///
    /// [`probe`]: BlockClass::probe
    pub fn new(priority: u8) -> Result<BlockClass, SchedError> {
        if !(1..=99).contains(&priority) {
            return Err(SchedError::Range(priority));
        }
        Ok(BlockClass {
            priority,
            helper: std::sync::Arc::default(),
            helper_raised: std::sync::Arc::default(),
            raised_blocks: 0,
            raised_helper_blocks: 0,
            off: false,
        })
    }

    /// Whether the kernel lets the calling thread switch to the class and back: a switch up
    /// and down, leaving it in the normal class.
    pub fn probe(&self) -> Result<(), SchedError> {
        set_realtime(self.priority)?;
        set_normal()
    }

    /// Blocks whose engine thread, and whose helper, were switched to real-time.
    pub fn raised_blocks(&self) -> (u64, u64) {
        (self.raised_blocks, self.raised_helper_blocks)
    }

    /// Where the helper thread records itself (`ThreadRef::current`) when it starts.
    pub fn helper_slot(&self) -> std::sync::Arc<std::sync::OnceLock<ThreadRef>> {
        std::sync::Arc::clone(&self.helper)
    }

    /// What the helper calls when its share of a block is done ([`HelperDone::run`]).
    pub fn helper_done(&self) -> HelperDone {
        HelperDone(std::sync::Arc::clone(&self.helper_raised))
    }

    /// The block starts: the calling thread, and the helper if it is known, to `SCHED_FIFO`.
    /// `Err` (once) when a switch was refused; the switching is then off.
    pub fn raise(&mut self) -> Result<(), SchedError> {
        if self.off {
            return Ok(());
        }
        let mut result = set_realtime(self.priority);
        if result.is_ok() {
            self.raised_blocks += 1;
            if let Some(&helper) = self.helper.get() {
                result = helper.set_realtime(self.priority);
                self.helper_raised.store(result.is_ok(), std::sync::atomic::Ordering::Release);
                self.raised_helper_blocks += u64::from(result.is_ok());
            }
        }
        self.off_on(result)
    }

    /// The block ended: the calling thread back to the normal class, and the helper if it did
    /// not switch itself back.
    pub fn lower(&mut self) -> Result<(), SchedError> {
        if self.off {
            return Ok(());
        }
        let mut result = set_normal();
        if self.helper_raised.swap(false, std::sync::atomic::Ordering::AcqRel)
            && let Some(&helper) = self.helper.get()
        {
            result = result.and(helper.set_normal());
        }
        self.off_on(result)
    }

    fn off_on(&mut self, result: Result<(), SchedError>) -> Result<(), SchedError> {
        if result.is_err() {
            self.off = true;
            let _ = set_normal();
            self.helper_raised.store(false, std::sync::atomic::Ordering::Release);
            if let Some(&helper) = self.helper.get() {
                let _ = helper.set_normal();
            }
        }
        result
    }
}

/// The helper's side of [`BlockClass`]: switches the calling thread (the helper) back to the
/// normal class if the engine thread raised it for this block.
#[derive(Clone, Debug)]
pub struct HelperDone(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl HelperDone {
    pub fn run(&self) {
        if self.0.swap(false, std::sync::atomic::Ordering::AcqRel) {
            // A refusal here leaves the helper real-time until the engine thread's `lower`
            // tries again from outside; nothing to report from this thread.
            let _ = set_normal();
        }
    }
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

    /// A thread that records itself, then waits for `go` messages and answers each with its
    /// class (or, on `None`, runs the helper's side of `BlockClass` first), like the helper.
    fn helper_thread(
        done: Option<HelperDone>,
    ) -> (ThreadRef, std::sync::mpsc::Sender<bool>, std::sync::mpsc::Receiver<Class>, std::thread::JoinHandle<()>) {
        let (me_tx, me_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<bool>();
        let (class_tx, class_rx) = std::sync::mpsc::channel();
        let handle = std::thread::spawn(move || {
            let _ = me_tx.send(ThreadRef::current());
            while let Ok(finish) = go_rx.recv() {
                if let (true, Some(done)) = (finish, done.as_ref()) {
                    done.run();
                }
                let _ = class_tx.send(current());
            }
        });
        let me = me_rx.recv().expect("helper thread started");
        (me, go_tx, class_rx, handle)
    }

    #[test]
    fn another_thread_is_switched_to_realtime_and_back_when_permitted() {
        let (helper, go, class, handle) = helper_thread(None);
        let ask = || {
            go.send(false).expect("helper alive");
            class.recv().expect("helper answers")
        };
        match helper.set_realtime(5) {
            Ok(()) => {
                assert_eq!(helper.class(), Class::Fifo(5));
                assert_eq!(ask(), Class::Fifo(5), "the thread itself sees its new class");
                helper.set_normal().expect("back to normal");
                assert_eq!(ask(), Class::Other);
            }
            Err(SchedError::Denied { .. }) | Err(SchedError::Unsupported) => assert_eq!(ask(), Class::Other),
            Err(other) => panic!("unexpected error: {other}"),
        }
        assert!(matches!(helper.set_realtime(0), Err(SchedError::Range(0))));
        drop(go);
        handle.join().expect("helper thread");
    }

    #[test]
    fn a_block_class_raises_both_threads_for_a_block_and_leaves_both_normal_after_it() {
        assert!(matches!(BlockClass::new(0), Err(SchedError::Range(0))));
        assert!(matches!(BlockClass::new(100), Err(SchedError::Range(100))));
        // The engine's side on a thread of its own, so the test runner's threads keep their class.
        std::thread::spawn(|| {
            let mut class = BlockClass::new(4).expect("in range");
            if class.probe().is_err() {
                // Not permitted here: nothing switched, and nothing to check.
                assert_eq!(current(), Class::Other);
                return;
            }
            assert_eq!(current(), Class::Other, "probe leaves the thread normal");
            let (helper, go, helper_class, handle) = helper_thread(Some(class.helper_done()));
            // Before the helper is known, only the engine thread switches.
            class.raise().expect("raise");
            assert_eq!(current(), Class::Fifo(4));
            assert_eq!(helper.class(), Class::Other);
            class.lower().expect("lower");
            assert_eq!(current(), Class::Other);
            assert_eq!(class.raised_blocks(), (1, 0));
            let _ = class.helper_slot().set(helper);
            // The helper switches itself back when its share is done.
            class.raise().expect("raise");
            assert_eq!((current(), helper.class()), (Class::Fifo(4), Class::Fifo(4)));
            go.send(true).expect("helper alive");
            assert_eq!(helper_class.recv().expect("helper answers"), Class::Other);
            assert_eq!(current(), Class::Fifo(4), "the engine thread is still in its block");
            class.lower().expect("lower");
            assert_eq!((current(), helper.class()), (Class::Other, Class::Other));
            // A helper that took no share of the block is switched back by `lower`.
            class.raise().expect("raise");
            assert_eq!(helper.class(), Class::Fifo(4));
            class.lower().expect("lower");
            assert_eq!((current(), helper.class()), (Class::Other, Class::Other));
            // `run` on a helper that was not raised (or already switched back) changes nothing.
            go.send(true).expect("helper alive");
            assert_eq!(helper_class.recv().expect("helper answers"), Class::Other);
            assert_eq!(class.raised_blocks(), (3, 2));
            drop(go);
            handle.join().expect("helper thread");
        })
        .join()
        .expect("engine-side thread");
    }
}
