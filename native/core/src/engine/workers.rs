//! Runs a long plan with rayon's other workers kept awake. A plan is a chain of kernels, many
//! of them split over threads, so a call forks and joins dozens of times; rayon's idle
//! workers go to sleep within microseconds, and waking one for each kernel (a futex wake and
//! a context switch, tens of microseconds on a busy 2-core machine) cost a model like
//! MobileNetV2 at batch 1 more than the second core gave back. onnxruntime's pool spins
//! between kernels for the same reason. Here, for the length of one call, every other worker
//! runs a job that keeps taking the pool's pending work and spins when there is none; the
//! call's own thread (a rayon worker for the call) runs the plan.

use std::sync::atomic::{AtomicBool, Ordering};

/// Calls that took at least this long last time run with the workers kept awake; shorter
/// ones (small models) would spend more on handing the call to the pool than they gain
/// (measured: keras_cnn at batch 32, 0.56 ms, gains 0.1 ms; a 0.2 ms separable_cnn call
/// neither gains nor loses; a 0.1 ms LSTM call loses 0.05 ms).
pub const HOT_AFTER: std::time::Duration = std::time::Duration::from_micros(200);

/// `body` on a rayon worker, with the pool's other workers taking its parallel work as soon
/// as it is offered; returns when `body` does.
pub fn run_hot<R: Send>(body: impl FnOnce() -> R + Send) -> R {
    let done = AtomicBool::new(false);
    rayon::scope(|scope| {
        let owner = rayon::current_thread_index();
        let done = &done;
        for _ in 1..rayon::current_num_threads() {
            scope.spawn(move |_| {
                // On the call's own thread (it ran out of other work while waiting on a
                // join) this job must not spin: the plan it waits for is beneath it.
                if rayon::current_thread_index() == owner {
                    return;
                }
                while !done.load(Ordering::Acquire) {
                    if !matches!(rayon::yield_now(), Some(rayon::Yield::Executed)) {
                        std::hint::spin_loop();
                    }
                }
            });
        }
        // Set on return and on unwinding alike: a panic in `body` must still stop the
        // spinners, or the scope would wait for them forever.
        let _finish = Finish(done);
        body()
    })
}

/// Tells the spinners the call is over when dropped.
struct Finish<'a>(&'a AtomicBool);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    use super::*;

    #[test]
    fn parallel_work_inside_completes_and_spinners_stop() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let total: u64 = pool.install(|| {
            run_hot(|| {
                (0..50)
                    .map(|i| (0..10_000u64).into_par_iter().map(|x| x * i).sum::<u64>())
                    .sum()
            })
        });
        assert_eq!(total, (0..50).sum::<u64>() * (0..10_000u64).sum::<u64>());
        // From a thread outside any pool as well (the global pool).
        assert_eq!(run_hot(|| 7), 7);
    }

    #[test]
    fn a_panic_in_the_body_reaches_the_caller_instead_of_hanging() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| run_hot(|| panic!("kernel")))
        }));
        assert!(caught.is_err());
        assert_eq!(pool.install(|| run_hot(|| 1)), 1);
    }
}
