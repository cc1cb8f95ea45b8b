//! Numbers to strings and back: AsString (a printf format built from the attrs) and
//! StringToNumber (absl's SimpleAtof/SimpleAtoi grammar).

use super::printf::{self, Notation, Spec};
use super::{strings, strings_tensor, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec, Registry};
use crate::kernels::util::half_to_f32;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("AsString", as_string);
    r.add("StringToNumber", string_to_number);
}

/// AsString's format, checked once per node as TensorFlow's kernel constructor does.
#[derive(Clone, Copy)]
struct Format {
    spec: Spec,
    notation: Notation,
    /// Whether a width was given (strings are passed through without one).
    padded: bool,
}

/// The largest width or precision AsString accepts.
const MAX_WIDTH: i64 = 1 << 16;

fn as_string_format(node: &NodeSpec) -> Result<Format, String> {
    let a = &node.attrs;
    let dtype = a.dtype("T")?;
    let precision = a.int_or("precision", -1)?;
    let scientific = a.bool_or("scientific", false)?;
    let shortest = a.bool_or("shortest", false)?;
    let width = a.int_or("width", -1)?;
    let fill = a.bytes("fill").unwrap_or_default();
    // Far beyond any real use; a larger one would only make every element that many bytes.
    if width > MAX_WIDTH || precision > MAX_WIDTH {
        return Err(format!(
            "width {width} and precision {precision} must be at most {MAX_WIDTH}"
        ));
    }
    if scientific && shortest {
        return Err("Cannot select both scientific and shortest notation".into());
    }
    if fill.len() > 1 {
        return Err("Fill string must be one or fewer characters".into());
    }
    let flag = fill.first().copied();
    if let Some(f) = flag.filter(|f| !b" +-0#".contains(f)) {
        return Err(format!("Fill argument not supported: \"{}\"", f as char));
    }
    let integral = matches!(
        dtype,
        DType::Bool
            | DType::Int8
            | DType::Int16
            | DType::Int32
            | DType::Int64
            | DType::UInt8
            | DType::UInt16
            | DType::UInt32
            | DType::UInt64
    );
    if integral && precision > -1 {
        return Err(format!("precision not supported for datatype {dtype}"));
    }
    if integral && (scientific || shortest) {
        return Err(format!(
            "scientific and shortest format not supported for datatype {dtype}"
        ));
    }
    Ok(Format {
        spec: Spec {
            flag,
            width: usize::try_from(width).unwrap_or(0),
            precision: usize::try_from(precision).ok(),
        },
        notation: if shortest {
            Notation::General
        } else if scientific {
            Notation::Scientific
        } else {
            Notation::Fixed
        },
        padded: width > -1,
    })
}

fn as_string(node: &NodeSpec) -> Made {
    let format = as_string_format(node)?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        one(strings_tensor(t.shape().to_vec(), texts(&t, &format)?)?)
    }))
}

/// Floats as TensorFlow's printf sees them: values subnormal in float32 (or float64) read as
/// zeros of their sign, since TensorFlow runs its kernels with denormals-are-zero set.
fn flush32(x: f32) -> f64 {
    if x != 0.0 && x.abs() < f32::MIN_POSITIVE {
        0f64.copysign(f64::from(x))
    } else {
        f64::from(x)
    }
}

fn flush64(x: f64) -> f64 {
    if x != 0.0 && x.abs() < f64::MIN_POSITIVE {
        0f64.copysign(x)
    } else {
        x
    }
}

fn texts(t: &Tensor, f: &Format) -> KResult<Vec<Vec<u8>>> {
    let float = |x: f64| printf::float(x, &f.spec, f.notation).into_bytes();
    let signed = |x: i64| printf::signed(x, &f.spec).into_bytes();
    let unsigned = |x: u64| printf::unsigned(x, &f.spec).into_bytes();
    let complex = |re: f64, im: f64| {
        format!(
            "({},{})",
            printf::float(re, &f.spec, f.notation),
            printf::float(im, &f.spec, f.notation)
        )
        .into_bytes()
    };
    Ok(match t.storage() {
        Storage::Float16(_) | Storage::BFloat16(_) => half_to_f32(t)
            .unwrap_or_default()
            .into_iter()
            .map(|x| float(flush32(x)))
            .collect(),
        Storage::Float32(v) => v.iter().map(|&x| float(flush32(x))).collect(),
        Storage::Float64(v) => v.iter().map(|&x| float(flush64(x))).collect(),
        Storage::Int8(v) => v.iter().map(|&x| signed(x.into())).collect(),
        Storage::Int16(v) => v.iter().map(|&x| signed(x.into())).collect(),
        Storage::Int32(v) => v.iter().map(|&x| signed(x.into())).collect(),
        Storage::Int64(v) => v.iter().map(|&x| signed(x)).collect(),
        Storage::UInt8(v) => v.iter().map(|&x| unsigned(x.into())).collect(),
        Storage::UInt16(v) => v.iter().map(|&x| unsigned(x.into())).collect(),
        Storage::UInt32(v) => v.iter().map(|&x| unsigned(x.into())).collect(),
        Storage::UInt64(v) => v.iter().map(|&x| unsigned(x)).collect(),
        Storage::Bool(v) => v
            .iter()
            .map(|&x| {
                if x {
                    b"true".to_vec()
                } else {
                    b"false".to_vec()
                }
            })
            .collect(),
        Storage::Complex64(v) => v
            .iter()
            .map(|&[re, im]| complex(flush32(re), flush32(im)))
            .collect(),
        Storage::Complex128(v) => v
            .iter()
            .map(|&[re, im]| complex(flush64(re), flush64(im)))
            .collect(),
        Storage::String(v) if f.padded => v.iter().map(|s| printf::string(s, &f.spec)).collect(),
        Storage::String(v) => v.clone(),
    })
}

fn string_to_number(node: &NodeSpec) -> Made {
    let dtype = node.attrs.dtype("out_type").unwrap_or(DType::Float32);
    if !matches!(
        dtype,
        DType::Float32 | DType::Float64 | DType::Int32 | DType::Int64
    ) {
        return Err(format!("out_type {dtype} is not supported"));
    }
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let texts = strings(&t, "string_tensor")?;
        let shape = t.shape().to_vec();
        one(match dtype {
            DType::Float32 => Tensor::from_vec(shape, parse_all(texts, parse_f32)?),
            DType::Float64 => Tensor::from_vec(shape, parse_all(texts, parse_f64)?),
            DType::Int32 => Tensor::from_vec(shape, parse_all(texts, parse_int::<i32>)?),
            _ => Tensor::from_vec(shape, parse_all(texts, parse_int::<i64>)?),
        })
    }))
}

fn parse_all<T>(texts: &[Vec<u8>], parse: fn(&[u8]) -> Option<T>) -> KResult<Vec<T>> {
    texts
        .iter()
        .map(|s| {
            parse(s).ok_or_else(|| {
                fail(format!(
                    "StringToNumberOp could not correctly convert string: {}",
                    String::from_utf8_lossy(s)
                ))
            })
        })
        .collect()
}

/// `s` without the ASCII whitespace around it, as text.
fn trimmed(s: &[u8]) -> Option<&str> {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let start = s.iter().position(|b| !space(b))?;
    let end = s.iter().rposition(|b| !space(b))? + 1;
    std::str::from_utf8(&s[start..end]).ok()
}

/// An integer: surrounding whitespace, an optional sign, decimal digits, in range.
pub(super) fn parse_int<T: std::str::FromStr>(s: &[u8]) -> Option<T> {
    let text = trimmed(s)?;
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A float as absl's SimpleAtof reads it: decimal or hexadecimal notation, inf, infinity or
/// nan in any case (nan optionally with a parenthesized payload, `nan(0x12)`), with
/// whitespace around.
enum Float<'a> {
    Decimal(&'a str),
    Hex(f64),
    /// A NaN: its sign, and the payload `nan(...)` names (C's `nan("...")`), if any.
    Nan(bool, Option<u64>),
}

/// The payload of `nan(chars)` as C's `nan(chars)` reads it: the whole text as an unsigned
/// integer in C's base-0 notation (`0x1f`, `017`, `15`), saturating; None when the text is
/// not such an integer (the NaN then has no payload). `chars` is `[0-9A-Za-z_]*`.
fn nan_payload(chars: &str) -> Option<u64> {
    let (digits, radix) = if let Some(hex) = chars
        .strip_prefix("0x")
        .or_else(|| chars.strip_prefix("0X"))
    {
        (hex, 16)
    } else if chars.len() > 1 && chars.starts_with('0') {
        (&chars[1..], 8)
    } else {
        (chars, 10)
    };
    if chars.is_empty() {
        return Some(0);
    }
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    Some(u64::from_str_radix(digits, radix).unwrap_or(u64::MAX))
}

/// `nan` or `nan(chars)` (any case), chars being `[0-9A-Za-z_]*`: the payload (None without
/// one, or when the chars are not an integer); Err when `body` is not a NaN.
fn nan_text(body: &str) -> Result<Option<u64>, ()> {
    let lower = body.to_ascii_lowercase();
    if lower == "nan" {
        return Ok(None);
    }
    let inner = lower
        .strip_prefix("nan(")
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or(())?;
    if !inner
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(());
    }
    Ok(nan_payload(&body[4..body.len() - 1]))
}

fn float_text(s: &[u8]) -> Option<Float<'_>> {
    let text = trimmed(s)?;
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if let Ok(payload) = nan_text(body) {
        return Some(Float::Nan(negative, payload));
    }
    let lower = body.to_ascii_lowercase();
    if ["inf", "infinity"].contains(&lower.as_str()) || decimal(body) {
        return Some(Float::Decimal(text));
    }
    let hex = lower.strip_prefix("0x")?;
    let value = hex_value(hex)?;
    Some(Float::Hex(if negative { -value } else { value }))
}

/// Whether `s` is `digits[.digits][e[sign]digits]` or `.digits[e...]`.
fn decimal(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok =
        digits(whole) && digits(fraction) && !(whole.is_empty() && fraction.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

/// The value of hexadecimal `h[.h][p[sign]d]` (after `0x`), rounded once to f64: up to 60
/// bits of mantissa are kept, and any nonzero digit past them sets a sticky low bit.
fn hex_value(s: &str) -> Option<f64> {
    let (mantissa, exponent) = match s.find('p') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut bits: u64 = 0;
    let mut scale: i64 = 0;
    let mut sticky = false;
    for (i, c) in whole.chars().chain(fraction.chars()).enumerate() {
        let d = u64::from(c.to_digit(16)?);
        let in_fraction = i >= whole.len();
        if bits >> 56 == 0 {
            bits = bits << 4 | d;
            scale -= if in_fraction { 4 } else { 0 };
        } else {
            sticky |= d != 0;
            scale += if in_fraction { 0 } else { 4 };
        }
    }
    let exp: i64 = match exponent {
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            e.parse::<i64>().unwrap_or(if e.starts_with('-') {
                -100_000
            } else {
                100_000
            })
        }
        None => 0,
    };
    let m = (bits | u64::from(sticky)) as f64;
    let e = (exp + scale).clamp(-100_000, 100_000) as i32;
    // Two steps so an exponent past f64's range in one factor does not overflow early.
    Some(m * 2f64.powi(e / 2) * 2f64.powi(e - e / 2))
}

/// The quiet NaN with `payload` in its mantissa bits below the quiet bit (`mantissa_bits`
/// wide in all), as glibc's `nan("...")` builds it: a payload whose kept bits are all zero
/// leaves the default NaN.
fn nan_bits(negative: bool, payload: Option<u64>, mantissa_bits: u32, total_bits: u32) -> u64 {
    let exponent_and_quiet = ((1u64 << (total_bits - mantissa_bits)) - 1) << (mantissa_bits - 1);
    let kept = payload.unwrap_or(0) & ((1u64 << (mantissa_bits - 1)) - 1);
    let sign = u64::from(negative) << (total_bits - 1);
    sign | exponent_and_quiet | kept
}

pub(super) fn parse_f64(s: &[u8]) -> Option<f64> {
    match float_text(s)? {
        Float::Decimal(t) => t.parse().ok(),
        Float::Hex(v) => Some(v),
        Float::Nan(negative, payload) => Some(f64::from_bits(nan_bits(negative, payload, 52, 64))),
    }
}

pub(super) fn parse_f32(s: &[u8]) -> Option<f32> {
    match float_text(s)? {
        Float::Decimal(t) => t.parse().ok(),
        Float::Hex(v) => Some(v as f32),
        Float::Nan(negative, payload) => {
            let bits = nan_bits(negative, payload, 23, 32);
            Some(f32::from_bits(u32::try_from(bits).ok()?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_follow_simple_atof() {
        assert_eq!(parse_f64(b" 2.5 "), Some(2.5));
        assert_eq!(parse_f64(b"-0x1.8p1"), Some(-3.0));
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b".5e1"), Some(5.0));
        assert_eq!(parse_f64(b"1."), Some(1.0));
        assert_eq!(parse_f64(b"INFINITY"), Some(f64::INFINITY));
        assert!(parse_f64(b"-NaN").is_some_and(f64::is_nan));
        assert_eq!(parse_f32(b"nan(1)").map(f32::to_bits), Some(0x7fc0_0001));
        assert_eq!(
            parse_f32(b"-nan(abc_9)").map(f32::to_bits),
            Some(0xffc0_0000)
        );
        assert_eq!(parse_f32(b"NaN()").map(f32::to_bits), Some(0x7fc0_0000));
        assert_eq!(
            parse_f64(b"nan(0x10)").map(f64::to_bits),
            Some(0x7ff8_0000_0000_0010)
        );
        assert_eq!(parse_f64(b"nan(1"), None);
        assert_eq!(parse_f64(b"nan(a-b)"), None);
        for bad in [
            &b"1_000"[..],
            b"",
            b"1e",
            b"--1",
            b".",
            b"0x",
            b"1,5",
            b"0b1",
            b"e5",
        ] {
            assert_eq!(parse_f64(bad), None, "{bad:?}");
        }
        assert_eq!(parse_f32(b"16777217"), Some(16777216.0));
    }

    #[test]
    fn integers_follow_simple_atoi() {
        assert_eq!(parse_int::<i32>(b"\t+7\n"), Some(7));
        assert_eq!(parse_int::<i32>(b"2147483648"), None);
        assert_eq!(parse_int::<i64>(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_int::<i32>(b"1.5"), None);
        assert_eq!(parse_int::<i32>(b"+-1"), None);
    }
}
