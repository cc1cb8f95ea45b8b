//! The global allocator of every artifact that runs the engine (the Python module,
//! `savedmodel-run`, the C library), and the two calls that tune it; those calls (and the
//! test's read of the option) are the crate's only `unsafe`.
//!
//! mimalloc keeps freed pages for the next call's tensors instead of returning them to the
//! system (glibc maps and unmaps every large block), which saves the page faults of
//! re-touching fresh memory on every call. Linking this crate installs it.

use std::os::raw::c_long;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (the same index in its versions 2 and 3;
/// libmimalloc-sys names no constant for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed memory stays committed before mimalloc returns it to the system (arenas
/// wait ten times longer). mimalloc's default (10 ms) is shorter than a large call: the
/// first layers' big activations of a batch-32 ResNet50 were returned while later layers ran
/// and faulted back in, zero page by zero page, on the next call (11% of the call's time in
/// the kernel's page clearing; from Python 1.64 s per call before, 1.33 s with this delay).
/// A server that goes idle still gives the memory back, 10 s later (arena blocks 100 s).
const PURGE_DELAY_MS: c_long = 10_000;

/// Keeps freed memory for the next call's tensors for [`PURGE_DELAY_MS`]. Call it once,
/// before loading; calling again changes nothing.
pub fn keep_freed() {
    // SAFETY: mi_option_set takes an option index that mimalloc defines and a plain integer;
    // it stores the value in mimalloc's option table, which it reads atomically.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_DELAY_MS) };
}

/// Returns to the system the memory a load freed (raw weights the plans replaced by scaled
/// copies, the parsed graph's temporaries): far more than a call reuses, and otherwise kept
/// for the purge delay.
pub fn release_freed() {
    // SAFETY: mi_collect takes no arguments that point anywhere; it only walks mimalloc's own
    // heaps, which it may do at any time from any thread.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_set_is_the_purge_delay() {
        // SAFETY: as in keep_freed; mi_option_get only reads the option table.
        let get = || unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        // mimalloc 2 documents 10 ms as the purge delay's default.
        assert_eq!(get(), 10);
        keep_freed();
        assert_eq!(get(), PURGE_DELAY_MS);
        release_freed();
    }
}
