//! RFFT: the discrete Fourier transform of real signals along the innermost dimension, its
//! first fft_length / 2 + 1 bins (the rest mirror them). The signal is cropped to fft_length
//! (TensorFlow crops but does not pad: tf.signal pads before calling the op, so a shorter
//! signal is an error).
//!
//! The transforms are the `realfft` crate's (over `rustfft`), planned once per length and
//! kept by the kernel, computed in f64 and rounded once to complex64 for float32 signals: at
//! least as accurate as TensorFlow's single-precision transform, and what the reference
//! engine (numpy.fft) computes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::util::{int_values, make};
use crate::tensor::{element_count, Storage, Tensor};

/// The forward real transforms a kernel has planned, by length.
#[derive(Default)]
struct Plans(Mutex<HashMap<usize, Arc<dyn RealToComplex<f64>>>>);

impl Plans {
    fn forward(&self, n: usize) -> Arc<dyn RealToComplex<f64>> {
        // A poisoned lock only means another call panicked mid-insert; the map is still valid.
        let mut plans = self.0.lock().unwrap_or_else(|e| e.into_inner());
        plans
            .entry(n)
            .or_insert_with(|| RealFftPlanner::<f64>::new().plan_fft_forward(n))
            .clone()
    }
}

pub fn rfft(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let plans = Plans::default();
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let lengths = tensor_input(inputs, 1)?;
        one(rfft_of(&x, &lengths, &plans)?)
    }))
}

/// fft_length's one element.
fn fft_length(t: &Tensor, op: &str) -> KResult<usize> {
    let values = int_values(t, "fft_length")?;
    match (t.shape(), values.as_slice()) {
        ([1], &[n]) => usize::try_from(n)
            .map_err(|_| fail(format!("{op}: fft_length must be non-negative, got {n}"))),
        _ => Err(fail(format!(
            "{op}: fft_length must be a vector of 1 element, got shape {:?}",
            t.shape()
        ))),
    }
}

fn rfft_of(x: &Tensor, lengths: &Tensor, plans: &Plans) -> KResult<Tensor> {
    let Some((&len, batch)) = x.shape().split_last() else {
        return Err(fail(format!(
            "RFFT: input must be at least rank 1 but got: {:?}",
            x.shape()
        )));
    };
    let n = fft_length(lengths, "RFFT")?;
    if len < n {
        return Err(fail(format!(
            "RFFT: Input dimension {} must have length of at least {n} but got: {len}",
            batch.len()
        )));
    }
    let bins = if n == 0 { 0 } else { n / 2 + 1 };
    let rows = element_count(batch).unwrap_or(0);
    let mut shape = batch.to_vec();
    shape.push(bins);
    let storage = match x.storage() {
        Storage::Float32(v) => Storage::Complex64(
            spectra(v, len, n, rows * bins, plans)?
                .into_iter()
                .map(|z| [z.re as f32, z.im as f32])
                .collect(),
        ),
        Storage::Float64(v) => Storage::Complex128(
            spectra(v, len, n, rows * bins, plans)?
                .into_iter()
                .map(|z| [z.re, z.im])
                .collect(),
        ),
        _ => {
            return Err(fail(format!(
                "RFFT takes float32 or float64 signals, got {}",
                x.dtype()
            )))
        }
    };
    make(shape, storage)
}

/// The first n/2 + 1 bins of the transform of the first n samples of each row of `len`
/// samples, `count` bins in all.
fn spectra<T: Copy + Into<f64>>(
    values: &[T],
    len: usize,
    n: usize,
    count: usize,
    plans: &Plans,
) -> KResult<Vec<Complex<f64>>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let plan = plans.forward(n);
    let mut input = plan.make_input_vec();
    let mut output = plan.make_output_vec();
    let mut scratch = plan.make_scratch_vec();
    let mut out = Vec::with_capacity(count);
    for row in values.chunks_exact(len) {
        for (slot, &v) in input.iter_mut().zip(row) {
            *slot = v.into();
        }
        plan.process_with_scratch(&mut input, &mut output, &mut scratch)
            .map_err(|e| fail(format!("RFFT: {e}")))?;
        out.extend_from_slice(&output);
    }
    Ok(out)
}
