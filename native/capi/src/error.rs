//! `sm_last_error` and the wrapper every entry point runs in: it resets the thread's error,
//! runs the body under `catch_unwind`, and turns an `Err` or a panic into the error return value
//! plus a message.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// The message of this thread's most recent fallible call, None if it succeeded.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Runs `body` as one fallible entry point: `on_error` is returned if it fails or panics.
pub(crate) fn call<T>(on_error: T, body: impl FnOnce() -> Result<T, String>) -> T {
    set(None);
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(message)) => {
            set(Some(message));
            on_error
        }
        Err(panic) => {
            set(Some(format!(
                "internal error in the savedmodel library (a bug; please report it): {}",
                panic_text(panic.as_ref())
            )));
            on_error
        }
    }
}

/// Runs `body` for an entry point that cannot fail (the `*_free` functions): a panic is
/// swallowed rather than unwound into C, and the thread's error is left as it was.
pub(crate) fn quiet(body: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(body));
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "a panic with no message"
    }
}

fn set(message: Option<String>) {
    let message = message.map(|m| crate::c_string(&m));
    LAST_ERROR.with(|slot| *slot.borrow_mut() = message);
}

/// The message of this thread's most recent failed call (see the header), or NULL.
#[no_mangle]
pub extern "C" fn sm_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| {
            slot.borrow()
                .as_ref()
                .map_or(std::ptr::null(), |m| m.as_ptr())
        })
        .unwrap_or(std::ptr::null())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> Option<String> {
        let ptr = sm_last_error();
        (!ptr.is_null()).then(|| crate::raw::str(ptr, "error").unwrap().to_string())
    }

    #[test]
    fn a_panic_becomes_the_error_value_and_a_message() {
        let value = call(7, || -> Result<i32, String> { panic!("boom {}", 1) });
        assert_eq!(value, 7);
        let message = last().unwrap();
        assert!(
            message.contains("internal error") && message.contains("boom 1"),
            "{message}"
        );
    }

    #[test]
    fn success_clears_the_message_and_failure_sets_it() {
        assert_eq!(call(0, || Err("first".into())), 0);
        assert_eq!(last().as_deref(), Some("first"));
        assert_eq!(call(0, || Ok(5)), 5);
        assert_eq!(last(), None);
    }

    #[test]
    fn messages_with_nul_bytes_survive() {
        call((), || Err("a\0b".into()));
        assert_eq!(last().as_deref(), Some("a\\0b"));
    }

    #[test]
    fn quiet_swallows_panics_and_keeps_the_error() {
        call((), || Err("kept".into()));
        quiet(|| panic!("ignored"));
        assert_eq!(last().as_deref(), Some("kept"));
    }

    #[test]
    fn errors_are_per_thread() {
        call((), || Err("main".into()));
        std::thread::spawn(|| assert_eq!(last(), None))
            .join()
            .unwrap();
        assert_eq!(last().as_deref(), Some("main"));
    }
}
