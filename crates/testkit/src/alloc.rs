//! `CountingAlloc`: a global allocator that counts the allocations and bytes of each thread.
//!
//! Owns: two thread-local counters and the `GlobalAlloc` impl that bumps them.
//! Must not: allocate, lock or panic inside the allocator. The counters are `const`-initialised
//! `Cell`s without destructors, so touching them never allocates or registers a destructor,
//! and `try_with` makes a thread that is being torn down simply go uncounted.
//!
//! Counts are per thread so that tests running in parallel (cargo's default) do not see each
//! other's allocations: `count_in` measures only what the calling thread allocates.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static N_ALLOCS: Cell<usize> = const { Cell::new(0) };
    static N_BYTES: Cell<usize> = const { Cell::new(0) };
}

/// Allocations made by one thread during a closure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocCount {
    /// `alloc`, `alloc_zeroed` and `realloc` calls (a `Vec` growing counts once per growth).
    pub n_allocs: usize,
    /// Bytes requested by those calls (for `realloc`, the new size).
    pub n_bytes: usize,
}

/// A `GlobalAlloc` that forwards to `System` and counts per thread. Install it in a test binary:
///
/// ```
/// #[global_allocator]
/// static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();
///
/// fn main() {
///     let mut buffer: Vec<u64> = Vec::with_capacity(64);
///     // Steady state: pushing into reserved capacity allocates nothing.
///     assert_eq!(ALLOC.count_in(|| (0..64).for_each(|i| buffer.push(i))), 0);
///     assert_eq!(ALLOC.count_in(|| buffer.push(64)), 1); // growth
/// }
/// ```
#[derive(Debug, Default)]
pub struct CountingAlloc {
    _private: (),
}

impl CountingAlloc {
    pub const fn new() -> CountingAlloc {
        CountingAlloc { _private: () }
    }

    /// Allocations the current thread makes while running `f`. Only meaningful when this is the
    /// `#[global_allocator]`; otherwise always 0.
    pub fn count_in(&self, f: impl FnOnce()) -> usize {
        self.measure(f).1.n_allocs
    }

    /// Runs `f` and returns its result with the current thread's allocation count and bytes.
    pub fn measure<R>(&self, f: impl FnOnce() -> R) -> (R, AllocCount) {
        let before = current();
        let result = f();
        let after = current();
        let count = AllocCount {
            n_allocs: after.n_allocs.wrapping_sub(before.n_allocs),
            n_bytes: after.n_bytes.wrapping_sub(before.n_bytes),
        };
        (result, count)
    }

    /// Totals for the current thread since it started.
    pub fn thread_totals(&self) -> AllocCount {
        current()
    }
}

fn current() -> AllocCount {
    AllocCount {
        n_allocs: N_ALLOCS.try_with(Cell::get).unwrap_or(0),
        n_bytes: N_BYTES.try_with(Cell::get).unwrap_or(0),
    }
}

#[inline]
fn note(size: usize) {
    // `try_with` fails only while the thread's locals are being destroyed; those allocations
    // are not counted rather than aborting the process.
    let _ = N_ALLOCS.try_with(|n| n.set(n.get().wrapping_add(1)));
    let _ = N_BYTES.try_with(|n| n.set(n.get().wrapping_add(size)));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract (layout, ownership, alignment) is `System`'s; the counting touches only
// destructor-free const thread-locals, which neither allocate nor unwind.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: same contract as ours: `layout` has non-zero size, checked by our caller.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: `ptr`/`layout` came from this allocator (hence `System`); `new_size` is
        // checked by our caller as `GlobalAlloc::realloc` requires.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
