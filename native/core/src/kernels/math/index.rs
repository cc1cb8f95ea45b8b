//! Ops along one axis given as a scalar tensor: ArgMax and ArgMin (first index of the extreme,
//! NaN skipped), and the scans Cumsum and Cumprod (sequential, in the input's own type; half
//! types rounded at every step, as TensorFlow accumulates them) and CumulativeLogsumexp
//! (log(cumsum(exp(x))) without overflow, half types accumulated in f32).

use num_complex::Complex;

use super::cast::cast;
use super::num::{Int, Real};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{half_to_f32, int_values, make};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("ArgMax", |s| arg_factory(s, true));
    r.add("ArgMin", |s| arg_factory(s, false));
    r.add("Cumsum", |s| {
        scan_factory(s, |x, how| scan_dispatch(x, how, false))
    });
    r.add("Cumprod", |s| {
        scan_factory(s, |x, how| scan_dispatch(x, how, true))
    });
    r.add("CumulativeLogsumexp", |s| scan_factory(s, logsumexp_scan));
}

/// A non-negative axis from a 0-d tensor (unlike reductions, a 1-element vector is an error).
fn scalar_axis(t: &Tensor, rank: usize, what: &str) -> KResult<usize> {
    let values = int_values(t, what)?;
    let (0, [value]) = (t.rank(), values.as_slice()) else {
        return Err(fail(format!(
            "{what} must be a scalar, got shape {:?}",
            t.shape()
        )));
    };
    let r = rank as i64;
    if *value < -r || *value >= r {
        return Err(fail(format!(
            "Expected {what} in the range [{}, {r}), but got {value}",
            -r
        )));
    }
    Ok(if *value < 0 { value + r } else { *value } as usize)
}

/// The length of `axis` and the element count of the axes after it.
fn around(shape: &[usize], axis: usize) -> (usize, usize) {
    (shape[axis], shape[axis + 1..].iter().product())
}

fn arg_factory(spec: &NodeSpec, max: bool) -> Result<Box<dyn crate::engine::Kernel>, String> {
    let output = if spec.attrs.has("output_type") {
        spec.attrs.dtype("output_type")?
    } else {
        DType::Int64
    };
    if !matches!(
        output,
        DType::Int32 | DType::Int64 | DType::Int16 | DType::UInt16
    ) {
        return Err(format!("output_type must be an integer type, got {output}"));
    }
    Ok(boxed(move |_ctx, inputs| {
        let x = tensor_input(inputs, 0)?;
        let axis = scalar_axis(tensor_input(inputs, 1)?.as_ref(), x.rank(), "dimension")?;
        let (n, inner) = around(x.shape(), axis);
        if n == 0 {
            return Err(fail(format!(
                "Reduction axis {axis} is empty in shape {:?}",
                x.shape()
            )));
        }
        let index = arg_dispatch(&x, n, inner, max)?;
        let mut shape = x.shape().to_vec();
        shape.remove(axis);
        let indices = make(shape, Storage::Int64(index))?;
        one(cast(&indices, output, false)?)
    }))
}

fn arg_dispatch(x: &Tensor, n: usize, inner: usize, max: bool) -> KResult<Vec<i64>> {
    /// NaN never wins: it becomes the value that loses to everything.
    fn skip_nan<T: Real>(v: &[T], max: bool) -> Vec<T> {
        let loser = if max {
            T::neg_infinity()
        } else {
            T::infinity()
        };
        v.iter()
            .map(|&x| if x.is_nan() { loser } else { x })
            .collect()
    }
    Ok(match x.storage() {
        Storage::Float32(v) => arg_index(&skip_nan(v, max), n, inner, max),
        Storage::Float64(v) => arg_index(&skip_nan(v, max), n, inner, max),
        Storage::Float16(_) | Storage::BFloat16(_) => arg_index(
            &skip_nan(&half_to_f32(x).unwrap_or_default(), max),
            n,
            inner,
            max,
        ),
        Storage::Int8(v) => arg_index(v, n, inner, max),
        Storage::Int16(v) => arg_index(v, n, inner, max),
        Storage::Int32(v) => arg_index(v, n, inner, max),
        Storage::Int64(v) => arg_index(v, n, inner, max),
        Storage::UInt8(v) => arg_index(v, n, inner, max),
        Storage::UInt16(v) => arg_index(v, n, inner, max),
        Storage::UInt32(v) => arg_index(v, n, inner, max),
        Storage::UInt64(v) => arg_index(v, n, inner, max),
        Storage::Bool(v) => arg_index(v, n, inner, max),
        _ => {
            return Err(fail(format!(
                "ArgMax/ArgMin do not support {} inputs",
                x.dtype()
            )))
        }
    })
}

/// The first index of the largest (or smallest) element along the middle of (outer, n, inner)
/// blocks; rows are compared whole so the inner loop is contiguous.
fn arg_index<T: PartialOrd + Copy>(x: &[T], n: usize, inner: usize, max: bool) -> Vec<i64> {
    let mut out = Vec::new();
    if inner == 0 {
        return out;
    }
    for block in x.chunks_exact(n * inner) {
        let mut best = block[..inner].to_vec();
        let mut index = vec![0i64; inner];
        for (j, row) in block.chunks_exact(inner).enumerate().skip(1) {
            for ((b, i), &v) in best.iter_mut().zip(index.iter_mut()).zip(row) {
                if (max && v > *b) || (!max && v < *b) {
                    *b = v;
                    *i = j as i64;
                }
            }
        }
        out.extend(index);
    }
    out
}

/// Cumsum, Cumprod and CumulativeLogsumexp: the same attrs and axis input; `values` scans the
/// tensor's values of each dtype the op takes.
fn scan_factory(
    spec: &NodeSpec,
    values: fn(&Tensor, &Scan) -> KResult<Storage>,
) -> Result<Box<dyn crate::engine::Kernel>, String> {
    let exclusive = spec.attrs.bool_or("exclusive", false)?;
    let reverse = spec.attrs.bool_or("reverse", false)?;
    Ok(boxed(move |_ctx, inputs| {
        let x = tensor_input(inputs, 0)?;
        let axis = scalar_axis(tensor_input(inputs, 1)?.as_ref(), x.rank(), "scan axis")?;
        let (n, inner) = around(x.shape(), axis);
        let how = Scan {
            n,
            inner,
            exclusive,
            reverse,
        };
        one(make(x.shape().to_vec(), values(&x, &how)?)?)
    }))
}

/// CumulativeLogsumexp's values: float types only, half types through f32.
fn logsumexp_scan(x: &Tensor, how: &Scan) -> KResult<Storage> {
    Ok(match x.storage() {
        Storage::Float32(v) => Storage::Float32(scan(v, how, f32::NEG_INFINITY, log_add_exp)),
        Storage::Float64(v) => Storage::Float64(scan(v, how, f64::NEG_INFINITY, log_add_exp)),
        Storage::Float16(_) | Storage::BFloat16(_) => {
            let wide = half_to_f32(x).ok_or_else(|| fail("internal: half"))?;
            let out = scan(&wide, how, f32::NEG_INFINITY, log_add_exp);
            crate::kernels::util::f32_to_half(x.dtype(), &out)
                .ok_or_else(|| fail("internal: half"))?
        }
        _ => return Err(fail(format!("x must be a float tensor, got {}", x.dtype()))),
    })
}

/// log(exp(a) + exp(b)), exact for infinities (as numpy's logaddexp).
fn log_add_exp<T: num_traits::Float>(a: T, b: T) -> T {
    if a == b && a.is_infinite() {
        return a;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    if hi.is_nan() || lo.is_nan() {
        return T::nan();
    }
    hi + (lo - hi).exp().ln_1p()
}

struct Scan {
    n: usize,
    inner: usize,
    exclusive: bool,
    reverse: bool,
}

/// Running `f` along the middle of (outer, n, inner) blocks, starting from `init`.
fn scan<T: Copy>(x: &[T], how: &Scan, init: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out = x.to_vec();
    let width = how.n * how.inner;
    if width == 0 {
        return out;
    }
    for block in out.chunks_exact_mut(width) {
        let mut acc = vec![init; how.inner];
        let mut step = |row: &mut [T]| {
            for (a, v) in acc.iter_mut().zip(row.iter_mut()) {
                let next = f(*a, *v);
                *v = if how.exclusive { *a } else { next };
                *a = next;
            }
        };
        if how.reverse {
            block.chunks_exact_mut(how.inner).rev().for_each(&mut step);
        } else {
            block.chunks_exact_mut(how.inner).for_each(&mut step);
        }
    }
    out
}

fn int_scan<T: Int>(v: &[T], how: &Scan, product: bool) -> Vec<T> {
    if product {
        scan(v, how, T::ONE, Int::wmul)
    } else {
        scan(v, how, T::ZERO, Int::wadd)
    }
}

fn real_scan<T: Real>(v: &[T], how: &Scan, product: bool, round: impl Fn(T) -> T) -> Vec<T> {
    if product {
        scan(v, how, T::one(), |a, b| round(a * b))
    } else {
        scan(v, how, T::zero(), |a, b| round(a + b))
    }
}

fn complex_scan<T: Real>(v: &[[T; 2]], how: &Scan, product: bool) -> Vec<[T; 2]> {
    let z: Vec<Complex<T>> = v.iter().map(|c| Complex::new(c[0], c[1])).collect();
    let out = if product {
        scan(&z, how, Complex::new(T::one(), T::zero()), |a, b| a * b)
    } else {
        scan(&z, how, Complex::new(T::zero(), T::zero()), |a, b| a + b)
    };
    out.into_iter().map(|c| [c.re, c.im]).collect()
}

fn scan_dispatch(x: &Tensor, how: &Scan, product: bool) -> KResult<Storage> {
    Ok(match x.storage() {
        Storage::Float32(v) => Storage::Float32(real_scan(v, how, product, |s| s)),
        Storage::Float64(v) => Storage::Float64(real_scan(v, how, product, |s| s)),
        Storage::Float16(v) => {
            let wide: Vec<f32> = v
                .iter()
                .map(|&b| half::f16::from_bits(b).to_f32())
                .collect();
            let out = real_scan(&wide, how, product, |s| half::f16::from_f32(s).to_f32());
            Storage::Float16(
                out.iter()
                    .map(|&s| half::f16::from_f32(s).to_bits())
                    .collect(),
            )
        }
        Storage::BFloat16(v) => {
            let wide: Vec<f32> = v
                .iter()
                .map(|&b| half::bf16::from_bits(b).to_f32())
                .collect();
            let out = real_scan(&wide, how, product, |s| half::bf16::from_f32(s).to_f32());
            Storage::BFloat16(
                out.iter()
                    .map(|&s| half::bf16::from_f32(s).to_bits())
                    .collect(),
            )
        }
        Storage::Int8(v) => Storage::Int8(int_scan(v, how, product)),
        Storage::Int16(v) => Storage::Int16(int_scan(v, how, product)),
        Storage::Int32(v) => Storage::Int32(int_scan(v, how, product)),
        Storage::Int64(v) => Storage::Int64(int_scan(v, how, product)),
        Storage::UInt8(v) => Storage::UInt8(int_scan(v, how, product)),
        Storage::UInt16(v) => Storage::UInt16(int_scan(v, how, product)),
        Storage::UInt32(v) => Storage::UInt32(int_scan(v, how, product)),
        Storage::UInt64(v) => Storage::UInt64(int_scan(v, how, product)),
        Storage::Complex64(v) => Storage::Complex64(complex_scan(v, how, product)),
        Storage::Complex128(v) => Storage::Complex128(complex_scan(v, how, product)),
        _ => {
            return Err(fail(format!(
                "Cumsum/Cumprod do not support {} inputs",
                x.dtype()
            )))
        }
    })
}
