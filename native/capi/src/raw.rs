//! The one module with `unsafe` code: the caller's raw pointers turned into references, slices
//! and strings, and handles handed out and taken back.
//!
//! The entry points have safe Rust signatures because their callers are C programs bound by
//! `include/savedmodel.h`; what each block below relies on is that header's contract, named in
//! its `// SAFETY:` comment. What can be checked is checked first (NULL, alignment, sizes, UTF-8)
//! and reported as an error. A Rust caller of the rlib (the tests) keeps the same contract.

use std::ffi::{c_char, CStr};

/// A caller's NUL-terminated UTF-8 string; `what` names the argument in the error.
pub(crate) fn str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, String> {
    if ptr.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: the header requires every `const char*` argument that is not NULL to point to a
    // NUL-terminated string that stays valid and unchanged for the duration of the call.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str()
        .map_err(|e| format!("{what} is not valid UTF-8 ({e})"))
}

/// A caller's array of `len` elements; NULL is allowed only when `len` is 0.
pub(crate) fn slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T], String> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(format!("{what} is NULL but {len} elements were promised"));
    }
    if !ptr.is_aligned() {
        return Err(format!("{what} is not aligned for its element type"));
    }
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(format!(
            "{what}: {len} elements is more than memory can hold"
        ));
    }
    // SAFETY: the header requires each array argument to hold at least the number of elements
    // the call gives for it (`n_inputs`, `ranks[i]`, `byte_lengths[i]`), readable and unchanged
    // for the duration of the call; NULL, alignment and the size limit are checked above.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The object behind a handle this library returned; `what` names the argument in the error.
pub(crate) fn handle<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, String> {
    // SAFETY: the header requires a handle argument to be NULL or a handle this library
    // returned and that has not been freed, and forbids freeing it while another call uses it;
    // such a pointer came from `into_handle` (a live, aligned Box).
    unsafe { ptr.as_ref() }.ok_or_else(|| format!("{what} is NULL"))
}

/// A new handle owning `value`, for the caller to free with the matching `*_free`.
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Takes back and drops a handle; NULL is ignored.
pub(crate) fn free_handle<T>(ptr: *mut T) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: the header requires the pointer given to `*_free` to be NULL (handled above) or
    // a handle of that type this library returned, freed once, with no call using it at the
    // same time or later; so it is the unique owner of a Box made by `into_handle`.
    drop(unsafe { Box::from_raw(ptr) });
}

/// Stores `value` through the caller's out-pointer; NULL means the caller does not want it.
pub(crate) fn write<T>(ptr: *mut T, value: T, what: &str) -> Result<(), String> {
    if ptr.is_null() {
        return Ok(());
    }
    if !ptr.is_aligned() {
        return Err(format!("{what} is not aligned for its type"));
    }
    // SAFETY: the header requires an out-pointer argument to be NULL (skipped above) or to
    // point to writable memory for one value of its type, not read by anyone during the call;
    // alignment is checked above.
    unsafe { ptr.write(value) };
    Ok(())
}
