//! Runs a long plan with rayon's other workers kept awake. A plan is a chain of kernels, many
//! of them split over threads, so a call forks and joins dozens of times; rayon's idle
//! workers go to sleep within microseconds, and waking one for each kernel (a futex wake and
//! a context switch, tens of microseconds on a busy 2-core machine) cost a model like
//! MobileNetV2 at batch 1 more than the second core gave back. onnxruntime's pool spins
//! between kernels for the same reason. Here, for the length of one call, every other worker
//! runs a job that keeps taking the pool's pending work and spins when there is none; the
//! call's own thread (a rayon worker for the call) runs the plan. After the call all workers
//! but one linger awake for [`LINGER`] the same way (the one left, and its core, are the
//! caller's, which turns the outputs into its own values and makes the next call), so that
//! the next call (a benchmark's loop, a busy server) is taken up at once. Measured on a 2-vCPU
//! Zen 3 (`savedmodel-run --bench`, interleaved with the build before, medians of 300 and
//! 3000 calls): MobileNetV2 at batch 1 9.2-10.2 -> 8.3-9.5 ms, keras_cnn at batch 32
//! 0.44-0.50 -> 0.38-0.44 ms; through Python (bench_native's medians) keras_cnn 0.39-0.50 ->
//! 0.28-0.49 ms. With every worker lingering the caller competed with them for the cores.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Calls that took at least this long last time run with the workers kept awake; shorter
/// ones (small models) would spend more on handing the call to the pool than they gain
/// (measured: keras_cnn at batch 32, 0.56 ms, gains 0.1 ms; a 0.2 ms separable_cnn call
/// neither gains nor loses; a 0.1 ms LSTM call loses 0.05 ms).
pub const HOT_AFTER: std::time::Duration = std::time::Duration::from_micros(200);

/// Whether a signature's next call runs hot: when its plan took at least [`HOT_AFTER`] on
/// this call, timed alone (handing the call to the pool and waking it are not the model's
/// time). Timing the whole call, hand-over included, made a 0.1 ms plan bistable: one call
/// stalled past 0.2 ms sent the next to the pool, where the plan itself ran slower (0.14-0.19
/// ms, the attention fixture at batch 32, against 0.093 on the calling thread) and the
/// hand-over on top kept every later call over 0.2 ms, in one process out of two after
/// TensorFlow had loaded ResNet50 beside it. Keeping a plan hot until it took under three
/// quarters of the threshold did not help: that plan ran at 0.15-0.19 ms hot.
pub fn next_hot(took: Duration) -> bool {
    took >= HOT_AFTER
}

/// `body` on a rayon worker, with the pool's other workers taking its parallel work as soon
/// as it is offered; returns when `body` does.
pub fn run_hot<R: Send>(body: impl FnOnce() -> R + Send) -> R {
    let done = AtomicBool::new(false);
    let result = rayon::scope(|scope| {
        let _call = Call::begin();
        let owner = rayon::current_thread_index();
        let done = &done;
        for _ in 1..rayon::current_num_threads() {
            scope.spawn(move |_| {
                // On the call's own thread (it ran out of other work while waiting on a
                // join) this job must not spin: the plan it waits for is beneath it.
                if rayon::current_thread_index() == owner {
                    return;
                }
                busy_while(|| !done.load(Ordering::Acquire));
            });
        }
        // Set on return and on unwinding alike: a panic in `body` must still stop the
        // spinners, or the scope would wait for them forever.
        let _finish = Finish(done);
        body()
    });
    // After the scope, which waits for every spinner: a lingering job taken by a spinner
    // would keep the call from returning.
    linger();
    result
}

/// How long the workers stay awake after a call, for the next one: back-to-back calls would
/// otherwise hand each call and its first parallel kernels to sleeping workers and wait for
/// them to wake (tens to hundreds of microseconds on a virtual machine), which onnxruntime's
/// spinning pool does not. The cost: up to this long of all workers' time but one's after
/// each call.
pub const LINGER: Duration = Duration::from_millis(1);

/// Calls running with their workers kept awake, workers lingering after one, and when the
/// lingering ends (nanoseconds from [`epoch`]).
static CALLS: AtomicUsize = AtomicUsize::new(0);
static LINGERING: AtomicUsize = AtomicUsize::new(0);
static LINGER_UNTIL: AtomicU64 = AtomicU64::new(0);

fn epoch() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    u64::try_from(START.get_or_init(Instant::now).elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A running call, counted in [`CALLS`] while it lives: lingering workers give way to it.
struct Call;

impl Call {
    fn begin() -> Self {
        CALLS.fetch_add(1, Ordering::AcqRel);
        Call
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        CALLS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Keeps all workers of the current pool but one awake for [`LINGER`] (the calling thread
/// needs a core between calls): each lingering job takes the pool's pending work (the next
/// call's, when it comes) and spins otherwise, and returns once the time is up or a call is
/// running (whose own spinners then keep the workers busy; a lingering job picked up by a
/// thread waiting inside that call must not hold it).
fn linger() {
    let until = epoch().saturating_add(u64::try_from(LINGER.as_nanos()).unwrap_or(0));
    LINGER_UNTIL.fetch_max(until, Ordering::AcqRel);
    let threads = rayon::current_num_threads().saturating_sub(1);
    let one_more = |n: usize| (n < threads).then_some(n + 1);
    while LINGERING
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, one_more)
        .is_ok()
    {
        rayon::spawn(|| {
            busy_while(|| {
                CALLS.load(Ordering::Acquire) == 0 && epoch() < LINGER_UNTIL.load(Ordering::Acquire)
            });
            LINGERING.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Takes the pool's pending work, spinning when there is none, while `awake` holds.
fn busy_while(awake: impl Fn() -> bool) {
    while awake() {
        if !matches!(rayon::yield_now(), Some(rayon::Yield::Executed)) {
            std::hint::spin_loop();
        }
    }
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
    fn plans_run_hot_after_a_call_of_at_least_the_threshold() {
        assert!(!next_hot(Duration::from_micros(199)));
        assert!(next_hot(Duration::from_micros(200)));
    }

    #[test]
    fn workers_linger_after_a_call_then_stop() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for i in 0..20u64 {
            assert_eq!(pool.install(|| run_hot(|| i * 2)), i * 2);
        }
        assert_eq!(run_hot(|| 3), 3);
        // Every lingering job ends within LINGER of the process's last call (other tests'
        // calls included), and none is left counted.
        let start = Instant::now();
        while LINGERING.load(Ordering::Acquire) > 0 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "workers never stopped"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
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
