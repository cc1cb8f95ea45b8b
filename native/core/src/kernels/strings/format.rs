//! StringFormat: tensors printed into a template as `tf.strings.format` and `tf.print` do
//! (TensorFlow's `SummarizeValue` with print_v2 layout: nested brackets, numpy-style row
//! breaks, at most `summarize` entries at each end of every dimension).

use super::printf::{self, Notation, Spec};
use super::Made;
use crate::engine::kernel::{boxed, fail, one, tensor_input, NodeSpec, Registry};
use crate::kernels::util::half_to_f32;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("StringFormat", string_format);
}

fn string_format(node: &NodeSpec) -> Made {
    let template = node.attrs.bytes("template")?.to_vec();
    let placeholder = match node.attrs.has("placeholder") {
        true => node.attrs.bytes("placeholder")?.to_vec(),
        false => b"%s".to_vec(),
    };
    let summarize = node.attrs.int_or("summarize", 3)?;
    let pieces = split_template(&template, &placeholder);
    if pieces.len() - 1 != node.num_inputs {
        return Err(format!(
            "num placeholders in template and num inputs must match: {} vs. {}",
            pieces.len() - 1,
            node.num_inputs
        ));
    }
    Ok(boxed(move |_, inputs| {
        if inputs.len() + 1 != pieces.len() {
            return Err(fail(format!(
                "num placeholders in template and num inputs must match: {} vs. {}",
                pieces.len() - 1,
                inputs.len()
            )));
        }
        let mut out = pieces[0].clone();
        for (i, piece) in pieces[1..].iter().enumerate() {
            out.extend(summarized(&*tensor_input(inputs, i)?, summarize));
            out.extend_from_slice(piece);
        }
        one(Tensor::strings(Vec::new(), vec![out]))
    }))
}

/// absl::StrSplit: an empty placeholder splits between every byte.
fn split_template(template: &[u8], placeholder: &[u8]) -> Vec<Vec<u8>> {
    if placeholder.is_empty() {
        return match template.len() {
            0 => vec![Vec::new()],
            _ => template.iter().map(|&b| vec![b]).collect(),
        };
    }
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(at) = rest
        .windows(placeholder.len())
        .position(|w| w == placeholder)
    {
        pieces.push(rest[..at].to_vec());
        rest = &rest[at + placeholder.len()..];
    }
    pieces.push(rest.to_vec());
    pieces
}

/// Prints the element at a flat index.
type Printer<'a> = Box<dyn Fn(usize) -> Vec<u8> + 'a>;

/// How TensorFlow prints one element of `t`; None for complex numbers (printed as `?`).
fn printer(t: &Tensor) -> Option<Printer<'_>> {
    fn each<T: Copy>(v: &[T], f: impl Fn(T) -> Vec<u8> + 'static) -> Printer<'_> {
        Box::new(move |i| f(v[i]))
    }
    let ints = |x: i128| x.to_string().into_bytes();
    Some(match t.storage() {
        Storage::String(v) => Box::new(move |i| quoted(&v[i])),
        Storage::Bool(v) => each(v, |x| vec![if x { b'1' } else { b'0' }]),
        Storage::Int8(v) => each(v, move |x| ints(x.into())),
        Storage::Int16(v) => each(v, move |x| ints(x.into())),
        Storage::Int32(v) => each(v, move |x| ints(x.into())),
        Storage::Int64(v) => each(v, move |x| ints(x.into())),
        Storage::UInt8(v) => each(v, move |x| ints(x.into())),
        Storage::UInt16(v) => each(v, move |x| ints(x.into())),
        Storage::UInt32(v) => each(v, move |x| ints(x.into())),
        Storage::UInt64(v) => each(v, move |x| ints(x.into())),
        Storage::Float64(v) => each(v, |x| double_text(x).into_bytes()),
        Storage::Float32(v) => each(v, |x| float_text(x).into_bytes()),
        Storage::Float16(_) | Storage::BFloat16(_) => {
            let wide = half_to_f32(t).unwrap_or_default();
            Box::new(move |i| float_text(wide[i]).into_bytes())
        }
        Storage::Complex64(_) | Storage::Complex128(_) => return None,
    })
}

/// `%.*g` with `digits` significant digits.
fn general(x: f64, digits: usize) -> String {
    let spec = Spec {
        precision: Some(digits),
        ..Spec::default()
    };
    printf::float(x, &spec, Notation::General)
}

/// TensorFlow's FloatToBuffer: 6 digits if they read back as the same float, else 9;
/// subnormals print as zeros (denormals-are-zero); NaN keeps its sign.
fn float_text(x: f32) -> String {
    let x = if x != 0.0 && x.abs() < f32::MIN_POSITIVE {
        0f32.copysign(x)
    } else {
        x
    };
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    let short = general(f64::from(x), 6);
    if short.parse::<f32>().ok() == Some(x) {
        short
    } else {
        general(f64::from(x), 9)
    }
}

/// TensorFlow's DoubleToBuffer: 15 digits if they read back as the same double, else 17.
fn double_text(x: f64) -> String {
    let x = if x != 0.0 && x.abs() < f64::MIN_POSITIVE {
        0f64.copysign(x)
    } else {
        x
    };
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    let short = general(x, 15);
    if short.parse::<f64>().ok() == Some(x) {
        short
    } else {
        general(x, 17)
    }
}

/// absl::Utf8SafeCEscape in double quotes: C escapes, octal for other ASCII control bytes;
/// bytes from 0x80 on pass through.
fn quoted(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'"');
    for &b in s {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'"' | b'\'' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\{b:03o}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
    out
}

/// Tensor::SummarizeValue(summarize, print_v2 = true).
fn summarized(t: &Tensor, summarize: i64) -> Vec<u8> {
    let count = t.len();
    let max_entries = usize::try_from(summarize).unwrap_or(count);
    let limit = max_entries.min(count);
    let more: &[u8] = if max_entries < count { b"..." } else { b"" };
    let Some(element) = printer(t) else {
        let body = [vec![b"?".as_slice(); limit].join(&b' '), more.to_vec()].concat();
        return if t.rank() == 0 {
            body
        } else {
            [b"[".as_slice(), &body, b"]"].concat()
        };
    };
    if t.rank() == 0 {
        let mut out = if limit > 0 { element(0) } else { Vec::new() };
        out.extend_from_slice(if count > limit { b"..." } else { b"" });
        return out;
    }
    let mut out = Vec::new();
    print_dim(t.shape(), 0, 0, limit, &element, &mut out);
    out
}

/// What separates the entries of dimension `dim`: a space in the last dimension, else line
/// breaks (one more per dimension further out) and an indent.
fn spacing(dim: usize, rank: usize) -> Vec<u8> {
    if dim + 1 == rank {
        return b" ".to_vec();
    }
    [vec![b'\n'; rank - dim - 1], vec![b' '; dim + 1]].concat()
}

/// Dimension `dim` of the block at flat `offset`, with at most `ends` entries at each end.
fn print_dim(
    shape: &[usize],
    dim: usize,
    offset: usize,
    ends: usize,
    element: &Printer,
    out: &mut Vec<u8>,
) {
    if dim == shape.len() {
        out.extend(element(offset));
        return;
    }
    let stride: usize = shape[dim + 1..].iter().product();
    let count = shape[dim];
    let gap = spacing(dim, shape.len());
    out.push(b'[');
    for i in 0..ends.min(count) {
        if i > 0 {
            out.extend_from_slice(&gap);
        }
        print_dim(shape, dim + 1, offset + i * stride, ends, element, out);
    }
    if count > ends.saturating_mul(2) {
        out.extend_from_slice(&gap);
        out.extend_from_slice(b"...");
    }
    for i in ends.max(count.saturating_sub(ends))..count {
        out.extend_from_slice(&gap);
        print_dim(shape, dim + 1, offset + i * stride, ends, element, out);
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: Tensor, summarize: i64) -> String {
        String::from_utf8(summarized(&t, summarize)).unwrap()
    }

    #[test]
    fn layouts_follow_print_v2() {
        let m = Tensor::from_vec(vec![2, 2], vec![1i32, 2, 3, 4]);
        assert_eq!(text(m, 3), "[[1 2]\n [3 4]]");
        let v = Tensor::from_vec(vec![7], (0..7i64).collect());
        assert_eq!(text(v, 2), "[0 1 ... 5 6]");
        let empty_rows = Tensor::from_vec(vec![2, 0], Vec::<f32>::new());
        assert_eq!(text(empty_rows, 3), "[\n ...]");
        assert_eq!(text(Tensor::scalar(5i32), 0), "...");
        let c = Tensor::from_vec(vec![3], vec![[1f32, 2.0]; 3]);
        assert_eq!(text(c, 2), "[? ?...]");
    }

    #[test]
    fn floats_use_the_shortest_exact_precision() {
        assert_eq!(float_text(1.0 / 3.0), "0.333333343");
        assert_eq!(float_text(0.1), "0.1");
        assert_eq!(double_text(1.0 / 3.0), "0.33333333333333331");
        assert_eq!(double_text(1e16), "1e+16");
        assert_eq!(
            quoted(b"\x01\x7f\xc3\xa9\0"),
            b"\"\\001\\177\xc3\xa9\\000\""
        );
        assert_eq!(split_template(b"{}{}", b"{}"), [b"", b"", b""]);
    }
}
