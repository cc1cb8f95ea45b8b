//! The gate arithmetic of the recurrent cells, one batch row at a time, shared by the LSTM cell
//! kernel (rnn.rs) and the whole-loop kernel (rnn_loop.rs). Why here: the gates go through
//! kernels::math::fast's sigmoid and tanh, the same functions as the float32 Sigmoid and Tanh
//! kernels and the fused epilogues, so the engine has one sigmoid and one tanh; and each row is
//! a few plain loops the compiler vectorizes, compiled also for AVX-512 and AVX2 (chosen at run
//! time). Rust never contracts a multiply and an add into an FMA, so every version gives the
//! same bits (the tests compare the dispatched version with a scalar loop).
//!
//! A row whose slices are shorter than its units computes over the shortest (a zip): the
//! kernels check shapes before calling, and nothing here can panic.

use crate::kernels::math::fast::{sigmoid_f32, tanh_f32};

/// One LSTM row with `units = c.len()`: `z` holds the row's `h · U` (`[i f g o]`, `4 · units`)
/// and is overwritten; `xw` is the row's `x · W`, `bias` the bias (both `4 · units`).
/// `c' = σ(f) c + σ(i) tanh(g)` replaces `c`, `h' = σ(o) tanh(c')` is written into `h`.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
pub(crate) fn lstm_row(xw: &[f32], z: &mut [f32], bias: &[f32], c: &mut [f32], h: &mut [f32]) {
    for ((z, &x), &b) in z.iter_mut().zip(xw).zip(bias) {
        *z = (x + *z) + b;
    }
    let units = c.len();
    let (i, rest) = z.split_at(units.min(z.len()));
    let (f, rest) = rest.split_at(units.min(rest.len()));
    let (g, o) = rest.split_at(units.min(rest.len()));
    let gates = i.iter().zip(f).zip(g).zip(o);
    for ((((&i, &f), &g), &o), (c, h)) in gates.zip(c.iter_mut().zip(h.iter_mut())) {
        let next = sigmoid_f32(f) * *c + sigmoid_f32(i) * tanh_f32(g);
        *c = next;
        *h = sigmoid_f32(o) * tanh_f32(next);
    }
}

/// One GRU row (Keras's `reset_after`) with `units = h.len()`: `xw` and `hu` are the row's
/// `x · W` and `h · U` (`[z r n]`, `3 · units`; `hu` is overwritten), `bias` the input and
/// recurrent biases (`2 · 3 · units`). `h' = z h + (1 - z) tanh(x̂_n + r ĥ_n)` replaces `h`.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
pub(crate) fn gru_row(xw: &[f32], hu: &mut [f32], bias: &[f32], h: &mut [f32]) {
    let units = h.len();
    let (input_bias, recurrent_bias) = bias.split_at(bias.len() / 2);
    for (y, &b) in hu.iter_mut().zip(recurrent_bias) {
        *y += b;
    }
    // The update and reset gates, in place: σ((x̂ + b₀) + (ĥ + b₁)).
    let both = (2 * units).min(hu.len());
    let (update_reset, hn) = hu.split_at_mut(both);
    for ((y, &x), &b) in update_reset.iter_mut().zip(xw).zip(input_bias) {
        *y = sigmoid_f32((x + b) + *y);
    }
    let (update, reset) = update_reset.split_at(units.min(both));
    let xn = xw.get(both..).unwrap_or_default();
    let bn = input_bias.get(both..).unwrap_or_default();
    let candidate = xn.iter().zip(bn).zip(reset).zip(hn.iter());
    for ((((&x, &b), &r), &y), (&z, h)) in candidate.zip(update.iter().zip(h.iter_mut())) {
        let n = tanh_f32((x + b) + r * y);
        *h = z * *h + (1.0 - z) * n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(seed: u32, count: usize) -> Vec<f32> {
        crate::kernels::test_util::values(seed, count, 10)
    }

    fn same_bits(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            assert_eq!(x.to_bits(), y.to_bits(), "element {k}: {x:e} vs {y:e}");
        }
    }

    /// The dispatched row (AVX-512 or AVX2 where the machine has them) against the formulas
    /// element by element in scalar code: the same bits. Widths cover full vectors and tails.
    #[test]
    fn lstm_row_matches_scalar_bits() {
        for units in [1, 3, 8, 16, 17, 40] {
            let (xw, hu, bias) = (
                values(1, 4 * units),
                values(2, 4 * units),
                values(3, 4 * units),
            );
            let (c0, h0) = (values(4, units), values(5, units));
            let (mut z, mut c, mut h) = (hu.clone(), c0.clone(), h0.clone());
            lstm_row(&xw, &mut z, &bias, &mut c, &mut h);
            let zs = |gate: usize, col: usize| {
                let at = gate * units + col;
                (xw[at] + hu[at]) + bias[at]
            };
            let (mut c_ref, mut h_ref) = (Vec::new(), Vec::new());
            for (col, &c_prev) in c0.iter().enumerate() {
                let (i, f) = (sigmoid_f32(zs(0, col)), sigmoid_f32(zs(1, col)));
                let (g, o) = (tanh_f32(zs(2, col)), sigmoid_f32(zs(3, col)));
                let next = f * c_prev + i * g;
                c_ref.push(next);
                h_ref.push(o * tanh_f32(next));
            }
            same_bits(&c, &c_ref);
            same_bits(&h, &h_ref);
        }
    }

    #[test]
    fn gru_row_matches_scalar_bits() {
        for units in [1, 3, 8, 16, 17, 40] {
            let (xw, hu, bias) = (
                values(1, 3 * units),
                values(2, 3 * units),
                values(3, 6 * units),
            );
            let h0 = values(4, units);
            let (mut scratch, mut h) = (hu.clone(), h0.clone());
            gru_row(&xw, &mut scratch, &bias, &mut h);
            let x = |at: usize| xw[at] + bias[at];
            let y = |at: usize| hu[at] + bias[3 * units + at];
            let h_ref: Vec<f32> = (0..units)
                .map(|col| {
                    let z = sigmoid_f32(x(col) + y(col));
                    let r = sigmoid_f32(x(units + col) + y(units + col));
                    let n = tanh_f32(x(2 * units + col) + r * y(2 * units + col));
                    z * h0[col] + (1.0 - z) * n
                })
                .collect();
            same_bits(&h, &h_ref);
        }
    }

    /// Short slices compute over what there is, without a panic.
    #[test]
    fn short_rows_do_not_panic() {
        let (mut z, mut c, mut h) = (vec![0.5; 3], vec![0.1; 2], vec![0.2; 2]);
        lstm_row(&[1.0; 5], &mut z, &[0.0; 1], &mut c, &mut h);
        let mut hu = vec![0.5; 4];
        gru_row(&[1.0; 2], &mut hu, &[0.0; 3], &mut h);
    }
}
