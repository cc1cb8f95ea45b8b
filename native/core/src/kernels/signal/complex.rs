//! Complex numbers from and to their parts: Complex (broadcasting real + i imag), Real, Imag,
//! ComplexAbs (hypot, which neither overflows nor underflows in between), Angle (atan2(im, re))
//! and Conj. float32 parts make complex64, float64 parts complex128, and back; each part is
//! computed in its own precision, as TensorFlow's kernels do.

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult};
use crate::engine::{Registry, Value};
use crate::kernels::util::{broadcast_map, make};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("Complex", |_| {
        Ok(boxed(|_, inputs| {
            let re = tensor_input(inputs, 0)?;
            let im = tensor_input(inputs, 1)?;
            one(complex(&re, &im)?)
        }))
    });
    macro_rules! part {
        ($($op:literal => |$z:ident| $f:expr),* $(,)?) => {$(
            r.add($op, |_| Ok(boxed(|_, inputs| {
                let t = tensor_input(inputs, 0)?;
                one(part($op, &t, |$z: [f32; 2]| $f, |$z: [f64; 2]| $f)?)
            })));
        )*};
    }
    part!(
        "Real" => |z| z[0],
        "Imag" => |z| z[1],
        "ComplexAbs" => |z| z[0].hypot(z[1]),
        "Angle" => |z| z[1].atan2(z[0]),
    );
    r.add("Conj", |_| Ok(boxed(|_, inputs| conj(inputs))));
}

fn complex(re: &Tensor, im: &Tensor) -> KResult<Tensor> {
    let (shape, storage) = match (re.storage(), im.storage()) {
        (Storage::Float32(a), Storage::Float32(b)) => {
            let (shape, v) = broadcast_map(a, re.shape(), b, im.shape(), |x, y| [x, y])?;
            (shape, Storage::Complex64(v))
        }
        (Storage::Float64(a), Storage::Float64(b)) => {
            let (shape, v) = broadcast_map(a, re.shape(), b, im.shape(), |x, y| [x, y])?;
            (shape, Storage::Complex128(v))
        }
        _ => {
            return Err(fail(format!(
                "Complex takes two float32 or two float64 parts, got {} and {}",
                re.dtype(),
                im.dtype()
            )))
        }
    };
    make(shape, storage)
}

/// A real part of each complex element: `f32` of complex64 ones, `f64` of complex128 ones.
fn part(
    op: &str,
    t: &Tensor,
    f32: impl Fn([f32; 2]) -> f32,
    f64: impl Fn([f64; 2]) -> f64,
) -> KResult<Tensor> {
    let storage = match t.storage() {
        Storage::Complex64(v) => Storage::Float32(v.iter().map(|&z| f32(z)).collect()),
        Storage::Complex128(v) => Storage::Float64(v.iter().map(|&z| f64(z)).collect()),
        _ => {
            return Err(fail(format!(
                "{op} takes complex64 or complex128 inputs, got {}",
                t.dtype()
            )))
        }
    };
    make(t.shape().to_vec(), storage)
}

/// The complex conjugate; other tensors pass through unchanged (conjugation is the identity on
/// real numbers).
fn conj(inputs: &[Value]) -> KResult {
    let t = tensor_input(inputs, 0)?;
    let storage = match t.storage() {
        Storage::Complex64(v) => Storage::Complex64(v.iter().map(|&[re, im]| [re, -im]).collect()),
        Storage::Complex128(v) => {
            Storage::Complex128(v.iter().map(|&[re, im]| [re, -im]).collect())
        }
        _ => return Ok(vec![Value::Tensor(t)]),
    };
    one(make(t.shape().to_vec(), storage)?)
}
