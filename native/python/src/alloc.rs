//! The module's allocator, and the one call into it (the crate's only `unsafe`).

/// mimalloc keeps freed pages for the next call's tensors instead of returning them to the
/// system (glibc maps and unmaps every large block), which saves the page faults of
/// re-touching fresh memory on every call.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns to the system the memory a load freed (raw weights the plans replaced by scaled
/// copies, the parsed graph's temporaries): far more than a call reuses, and otherwise kept
/// by mimalloc for the life of the process.
pub fn release_freed() {
    // SAFETY: mi_collect takes no arguments that point anywhere; it only walks mimalloc's own
    // heaps, which it may do at any time from any thread.
    unsafe { libmimalloc_sys::mi_collect(true) };
}
