//! Cache hints for the hot paths.
//!
//! Owns: `prefetch` / `prefetch_lines`, which ask the CPU to start loading the cache lines that
//! hold a value or a slice, so that a miss (50-330 ns on the shared VMs ticktrade is measured
//! on) overlaps other work instead of stalling the load that needs it. A plain early read does
//! not do that: the out-of-order window fills up behind the missing load.
//! Must not: change behaviour. They are hints: no effect on any value, a no-op on targets
//! without a safe prefetch instruction (x86-64 has one in SSE, through `safe_arch`, which
//! takes a reference, so no `unsafe` is needed here).

/// Starts loading the cache line holding `x` into every cache level.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    safe_arch::prefetch_t0(x);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = x;
}

/// Cache line size assumed by [`prefetch_lines`].
pub const LINE: usize = 64;

/// Starts loading every cache line `items` spans, at most `max_lines` of them (the first ones).
#[inline]
pub fn prefetch_lines<T>(items: &[T], max_lines: usize) {
    let size = size_of::<T>();
    if size == 0 || items.is_empty() {
        return;
    }
    // One element per line: `LINE / size` apart (every element when it is a line or larger),
    // and the last one, whose line the stride may step over.
    let step = (LINE / size).max(1);
    for x in items.iter().step_by(step).take(max_lines) {
        prefetch(x);
    }
    if items.len().div_ceil(step) <= max_lines
        && let Some(last) = items.last()
    {
        prefetch(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_leave_values_alone_at_any_length_and_type() {
        let bytes: Vec<u8> = (0..=255).collect();
        for n in [0, 1, 63, 64, 65, 256] {
            prefetch_lines(&bytes[..n], 2);
            prefetch_lines(&bytes[..n], usize::MAX);
        }
        let wide = [[7u64; 16]; 3];
        prefetch_lines(&wide, 8);
        prefetch(&wide[2]);
        prefetch_lines::<()>(&[(); 4], 1);
        assert_eq!(bytes, (0..=255).collect::<Vec<u8>>());
        assert_eq!(wide, [[7u64; 16]; 3]);
    }
}
