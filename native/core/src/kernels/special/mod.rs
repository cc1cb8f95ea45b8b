//! Special functions: log-gamma and digamma, the regularized incomplete gamma and beta
//! functions, the inverse error function and the normal quantile, and the Bessel functions
//! TensorFlow's `tf.math.special` exposes that models use (I0e, J1).
//!
//! Every function is computed in f64 from a formula that holds to about double precision over
//! its whole range (series, continued fractions, asymptotic expansions, picked by argument size)
//! and rounded once to the input's type; float16 and bfloat16 are widened first. Domains follow
//! TensorFlow's: poles give inf, arguments outside a function's domain NaN, never an error.
//! The reference engine's `runtime/kernels/special.py` uses the same formulas.

mod bessel;
mod gamma;
mod inverse_erf;
#[cfg(test)]
mod tests;

use rayon::prelude::*;

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult};
use crate::engine::Registry;
use crate::kernels::util::{broadcast_map, f32_to_half, half_to_f32, make};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    macro_rules! unary {
        ($($op:literal => $f:path),* $(,)?) => {$(
            r.add($op, |_| Ok(boxed(|_, inputs| one(unary($op, &*tensor_input(inputs, 0)?, $f)?))));
        )*};
    }
    unary!(
        "Lgamma" => gamma::lgamma,
        "Digamma" => gamma::digamma,
        "Erfinv" => inverse_erf::erfinv,
        "Ndtri" => inverse_erf::ndtri,
        "BesselI0e" => bessel::i0e,
        "BesselJ1" => bessel::j1,
    );
    r.add("Igamma", |_| {
        Ok(boxed(|_, inputs| {
            let a = tensor_input(inputs, 0)?;
            let x = tensor_input(inputs, 1)?;
            one(binary("Igamma", &a, &x, gamma::igamma)?)
        }))
    });
    r.add("Betainc", |_| {
        Ok(boxed(|_, inputs| {
            let a = tensor_input(inputs, 0)?;
            let b = tensor_input(inputs, 1)?;
            let x = tensor_input(inputs, 2)?;
            one(betainc(&a, &b, &x)?)
        }))
    });
}

/// Elements per thread below which a map stays on the calling thread: these functions cost
/// tens to thousands of flops each, so far fewer elements pay for a thread than for `Add`.
const PARALLEL_MIN: usize = 2048;

fn map_f64(values: &[f64], f: impl Fn(f64) -> f64 + Sync + Send) -> Vec<f64> {
    if values.len() < PARALLEL_MIN {
        return values.iter().map(|&x| f(x)).collect();
    }
    let mut out = Vec::with_capacity(values.len());
    values
        .par_iter()
        .with_min_len(PARALLEL_MIN / 2)
        .map(|&x| f(x))
        .collect_into_vec(&mut out);
    out
}

/// A float tensor's elements widened to f64 (half types through f32); None for other dtypes.
fn widen(t: &Tensor) -> Option<Vec<f64>> {
    match t.storage() {
        Storage::Float32(v) => Some(v.iter().map(|&x| f64::from(x)).collect()),
        Storage::Float64(v) => Some(v.clone()),
        Storage::Float16(_) | Storage::BFloat16(_) => {
            half_to_f32(t).map(|w| w.into_iter().map(f64::from).collect())
        }
        _ => None,
    }
}

/// f64 results rounded once to `like`'s dtype, in `shape`.
fn narrow(like: &Tensor, shape: Vec<usize>, values: Vec<f64>) -> KResult<Tensor> {
    let storage = match like.storage() {
        Storage::Float64(_) => Storage::Float64(values),
        Storage::Float32(_) => Storage::Float32(values.into_iter().map(|x| x as f32).collect()),
        _ => {
            let wide: Vec<f32> = values.into_iter().map(|x| x as f32).collect();
            f32_to_half(like.dtype(), &wide).unwrap_or(Storage::Float32(wide))
        }
    };
    make(shape, storage)
}

fn unsupported(op: &str, t: &Tensor) -> crate::error::Error {
    fail(format!("{op} does not support {} inputs", t.dtype()))
}

/// `f` over a float tensor (float16, bfloat16, float32, float64), same dtype out.
fn unary(op: &str, t: &Tensor, f: fn(f64) -> f64) -> KResult<Tensor> {
    let x = widen(t).ok_or_else(|| unsupported(op, t))?;
    narrow(t, t.shape().to_vec(), map_f64(&x, f))
}

/// `f` over two float32 or float64 tensors of one dtype, broadcast together.
fn binary(op: &str, a: &Tensor, b: &Tensor, f: fn(f64, f64) -> f64) -> KResult<Tensor> {
    same_float_type(op, &[a, b])?;
    let (x, y) = (wide32or64(op, a)?, wide32or64(op, b)?);
    let (shape, pairs) = broadcast_map(&x, a.shape(), &y, b.shape(), |p, q| (p, q))?;
    let out = if pairs.len() < PARALLEL_MIN {
        pairs.iter().map(|&(p, q)| f(p, q)).collect()
    } else {
        pairs.par_iter().map(|&(p, q)| f(p, q)).collect()
    };
    narrow(a, shape, out)
}

/// Elements of a float32 or float64 tensor as f64 (the dtypes the incomplete gamma and beta
/// functions are registered for).
fn wide32or64(op: &str, t: &Tensor) -> KResult<Vec<f64>> {
    match t.storage() {
        Storage::Float32(_) | Storage::Float64(_) => widen(t).ok_or_else(|| unsupported(op, t)),
        _ => Err(unsupported(op, t)),
    }
}

fn same_float_type(op: &str, operands: &[&Tensor]) -> KResult<()> {
    let first = operands[0].dtype();
    match operands.iter().find(|t| t.dtype() != first) {
        Some(other) => Err(fail(format!(
            "{op}: operands must have one dtype, got {first} and {}",
            other.dtype()
        ))),
        None => Ok(()),
    }
}

/// Betainc(a, b, x): the three have one shape, or are scalars (TensorFlow broadcasts nothing
/// else).
fn betainc(a: &Tensor, b: &Tensor, x: &Tensor) -> KResult<Tensor> {
    let operands = [a, b, x];
    same_float_type("Betainc", &operands)?;
    let mut shape: Option<&[usize]> = None;
    for t in operands.iter().filter(|t| t.rank() > 0) {
        match shape {
            Some(s) if s != t.shape() => {
                return Err(fail(format!(
                    "Betainc: shapes of a, b and x are inconsistent: {:?} vs. {:?} vs. {:?}",
                    a.shape(),
                    b.shape(),
                    x.shape()
                )))
            }
            _ => shape = Some(t.shape()),
        }
    }
    let shape = shape.unwrap_or(&[]).to_vec();
    let count = crate::tensor::element_count(&shape).unwrap_or(0);
    let columns = [
        wide32or64("Betainc", a)?,
        wide32or64("Betainc", b)?,
        wide32or64("Betainc", x)?,
    ];
    // A scalar operand repeats; the others have `count` elements.
    let at = |column: &Vec<f64>, i: usize| {
        if column.len() == 1 {
            column[0]
        } else {
            column[i]
        }
    };
    let element =
        |i: usize| gamma::betainc(at(&columns[0], i), at(&columns[1], i), at(&columns[2], i));
    let out = if count < PARALLEL_MIN {
        (0..count).map(element).collect()
    } else {
        (0..count).into_par_iter().map(element).collect()
    };
    narrow(a, shape, out)
}
