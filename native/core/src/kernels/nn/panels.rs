//! A constant float32 right-hand side (a convolution's filter as a k × n matrix) kept packed
//! between calls: 64-column panels, each k rows of 64 contiguous values (the last panel
//! padded with zeros to whole vectors). The gemm crate packs the filter of every product
//! with more than 48 rows anew on each call; for a product of a few dozen rows (a 7x7 layer
//! at batch 1) that copy costs as much as a third of the product. Packed once, when the plan
//! hands the kernel its filter, the product reads each panel row as four vectors in place.
//!
//! Products with few rows run an AVX-512 block of 6 rows by up to 64 columns, 24 sums in
//! registers, 256 steps of the inner dimension a pass (so that a pass's panel rows and left
//! columns stay in cache), the threads splitting the columns; any other product (more rows,
//! or a CPU without AVX-512) goes to the gemm crate one panel at a time. This is one of the nn
//! family's modules with `unsafe`: the block reads and writes through raw pointers, every
//! bound checked once before it starts (see [`Panels::product`]).

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::engine::kernel::{fail, KResult};
use crate::kernels::nn::gemm::{self, Layout, Product, PARALLEL_WORK};
use crate::kernels::nn::output::zeroed;

/// Columns a panel: four AVX-512 vectors of float32.
pub const WIDTH: usize = 64;

/// float32 values a vector.
const LANES: usize = 16;

/// Rows a block: 6 rows by 4 vectors is 24 sums, which with 4 panel loads and a broadcast
/// fill 29 of AVX-512's 32 registers.
const BLOCK_ROWS: usize = 6;

/// Steps of the inner dimension a pass of the blocks takes: its panel rows (64 KB) and the
/// left side's columns stay in cache over the pass, and the sums are written and read back
/// once a pass.
const DEPTH: usize = 256;

/// Products with at most this many rows run the block; more go to the gemm crate a panel at a
/// time (the crate's own blocking is as fast there, and a tile of a deep layer's convolution
/// has at most 192 rows anyway). Measured on a 2-vCPU Xeon with AVX-512 (`bench_panels`
/// below, the best of 5 rounds of 20 calls), GFLOP/s of the crate on the unpacked filter
/// against the panels, two threads: 49 rows 174-193 vs 200-219, 131-196 rows 198-215 vs
/// 205-221, 784 rows 223 vs 215; one thread 49 rows 88-97 vs 110-112.
pub const MAX_BLOCK_ROWS: usize = 200;

/// A k × n float32 matrix as 64-column panels.
pub struct Panels {
    k: usize,
    n: usize,
    data: Vec<f32>,
}

impl Panels {
    /// Packs the row-major `k × n` `matrix`; None when its length is not `k · n`, either is
    /// zero, or the memory cannot be had.
    pub fn pack(matrix: &[f32], k: usize, n: usize) -> Option<Panels> {
        if k == 0 || n == 0 || k.checked_mul(n) != Some(matrix.len()) {
            return None;
        }
        let mut data = Vec::new();
        data.try_reserve_exact(k.checked_mul(n.next_multiple_of(LANES))?)
            .ok()?;
        for start in (0..n).step_by(WIDTH) {
            let cols = WIDTH.min(n - start);
            let pad = cols.next_multiple_of(LANES) - cols;
            for row in matrix.chunks_exact(n) {
                data.extend_from_slice(&row[start..start + cols]);
                data.extend(std::iter::repeat_n(0.0, pad));
            }
        }
        Some(Panels { k, n, data })
    }

    /// The row-major k × n matrix again, for a call the panels do not serve.
    pub fn matrix(&self) -> Vec<f32> {
        let mut out = vec![0.0; self.k * self.n];
        for p in 0..self.n.div_ceil(WIDTH) {
            let (start, width) = (p * WIDTH, self.width(p));
            let cols = WIDTH.min(self.n - start);
            let panel = &self.data[self.offset(p)..self.offset(p) + self.k * width];
            for (row, values) in out.chunks_exact_mut(self.n).zip(panel.chunks_exact(width)) {
                row[start..start + cols].copy_from_slice(&values[..cols]);
            }
        }
        out
    }

    /// Whether these are the panels of the row-major k × n `matrix`, bit for bit (without
    /// unpacking them).
    pub fn holds(&self, matrix: &[f32]) -> bool {
        if matrix.len() != self.k * self.n {
            return false;
        }
        (0..self.n.div_ceil(WIDTH)).all(|p| {
            let (start, width) = (p * WIDTH, self.width(p));
            let cols = WIDTH.min(self.n - start);
            let panel = &self.data[self.offset(p)..self.offset(p) + self.k * width];
            matrix
                .chunks_exact(self.n)
                .zip(panel.chunks_exact(width))
                .all(|(row, values)| {
                    let ours = &values[..cols];
                    row[start..start + cols]
                        .iter()
                        .zip(ours)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
                })
        })
    }

    /// Panel `p`'s width in the packed data: 64, or the last panel's columns rounded up to
    /// whole vectors.
    fn width(&self, p: usize) -> usize {
        WIDTH.min(self.n - p * WIDTH).next_multiple_of(LANES)
    }

    /// Where panel `p` starts (every earlier panel is 64 wide).
    fn offset(&self, p: usize) -> usize {
        p * WIDTH * self.k
    }

    /// `dst (m × n, row-major) = a × self`, where row i of a is the k values from
    /// `a.offset + i · a.rs` (`a.cs` must be 1); `dst` holds exactly m · n elements and comes
    /// back initialized. `parallel` lets a large product use rayon's threads.
    pub fn product<'d>(
        &self,
        a: &[f32],
        layout: Layout,
        m: usize,
        dst: &'d mut [MaybeUninit<f32>],
        parallel: bool,
    ) -> KResult<&'d mut [f32]> {
        self.check(a.len(), layout, m, dst.len())?;
        if m == 0 {
            return Ok(zeroed(dst));
        }
        if m <= MAX_BLOCK_ROWS && blocks_available() {
            let threads = match parallel && m * self.n * self.k >= PARALLEL_WORK {
                true => rayon::current_num_threads().max(1),
                false => 1,
            };
            let out = Out(dst.as_mut_ptr().cast::<f32>());
            let vectors = self.n.div_ceil(LANES);
            let share = |t: usize| {
                let columns = t * vectors / threads..(t + 1) * vectors / threads;
                // SAFETY: `check` proved every row of a (k values from its offset) and all
                // m × n elements of dst lie inside their slices; the threads' vector ranges
                // are disjoint, so they write disjoint elements of dst, and dst is borrowed
                // mutably until every share has returned.
                unsafe { self.blocks(a, layout, m, &out, columns) }
            };
            match threads {
                1 => share(0),
                _ => (0..threads).into_par_iter().for_each(share),
            }
            // SAFETY: the shares' vector ranges cover 0..n/16 rounded up, and each block
            // writes every column of its vectors below n for every row below m, so all m · n
            // elements are written; `MaybeUninit<f32>` has f32's layout.
            return Ok(unsafe {
                &mut *(std::ptr::from_mut::<[MaybeUninit<f32>]>(dst) as *mut [f32])
            });
        }
        let dst = zeroed(dst);
        for p in 0..self.n.div_ceil(WIDTH) {
            let product = Product {
                m,
                n: WIDTH.min(self.n - p * WIDTH),
                k: self.k,
                a: layout,
                b: Layout::rows(self.offset(p), self.width(p)),
                dst: Layout::rows(p * WIDTH, self.n),
            };
            gemm::fast(&product, a, &self.data, dst, parallel)?;
        }
        Ok(dst)
    }

    fn check(&self, a_len: usize, layout: Layout, m: usize, dst_len: usize) -> KResult<()> {
        let bad = |what: &str| {
            Err(fail(format!(
                "internal: panel product of {m} rows by {} x {}: {what}",
                self.k, self.n
            )))
        };
        if layout.cs != 1 {
            return bad("the left side's columns are not contiguous");
        }
        if m.checked_mul(self.n) != Some(dst_len) {
            return bad("the output does not hold the product");
        }
        if m == 0 {
            return Ok(());
        }
        let end = (m - 1)
            .checked_mul(layout.rs)
            .and_then(|d| d.checked_add(layout.offset))
            .and_then(|d| d.checked_add(self.k));
        match end {
            Some(end) if end <= a_len => Ok(()),
            _ => bad("the left side is shorter than its rows"),
        }
    }

    /// The product's columns in `vectors` (16 columns each, the last one partial when n is
    /// not a multiple of 16), every row, in blocks of 6 rows by at most one panel.
    ///
    /// # Safety
    /// `check` must have passed for (a, layout, m) and the m × n buffer `out` points to, and
    /// nothing else may write that buffer's columns in `vectors` meanwhile.
    unsafe fn blocks(
        &self,
        a: &[f32],
        layout: Layout,
        m: usize,
        out: &Out,
        vectors: std::ops::Range<usize>,
    ) {
        for depth in (0..self.k).step_by(DEPTH) {
            let steps = DEPTH.min(self.k - depth);
            // SAFETY: the caller's contract, for rows depth..depth + steps of the product.
            unsafe { self.blocks_over(a, layout, m, out, vectors.clone(), (depth, steps)) };
        }
    }

    /// [`Panels::blocks`] for `steps` of the inner dimension from `depth`: the first span
    /// writes the sums, later ones add to them.
    ///
    /// # Safety
    /// As for [`Panels::blocks`], with `depth + steps <= k`.
    unsafe fn blocks_over(
        &self,
        a: &[f32],
        layout: Layout,
        m: usize,
        out: &Out,
        vectors: std::ops::Range<usize>,
        (depth, steps): (usize, usize),
    ) {
        let per_panel = WIDTH / LANES;
        let mut v = vectors.start;
        while v < vectors.end {
            let (p, first) = (v / per_panel, v % per_panel);
            let count = (per_panel - first).min(vectors.end - v);
            let columns = (v * LANES, ((v + count) * LANES).min(self.n));
            let last = columns.1 - (v + count - 1) * LANES;
            let mask = if last == LANES {
                u16::MAX
            } else {
                (1u16 << last) - 1
            };
            let panel = self.offset(p) + first * LANES;
            for r in (0..m).step_by(BLOCK_ROWS) {
                let rows = BLOCK_ROWS.min(m - r);
                let width = self.width(p);
                let tile = Tile {
                    a: a[layout.offset + r * layout.rs + depth..].as_ptr(),
                    a_rs: layout.rs,
                    k: steps,
                    b: self.data[panel + depth * width..].as_ptr(),
                    b_rs: width,
                    // SAFETY: row r and column v·16 are inside the m × n buffer (r < m,
                    // v·16 < n), so the offset stays inside it.
                    dst: unsafe { out.0.add(r * self.n + columns.0) },
                    dst_rs: self.n,
                    mask,
                    add: depth > 0,
                };
                // SAFETY: the tile's rows r..r+rows of a are inside a (check), its panel rows
                // hold `count` whole vectors from `first` (the panel is `width(p)` wide, a
                // multiple of 16 covering them), and its writes are rows r..r+rows, columns
                // columns.0..columns.1 of the buffer (the mask keeps the last vector's lanes
                // below n), which the caller lends this share alone.
                unsafe { tile.run(rows, count) };
            }
            v += count;
        }
    }
}

/// Whether this CPU runs the AVX-512 block.
fn blocks_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The output buffer, shared by the threads' shares of columns, which write disjoint elements
/// through it.
struct Out(*mut f32);

// SAFETY: the shares write disjoint elements through the pointer (see `product`), and the
// buffer outlives the parallel loop that shares it.
unsafe impl Send for Out {}
// SAFETY: as for Send: only disjoint writes go through the shared pointer.
unsafe impl Sync for Out {}

/// One block of the product: up to 6 rows of a (k values each, rows `a_rs` apart) times k
/// panel rows (`b_rs` apart) of up to 4 vectors, into dst (rows `dst_rs` apart; the last
/// vector's lanes outside `mask` left alone).
struct Tile {
    a: *const f32,
    a_rs: usize,
    k: usize,
    b: *const f32,
    b_rs: usize,
    dst: *mut f32,
    dst_rs: usize,
    mask: u16,
    /// Add to what dst holds (a later span of the inner dimension) instead of writing it.
    add: bool,
}

impl Tile {
    /// # Safety
    /// `rows` (1..=6) rows of k values from `a`, k rows of `vectors` (1..=4) vectors from `b`,
    /// and `rows` rows of `vectors` vectors from `dst` (the last vector's masked lanes only)
    /// must be inside their buffers, and the dst elements written by nothing else meanwhile.
    /// The CPU must have AVX-512.
    unsafe fn run(&self, rows: usize, vectors: usize) {
        macro_rules! sized {
            ($($r:literal, $v:literal);*) => {
                match (rows, vectors) {
                    // SAFETY: the caller's contract, with (rows, vectors) as the sizes.
                    $(($r, $v) => unsafe { simd::block::<$r, $v>(self) },)*
                    _ => {}
                }
            };
        }
        sized!(1, 1; 1, 2; 1, 3; 1, 4; 2, 1; 2, 2; 2, 3; 2, 4; 3, 1; 3, 2; 3, 3; 3, 4;
               4, 1; 4, 2; 4, 3; 4, 4; 5, 1; 5, 2; 5, 3; 5, 4; 6, 1; 6, 2; 6, 3; 6, 4);
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::{
        __m512, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps,
        _mm512_set1_ps, _mm512_setzero_ps, _mm512_storeu_ps,
    };

    use super::Tile;

    /// R rows by V vectors of the tile: the sums stay in registers over all k steps, each step
    /// loading V vectors of the panel row and broadcasting each row's value once.
    ///
    /// # Safety
    /// As for [`Tile::run`] with R rows and V vectors.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn block<const R: usize, const V: usize>(t: &Tile) {
        let mut sums = [[_mm512_setzero_ps(); V]; R];
        if t.add {
            for (r, row) in sums.iter_mut().enumerate() {
                for (v, sum) in row.iter_mut().enumerate() {
                    let mask = if v + 1 == V { t.mask } else { u16::MAX };
                    // SAFETY: row r's vector v of dst, its lanes in `mask`, are inside the
                    // buffer, lent to this tile and written by an earlier span (the caller's
                    // contract); the masked load reads no other lane.
                    *sum = unsafe { _mm512_maskz_loadu_ps(mask, t.dst.add(r * t.dst_rs + v * 16)) };
                }
            }
        }
        for q in 0..t.k {
            // SAFETY: panel row q's V vectors and each row's q-th value are inside their
            // buffers (the caller's contract: k rows of V vectors, R rows of k values).
            unsafe {
                let b = t.b.add(q * t.b_rs);
                let mut panel = [_mm512_setzero_ps(); V];
                for (v, value) in panel.iter_mut().enumerate() {
                    *value = _mm512_loadu_ps(b.add(v * 16));
                }
                for (r, row) in sums.iter_mut().enumerate() {
                    let x = _mm512_set1_ps(*t.a.add(r * t.a_rs + q));
                    for (sum, value) in row.iter_mut().zip(panel) {
                        *sum = _mm512_fmadd_ps(x, value, *sum);
                    }
                }
            }
        }
        for (r, row) in sums.iter().enumerate() {
            for (v, sum) in row.iter().enumerate() {
                // SAFETY: row r's vector v of dst is inside the buffer and lent to this tile
                // (the caller's contract); the last vector stores only the masked lanes.
                unsafe {
                    let at = t.dst.add(r * t.dst_rs + v * 16);
                    store(at, *sum, if v + 1 == V { t.mask } else { u16::MAX });
                }
            }
        }
    }

    /// `value` to 16 floats at `at`, only the lanes in `mask` when it is not full.
    ///
    /// # Safety
    /// The lanes stored must be inside one buffer that nothing else uses meanwhile.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store(at: *mut f32, value: __m512, mask: u16) {
        // SAFETY: the caller's contract.
        unsafe {
            match mask {
                u16::MAX => _mm512_storeu_ps(at, value),
                _ => _mm512_mask_storeu_ps(at, mask, value),
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod simd {
    use super::Tile;

    /// Never called: the block runs only where AVX-512 is detected.
    pub(super) unsafe fn block<const R: usize, const V: usize>(_: &Tile) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| {
                ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0
            })
            .collect()
    }

    /// The product in f64 from the unpacked matrix.
    fn reference(a: &[f32], layout: Layout, m: usize, b: &[f32], k: usize, n: usize) -> Vec<f64> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for q in 0..k {
                let x = f64::from(a[layout.offset + i * layout.rs + q]);
                for j in 0..n {
                    out[i * n + j] += x * f64::from(b[q * n + j]);
                }
            }
        }
        out
    }

    fn run(panels: &Panels, a: &[f32], layout: Layout, m: usize, parallel: bool) -> Vec<f32> {
        let mut dst = Vec::with_capacity(m * panels.n);
        let out = panels
            .product(
                a,
                layout,
                m,
                &mut dst.spare_capacity_mut()[..m * panels.n],
                parallel,
            )
            .unwrap()
            .to_vec();
        out
    }

    #[test]
    fn products_match_the_unpacked_matrix_for_every_width_and_block() {
        for &(m, k, n) in &[
            (1, 1, 1),
            (5, 3, 17),
            (6, 8, 64),
            (7, 9, 80),
            (13, 20, 130),
            (49, 64, 200),
            (49, 300, 512),
            (250, 24, 48),
        ] {
            let b = values(k * n, 7);
            let panels = Panels::pack(&b, k, n).unwrap();
            assert_eq!(panels.matrix(), b);
            assert!(panels.holds(&b));
            let mut other = b.clone();
            other[k * n - 1] = -other[k * n - 1] - 1.0;
            assert!(!panels.holds(&other) && !panels.holds(&b[1..]));
            // Rows further apart than k, from an offset: a strided view of a larger buffer.
            let layout = Layout {
                offset: 3,
                rs: k + 5,
                cs: 1,
            };
            let a = values(3 + m * (k + 5), 11);
            let want = reference(&a, layout, m, &b, k, n);
            for parallel in [false, true] {
                let got = run(&panels, &a, layout, m, parallel);
                for (g, w) in got.iter().zip(&want) {
                    let bound = 1e-5 * (k as f64).sqrt() * (1.0 + w.abs());
                    assert!(
                        (f64::from(*g) - w).abs() <= bound,
                        "{m}x{k}x{n}: {g} vs {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn bad_shapes_are_errors_not_reads_out_of_bounds() {
        assert!(Panels::pack(&[1.0; 6], 2, 4).is_none());
        assert!(Panels::pack(&[], 0, 4).is_none());
        let panels = Panels::pack(&values(12, 1), 3, 4).unwrap();
        let mut dst = vec![MaybeUninit::new(0.0f32); 8];
        let short = panels.product(&[0.0; 5], Layout::rows(0, 3), 2, &mut dst, false);
        assert!(short.unwrap_err().to_string().contains("shorter"));
        let wrong = panels.product(&[0.0; 6], Layout::rows(0, 3), 2, &mut dst[..7], false);
        assert!(wrong.unwrap_err().to_string().contains("does not hold"));
        let strided = Layout {
            offset: 0,
            rs: 3,
            cs: 2,
        };
        let columns = panels.product(&[0.0; 12], strided, 2, &mut dst, false);
        assert!(columns.unwrap_err().to_string().contains("contiguous"));
    }

    /// GFLOP/s of the panels against the gemm crate on the unpacked filter, one thread then
    /// rayon's (ResNet50's products at 7x7 and 14x14, and the tiles of its deeper layers):
    /// `cargo test --release -p savedmodel-core --lib bench_panels -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn bench_panels() {
        for &(m, k, n) in &[
            (49, 2048, 512),
            (49, 512, 2048),
            (49, 4608, 512),
            (49, 1024, 2048),
            (196, 1024, 256),
            (196, 2304, 256),
            (192, 2048, 512),
            (131, 512, 128),
            (784, 512, 128),
        ] {
            let (a, b) = (values(m * k, 3), values(k * n, 5));
            let panels = Panels::pack(&b, k, n).unwrap();
            let flops = 2.0 * (m * k * n) as f64;
            for parallel in [false, true] {
                // The best of 5 rounds of 20 calls: this machine's noise only slows.
                let time = |f: &dyn Fn()| {
                    f();
                    let round = || {
                        let start = std::time::Instant::now();
                        for _ in 0..20 {
                            f();
                        }
                        flops * 20.0 / start.elapsed().as_secs_f64() / 1e9
                    };
                    (0..5).map(|_| round()).fold(0.0, f64::max)
                };
                let mut dst = vec![0.0f32; m * n];
                let crate_rate = {
                    let product = Product {
                        m,
                        n,
                        k,
                        a: Layout::rows(0, k),
                        b: Layout::rows(0, n),
                        dst: Layout::rows(0, n),
                    };
                    let dst = std::cell::RefCell::new(&mut dst);
                    time(&|| gemm::fast(&product, &a, &b, &mut dst.borrow_mut(), parallel).unwrap())
                };
                let mut out: Vec<f32> = Vec::with_capacity(m * n);
                let panel_rate = {
                    let out = std::cell::RefCell::new(&mut out);
                    time(&|| {
                        let mut out = out.borrow_mut();
                        let spare = &mut out.spare_capacity_mut()[..m * n];
                        panels
                            .product(&a, Layout::rows(0, k), m, spare, parallel)
                            .unwrap();
                    })
                };
                println!(
                    "{m}x{k}x{n} parallel={parallel}: crate {crate_rate:.0} GFLOP/s, panels {panel_rate:.0}"
                );
            }
        }
    }
}
