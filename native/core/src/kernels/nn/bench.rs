//! Timings of the kernels on shapes of the target models (`cargo test --release -- --ignored
//! bench --nocapture`); not run by default.

use std::time::Instant;

use crate::kernels::nn::window::{Padding, Spec};
use crate::kernels::nn::{conv, depthwise, matmul};
use crate::tensor::Tensor;

/// A tensor of `shape` with values spread over [-0.5, 0.5).
pub(crate) fn tensor(shape: &[usize]) -> Tensor {
    let count: usize = shape.iter().product();
    let values = (0..count).map(|i| (i % 17) as f32 / 17.0 - 0.5).collect();
    Tensor::from_vec(shape.to_vec(), values)
}

/// NHWC, `stride` both ways, SAME padding, undilated.
pub(crate) fn spec(stride: usize) -> Spec {
    Spec {
        channels_first: false,
        strides: [stride; 2],
        dilations: [1, 1],
        padding: Padding::Same,
        explicit: [[0, 0]; 2],
    }
}

/// The CPU time this process has used, in seconds: unlike wall time, not inflated while other
/// processes hold the cores (timings on a shared machine).
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the valid pointer it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Milliseconds per call (best of a few runs, wall and CPU) and GFLOP/s (CPU) for `flops`.
pub(crate) fn time(label: &str, flops: f64, mut f: impl FnMut()) {
    f();
    let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
    for _ in 0..20 {
        let (start, used) = (Instant::now(), cpu_seconds());
        f();
        wall = wall.min(start.elapsed().as_secs_f64());
        cpu = cpu.min(cpu_seconds() - used);
    }
    println!(
        "{label:40} {:8.3} ms wall {:8.3} ms cpu {:7.1} GFLOP/s",
        wall * 1e3,
        cpu * 1e3,
        flops / cpu / 1e9
    );
}

/// One SAME-padded convolution of 20 calls, its shape from the environment: B_N images of
/// B_HW x B_HW x B_C, a B_K x B_K filter to B_O channels, stride B_S (e.g. MobileNetV2's stem:
/// `B_HW=224 B_C=3 B_O=32 B_S=2`).
#[test]
#[ignore = "timing only"]
fn bench_one_conv() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (n, hw, c, o, k, stride) = (
        env("B_N", 1),
        env("B_HW", 56),
        env("B_C", 64),
        env("B_O", 64),
        env("B_K", 3),
        env("B_S", 1),
    );
    let (x, f) = (tensor(&[n, hw, hw, c]), tensor(&[k, k, c, o]));
    let s = spec(stride);
    let out = hw.div_ceil(stride);
    let flops = 2.0 * (n * out * out * o * k * k * c) as f64;
    time(
        &format!("conv {n}x{hw}x{hw}x{c} -> {o} {k}x{k} /{stride}"),
        flops * 20.0,
        || {
            for _ in 0..20 {
                conv::conv(&s, &x, &f).unwrap();
            }
        },
    );
}

#[test]
#[ignore = "timing only"]
fn bench_nn_kernels() {
    let convs: [(&[usize], &[usize], usize); 11] = [
        (&[32, 28, 28, 1], &[3, 3, 1, 8], 1),
        (&[32, 13, 13, 8], &[3, 3, 8, 16], 1),
        (&[1, 28, 28, 1], &[3, 3, 1, 8], 1),
        (&[1, 13, 13, 8], &[3, 3, 8, 16], 1),
        (&[1, 224, 224, 3], &[7, 7, 3, 64], 2),
        (&[1, 56, 56, 64], &[3, 3, 64, 64], 1),
        (&[1, 56, 56, 64], &[1, 1, 64, 256], 1),
        (&[1, 14, 14, 256], &[3, 3, 256, 256], 1),
        (&[1, 7, 7, 512], &[3, 3, 512, 512], 1),
        (&[32, 56, 56, 64], &[3, 3, 64, 64], 1),
        (&[1, 112, 112, 32], &[3, 3, 32, 16], 1),
    ];
    for (xs, fs, stride) in convs {
        let (x, f) = (tensor(xs), tensor(fs));
        let s = spec(stride);
        let out = conv::conv(&s, &x, &f).unwrap();
        let flops = 2.0 * out.len() as f64 * (fs[0] * fs[1] * fs[2]) as f64;
        time(&format!("conv {xs:?} {fs:?} /{stride}"), flops, || {
            conv::conv(&s, &x, &f).unwrap();
        });
    }
    let depthwise_cases: [(&[usize], &[usize], usize); 3] = [
        (&[1, 112, 112, 32], &[3, 3, 32, 1], 1),
        (&[1, 56, 56, 144], &[3, 3, 144, 1], 2),
        (&[32, 28, 28, 192], &[3, 3, 192, 1], 1),
    ];
    for (xs, fs, stride) in depthwise_cases {
        let (x, f) = (tensor(xs), tensor(fs));
        let s = spec(stride);
        let out = depthwise::depthwise(&s, &x, &f).unwrap();
        let flops = 2.0 * out.len() as f64 * 9.0;
        time(&format!("depthwise {xs:?} /{stride}"), flops, || {
            depthwise::depthwise(&s, &x, &f).unwrap();
        });
    }
    let (a, b) = (tensor(&[128, 128]), tensor(&[128, 512]));
    let sides = [matmul::Side::new(false, false); 2];
    time("matmul 128x128x512", 2.0 * 128.0 * 128.0 * 512.0, || {
        matmul::product(&a, &b, sides, false).unwrap();
    });
}
