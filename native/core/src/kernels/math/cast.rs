//! Cast between any two non-string dtypes, as TensorFlow's CPU kernel computes it: integers
//! wrap; float to integer follows the x86 conversions TensorFlow's vectorised loop compiles
//! to (truncation, the minimum integer for NaN and out-of-range values, then saturation to
//! narrow types); complex to real keeps the real part; integers reach the half types through
//! f32, as Eigen converts them. `Truncate=true` drops the mantissa bits a narrower float type
//! cannot hold instead of rounding them.

use super::num::Int;
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{f32_to_half, half_to_f32, make};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("Cast", factory);
}

fn factory(spec: &NodeSpec) -> Result<Box<dyn crate::engine::Kernel>, String> {
    let dst = spec.attrs.dtype("DstT")?;
    let truncate = spec.attrs.bool_or("Truncate", false)?;
    Ok(boxed(move |_ctx, inputs| {
        let t = tensor_input(inputs, 0)?;
        one(cast(&t, dst, truncate)?)
    }))
}

/// A source's elements in a form every destination converts from exactly.
enum Column {
    /// Integers and bools.
    Ints(Vec<i128>),
    /// Real floats widened to f64, with the source dtype (its mantissa width matters).
    Floats(Vec<f64>, DType),
    /// Complex parts widened, with the component dtype.
    Complex(Vec<[f64; 2]>, DType),
}

pub fn cast(t: &Tensor, dst: DType, truncate: bool) -> KResult<Tensor> {
    if t.dtype() == dst {
        return Ok(t.clone());
    }
    let column = read(t)?;
    make(t.shape().to_vec(), write(column, dst, truncate)?)
}

fn ints<T: Int>(v: &[T]) -> Column {
    Column::Ints(v.iter().map(|x| x.as_i128()).collect())
}

fn read(t: &Tensor) -> KResult<Column> {
    Ok(match t.storage() {
        Storage::Int8(v) => ints(v),
        Storage::Int16(v) => ints(v),
        Storage::Int32(v) => ints(v),
        Storage::Int64(v) => ints(v),
        Storage::UInt8(v) => ints(v),
        Storage::UInt16(v) => ints(v),
        Storage::UInt32(v) => ints(v),
        Storage::UInt64(v) => ints(v),
        Storage::Bool(v) => Column::Ints(v.iter().map(|&b| i128::from(b)).collect()),
        Storage::Float32(v) => {
            Column::Floats(v.iter().map(|&x| f64::from(x)).collect(), DType::Float32)
        }
        Storage::Float64(v) => Column::Floats(v.clone(), DType::Float64),
        Storage::Float16(_) | Storage::BFloat16(_) => Column::Floats(
            half_to_f32(t)
                .unwrap_or_default()
                .into_iter()
                .map(f64::from)
                .collect(),
            t.dtype(),
        ),
        Storage::Complex64(v) => Column::Complex(
            v.iter()
                .map(|c| [f64::from(c[0]), f64::from(c[1])])
                .collect(),
            DType::Float32,
        ),
        Storage::Complex128(v) => Column::Complex(v.clone(), DType::Float64),
        Storage::String(_) => return Err(fail("Cast from string is not supported")),
    })
}

fn mantissa_bits(dtype: DType) -> u32 {
    match dtype {
        DType::Float16 => 10,
        DType::BFloat16 => 7,
        DType::Float32 => 23,
        _ => 52,
    }
}

/// The destination's element kind, for dispatch.
fn write(column: Column, dst: DType, truncate: bool) -> KResult<Storage> {
    match dst {
        DType::String => Err(fail("Cast to string is not supported")),
        DType::Bool => Ok(Storage::Bool(match column {
            Column::Ints(v) => v.iter().map(|&x| x != 0).collect(),
            Column::Floats(v, _) => v.iter().map(|&x| x != 0.0).collect(),
            Column::Complex(v, _) => v.iter().map(|c| c[0] != 0.0).collect(),
        })),
        DType::Complex64 | DType::Complex128 => {
            let part = if dst == DType::Complex64 {
                DType::Float32
            } else {
                DType::Float64
            };
            let parts: Vec<[f64; 2]> = match column {
                Column::Ints(v) => v.iter().map(|&x| [int_to_float(x, part), 0.0]).collect(),
                Column::Floats(v, src) => v
                    .iter()
                    .map(|&x| [float_to_float(x, src, part, truncate), 0.0])
                    .collect(),
                Column::Complex(v, src) => v
                    .iter()
                    .map(|c| c.map(|x| float_to_float(x, src, part, truncate)))
                    .collect(),
            };
            Ok(if dst == DType::Complex64 {
                Storage::Complex64(parts.iter().map(|c| c.map(|x| x as f32)).collect())
            } else {
                Storage::Complex128(parts)
            })
        }
        DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64 => {
            let wide: Vec<f64> = match column {
                Column::Ints(v) => v.iter().map(|&x| int_to_float(x, dst)).collect(),
                Column::Floats(v, src) => v
                    .iter()
                    .map(|&x| float_to_float(x, src, dst, truncate))
                    .collect(),
                Column::Complex(v, src) => v
                    .iter()
                    .map(|c| float_to_float(c[0], src, dst, truncate))
                    .collect(),
            };
            Ok(floats(wide, dst))
        }
        _ => {
            let values = match column {
                Column::Ints(v) => v,
                Column::Floats(v, src) => v.iter().map(|&x| float_to_int(x, src, dst)).collect(),
                Column::Complex(v, src) => v.iter().map(|c| float_to_int(c[0], src, dst)).collect(),
            };
            Ok(integers(&values, dst))
        }
    }
}

/// An integer rounded once to `dst` (through f32 for the half types), held in an f64.
fn int_to_float(x: i128, dst: DType) -> f64 {
    match dst {
        DType::Float64 => x as f64,
        _ => f64::from(x as f32),
    }
}

/// A float of `src` converted to `dst` (through f32 for the half types), held in an f64.
fn float_to_float(x: f64, src: DType, dst: DType, truncate: bool) -> f64 {
    let keep = mantissa_bits(dst);
    let x = if truncate && mantissa_bits(src) > keep && !x.is_nan() {
        f64::from_bits(x.to_bits() & !((1u64 << (52 - keep)) - 1))
    } else {
        x
    };
    match dst {
        DType::Float64 => x,
        _ => f64::from(x as f32),
    }
}

fn floats(wide: Vec<f64>, dst: DType) -> Storage {
    match dst {
        DType::Float64 => Storage::Float64(wide),
        DType::Float32 => Storage::Float32(wide.iter().map(|&x| x as f32).collect()),
        _ => {
            let narrow: Vec<f32> = wide.iter().map(|&x| x as f32).collect();
            f32_to_half(dst, &narrow).unwrap_or(Storage::Float32(narrow))
        }
    }
}

/// cvttsd2si into 32 bits: truncation, and i32::MIN for NaN and out of range.
fn x86_i32(w: f64) -> i32 {
    if w > -2147483649.0 && w < 2147483648.0 {
        w as i32
    } else {
        i32::MIN
    }
}

fn x86_i64(w: f64) -> i64 {
    if (-9223372036854775808.0..9223372036854775808.0).contains(&w) {
        w as i64
    } else {
        i64::MIN
    }
}

/// The compiler's unsigned conversion: the signed one, and where that overflowed, the signed
/// conversion of w - 2^(bits-1) with the top bit set.
fn x86_u32(w: f64) -> u32 {
    let low = x86_i32(w);
    let high = x86_i32(w - 2147483648.0);
    (low | (high & (low >> 31))) as u32
}

fn x86_u64(w: f64) -> u64 {
    let low = x86_i64(w);
    let high = x86_i64(w - 9223372036854775808.0);
    (low | (high & (low >> 63))) as u64
}

/// TensorFlow's vectorised float-to-integer cast: to int32 (or 64 bits) the x86 way, then
/// saturated to narrower types; float64 and float16 reach uint8 through uint16 reinterpreted
/// as int16.
fn float_to_int(w: f64, src: DType, dst: DType) -> i128 {
    match dst {
        DType::Int64 => i128::from(x86_i64(w)),
        DType::UInt64 => i128::from(x86_u64(w)),
        DType::Int32 => i128::from(x86_i32(w)),
        DType::UInt32 => i128::from(x86_u32(w)),
        _ => {
            let mut n = x86_i32(w);
            if dst == DType::UInt8 && matches!(src, DType::Float64 | DType::Float16) {
                n = i32::from(n.clamp(0, 65535) as u16 as i16);
            }
            let (lo, hi) = match dst {
                DType::Int8 => (-128, 127),
                DType::Int16 => (-32768, 32767),
                DType::UInt8 => (0, 255),
                _ => (0, 65535),
            };
            i128::from(n.clamp(lo, hi))
        }
    }
}

fn wrap<T: Int>(v: &[i128]) -> Vec<T> {
    v.iter().map(|&x| T::wrap(x)).collect()
}

fn integers(v: &[i128], dst: DType) -> Storage {
    match dst {
        DType::Int8 => Storage::Int8(wrap(v)),
        DType::Int16 => Storage::Int16(wrap(v)),
        DType::Int32 => Storage::Int32(wrap(v)),
        DType::Int64 => Storage::Int64(wrap(v)),
        DType::UInt8 => Storage::UInt8(wrap(v)),
        DType::UInt16 => Storage::UInt16(wrap(v)),
        DType::UInt32 => Storage::UInt32(wrap(v)),
        _ => Storage::UInt64(wrap(v)),
    }
}
