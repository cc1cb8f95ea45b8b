//! Elementwise arithmetic on two broadcast operands of one dtype: the sums, products and the
//! five kinds of division (true, floor, truncating, their remainders, and DivNoNan), powers,
//! maxima and minima, squared differences and atan2. Integer arithmetic wraps as in
//! TensorFlow; integer division by zero is an error, checked before computing.

use num_complex::Complex;
use num_traits::{Float, Zero};

use super::broadcast::map2;
use super::num::{complex_binary, float_binary, int_binary, Int, Real};
use super::register_binary;
use crate::engine::kernel::{fail, KResult};
use crate::engine::Registry;
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    register_binary!(r, "Add", add);
    register_binary!(r, "AddV2", add);
    register_binary!(r, "Sub", sub);
    register_binary!(r, "Mul", mul);
    register_binary!(r, "Div", div);
    register_binary!(r, "RealDiv", div);
    register_binary!(r, "DivNoNan", div_no_nan);
    register_binary!(r, "FloorDiv", floor_div);
    register_binary!(r, "FloorMod", floor_mod);
    register_binary!(r, "TruncateDiv", truncate_div);
    register_binary!(r, "TruncateMod", truncate_mod);
    register_binary!(r, "Mod", truncate_mod);
    register_binary!(r, "Pow", pow);
    register_binary!(r, "Maximum", maximum);
    register_binary!(r, "Minimum", minimum);
    register_binary!(r, "SquaredDifference", squared_difference);
    register_binary!(r, "Atan2", atan2);
}

/// Both operands' dtype, which must be the same (the op's `T`).
pub(super) fn same_dtype(op: &str, a: &Tensor, b: &Tensor) -> KResult<()> {
    if a.dtype() == b.dtype() {
        Ok(())
    } else {
        Err(fail(format!(
            "{op} needs operands of one dtype, got {} and {}",
            a.dtype(),
            b.dtype()
        )))
    }
}

/// The error for a dtype pair an op has no kernel for.
pub(super) fn unsupported2(op: &str, a: &Tensor) -> KResult<Tensor> {
    Err(fail(format!("{op} does not support {} inputs", a.dtype())))
}

/// TensorFlow checks integer divisors instead of letting the division trap.
fn check_divisor(b: &Tensor) -> KResult<()> {
    fn any_zero<T: Int>(v: &[T]) -> bool {
        v.contains(&T::ZERO)
    }
    let zero = match b.storage() {
        Storage::Int8(v) => any_zero(v),
        Storage::Int16(v) => any_zero(v),
        Storage::Int32(v) => any_zero(v),
        Storage::Int64(v) => any_zero(v),
        Storage::UInt8(v) => any_zero(v),
        Storage::UInt16(v) => any_zero(v),
        Storage::UInt32(v) => any_zero(v),
        Storage::UInt64(v) => any_zero(v),
        _ => false,
    };
    if zero {
        Err(fail("Integer division by zero"))
    } else {
        Ok(())
    }
}

pub(super) fn add(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("Add", a, b)?;
    if let (Some(p), Some(q)) = (a.string_values(), b.string_values()) {
        return concat(p, a.shape(), q, b.shape());
    }
    float_binary!(a, b, |x, y| x + y)
        .or_else(|| int_binary!(a, b, Int::wadd))
        .or_else(|| complex_binary!(a, b, |x, y| x + y))
        .unwrap_or_else(|| unsupported2("Add", a))
}

/// String Add: byte concatenation, with broadcasting.
fn concat(p: &[Vec<u8>], ps: &[usize], q: &[Vec<u8>], qs: &[usize]) -> KResult<Tensor> {
    let p: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
    let q: Vec<&[u8]> = q.iter().map(Vec::as_slice).collect();
    let (shape, v) = map2(&p, ps, &q, qs, |x, y| [x, y].concat())?;
    make(shape, Storage::String(v))
}

fn sub(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("Sub", a, b)?;
    float_binary!(a, b, |x, y| x - y)
        .or_else(|| int_binary!(a, b, Int::wsub))
        .or_else(|| complex_binary!(a, b, |x, y| x - y))
        .unwrap_or_else(|| unsupported2("Sub", a))
}

fn mul(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("Mul", a, b)?;
    float_binary!(a, b, |x, y| x * y)
        .or_else(|| int_binary!(a, b, Int::wmul))
        .or_else(|| complex_binary!(a, b, |x, y| x * y))
        .unwrap_or_else(|| unsupported2("Mul", a))
}

/// True division; integers divide toward zero.
fn div(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("Div", a, b)?;
    check_divisor(b)?;
    float_binary!(a, b, |x, y| x / y)
        .or_else(|| int_binary!(a, b, Int::tdiv))
        .or_else(|| complex_binary!(a, b, |x, y| x / y))
        .unwrap_or_else(|| unsupported2("Div", a))
}

/// x / y, but 0 wherever y is 0 (even for x NaN or infinite).
fn div_no_nan(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("DivNoNan", a, b)?;
    fn complex<T: Real>(x: Complex<T>, y: Complex<T>) -> Complex<T> {
        if y.is_zero() {
            Complex::zero()
        } else {
            x / y
        }
    }
    float_binary!(a, b, |x, y| if y == 0.0 { 0.0 } else { x / y })
        .or_else(|| complex_binary!(a, b, complex))
        .unwrap_or_else(|| unsupported2("DivNoNan", a))
}

fn floor_div_int<T: Int>(x: T, y: T) -> T {
    let q = x.tdiv(y);
    if x.trem(y) != T::ZERO && (x.negative() != y.negative()) {
        q.wsub(T::ONE)
    } else {
        q
    }
}

/// floor(x / y) for floats (not numpy's floor_divide: 1 // 0.1 is 10 here, as in TensorFlow).
fn floor_div(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("FloorDiv", a, b)?;
    check_divisor(b)?;
    float_binary!(a, b, |x, y| (x / y).floor())
        .or_else(|| int_binary!(a, b, floor_div_int))
        .unwrap_or_else(|| unsupported2("FloorDiv", a))
}

fn floor_mod_int<T: Int>(x: T, y: T) -> T {
    let r = x.trem(y);
    if r != T::ZERO && (r.negative() != y.negative()) {
        r.wadd(y)
    } else {
        r
    }
}

/// The truncated remainder moved into the divisor's sign; a zero keeps the sign of x.
fn floor_mod_real<T: Real>(x: T, y: T) -> T {
    let r = x % y;
    if r != T::zero() && ((r < T::zero()) != (y < T::zero())) {
        r + y
    } else {
        r
    }
}

fn floor_mod(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("FloorMod", a, b)?;
    check_divisor(b)?;
    float_binary!(a, b, floor_mod_real)
        .or_else(|| int_binary!(a, b, floor_mod_int))
        .unwrap_or_else(|| unsupported2("FloorMod", a))
}

fn truncate_div(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("TruncateDiv", a, b)?;
    check_divisor(b)?;
    float_binary!(a, b, |x, y| (x / y).trunc())
        .or_else(|| int_binary!(a, b, Int::tdiv))
        .unwrap_or_else(|| unsupported2("TruncateDiv", a))
}

/// C's fmod: the remainder has the sign of x.
fn truncate_mod(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("TruncateMod", a, b)?;
    check_divisor(b)?;
    float_binary!(a, b, |x, y| x % y)
        .or_else(|| int_binary!(a, b, Int::trem))
        .unwrap_or_else(|| unsupported2("TruncateMod", a))
}

/// x^y by squaring, wrapping on overflow; y >= 0 (checked by the kernel).
fn int_pow<T: Int>(x: T, y: T) -> T {
    let (mut base, mut e, mut acc) = (x, y.as_i128(), T::ONE);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wmul(base);
        }
        base = base.wmul(base);
        e >>= 1;
    }
    acc
}

fn check_exponents(b: &Tensor) -> KResult<()> {
    fn negative<T: Int>(v: &[T]) -> bool {
        v.iter().any(|x| x.negative())
    }
    let any = match b.storage() {
        Storage::Int8(v) => negative(v),
        Storage::Int16(v) => negative(v),
        Storage::Int32(v) => negative(v),
        Storage::Int64(v) => negative(v),
        _ => false,
    };
    if any {
        Err(fail("Integers to negative integer powers are not allowed"))
    } else {
        Ok(())
    }
}

/// Complex powers are exp(y log x), TensorFlow's formula (0^0 is NaN there).
fn pow(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("Pow", a, b)?;
    check_exponents(b)?;
    if let Some(out) = small_power(a, b) {
        return Ok(out);
    }
    float_binary!(a, b, Float::powf)
        .or_else(|| int_binary!(a, b, int_pow))
        .or_else(|| complex_binary!(a, b, complex_pow))
        .unwrap_or_else(|| unsupported2("Pow", a))
}

/// float32 to a scalar power of 2 or 3 (GELU's tanh form cubes its input) by multiplying:
/// within an ulp or two of powf, and a vectorized pass instead of a libm call per element.
fn small_power(a: &Tensor, b: &Tensor) -> Option<Tensor> {
    let x = a.values::<f32>()?;
    let power = match b.values::<f32>()? {
        [p] if b.shape().is_empty() => *p,
        _ => return None,
    };
    let values = match power {
        2.0 => super::fast::map_f32(x, super::fast::Plain(|v| v * v)),
        3.0 => super::fast::map_f32(x, super::fast::Plain(|v| v * v * v)),
        _ => return None,
    };
    Some(Tensor::from_vec(a.shape().to_vec(), values))
}

fn complex_pow<T: Real>(x: Complex<T>, y: Complex<T>) -> Complex<T> {
    (y * x.ln()).exp()
}

fn complex_squared_difference<T: Real>(x: Complex<T>, y: Complex<T>) -> Complex<T> {
    let d = x - y;
    d * d.conj()
}

/// NaN in either operand gives NaN.
fn maximum(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("Maximum", a, b)?;
    float_binary!(a, b, |x, y| if x > y || x.is_nan() { x } else { y })
        .or_else(|| int_binary!(a, b, Ord::max))
        .unwrap_or_else(|| unsupported2("Maximum", a))
}

fn minimum(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("Minimum", a, b)?;
    float_binary!(a, b, |x, y| if x < y || x.is_nan() { x } else { y })
        .or_else(|| int_binary!(a, b, Ord::min))
        .unwrap_or_else(|| unsupported2("Minimum", a))
}

/// (x - y)², and (x - y) conj(x - y) for complex operands.
fn squared_difference(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("SquaredDifference", a, b)?;
    float_binary!(a, b, |x, y| (x - y) * (x - y))
        .or_else(|| int_binary!(a, b, |x: _, y| Int::wsub(x, y).wmul(x.wsub(y))))
        .or_else(|| complex_binary!(a, b, complex_squared_difference))
        .unwrap_or_else(|| unsupported2("SquaredDifference", a))
}

/// TensorFlow names the operands (y, x), in that order.
fn atan2(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("Atan2", a, b)?;
    float_binary!(a, b, Float::atan2).unwrap_or_else(|| unsupported2("Atan2", a))
}
