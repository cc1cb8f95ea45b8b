//! Software prefetch: asking the cache for lines a kernel will read soon, so that a loop
//! whose reads jump between lines (and defeat the hardware prefetcher) does not wait on
//! memory for each of them. The one `unsafe` step (the prefetch instruction) is here.

/// Starts loading every cache line of `values` into the first-level cache and returns at
/// once; a hint only, with no effect on what any read returns.
#[inline]
pub fn prefetch<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        const LINE: usize = 64;
        let start = values.as_ptr().cast::<i8>();
        for offset in (0..std::mem::size_of_val(values)).step_by(LINE) {
            // SAFETY: PREFETCHT0 (SSE, in every x86-64 CPU) neither faults nor changes memory
            // or registers, whatever the address; this one lies inside `values` anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(offset),
                );
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}
