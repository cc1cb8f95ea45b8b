//! Matrix products over strided views of flat buffers. f32 and f64 go to the `gemm` crate
//! (blocked, SIMD, multithreaded through rayon for large products; float32 products of a few
//! rows and many weights to `gemv`); other element types (integers, complex) to a plain loop,
//! which only small graphs use. This is the nn family's
//! one module with `unsafe`: the crate takes raw pointers, so every call first checks that
//! each element the product reads or writes lies inside its slice.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::engine::kernel::{fail, KResult};
use crate::kernels::nn::gemv;
use crate::kernels::nn::num::Num;
use crate::kernels::nn::output::zeroed;

/// Where a matrix's element (i, j) lives in a flat buffer: `offset + i * rs + j * cs`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layout {
    pub offset: usize,
    pub rs: usize,
    pub cs: usize,
}

impl Layout {
    /// A row-major matrix with `cols` columns starting at `offset`.
    pub fn rows(offset: usize, cols: usize) -> Self {
        Self {
            offset,
            rs: cols,
            cs: 1,
        }
    }

    /// The same matrix read transposed.
    pub fn t(self) -> Self {
        Self {
            offset: self.offset,
            rs: self.cs,
            cs: self.rs,
        }
    }

    /// The index of the last element of a `rows` × `cols` view (both non-zero), if it fits.
    fn last(&self, rows: usize, cols: usize) -> Option<usize> {
        let down = (rows - 1).checked_mul(self.rs)?;
        let across = (cols - 1).checked_mul(self.cs)?;
        self.offset.checked_add(down)?.checked_add(across)
    }
}

/// `dst (m × n) = a (m × k) × b (k × n)`.
#[derive(Clone, Copy, Debug)]
pub struct Product {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Layout,
    pub b: Layout,
    pub dst: Layout,
}

impl Product {
    /// Checks that the product stays inside its buffers and writes each element of `dst`
    /// once (distinct (i, j) never share a position), so no write races another.
    fn check(&self, a: usize, b: usize, dst: usize) -> KResult<()> {
        if self.m == 0 || self.n == 0 {
            return Ok(());
        }
        let inside = |layout: &Layout, rows, cols, len| {
            rows == 0 || cols == 0 || layout.last(rows, cols).is_some_and(|last| last < len)
        };
        let d = &self.dst;
        let mut dims = [(d.rs, self.m), (d.cs, self.n)];
        dims.sort_unstable();
        let [(small, small_count), (big, big_count)] = dims;
        let distinct = (small >= 1 || small_count == 1)
            && (big_count == 1 || small.checked_mul(small_count).is_some_and(|s| big >= s));
        if inside(&self.a, self.m, self.k, a)
            && inside(&self.b, self.k, self.n, b)
            && inside(d, self.m, self.n, dst)
            && distinct
        {
            Ok(())
        } else {
            Err(fail(format!(
                "internal: matrix product {self:?} leaves its buffers"
            )))
        }
    }

    fn dst_index(&self, i: usize, j: usize) -> usize {
        self.dst.offset + i * self.dst.rs + j * self.dst.cs
    }
}

/// The product by a plain loop (every element type; integer arithmetic wraps).
pub fn fallback<T: Num>(p: &Product, a: &[T], b: &[T], dst: &mut [T]) -> KResult<()> {
    p.check(a.len(), b.len(), dst.len())?;
    if p.m == 0 || p.n == 0 {
        return Ok(());
    }
    for i in 0..p.m {
        for j in 0..p.n {
            dst[p.dst_index(i, j)] = T::default();
        }
        for q in 0..p.k {
            let x = a[p.a.offset + i * p.a.rs + q * p.a.cs];
            for j in 0..p.n {
                let y = b[p.b.offset + q * p.b.rs + j * p.b.cs];
                let d = p.dst_index(i, j);
                dst[d] = dst[d].add(x.mul(y));
            }
        }
    }
    Ok(())
}

/// The element types the gemm crate multiplies.
pub trait Fast: Num {
    const ONE: Self;
}

impl Fast for f32 {
    const ONE: Self = 1.0;
}

impl Fast for f64 {
    const ONE: Self = 1.0;
}

fn stride(s: usize) -> KResult<isize> {
    isize::try_from(s).map_err(|_| fail(format!("stride {s} is too large")))
}

/// The product through the gemm crate; `parallel` lets it use rayon's threads (it stays on
/// the calling thread below its own size threshold).
pub fn fast<T: Fast>(p: &Product, a: &[T], b: &[T], dst: &mut [T], parallel: bool) -> KResult<()> {
    p.check(a.len(), b.len(), dst.len())?;
    if p.m == 0 || p.n == 0 {
        return Ok(());
    }
    if p.k == 0 {
        for i in 0..p.m {
            for j in 0..p.n {
                dst[p.dst_index(i, j)] = T::default();
            }
        }
        return Ok(());
    }
    if gemv::fits(p) {
        if let (Some(a), Some(b), Some(dst)) = (T::as_f32(a), T::as_f32(b), T::as_f32_mut(dst)) {
            gemv::run(p, a, b, dst, parallel);
            return Ok(());
        }
    }
    let d = &mut dst[p.dst.offset..];
    // SAFETY: `check` proved that every (i, q) of a, (q, j) of b and (i, j) of dst, offset
    // and strided as given, indexes inside the slices, and that distinct (i, j) write
    // distinct elements of dst; dst's offset is applied here, and it is borrowed mutably for
    // the call, so nothing else reads or writes it meanwhile.
    unsafe { call(p, a, b, d.as_mut_ptr(), parallel) }
}

/// `dst += a × b` through the gemm crate on the calling thread: a product accumulated over
/// several calls, each a block of the inner dimension (a Winograd convolution's filter
/// transformed a block of input channels at a time, so that the block stays in cache).
pub fn fast_add<T: Fast>(p: &Product, a: &[T], b: &[T], dst: &mut [T]) -> KResult<()> {
    p.check(a.len(), b.len(), dst.len())?;
    if p.m == 0 || p.n == 0 || p.k == 0 {
        return Ok(());
    }
    let (a, b, d) = (&a[p.a.offset..], &b[p.b.offset..], &mut dst[p.dst.offset..]);
    let strides = Strides::of(p)?;
    let pointers = (a.as_ptr(), b.as_ptr(), d.as_mut_ptr());
    // SAFETY: as in `fast`: `check` proved that every element the strides reach from the
    // offsets lies inside its slice and that distinct (i, j) of dst are distinct elements;
    // dst is borrowed mutably for the call. The crate reads dst here, which is initialized.
    unsafe {
        one(
            (p.m, p.n, p.k),
            pointers,
            strides,
            (gemm::Parallelism::None, true),
        )
    };
    Ok(())
}

/// [`fast`] into uninitialized memory: `dst` is exactly the product's `m × n` result, row-major
/// from its first element (`p.dst` must say so), and is returned as initialized values once
/// the gemm crate has written every element.
pub fn fast_into<'d, T: Fast>(
    p: &Product,
    a: &[T],
    b: &[T],
    dst: &'d mut [MaybeUninit<T>],
    parallel: bool,
) -> KResult<&'d mut [T]> {
    let whole = p.dst.offset == 0 && p.dst.rs == p.n && p.dst.cs == 1;
    if !whole || p.m.checked_mul(p.n) != Some(dst.len()) {
        return Err(fail(format!(
            "internal: matrix product {p:?} does not fill its {} outputs",
            dst.len()
        )));
    }
    if p.k == 0 || dst.is_empty() {
        // A sum over no terms: the whole (exactly m × n) output is zero.
        return Ok(zeroed(dst));
    }
    if gemv::fits(p) {
        // A few rows: the zeroing is m·n stores against the k·n loads of the product.
        let dst = zeroed(dst);
        fast(p, a, b, dst, parallel)?;
        return Ok(dst);
    }
    p.check(a.len(), b.len(), dst.len())?;
    // SAFETY: as in `fast` (`MaybeUninit<T>` has `T`'s layout, and the crate only writes
    // dst). Row-major `m × n` from offset 0 with `m · n == dst.len()`, every element of dst is
    // one (i, j) of the product, and with k > 0 the crate writes each (i, j), so after the
    // call all of dst is initialized, which is what viewing it as `[T]` needs.
    unsafe {
        call(p, a, b, dst.as_mut_ptr().cast::<T>(), parallel)?;
        Ok(&mut *(std::ptr::from_mut::<[MaybeUninit<T>]>(dst) as *mut [T]))
    }
}

/// The gemm crate's `dst = a × b` (a and b read from their layouts' offsets, dst already at
/// its offset), on rayon's threads when `parallel`: a product with few rows in column blocks,
/// one per thread (see [`column_blocks`]), any other through the crate's own threading.
///
/// # Safety
/// `p` must have passed [`Product::check`] against `a`, `b` and the buffer `dst` points into,
/// and nothing else may use that buffer during the call. T is f32 or f64, which the crate
/// supports; with read_dst false it never reads dst.
unsafe fn call<T: Fast>(p: &Product, a: &[T], b: &[T], dst: *mut T, parallel: bool) -> KResult<()> {
    let width = if parallel { column_blocks(p) } else { p.n };
    // SAFETY: the caller's contract is `in_blocks`'s.
    unsafe { in_blocks(p, a, b, dst, parallel, width) }
}

/// [`call`] with the product cut into blocks of `width` columns, one rayon task each (the
/// whole product, threaded by the gemm crate when `parallel`, for a width of at least `p.n`).
///
/// # Safety
/// As for [`call`].
unsafe fn in_blocks<T: Fast>(
    p: &Product,
    a: &[T],
    b: &[T],
    dst: *mut T,
    parallel: bool,
    width: usize,
) -> KResult<()> {
    let (a, b) = (&a[p.a.offset..], &b[p.b.offset..]);
    let strides = Strides::of(p)?;
    if width >= p.n {
        let threads = match parallel {
            true => gemm::Parallelism::Rayon(0),
            false => gemm::Parallelism::None,
        };
        // SAFETY: the caller's contract (above) is what the crate needs.
        unsafe {
            one(
                (p.m, p.n, p.k),
                (a.as_ptr(), b.as_ptr(), dst),
                strides,
                (threads, false),
            )
        };
        return Ok(());
    }
    let shared = Shared(dst);
    (0..p.n.div_ceil(width)).into_par_iter().for_each(|block| {
        let (start, cols) = (block * width, width.min(p.n - block * width));
        // SAFETY: column block `start..start + cols` of the checked product: its elements of
        // b (b's columns from `start`) and of dst (dst's from `start`) lie inside the buffers
        // as the whole product's do, and blocks write disjoint columns of dst, which
        // `check` proved are disjoint elements; the caller lends dst for the whole call,
        // which lasts until every block has returned.
        unsafe {
            let pointers = (
                a.as_ptr(),
                b.as_ptr().add(start * p.b.cs),
                shared.get().add(start * p.dst.cs),
            );
            one(
                (p.m, cols, p.k),
                pointers,
                strides,
                (gemm::Parallelism::None, false),
            );
        }
    });
    Ok(())
}

/// Products with fewer rows than this (and at least [`MIN_BLOCK_ROWS`]) are cut into blocks
/// of columns when they may use threads: each thread then packs and reads only its share of b,
/// where with the gemm crate's own threading, or a share of the rows each, every thread packs
/// all of b. Measured on a 2-core Zen 3 (`B_HW=7 B_K=1 B_C=512 B_O=2048 cargo test --release
/// -p savedmodel-core --lib bench_one_conv -- --ignored --nocapture`, 20 calls, wall; rows a
/// thread -> columns a thread): ResNet50's 7x7 layers, 1x1 512->2048 41-42 -> 20-22 ms,
/// 2048->512 26-27 -> 19-21, 3x3 512->512 62-64 -> 53-57; 14x14 layers (196 rows) the same
/// within noise. Larger products keep a share of the rows per thread (conv.rs's tiling).
pub const FEW_ROWS: usize = 256;

/// Below this many rows a product is a few matrix-vector products, bound by reading b: left
/// to the gemm crate's own threading. On a 2-core Zen 3 (`cargo test --release -p
/// savedmodel-core --lib bench_few_rows -- --ignored --nocapture`, 2048 -> 1000, whole vs two
/// column blocks): 1 row 0.16-0.18 vs 0.23-0.26 ms, 4 to 16 rows the same within 2%, 32 rows
/// 1.42-1.44 vs 1.31-1.33 ms, 64 rows 3.1-3.5 vs 2.3-2.5 ms.
const MIN_BLOCK_ROWS: usize = 16;

/// Columns a block of a product holds: one block a thread for a product with
/// [`MIN_BLOCK_ROWS`] to [`FEW_ROWS`] rows and enough work for threads (else all the columns,
/// one block), a multiple of [`BLOCK_COLUMNS`].
fn column_blocks(p: &Product) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let work = p.m.saturating_mul(p.n).saturating_mul(p.k);
    if !(MIN_BLOCK_ROWS..FEW_ROWS).contains(&p.m) || threads < 2 || work < PARALLEL_WORK {
        return p.n;
    }
    p.n.div_ceil(threads).next_multiple_of(BLOCK_COLUMNS)
}

/// The granularity of column blocks: one AVX-512 register of float32, half the widest
/// microkernel (AVX-512's 32 columns; AVX2's is 16). Blocks in whole 32s left DenseNet121's
/// 32-channel 7x7 convolutions at batch 1 on one thread and split EfficientNet's 80-channel
/// projections 64 + 16. Measured on a 2-core Zen 3 (the two blocks through `rayon::join`, best
/// of 3000 calls), 32 -> 16 columns a block: 49 x 1152 x 32 52-58 -> 35-37 us; 64 + 16 -> 48
/// + 32: 196 x 480 x 80 141-144 -> 102-105 us; MobileNetV2's 196 x 576 x 96 (64 + 32 -> 48 +
/// 48) 158-159 -> 142-158 us and 49 x 960 x 160 (96 + 64 -> 80 + 80) 115 -> 110-125 us.
const BLOCK_COLUMNS: usize = 16;

/// A product's strides in the signed form the gemm crate takes.
#[derive(Clone, Copy)]
struct Strides {
    dst: (isize, isize),
    a: (isize, isize),
    b: (isize, isize),
}

impl Strides {
    fn of(p: &Product) -> KResult<Self> {
        let pair = |l: &Layout| -> KResult<(isize, isize)> { Ok((stride(l.rs)?, stride(l.cs)?)) };
        Ok(Self {
            dst: pair(&p.dst)?,
            a: pair(&p.a)?,
            b: pair(&p.b)?,
        })
    }
}

/// The destination pointer, shared by the column blocks of one product, which write disjoint
/// elements through it.
struct Shared<T>(*mut T);

impl<T> Shared<T> {
    fn get(&self) -> *mut T {
        self.0
    }
}

// SAFETY: the blocks of `call` write disjoint elements through the pointer (see there), and
// the buffer outlives the parallel loop that shares it.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as for Send: only disjoint writes go through the shared pointer.
unsafe impl<T> Sync for Shared<T> {}

/// One `m × n × k` call of the gemm crate on (a, b, dst) pointers at their first elements:
/// `dst = a × b`, or `dst += a × b` when `add`.
///
/// # Safety
/// Every element the strides reach from the pointers must lie inside its buffer, no two
/// (i, j) of dst may be one element, and nothing else may use dst's elements meanwhile; with
/// `add`, dst's elements must be initialized.
unsafe fn one<T: Fast>(
    (m, n, k): (usize, usize, usize),
    (a, b, dst): (*const T, *const T, *mut T),
    s: Strides,
    (threads, add): (gemm::Parallelism, bool),
) {
    let keep = if add { T::ONE } else { T::default() };
    // SAFETY: the caller's contract is what the crate needs; it reads dst only with `add`
    // (read_dst), for which the caller guarantees initialized elements.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            s.dst.1,
            s.dst.0,
            add,
            a,
            s.a.1,
            s.a.0,
            b,
            s.b.1,
            s.b.0,
            keep,
            T::ONE,
            false,
            false,
            false,
            threads,
        );
    }
}

/// Products at least this large (m·n·k summed over a batch) use more than one thread.
pub const PARALLEL_WORK: usize = 1 << 18;

/// A batch of products of one shape: product `i` reads `a` at `a_offsets[i]` and `b` at
/// `b_offsets[i]` (plus the layouts' own offsets) and writes chunk `i` of `dst`, `m · n`
/// elements laid out by `dst_layout` (offset 0).
pub struct Batch<'a> {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Layout,
    pub b: Layout,
    pub dst: Layout,
    pub a_offsets: &'a [usize],
    pub b_offsets: &'a [usize],
}

impl Batch<'_> {
    /// Runs every product: across threads, one product each, when there are many large
    /// enough to share; else in order, each product free to use threads itself.
    pub fn run<T: Num>(&self, a: &[T], b: &[T], dst: &mut [T]) -> KResult<()> {
        let size = self.m * self.n;
        if size == 0 {
            return Ok(());
        }
        let count = self.a_offsets.len().min(self.b_offsets.len());
        let work = size.saturating_mul(self.k).saturating_mul(count);
        let one = |i: usize, chunk: &mut [T], parallel: bool| {
            let product = Product {
                m: self.m,
                n: self.n,
                k: self.k,
                a: Layout {
                    offset: self.a.offset.saturating_add(self.a_offsets[i]),
                    ..self.a
                },
                b: Layout {
                    offset: self.b.offset.saturating_add(self.b_offsets[i]),
                    ..self.b
                },
                dst: self.dst,
            };
            T::product(&product, a, b, chunk, parallel)
        };
        if count > 1 && work >= PARALLEL_WORK {
            dst.par_chunks_mut(size)
                .take(count)
                .enumerate()
                .try_for_each(|(i, chunk)| one(i, chunk, false))
        } else {
            dst.chunks_mut(size)
                .take(count)
                .enumerate()
                .try_for_each(|(i, chunk)| one(i, chunk, true))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(m: usize, n: usize, k: usize) -> Product {
        Product {
            m,
            n,
            k,
            a: Layout::rows(0, k),
            b: Layout::rows(0, n),
            dst: Layout::rows(0, n),
        }
    }

    #[test]
    fn fast_into_fills_uninitialized_memory_as_fast_does() {
        let a: Vec<f32> = (0..12).map(|x| x as f32 * 0.25 - 1.0).collect();
        let b: Vec<f32> = (0..20).map(|x| x as f32 * 0.5 - 3.0).collect();
        let p = product(3, 5, 4);
        let mut want = vec![0.0; 15];
        fast(&p, &a, &b, &mut want, false).unwrap();
        let mut dst = vec![MaybeUninit::<f32>::uninit(); 15];
        assert_eq!(fast_into(&p, &a, &b, &mut dst, false).unwrap(), &want[..]);
        // An empty inner dimension gives zeros.
        let mut dst = vec![MaybeUninit::<f32>::uninit(); 15];
        assert_eq!(
            fast_into(&product(3, 5, 0), &a, &b, &mut dst, false).unwrap(),
            &[0.0; 15]
        );
    }

    #[test]
    fn fast_into_refuses_a_product_that_does_not_fill_its_output() {
        let (a, b) = (vec![1f32; 12], vec![1f32; 20]);
        let mut dst = vec![MaybeUninit::<f32>::uninit(); 16];
        let short = fast_into(&product(3, 5, 4), &a, &b, &mut dst, false);
        assert!(short.unwrap_err().to_string().contains("does not fill"));
        let strided = Product {
            dst: Layout::rows(0, 6),
            ..product(3, 5, 4)
        };
        let mut dst = vec![MaybeUninit::<f32>::uninit(); 15];
        let strided = fast_into(&strided, &a, &b, &mut dst, false);
        assert!(strided.unwrap_err().to_string().contains("does not fill"));
    }

    #[test]
    fn fast_and_fallback_agree_on_strided_views() {
        let a: Vec<f64> = (0..12).map(f64::from).collect();
        let b: Vec<f64> = (0..12).map(|x| f64::from(x) * 0.5 - 2.0).collect();
        // a read transposed (4 × 3 stored, 3 × 4 used), b as stored (4 × 3).
        let p = Product {
            a: Layout::rows(0, 3).t(),
            ..product(3, 3, 4)
        };
        let mut x = vec![0.0; 9];
        let mut y = vec![0.0; 9];
        fast(&p, &a, &b, &mut x, true).unwrap();
        fallback(&p, &a, &b, &mut y).unwrap();
        assert_eq!(x, y);
        assert_eq!(x[0], 0.0 * -2.0 + 3.0 * -0.5 + 6.0 * 1.0 + 9.0 * 2.5);
    }

    #[test]
    fn out_of_bounds_and_overlapping_views_are_errors() {
        let a = vec![1.0f32; 6];
        let mut d = vec![0.0f32; 4];
        assert!(fast(&product(2, 2, 3), &a, &a[..5], &mut d, false).is_err());
        let overlapping = Product {
            dst: Layout {
                offset: 0,
                rs: 1,
                cs: 1,
            },
            ..product(2, 2, 3)
        };
        assert!(fast(&overlapping, &a, &a, &mut d, false).is_err());
        assert!(fallback(&overlapping, &a, &a, &mut d).is_err());
    }

    /// A product with few rows, run on two threads: cut into blocks of columns (the last one
    /// narrower), into a strided destination and into uninitialized memory; the same values as
    /// on one thread.
    #[test]
    fn column_blocks_give_the_whole_product() {
        let (m, n, k) = (40, 100, 100);
        assert!(m * n * k >= PARALLEL_WORK && (MIN_BLOCK_ROWS..FEW_ROWS).contains(&m));
        let a: Vec<f32> = (0..m * k).map(|x| (x % 29) as f32 * 0.125 - 1.5).collect();
        let b: Vec<f32> = (0..k * n)
            .map(|x| (x % 31) as f32 * 0.0625 - 0.75)
            .collect();
        let strided = Product {
            dst: Layout::rows(3, n + 5),
            ..product(m, n, k)
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut want = vec![0.0f32; m * n];
        fallback(&product(m, n, k), &a, &b, &mut want).unwrap();
        let close = |got: &[f32], i: usize, j: usize| {
            let (x, y) = (got[i], want[j]);
            assert!((x - y).abs() <= 1e-5 * y.abs().max(1.0), "{i}: {x} vs {y}");
        };
        pool.install(|| {
            assert_eq!(column_blocks(&product(m, n, k)), 64);
            // 32 columns make two blocks of 16, not one of 32 and an idle thread.
            assert_eq!(column_blocks(&product(m, 32, 4 * k)), 16);
            let mut whole = vec![f32::NAN; 3 + m * (n + 5)];
            fast(&strided, &a, &b, &mut whole, true).unwrap();
            let mut fresh = vec![MaybeUninit::<f32>::uninit(); m * n];
            let fresh = fast_into(&product(m, n, k), &a, &b, &mut fresh, true).unwrap();
            for i in 0..m {
                for j in 0..n {
                    close(&whole, 3 + i * (n + 5) + j, i * n + j);
                    close(fresh, i * n + j, i * n + j);
                }
                // The gaps between the strided rows are left alone.
                assert!(whole[3 + i * (n + 5) + n..][..5].iter().all(|v| v.is_nan()));
            }
        });
    }

    #[test]
    fn empty_inner_dimension_gives_zeros() {
        let mut d = vec![7.0f32; 4];
        fast(&product(2, 2, 0), &[], &[], &mut d, false).unwrap();
        assert_eq!(d, vec![0.0; 4]);
    }

    /// A Dense layer's product (2048 -> 1000, ResNet50's classifier) with few rows, on two
    /// threads: whole, threaded by the gemm crate, against two blocks of columns and against
    /// `fast` (which takes products of up to 4 rows to gemv.rs), each the best of 200 calls
    /// (wall) with b in cache, and `fast` also with b evicted first (as in a model, where the
    /// layers before push the weights out of cache). The crossover is [`MIN_BLOCK_ROWS`].
    #[test]
    #[ignore]
    fn bench_few_rows() {
        let (n, k) = (1000, 2048);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for m in [1, 4, 8, 16, 32, 64] {
            let p = product(m, n, k);
            let a: Vec<f32> = (0..m * k).map(|x| (x % 29) as f32 * 0.125).collect();
            let b: Vec<f32> = (0..k * n).map(|x| (x % 31) as f32 * 0.0625).collect();
            let mut dst = vec![0.0f32; m * n];
            p.check(a.len(), b.len(), dst.len()).unwrap();
            let mut best = [f64::INFINITY; 2];
            let (mut hot, mut cold) = (f64::INFINITY, Vec::new());
            let mut evict = vec![0u8; 64 << 20];
            pool.install(|| {
                for round in 0..200 {
                    let start = std::time::Instant::now();
                    fast(&p, &a, &b, &mut dst, true).unwrap();
                    hot = hot.min(start.elapsed().as_secs_f64());
                    if round % 20 == 0 {
                        evict.iter_mut().for_each(|v| *v = v.wrapping_add(1));
                        let start = std::time::Instant::now();
                        fast(&p, &a, &b, &mut dst, true).unwrap();
                        cold.push(start.elapsed().as_secs_f64());
                    }
                    for (width, best) in [n, n.div_ceil(2).next_multiple_of(BLOCK_COLUMNS)]
                        .iter()
                        .zip(&mut best)
                    {
                        let start = std::time::Instant::now();
                        // SAFETY: `p` is a checked product over a, b and dst, which nothing
                        // else uses during the call.
                        unsafe { in_blocks(&p, &a, &b, dst.as_mut_ptr(), true, *width) }.unwrap();
                        *best = best.min(start.elapsed().as_secs_f64());
                    }
                }
            });
            cold.sort_by(f64::total_cmp);
            println!(
                "{m:3} x {k} x {n}: whole {:.3} ms, two column blocks {:.3} ms, fast {:.3} ms, \
                 fast with b evicted (median) {:.3} ms",
                best[0] * 1e3,
                best[1] * 1e3,
                hot * 1e3,
                cold[cold.len() / 2] * 1e3
            );
        }
    }
}
