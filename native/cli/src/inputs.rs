//! The inputs a user names on the command line, as `savedmodel run` reads them: `--inputs
//! 'x=a.npy;y=b.npz[key]'` and `--input-exprs 'x=[1, 2];y=b"s"'` (Python literals, parsed, never
//! evaluated); each value is then converted to its signature input's dtype with numpy's rules
//! (a numpy float array may become integers, a Python float literal may not; text never becomes
//! a number).

use std::collections::BTreeMap;
use std::path::Path;

use half::{bf16, f16};
use savedmodel_core::{DType, Storage, Tensor};

use crate::literal;

/// A value given for an input, and whether it came from a numpy file (which numpy's casting
/// rules treat differently from a Python literal).
#[derive(Debug)]
pub struct Given {
    pub tensor: Tensor,
    pub from_numpy: bool,
}

/// `NAME=VALUE` pairs separated by `;`, each name once.
fn assignments<'s>(spec: &'s str, option: &str) -> Result<Vec<(&'s str, &'s str)>, String> {
    let mut pairs = Vec::new();
    for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() && !value.trim().is_empty() => {
                pairs.push((name.trim(), value.trim()))
            }
            _ => return Err(format!("{option}: expected NAME=VALUE, got {part:?}")),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let twice: Vec<&str> = pairs
        .iter()
        .filter(|(n, _)| !seen.insert(*n))
        .map(|(n, _)| *n)
        .collect();
    if !twice.is_empty() {
        return Err(format!("{option}: inputs given twice: {twice:?}"));
    }
    Ok(pairs)
}

/// The feeds of `--inputs` and `--input-exprs`, by input name.
pub fn given(inputs: Option<&str>, exprs: Option<&str>) -> Result<BTreeMap<String, Given>, String> {
    let mut out = BTreeMap::new();
    for (name, value) in assignments(inputs.unwrap_or(""), "--inputs")? {
        let (path, key) = match value.strip_suffix(']').and_then(|v| v.split_once('[')) {
            Some((path, key)) => (path, Some(key)),
            None => (value, None),
        };
        let where_ = format!("--inputs: {name}: {path}");
        let tensor = savedmodel_npy::read_file(Path::new(path), key, &where_)?;
        out.insert(
            name.to_string(),
            Given {
                tensor,
                from_numpy: true,
            },
        );
    }
    for (name, text) in assignments(exprs.unwrap_or(""), "--input-exprs")? {
        if out.contains_key(name) {
            return Err(format!(
                "inputs given by both --inputs and --input-exprs: [{name:?}]"
            ));
        }
        let tensor = literal::parse(text).map_err(|problem| {
            format!("--input-exprs: the value of {name:?} {problem}: {text:?}")
        })?;
        out.insert(
            name.to_string(),
            Given {
                tensor,
                from_numpy: false,
            },
        );
    }
    Ok(out)
}

/// The elements of a numeric tensor in a form every cast can start from.
enum Wide {
    Int(Vec<i128>),
    Float(Vec<f64>),
    Complex(Vec<[f64; 2]>),
}

fn widen(storage: &Storage) -> Option<Wide> {
    fn ints<T: Copy + Into<i128>>(v: &[T]) -> Wide {
        Wide::Int(v.iter().map(|&x| x.into()).collect())
    }
    Some(match storage {
        Storage::Float16(v) => Wide::Float(v.iter().map(|&b| f16::from_bits(b).into()).collect()),
        Storage::BFloat16(v) => Wide::Float(v.iter().map(|&b| bf16::from_bits(b).into()).collect()),
        Storage::Float32(v) => Wide::Float(v.iter().map(|&x| x.into()).collect()),
        Storage::Float64(v) => Wide::Float(v.clone()),
        Storage::Int8(v) => ints(v),
        Storage::Int16(v) => ints(v),
        Storage::Int32(v) => ints(v),
        Storage::Int64(v) => ints(v),
        Storage::UInt8(v) => ints(v),
        Storage::UInt16(v) => ints(v),
        Storage::UInt32(v) => ints(v),
        Storage::UInt64(v) => ints(v),
        Storage::Bool(v) => Wide::Int(v.iter().map(|&b| i128::from(b)).collect()),
        Storage::Complex64(v) => {
            Wide::Complex(v.iter().map(|c| [c[0].into(), c[1].into()]).collect())
        }
        Storage::Complex128(v) => Wide::Complex(v.clone()),
        Storage::String(_) => return None,
    })
}

/// `given` as a tensor of `dtype` (numpy's `astype` after TensorFlow's conversion checks).
pub fn convert(given: Given, dtype: DType, where_: &str) -> Result<Tensor, String> {
    let Given { tensor, from_numpy } = given;
    if tensor.dtype() == dtype {
        return Ok(tensor);
    }
    let source = tensor.dtype();
    if dtype == DType::String || source == DType::String {
        let what = if dtype == DType::String {
            "strings"
        } else {
            "a number"
        };
        return Err(format!("{where_} expects {dtype}; {source} is not {what}"));
    }
    let wide = widen(tensor.storage()).ok_or_else(|| format!("{where_}: unreadable value"))?;
    let to_int = !matches!(
        dtype,
        DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64
    ) && !matches!(dtype, DType::Complex64 | DType::Complex128);
    let lossy = matches!(wide, Wide::Complex(_)) && !is_complex(dtype)
        || !from_numpy && matches!(wide, Wide::Float(_)) && to_int;
    if lossy && !tensor.is_empty() {
        return Err(format!(
            "{where_} expects {dtype}; cannot convert a {source} value without losing it"
        ));
    }
    let shape = tensor.shape().to_vec();
    Tensor::new(shape, narrow(wide, dtype))
        .ok_or_else(|| format!("{where_}: cannot convert {source} to {dtype}"))
}

fn is_complex(dtype: DType) -> bool {
    matches!(dtype, DType::Complex64 | DType::Complex128)
}

/// Each element as `dtype`: integers wrap and floats truncate toward zero, as numpy's astype.
fn narrow(wide: Wide, dtype: DType) -> Storage {
    let reals: Vec<f64> = match &wide {
        Wide::Int(v) => v.iter().map(|&x| x as f64).collect(),
        Wide::Float(v) => v.clone(),
        Wide::Complex(v) => v.iter().map(|c| c[0]).collect(),
    };
    let ints = || -> Vec<i128> {
        match &wide {
            Wide::Int(v) => v.clone(),
            _ => reals.iter().map(|&x| x as i128).collect(),
        }
    };
    match dtype {
        DType::Float16 => {
            Storage::Float16(reals.iter().map(|&x| f16::from_f64(x).to_bits()).collect())
        }
        DType::BFloat16 => {
            Storage::BFloat16(reals.iter().map(|&x| bf16::from_f64(x).to_bits()).collect())
        }
        DType::Float32 => Storage::Float32(reals.iter().map(|&x| x as f32).collect()),
        DType::Float64 => Storage::Float64(reals),
        DType::Int8 => Storage::Int8(ints().iter().map(|&x| x as i8).collect()),
        DType::Int16 => Storage::Int16(ints().iter().map(|&x| x as i16).collect()),
        DType::Int32 => Storage::Int32(ints().iter().map(|&x| x as i32).collect()),
        DType::Int64 => Storage::Int64(ints().iter().map(|&x| x as i64).collect()),
        DType::UInt8 => Storage::UInt8(ints().iter().map(|&x| x as u8).collect()),
        DType::UInt16 => Storage::UInt16(ints().iter().map(|&x| x as u16).collect()),
        DType::UInt32 => Storage::UInt32(ints().iter().map(|&x| x as u32).collect()),
        DType::UInt64 => Storage::UInt64(ints().iter().map(|&x| x as u64).collect()),
        DType::Bool => Storage::Bool(reals.iter().map(|&x| x != 0.0).collect()),
        DType::Complex64 | DType::Complex128 => {
            let pairs: Vec<[f64; 2]> = match wide {
                Wide::Complex(v) => v,
                _ => reals.iter().map(|&x| [x, 0.0]).collect(),
            };
            if dtype == DType::Complex128 {
                Storage::Complex128(pairs)
            } else {
                Storage::Complex64(pairs.iter().map(|c| [c[0] as f32, c[1] as f32]).collect())
            }
        }
        DType::String => Storage::String(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_float_never_becomes_an_integer_but_a_numpy_one_does() {
        let literal = Given {
            tensor: Tensor::from_vec(vec![2], vec![1.5f64, 2.0]),
            from_numpy: false,
        };
        let err = convert(literal, DType::Int32, "input 'x'").unwrap_err();
        assert!(err.contains("input 'x' expects int32"), "{err}");
        let file = Given {
            tensor: Tensor::from_vec(vec![2], vec![1.5f64, -2.7]),
            from_numpy: true,
        };
        let out = convert(file, DType::Int32, "x").unwrap();
        assert_eq!(out.values::<i32>().unwrap(), &[1, -2]);
    }

    #[test]
    fn specs_name_what_is_wrong() {
        assert!(given(Some("x"), None)
            .unwrap_err()
            .contains("expected NAME=VALUE"));
        let err = given(None, Some("x=1;x=2")).unwrap_err();
        assert!(err.contains("inputs given twice"), "{err}");
        let err = given(Some("x=/nonexistent.npy"), None).unwrap_err();
        assert!(
            err.starts_with("--inputs: x: /nonexistent.npy: cannot read"),
            "{err}"
        );
    }
}
