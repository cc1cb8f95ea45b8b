//! The gate arithmetic of the recurrent cells, one time step over the whole batch, shared by
//! the LSTM cell kernel (rnn.rs) and the whole-loop kernel (rnn_loop.rs). Why here: the gates
//! go through kernels::math::fast's sigmoid and tanh, the same functions as the float32 Sigmoid
//! and Tanh kernels and the fused epilogues, so the engine has one sigmoid and one tanh.
//!
//! Each gate's pre-activations are first gathered by kind across the batch rows (scratch laid
//! out `[kind, row, unit]`), so the activations run as a few long loops the compiler
//! vectorizes, compiled also for AVX-512 and AVX2 (chosen at run time). Row by row, a layer of
//! 8 units filled no 16-lane vector and ran in scalar code (half of a stacked LSTM's time).
//! The FMA versions take fast's FMA steps (`Fma`), as the Sigmoid and Tanh kernels do there;
//! the gate sums and products round as written (the tests compare the dispatched version with
//! a scalar loop, bit for bit).
//!
//! None where a slice is shorter than the shapes say: the kernels check shapes before calling,
//! and nothing here can panic.

use crate::kernels::math::fast::{sigmoid, tanh, Fma, Madd, Separate};

/// One LSTM step: `xw` and `hu` are each batch row's `x · W` and `h · U` (`[rows, 4 · units]`,
/// `[i f g o]`), `bias` the bias (`4 · units`). `c' = σ(f) c + σ(i) tanh(g)` replaces `c`,
/// `h' = σ(o) tanh(c')` replaces `h` (both `[rows, units]`).
pub(crate) fn lstm_step(
    units: usize,
    [xw, hu, bias]: [&[f32]; 3],
    c: &mut [f32],
    h: &mut [f32],
    planar: &mut Vec<f32>,
) -> Option<()> {
    let count = gather(planar, units, c.len(), 4, |row, kind, dst| {
        let at = (row * 4 + kind) * units;
        let b = bias.get(kind * units..(kind + 1) * units)?;
        let (x, y) = (xw.get(at..at + units)?, hu.get(at..at + units)?);
        for (((d, &x), &y), &b) in dst.iter_mut().zip(x).zip(y).zip(b) {
            *d = (x + y) + b;
        }
        Some(())
    })?;
    let (i, rest) = planar.split_at(count);
    let (f, rest) = rest.split_at(count);
    let (g, o) = rest.split_at(count);
    lstm_cells([i, f, g, o], c, h);
    Some(())
}

/// One GRU step (Keras's `reset_after`): `xw` and `hu` are each batch row's `x · W` and `h · U`
/// (`[rows, 3 · units]`, `[z r n]`), `bias` the input and recurrent biases (`2 · 3 · units`).
/// With `x̂ = x·W + b₀` and `ĥ = h·U + b₁`: `z = σ(x̂_z + ĥ_z)`, `r = σ(x̂_r + ĥ_r)`,
/// `h' = z h + (1 - z) tanh(x̂_n + r ĥ_n)` replaces `h` (`[rows, units]`).
pub(crate) fn gru_step(
    units: usize,
    [xw, hu, bias]: [&[f32]; 3],
    h: &mut [f32],
    planar: &mut Vec<f32>,
) -> Option<()> {
    let gates = 3 * units;
    let count = gather(planar, units, h.len(), 4, |row, kind, dst| {
        // Kinds: the update and reset sums, then the candidate's input and recurrent parts.
        let gate = kind.min(2) * units;
        let at = row * gates + gate;
        let (x, b0) = (xw.get(at..at + units)?, bias.get(gate..gate + units)?);
        let (y, b1) = (
            hu.get(at..at + units)?,
            bias.get(gates + gate..gates + gate + units)?,
        );
        let values = dst.iter_mut().zip(x.iter().zip(b0)).zip(y.iter().zip(b1));
        for ((d, (&x, &b0)), (&y, &b1)) in values {
            *d = match kind {
                2 => x + b0,
                3 => y + b1,
                _ => (x + b0) + (y + b1),
            };
        }
        Some(())
    })?;
    let (z, rest) = planar.split_at(count);
    let (r, rest) = rest.split_at(count);
    let (xn, hn) = rest.split_at(count);
    gru_cells([z, r, xn, hn], h);
    Some(())
}

/// Fills `planar` with `kinds` blocks of `[rows, units]` (`rows = len / units`), row `r` of
/// kind `k` by `fill(r, k, dst)`; returns the block length `rows · units`.
fn gather(
    planar: &mut Vec<f32>,
    units: usize,
    len: usize,
    kinds: usize,
    mut fill: impl FnMut(usize, usize, &mut [f32]) -> Option<()>,
) -> Option<usize> {
    let count = len.checked_div(units)?.checked_mul(units)?;
    planar.clear();
    planar.resize(kinds * count, 0.0);
    for (kind, block) in planar.chunks_exact_mut(count.max(1)).enumerate() {
        for (row, dst) in block.chunks_exact_mut(units).enumerate() {
            fill(row, kind, dst)?;
        }
    }
    Some(count)
}

/// The LSTM cells of a step from their gathered pre-activations.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn lstm_cells(gates: [&[f32]; 4], c: &mut [f32], h: &mut [f32]) {
    if multiversion::target::target_cfg_f!(target_feature = "fma") {
        lstm_with::<Fma>(gates, c, h);
    } else {
        lstm_with::<Separate>(gates, c, h);
    }
}

#[inline(always)]
fn lstm_with<M: Madd>([i, f, g, o]: [&[f32]; 4], c: &mut [f32], h: &mut [f32]) {
    let gates = i.iter().zip(f).zip(g).zip(o);
    for ((((&i, &f), &g), &o), (c, h)) in gates.zip(c.iter_mut().zip(h.iter_mut())) {
        let next = sigmoid::<M>(f) * *c + sigmoid::<M>(i) * tanh::<M>(g);
        *c = next;
        *h = sigmoid::<M>(o) * tanh::<M>(next);
    }
}

/// The GRU cells of a step from their gathered pre-activations.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn gru_cells(gates: [&[f32]; 4], h: &mut [f32]) {
    if multiversion::target::target_cfg_f!(target_feature = "fma") {
        gru_with::<Fma>(gates, h);
    } else {
        gru_with::<Separate>(gates, h);
    }
}

#[inline(always)]
fn gru_with<M: Madd>([z, r, xn, hn]: [&[f32]; 4], h: &mut [f32]) {
    let gates = z.iter().zip(r).zip(xn).zip(hn);
    for ((((&z, &r), &x), &y), h) in gates.zip(h.iter_mut()) {
        let (z, r) = (sigmoid::<M>(z), sigmoid::<M>(r));
        let n = tanh::<M>(x + r * y);
        *h = z * *h + (1.0 - z) * n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::math::fast::{as_here, Sigmoid, Tanh};

    fn sigmoid_f32(x: f32) -> f32 {
        as_here(&Sigmoid, x)
    }

    fn tanh_f32(x: f32) -> f32 {
        as_here(&Tanh, x)
    }

    fn values(seed: u32, count: usize) -> Vec<f32> {
        crate::kernels::test_util::values(seed, count, 10)
    }

    fn same_bits(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            assert_eq!(x.to_bits(), y.to_bits(), "element {k}: {x:e} vs {y:e}");
        }
    }

    /// The dispatched step (AVX-512 or AVX2 where the machine has them) against the formulas
    /// element by element in scalar code: the same bits. Widths cover full vectors and tails.
    #[test]
    fn lstm_step_matches_scalar_bits() {
        for (rows, units) in [(1, 1), (1, 17), (3, 3), (2, 8), (32, 8), (5, 16), (4, 40)] {
            let gates = 4 * units;
            let (xw, hu, bias) = (
                values(1, rows * gates),
                values(2, rows * gates),
                values(3, gates),
            );
            let (c0, h0) = (values(4, rows * units), values(5, rows * units));
            let (mut c, mut h, mut planar) = (c0.clone(), h0.clone(), Vec::new());
            lstm_step(units, [&xw, &hu, &bias], &mut c, &mut h, &mut planar).unwrap();
            let zs = |row: usize, gate: usize, col: usize| {
                let at = gate * units + col;
                (xw[row * gates + at] + hu[row * gates + at]) + bias[at]
            };
            let (mut c_ref, mut h_ref) = (Vec::new(), Vec::new());
            for (k, &c_prev) in c0.iter().enumerate() {
                let (row, col) = (k / units, k % units);
                let (i, f) = (sigmoid_f32(zs(row, 0, col)), sigmoid_f32(zs(row, 1, col)));
                let (g, o) = (tanh_f32(zs(row, 2, col)), sigmoid_f32(zs(row, 3, col)));
                let next = f * c_prev + i * g;
                c_ref.push(next);
                h_ref.push(o * tanh_f32(next));
            }
            same_bits(&c, &c_ref);
            same_bits(&h, &h_ref);
        }
    }

    #[test]
    fn gru_step_matches_scalar_bits() {
        for (rows, units) in [(1, 1), (1, 17), (3, 3), (2, 8), (32, 6), (5, 16), (4, 40)] {
            let gates = 3 * units;
            let (xw, hu, bias) = (
                values(1, rows * gates),
                values(2, rows * gates),
                values(3, 2 * gates),
            );
            let h0 = values(4, rows * units);
            let (mut h, mut planar) = (h0.clone(), Vec::new());
            gru_step(units, [&xw, &hu, &bias], &mut h, &mut planar).unwrap();
            let x = |row: usize, at: usize| xw[row * gates + at] + bias[at];
            let y = |row: usize, at: usize| hu[row * gates + at] + bias[gates + at];
            let h_ref: Vec<f32> = (0..rows * units)
                .map(|k| {
                    let (row, col) = (k / units, k % units);
                    let z = sigmoid_f32(x(row, col) + y(row, col));
                    let r = sigmoid_f32(x(row, units + col) + y(row, units + col));
                    let n = tanh_f32(x(row, 2 * units + col) + r * y(row, 2 * units + col));
                    z * h0[k] + (1.0 - z) * n
                })
                .collect();
            same_bits(&h, &h_ref);
        }
    }

    /// Short slices or no units are None, without a panic.
    #[test]
    fn short_slices_are_none() {
        let (mut c, mut h, mut planar) = (vec![0.1; 2], vec![0.2; 2], Vec::new());
        let short = [&[1.0; 8][..], &[0.5; 3][..], &[0.0; 8][..]];
        assert!(lstm_step(2, short, &mut c, &mut h, &mut planar).is_none());
        assert!(gru_step(2, [&[1.0; 2], &[0.5; 6], &[0.0; 3]], &mut h, &mut planar).is_none());
        assert!(lstm_step(0, short, &mut c, &mut h, &mut planar).is_none());
    }
}
