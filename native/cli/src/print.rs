//! Outputs printed the way `savedmodel run` prints them: numpy's `repr` of the array
//! (`array([[1., 2.]], dtype=float32)`), summarized with `...` beyond 1000 elements.

use half::{bf16, f16};
use savedmodel_core::{DType, Storage, Tensor};

const THRESHOLD: usize = 1000;
const EDGE: usize = 3;

/// numpy's `repr` of `tensor` (numbers in their shortest round-trip form).
pub fn repr(tensor: &Tensor) -> String {
    let items = elements(tensor.storage());
    let summarize = items.len() > THRESHOLD;
    let body = nested(&items, tensor.shape(), 0, 6, summarize);
    match tensor.dtype() {
        DType::Float64 | DType::Int64 | DType::Bool => format!("array({body})"),
        DType::String => format!("array({body}, dtype=object)"),
        dtype => format!("array({body}, dtype={dtype})"),
    }
}

fn float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.0}.")
    } else {
        format!("{x}")
    }
}

fn elements(storage: &Storage) -> Vec<String> {
    fn each<T: Copy>(v: &[T], f: impl Fn(T) -> String) -> Vec<String> {
        v.iter().map(|&x| f(x)).collect()
    }
    match storage {
        Storage::Float16(v) => each(v, |b| float(f16::from_bits(b).into())),
        Storage::BFloat16(v) => each(v, |b| float(bf16::from_bits(b).into())),
        Storage::Float32(v) => each(v, |x| {
            // Shortest form that reads back as the same float32.
            let s = format!("{x}");
            if x.is_finite() && x == x.trunc() && x.abs() < 1e16 {
                format!("{x:.0}.")
            } else if x.is_finite() {
                s
            } else {
                float(x.into())
            }
        }),
        Storage::Float64(v) => each(v, float),
        Storage::Int8(v) => each(v, |x| x.to_string()),
        Storage::Int16(v) => each(v, |x| x.to_string()),
        Storage::Int32(v) => each(v, |x| x.to_string()),
        Storage::Int64(v) => each(v, |x| x.to_string()),
        Storage::UInt8(v) => each(v, |x| x.to_string()),
        Storage::UInt16(v) => each(v, |x| x.to_string()),
        Storage::UInt32(v) => each(v, |x| x.to_string()),
        Storage::UInt64(v) => each(v, |x| x.to_string()),
        Storage::Bool(v) => each(v, |x| if x { "True" } else { "False" }.to_string()),
        Storage::Complex64(v) => v
            .iter()
            .map(|c| complex(c[0].into(), c[1].into()))
            .collect(),
        Storage::Complex128(v) => v.iter().map(|c| complex(c[0], c[1])).collect(),
        Storage::String(v) => v.iter().map(|b| bytes_repr(b)).collect(),
    }
}

fn complex(re: f64, im: f64) -> String {
    let sign = if im < 0.0 { '-' } else { '+' };
    format!("{}{sign}{}j", float(re), float(im.abs()))
}

fn bytes_repr(bytes: &[u8]) -> String {
    let mut out = String::from("b'");
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
}

/// The bracketed text of `items` (row-major, `shape`), rows broken and indented as numpy does.
fn nested(items: &[String], shape: &[usize], depth: usize, indent: usize, cut: bool) -> String {
    let Some((&n, rest)) = shape.split_first() else {
        return items.first().cloned().unwrap_or_default();
    };
    let step = rest.iter().product::<usize>();
    let shown: Vec<Option<usize>> = if cut && n > 2 * EDGE {
        (0..EDGE)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGE..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    };
    let parts: Vec<String> = shown
        .iter()
        .map(|i| match i {
            Some(i) => nested(
                &items[i * step..(i + 1) * step],
                rest,
                depth + 1,
                indent,
                cut,
            ),
            None => "...".into(),
        })
        .collect();
    let separator = if rest.is_empty() {
        ", ".to_string()
    } else {
        format!(
            ",{}{}",
            "\n".repeat(rest.len()),
            " ".repeat(indent + depth + 1)
        )
    };
    format!("[{}]", parts.join(&separator))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_print_as_numpy_reprs_them() {
        let t = Tensor::from_vec(vec![2, 2], vec![1.0f32, 2.5, -3.0, 4.0]);
        assert_eq!(
            repr(&t),
            "array([[1., 2.5],\n       [-3., 4.]], dtype=float32)"
        );
        assert_eq!(repr(&Tensor::scalar(3i64)), "array(3)");
        let s = Tensor::strings(vec![1], vec![b"a'b".to_vec()]);
        assert_eq!(repr(&s), "array([b'a\\'b'], dtype=object)");
    }
}
