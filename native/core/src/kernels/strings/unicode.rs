//! Unicode ops: decoding strings into code points (UnicodeDecode, UnicodeDecodeWithOffsets),
//! encoding code points into strings (UnicodeEncode), re-encoding strings (UnicodeTranscode),
//! and the script of code points (UnicodeScript).
//!
//! TensorFlow reads text with ICU converters and replaces each ill-formed sequence (a maximal
//! subpart, as the Unicode standard recommends: `\xe2\x82` missing its last byte is one error,
//! a stray continuation byte is one error each) by `replacement_char`. The `errors` attr then
//! decides: `strict` fails, `replace` substitutes, `ignore` drops. With
//! `replace_control_characters`, code points up to U+001F count as errors too (replaced or
//! dropped, never failing a decode; UnicodeTranscode's strict mode does fail on them).
//!
//! Encodings: UTF-8, UTF-16-BE and UTF-32-BE out (the op defs allow no others); in, those and
//! the little-endian UTF-16/UTF-32 under their ICU names (case, `-`, `_` and spaces ignored).

use super::unicode_scripts::{RUN_SCRIPTS, RUN_STARTS};
use super::{strings, strings_tensor, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec, Registry};
use crate::engine::Value;
use crate::kernels::util::int_values;
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("UnicodeDecode", |n| decode_op(n, false));
    r.add("UnicodeDecodeWithOffsets", |n| decode_op(n, true));
    r.add("UnicodeEncode", encode_op);
    r.add("UnicodeTranscode", transcode_op);
    r.add("UnicodeScript", script_op);
}

const MAX_CODE_POINT: i64 = 0x10FFFF;
const CONTROL_MAX: i64 = 0x1F;
const REPLACEMENT: u32 = 0xFFFD;

/// A text encoding and its byte order.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Codec {
    Utf8,
    Utf16 { big_endian: bool },
    Utf32 { big_endian: bool },
}

/// The codec of an ICU converter name TensorFlow accepts as an input encoding.
fn input_codec(name: &str) -> Result<Codec, String> {
    let key: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    match key.as_str() {
        "UTF8" => Ok(Codec::Utf8),
        "UTF16BE" => Ok(Codec::Utf16 { big_endian: true }),
        "UTF16LE" => Ok(Codec::Utf16 { big_endian: false }),
        "UTF32BE" => Ok(Codec::Utf32 { big_endian: true }),
        "UTF32LE" => Ok(Codec::Utf32 { big_endian: false }),
        _ => Err(format!(
            "input encoding {name:?} is not supported by this engine (it decodes UTF-8, \
             UTF-16-BE/LE and UTF-32-BE/LE)"
        )),
    }
}

fn output_codec(name: &str) -> Result<Codec, String> {
    match name {
        "UTF-8" => Ok(Codec::Utf8),
        "UTF-16-BE" => Ok(Codec::Utf16 { big_endian: true }),
        "UTF-32-BE" => Ok(Codec::Utf32 { big_endian: true }),
        _ => Err(format!(
            "Invalid encoding \"{name}\": Should be one of: UTF-8, UTF-16-BE, UTF-32-BE"
        )),
    }
}

/// What happens to an ill-formed sequence or invalid code point.
#[derive(Clone, Copy, PartialEq)]
enum Policy {
    Strict,
    Replace,
    Ignore,
}

/// The `errors` and `replacement_char` attrs.
fn policy(node: &NodeSpec) -> Result<(Policy, u32), String> {
    let replacement = node
        .attrs
        .int_or("replacement_char", i64::from(REPLACEMENT))?;
    let replacement = u32::try_from(replacement)
        .ok()
        .filter(|&r| i64::from(r) <= MAX_CODE_POINT)
        .ok_or("replacement_char out of unicode codepoint range")?;
    let policy = match node.attrs.string_or("errors", "replace")? {
        "strict" => Policy::Strict,
        "replace" => Policy::Replace,
        "ignore" => Policy::Ignore,
        _ => return Err("errors policy must be one of 'strict', 'replace', or 'ignore'".into()),
    };
    Ok((policy, replacement))
}

/// One decoded character: its code point (None for an ill-formed sequence) and its bytes.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Unit {
    code: Option<u32>,
    size: usize,
}

/// Every character of `s`, in order, to `visit`.
fn decode(s: &[u8], codec: Codec, visit: &mut impl FnMut(Unit)) {
    match codec {
        Codec::Utf8 => decode_utf8(s, visit),
        Codec::Utf16 { big_endian } => decode_utf16(s, big_endian, visit),
        Codec::Utf32 { big_endian } => decode_utf32(s, big_endian, visit),
    }
}

fn decode_utf8(s: &[u8], visit: &mut impl FnMut(Unit)) {
    for chunk in s.utf8_chunks() {
        for c in chunk.valid().chars() {
            visit(Unit {
                code: Some(c as u32),
                size: c.len_utf8(),
            });
        }
        if !chunk.invalid().is_empty() {
            visit(Unit {
                code: None,
                size: chunk.invalid().len(),
            });
        }
    }
}

fn unit16(bytes: &[u8], big_endian: bool) -> Option<u32> {
    let pair = [*bytes.first()?, *bytes.get(1)?];
    Some(u32::from(if big_endian {
        u16::from_be_bytes(pair)
    } else {
        u16::from_le_bytes(pair)
    }))
}

/// UTF-16: a lone surrogate is one 2-byte error, a high surrogate cut off by the end one error
/// up to the end, and a trailing odd byte one error.
fn decode_utf16(s: &[u8], big_endian: bool, visit: &mut impl FnMut(Unit)) {
    let mut at = 0;
    while at < s.len() {
        let rest = &s[at..];
        let unit = match unit16(rest, big_endian) {
            None => Unit {
                code: None,
                size: rest.len(),
            },
            Some(high @ 0xD800..=0xDBFF) => match rest.get(2..).and_then(|r| unit16(r, big_endian))
            {
                _ if rest.len() < 4 => Unit {
                    code: None,
                    size: rest.len(),
                },
                Some(low @ 0xDC00..=0xDFFF) => Unit {
                    code: Some(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)),
                    size: 4,
                },
                _ => Unit {
                    code: None,
                    size: 2,
                },
            },
            Some(0xDC00..=0xDFFF) => Unit {
                code: None,
                size: 2,
            },
            Some(code) => Unit {
                code: Some(code),
                size: 2,
            },
        };
        at += unit.size;
        visit(unit);
    }
}

/// UTF-32: a unit past U+10FFFF or a surrogate is one 4-byte error, trailing bytes one error.
fn decode_utf32(s: &[u8], big_endian: bool, visit: &mut impl FnMut(Unit)) {
    let mut words = s.chunks_exact(4);
    for word in &mut words {
        let bytes = [word[0], word[1], word[2], word[3]];
        let code = if big_endian {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        };
        let valid = char::from_u32(code).is_some();
        visit(Unit {
            code: valid.then_some(code),
            size: 4,
        });
    }
    if !words.remainder().is_empty() {
        visit(Unit {
            code: None,
            size: words.remainder().len(),
        });
    }
}

/// Appends `code` encoded in `codec`. A surrogate (only a surrogate replacement_char makes
/// one) is U+FFFD in UTF-8 and itself in UTF-16 and UTF-32, as ICU writes them.
fn encode(code: u32, codec: Codec, out: &mut Vec<u8>) {
    match codec {
        Codec::Utf8 => {
            let c = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
        Codec::Utf16 { big_endian } => {
            let mut put = |u: u16| {
                out.extend_from_slice(&if big_endian {
                    u.to_be_bytes()
                } else {
                    u.to_le_bytes()
                })
            };
            if code >= 0x10000 {
                let v = code - 0x10000;
                put(0xD800 | (v >> 10) as u16);
                put(0xDC00 | (v & 0x3FF) as u16);
            } else {
                put(code as u16);
            }
        }
        Codec::Utf32 { big_endian } => out.extend_from_slice(&if big_endian {
            code.to_be_bytes()
        } else {
            code.to_le_bytes()
        }),
    }
}

/// The decode attrs shared by UnicodeDecode(WithOffsets) and UnicodeTranscode.
#[derive(Clone, Copy)]
struct Decoding {
    codec: Codec,
    policy: Policy,
    replacement: u32,
    replace_control: bool,
}

impl Decoding {
    fn new(node: &NodeSpec) -> Result<Self, String> {
        let (policy, replacement) = policy(node)?;
        Ok(Self {
            codec: input_codec(node.attrs.string("input_encoding")?)?,
            policy,
            replacement,
            replace_control: node.attrs.bool_or("replace_control_characters", false)?,
        })
    }

    /// Every character of `s` after the policy, with its byte offset in `s`; an error when
    /// strict meets an ill-formed sequence (or a control character, when `strict_controls`:
    /// otherwise a strict decode replaces those).
    fn each(
        &self,
        s: &[u8],
        strict_controls: bool,
        visit: &mut impl FnMut(u32, usize),
    ) -> KResult<()> {
        let mut offset = 0;
        let mut failed = false;
        decode(s, self.codec, &mut |unit| {
            let control =
                self.replace_control && unit.code.is_some_and(|c| i64::from(c) <= CONTROL_MAX);
            let start = offset;
            offset += unit.size;
            match (unit.code, self.policy) {
                (Some(code), _) if !control => visit(code, start),
                (None, Policy::Strict) => failed = true,
                (_, Policy::Strict) if strict_controls => failed = true,
                (_, Policy::Ignore) => {}
                _ => visit(self.replacement, start),
            }
        });
        if failed {
            return Err(fail("Invalid formatting on input string"));
        }
        Ok(())
    }
}

/// Row splits as int32 or int64 (the Tsplits attr).
fn splits_tensor(splits: Vec<i64>, dtype: DType) -> Tensor {
    let n = splits.len();
    match dtype {
        DType::Int32 => Tensor::from_vec(vec![n], splits.into_iter().map(|s| s as i32).collect()),
        _ => Tensor::from_vec(vec![n], splits),
    }
}

fn decode_op(node: &NodeSpec, with_offsets: bool) -> Made {
    let decoding = Decoding::new(node)?;
    let splits_dtype = node.attrs.dtype("Tsplits").unwrap_or(DType::Int64);
    Ok(boxed(move |_, inputs| {
        let input = tensor_input(inputs, 0)?;
        let texts = strings(&input, "input")?;
        let mut splits = Vec::with_capacity(texts.len() + 1);
        splits.push(0i64);
        let mut values: Vec<i32> = Vec::new();
        let mut offsets: Vec<i64> = Vec::new();
        for text in texts {
            decoding.each(text, false, &mut |code, start| {
                values.push(code as i32);
                offsets.push(start as i64);
            })?;
            splits.push(values.len() as i64);
        }
        let count = values.len();
        let mut out = vec![
            Value::tensor(splits_tensor(splits, splits_dtype)),
            Value::tensor(Tensor::from_vec(vec![count], values)),
        ];
        if with_offsets {
            out.push(Value::tensor(Tensor::from_vec(vec![count], offsets)));
        }
        Ok(out)
    }))
}

fn transcode_op(node: &NodeSpec) -> Made {
    let decoding = Decoding::new(node)?;
    let out_codec = output_codec(node.attrs.string("output_encoding")?)?;
    Ok(boxed(move |_, inputs| {
        let input = tensor_input(inputs, 0)?;
        let out = strings(&input, "input")?
            .iter()
            .map(|text| {
                let mut encoded = Vec::with_capacity(text.len());
                decoding.each(text, true, &mut |code, _| {
                    encode(code, out_codec, &mut encoded)
                })?;
                Ok(encoded)
            })
            .collect::<KResult<Vec<_>>>()?;
        one(strings_tensor(input.shape().to_vec(), out)?)
    }))
}

/// Splits of code point rows: not empty, from 0, non-decreasing, ending at the value count.
fn check_encode_splits(splits: &[i64], size: usize) -> KResult<()> {
    let (Some(&first), Some(&last)) = (splits.first(), splits.last()) else {
        return Err(fail("input_splits must not be empty"));
    };
    if first != 0 {
        return Err(fail(format!(
            "First value of input_splits must be 0, got {first}"
        )));
    }
    if splits.windows(2).any(|w| w[1] < w[0]) {
        return Err(fail("input_splits must be non-decreasing"));
    }
    if last != size as i64 {
        return Err(fail(format!(
            "Last value of input_splits must be the number of values {size}, got {last}"
        )));
    }
    Ok(())
}

fn encode_op(node: &NodeSpec) -> Made {
    let codec = output_codec(node.attrs.string("output_encoding")?)?;
    let (policy, replacement) = policy(node)?;
    Ok(boxed(move |_, inputs| {
        let values = int_values(&*tensor_input(inputs, 0)?, "input_values")?;
        let splits = int_values(&*tensor_input(inputs, 1)?, "input_splits")?;
        check_encode_splits(&splits, values.len())?;
        let valid = |v: i64| u32::try_from(v).ok().and_then(char::from_u32);
        if policy == Policy::Strict && values.iter().any(|&v| valid(v).is_none()) {
            return Err(fail("Code point value out of valid Unicode range."));
        }
        let rows = splits
            .windows(2)
            .map(|w| {
                let mut out = Vec::new();
                let row = values.get(w[0] as usize..w[1] as usize).unwrap_or_default();
                for &v in row {
                    match (valid(v), policy) {
                        (Some(c), _) => encode(c as u32, codec, &mut out),
                        (None, Policy::Replace) => encode(replacement, codec, &mut out),
                        (None, _) => {}
                    }
                }
                out
            })
            .collect::<Vec<_>>();
        one(strings_tensor(vec![rows.len()], rows)?)
    }))
}

/// ICU's script number of a code point; -1 for values that are not code points.
fn script(code: i32) -> i32 {
    if !(0..=MAX_CODE_POINT as i32).contains(&code) {
        return -1;
    }
    let run = RUN_STARTS.partition_point(|&start| start <= code as u32);
    run.checked_sub(1)
        .and_then(|i| RUN_SCRIPTS.get(i))
        .map_or(-1, |&s| i32::from(s))
}

fn script_op(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let input = tensor_input(inputs, 0)?;
        let codes = input.values::<i32>().ok_or_else(|| {
            fail(format!(
                "input must be an int32 tensor, got {}",
                input.dtype()
            ))
        })?;
        let scripts = codes.iter().map(|&c| script(c)).collect();
        one(Tensor::from_vec(input.shape().to_vec(), scripts))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &[u8], codec: Codec) -> Vec<(Option<u32>, usize)> {
        let mut out = Vec::new();
        decode(s, codec, &mut |u| out.push((u.code, u.size)));
        out
    }

    #[test]
    fn ill_formed_utf8_is_one_error_per_maximal_subpart() {
        assert_eq!(
            units(b"a\xe2\x82\xffb", Codec::Utf8),
            [(Some(97), 1), (None, 2), (None, 1), (Some(98), 1)]
        );
        assert_eq!(
            units("\u{20ac}".as_bytes(), Codec::Utf8),
            [(Some(0x20ac), 3)]
        );
    }

    #[test]
    fn ill_formed_utf16_and_utf32() {
        let be = Codec::Utf16 { big_endian: true };
        assert_eq!(units(b"\xd8\x00\x00a", be), [(None, 2), (Some(97), 2)]);
        assert_eq!(units(b"\xd8\x00\x00", be), [(None, 3)]);
        assert_eq!(units(b"\x00a\x00", be), [(Some(97), 2), (None, 1)]);
        assert_eq!(units(b"\xd8\x00\xdc\x00", be), [(Some(0x10000), 4)]);
        let le = Codec::Utf16 { big_endian: false };
        assert_eq!(units(b"a\x00", le), [(Some(97), 2)]);
        let utf32 = Codec::Utf32 { big_endian: true };
        assert_eq!(
            units(b"\x00\x11\x00\x00\x00\x00\x00a\x00", utf32),
            [(None, 4), (Some(97), 4), (None, 1)]
        );
    }

    #[test]
    fn encodes_surrogates_as_icu_does() {
        let mut out = Vec::new();
        encode(0xD800, Codec::Utf8, &mut out);
        encode(0xD800, Codec::Utf16 { big_endian: true }, &mut out);
        encode(0x1F600, Codec::Utf16 { big_endian: true }, &mut out);
        assert_eq!(out, b"\xef\xbf\xbd\xd8\x00\xd8\x3d\xde\x00");
    }

    #[test]
    fn scripts_of_code_points() {
        assert_eq!(script('a' as i32), 25);
        assert_eq!(script(0x300), 1);
        assert_eq!(script(-1), -1);
        assert_eq!(script(0x110000), -1);
        assert_eq!(script(0), 0);
    }
}
