//! Float32 products with a few rows and many weights: a classifier's matrix-vector product at
//! batch 1, a pointwise convolution's on one pixel. Such a product reads each weight once and
//! does one multiply-add with it, so its time is the time to stream b; the gemm crate packs b
//! first (a second pass over it) and runs on one thread (EfficientNetB0's 1280 x 1000
//! classifier took 0.40 ms a call at batch 1 against onnxruntime's 0.15). Here each thread
//! streams its own share of b's columns once, 64 columns at a time summed in registers, and
//! every column is summed over k in order on one thread whatever the thread count, so results
//! do not depend on it.

use rayon::prelude::*;

use crate::kernels::math::fast::{Fma, Madd, Separate};
use crate::kernels::nn::gemm::{Product, PARALLEL_WORK};

/// Products with at most this many rows come here (each row streams b again, from cache).
const MAX_ROWS: usize = 4;

/// Sums kept in registers: four AVX-512 registers, eight AVX2 ones.
const WIDE: usize = 64;

/// The granularity of a thread's share of the columns, and the block after the wide ones.
const NARROW: usize = 16;

/// Terms (rows of b) added into the sums between their loads and stores.
const GROUP: usize = 8;

/// Whether `p` takes this path: a few rows, b's and dst's rows contiguous, and b large enough
/// that streaming it is the product's time. Small ones stay with the gemm crate, which was
/// faster on them: EfficientNetB0's squeeze-and-excite 1x1 convolutions (1152 x 48, 48 x
/// 1152) took 0.23-0.27 ms a call in all through it, 0.39-0.40 ms through this path.
pub fn fits(p: &Product) -> bool {
    (1..=MAX_ROWS).contains(&p.m)
        && p.k.saturating_mul(p.n) >= PARALLEL_WORK
        && p.b.cs == 1
        && p.dst.cs == 1
}

/// `dst = a × b` for a product that [`fits`] and whose views lie inside the slices (the
/// caller checked it; a view that did not would leave elements unwritten, never panic).
pub fn run(p: &Product, a: &[f32], b: &[f32], dst: &mut [f32], parallel: bool) {
    // a's rows interleaved, term by term: a step of the sums reads its m values together.
    let x: Vec<f32> = (0..p.k)
        .flat_map(|q| (0..p.m).map(move |i| p.a.offset + i * p.a.rs + q * p.a.cs))
        .map(|at| a.get(at).copied().unwrap_or_default())
        .collect();
    let b = b.get(p.b.offset..).unwrap_or_default();
    // Every product here has enough work for threads (`fits` asks for PARALLEL_WORK weights).
    let threads = rayon::current_num_threads().max(1);
    let span = match parallel && threads > 1 {
        true => p.n.div_ceil(threads).next_multiple_of(NARROW),
        false => p.n,
    };
    let share = |start: usize| {
        let len = span.min(p.n - start);
        let mut out = vec![0f32; p.m * len];
        columns(&x, p.m, b, p.b.rs, start, &mut out);
        (start, len, out)
    };
    let starts = (0..p.n).step_by(span);
    let shares: Vec<_> = if span < p.n {
        starts
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(share)
            .collect()
    } else {
        starts.map(share).collect()
    };
    for (start, len, out) in shares {
        for (i, values) in out.chunks_exact(len).enumerate() {
            let at = p.dst.offset + i * p.dst.rs + start;
            if let Some(d) = dst.get_mut(at..at + len) {
                d.copy_from_slice(values);
            }
        }
    }
}

/// `out[i · len + j] += Σ_q x[q · rows + i] · b[q · ldb + start + j]` for the `rows` rows of
/// x (`len` = out's length / rows), with FMA steps in the FMA versions.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn columns(x: &[f32], rows: usize, b: &[f32], ldb: usize, start: usize, out: &mut [f32]) {
    let g = Geometry {
        rows,
        len: out.len() / rows,
        ldb,
        start,
    };
    if multiversion::target::target_cfg_f!(target_feature = "fma") {
        groups::<Fma>(x, b, g, out);
    } else {
        groups::<Separate>(x, b, g, out);
    }
}

/// Where a share's columns are: `len` columns from `start` in rows of b `ldb` apart, for
/// `rows` rows of a.
#[derive(Clone, Copy)]
struct Geometry {
    rows: usize,
    len: usize,
    ldb: usize,
    start: usize,
}

/// Terms in [`GROUP`]s: each group adds its rows of b into the sums a block of columns at a
/// time. b is read row by row, each row's share contiguous (the hardware prefetchers follow
/// such streams; a block of columns read down all of k, 4 KB apart, missed cache at every
/// row: 13 GB/s a thread where the gemm crate's one thread read 32), and the sums go through
/// cache once a group, not once a term.
#[inline(always)]
fn groups<M: Madd>(x: &[f32], b: &[f32], g: Geometry, out: &mut [f32]) {
    let wide = g.len / WIDE * WIDE;
    let narrow = wide + (g.len - wide) / NARROW * NARROW;
    for (n, terms) in x.chunks(GROUP * g.rows).enumerate() {
        let first = g.start + n * GROUP * g.ldb;
        for col in (0..wide).step_by(WIDE) {
            block::<M, WIDE>(terms, b, g, first + col, out, col);
        }
        // The rest of the 16s as one block: more sums a step, each a chain of its own.
        match (narrow - wide) / NARROW {
            3 => block::<M, { 3 * NARROW }>(terms, b, g, first + wide, out, wide),
            2 => block::<M, { 2 * NARROW }>(terms, b, g, first + wide, out, wide),
            1 => block::<M, NARROW>(terms, b, g, first + wide, out, wide),
            _ => {}
        }
        for col in narrow..g.len {
            block::<M, 1>(terms, b, g, first + col, out, col);
        }
    }
}

/// Terms of one group added into W sums from column `col` of every row of out: b's W values
/// of the group's first term from `at`, each next term's a row of b further.
#[inline(always)]
fn block<M: Madd, const W: usize>(
    terms: &[f32],
    b: &[f32],
    g: Geometry,
    at: usize,
    out: &mut [f32],
    col: usize,
) {
    for r in 0..g.rows {
        let Some(o) = out
            .get_mut(r * g.len + col..)
            .and_then(<[f32]>::first_chunk_mut::<W>)
        else {
            return;
        };
        let mut sums = *o;
        for (t, &v) in terms.iter().skip(r).step_by(g.rows).enumerate() {
            let Some(weights) = b.get(at + t * g.ldb..).and_then(<[f32]>::first_chunk::<W>) else {
                return;
            };
            for (s, &w) in sums.iter_mut().zip(weights) {
                *s = M::madd(v, w, *s);
            }
        }
        *o = sums;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::nn::gemm::{fallback, Layout};

    fn product(m: usize, n: usize, k: usize, a: Layout, b: Layout, dst: Layout) -> Product {
        Product { m, n, k, a, b, dst }
    }

    /// Every width (wide, narrow and single columns, shares split over threads), strided and
    /// offset views of a and dst and a padded b: each element within float32 rounding of the
    /// plain loop's sum (the sums run in the same order; only FMA steps differ).
    #[test]
    fn agrees_with_the_plain_loop() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for (m, n, k) in [
            (1, 1, 270_000),
            (1, 1000, 1280),
            (2, 97, 3000),
            (4, 64, 4100),
            (3, 17, 16000),
        ] {
            let a_layout = Layout {
                offset: 3,
                rs: 1,
                cs: m + 1,
            };
            let b_layout = Layout {
                offset: 5,
                rs: n + 7,
                cs: 1,
            };
            let dst_layout = Layout {
                offset: 2,
                rs: n + 3,
                cs: 1,
            };
            let p = product(m, n, k, a_layout, b_layout, dst_layout);
            assert!(fits(&p), "{m}x{n}x{k}");
            let a: Vec<f32> = (0..3 + k * (m + 1))
                .map(|x| (x % 29) as f32 * 0.125 - 1.5)
                .collect();
            let b: Vec<f32> = (0..5 + k * (n + 7))
                .map(|x| (x % 31) as f32 * 0.0625 - 0.9)
                .collect();
            let size = 2 + m * (n + 3);
            let mut want = vec![-7f32; size];
            fallback(&p, &a, &b, &mut want).unwrap();
            for parallel in [false, true] {
                let mut got = vec![-7f32; size];
                pool.install(|| run(&p, &a, &b, &mut got, parallel));
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    let bound = 1e-5 * (k as f32).sqrt() * w.abs().max(1.0);
                    assert!((g - w).abs() <= bound, "{m}x{n}x{k} [{i}]: {g} vs {w}");
                }
            }
        }
    }

    /// Only large products with a few rows and contiguous rows of b and dst come here.
    #[test]
    fn takes_only_few_rows_with_contiguous_rows() {
        let rows = |n| Layout::rows(0, n);
        let big = PARALLEL_WORK / 64;
        assert!(fits(&product(4, 64, big, rows(big), rows(64), rows(64))));
        assert!(!fits(&product(5, 64, big, rows(big), rows(64), rows(64))));
        assert!(!fits(&product(
            1,
            64,
            big - 1,
            rows(big),
            rows(64),
            rows(64)
        )));
        assert!(!fits(&product(
            1,
            64,
            big,
            rows(big),
            rows(big).t(),
            rows(64)
        )));
        assert!(!fits(&product(
            1,
            64,
            big,
            rows(big),
            rows(64),
            rows(64).t()
        )));
    }
}
