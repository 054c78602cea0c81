//! Keeps the engine's helper thread awake around a block ([`Warm`]): a wake-up of a sleeping
//! thread costs 75-166 µs on this host, more than a stage it would take half of.
//!
//! Owns: the spin job's epoch, bound and bookkeeping.
//! Must not: run any of a block's work (the stages are `join`s in `decode` and `block`), or
//! spin longer than [`WARM_FOR`] after the last call that asked for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a spin job keeps the helper thread awake when no stage is offered to it
/// ([`Warm`]): longer than a wake-up on this host (75-166 µs) plus reading a block's two lines,
/// short enough that a wake-up without a block (the polling fallback every
/// `EngineConfig::poll`, a notification before the whole line is written) costs little.
pub(super) const WARM_FOR: Duration = Duration::from_micros(400);

/// Keeps the helper thread awake between a file wake-up and the block's stages, and between
/// the stages, so that it takes its half of a stage at once instead of 75-166 µs later (a
/// thread wake-up on this host; rayon's idle thread spins only briefly, then sleeps).
///
/// The engine thread spawns a spin job into the pool ([`Warm::spin`]) when a block is likely:
/// at each pass over the files, and after the decode (for the coins). The job sits in this
/// thread's own deque until the helper steals it (spawning wakes a sleeping helper, so the
/// wake-up overlaps reading the lines), then spins (`spin_loop`) until a stage is offered
/// ([`Warm::offer`], an epoch bumped just before each `join`) or until [`WARM_FOR`] after the
/// last `spin` call, and returns; the helper then steals the offered half at once. Rayon's
/// order matters: thieves take the oldest job first, so the spin job is stolen before a
/// `join`'s half pushed after it, and must return at once when its stage was already offered;
/// and a thread waiting in `join` runs its own queued jobs, so on the engine thread the job
/// returns at once. One job at a time: while one is queued or spinning, `spin` only extends
/// its bound. Cost: the helper's CPU for at most [`WARM_FOR`] per wake-up that brings no
/// block, nothing on the engine thread but the spawn.
pub(super) struct Warm {
    /// Bumped just before each stage is offered.
    pub(super) epoch: AtomicU64,
    /// Nanoseconds after `base` until which a job spins.
    pub(super) until: AtomicU64,
    /// The epoch of the job queued or spinning, `u64::MAX` for none.
    pub(super) pending: AtomicU64,
    /// Jobs spawned (tests).
    pub(super) spawned: AtomicU64,
    /// How long a job spins without a stage offered ([`WARM_FOR`]).
    pub(super) bound_ns: u64,
    pub(super) base: Instant,
}

/// Why a spin job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SpinEnd {
    /// Run by the engine thread (waiting in a `join`): returned at once.
    NotHelper,
    /// A stage was offered (at once if it was offered before the job started).
    Offered,
    /// No stage came within its bound.
    Bound,
}

impl Warm {
    pub(super) fn new() -> Warm {
        Warm {
            epoch: AtomicU64::new(0),
            until: AtomicU64::new(0),
            pending: AtomicU64::new(u64::MAX),
            spawned: AtomicU64::new(0),
            bound_ns: WARM_FOR.as_nanos() as u64,
            base: Instant::now(),
        }
    }

    pub(super) fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// A stage is about to be offered: a spinning job returns, a queued one will at once.
    pub(super) fn offer(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Has the helper spin until the next stage is offered or [`WARM_FOR`] from now (called on
    /// the pool's thread 0, the engine thread).
    pub(super) fn spin(self: &Arc<Warm>, pool: &rayon::ThreadPool) {
        self.until.store(self.now_ns() + self.bound_ns, Ordering::Release);
        let epoch = self.epoch.load(Ordering::Acquire);
        if self.pending.swap(epoch, Ordering::AcqRel) == epoch {
            return;
        }
        self.spawned.fetch_add(1, Ordering::Relaxed);
        let warm = Arc::clone(self);
        pool.spawn(move || {
            warm.run(epoch, rayon::current_thread_index());
        });
    }

    /// The spin job of `epoch` on the pool thread `thread`.
    pub(super) fn run(&self, epoch: u64, thread: Option<usize>) -> SpinEnd {
        loop {
            let end = if thread == Some(1) { self.spin_while(epoch) } else { SpinEnd::NotHelper };
            let _ = self.pending.compare_exchange(epoch, u64::MAX, Ordering::AcqRel, Ordering::Acquire);
            // A `spin` that extended the bound just as it passed counted on this job: take
            // it up again unless a new job was spawned meanwhile.
            let extended = end == SpinEnd::Bound
                && self.now_ns() < self.until.load(Ordering::Acquire)
                && self.pending.compare_exchange(u64::MAX, epoch, Ordering::AcqRel, Ordering::Acquire).is_ok();
            if !extended {
                return end;
            }
        }
    }

    pub(super) fn spin_while(&self, epoch: u64) -> SpinEnd {
        loop {
            for _ in 0..64 {
                if self.epoch.load(Ordering::Acquire) != epoch {
                    return SpinEnd::Offered;
                }
                std::hint::spin_loop();
            }
            if self.now_ns() >= self.until.load(Ordering::Acquire) {
                return SpinEnd::Bound;
            }
        }
    }
}

/// Nanoseconds since `offered` when called on the helper thread (rayon's thread 1), else
/// `u64::MAX` (the engine thread runs a half the helper had not started).
pub(super) fn helper_since(offered: Instant) -> u64 {
    if rayon::current_thread_index() == Some(1) { offered.elapsed().as_nanos() as u64 } else { u64::MAX }
}
