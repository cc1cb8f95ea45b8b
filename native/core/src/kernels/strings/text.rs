//! Elementwise string ops: StringJoin, StringLength, Substr, StringLower/StringUpper,
//! StringStrip, the hash buckets (StringToHashBucketFast, StringToHashBucket,
//! StringToHashBucketStrong), and the checkpoint file names savers build (ShardedFilename,
//! ShardedFilespec).

use super::{scalar_bytes, scalar_int, strings, strings_tensor, Made};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec, Registry};
use crate::kernels::util::{broadcast_offsets, broadcast_shape, int_values};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("StringJoin", string_join);
    r.add("ShardedFilename", sharded_filename);
    r.add("ShardedFilespec", sharded_filespec);
    r.add("StringLength", string_length);
    r.add("Substr", substr);
    r.add("StringLower", |n| change_case(n, Case::Lower));
    r.add("StringUpper", |n| change_case(n, Case::Upper));
    r.add("StringStrip", string_strip);
    r.add("StringToHashBucketFast", |n| {
        hash_bucket(n, Hash::Fingerprint)
    });
    r.add("StringToHashBucket", |n| hash_bucket(n, Hash::Murmur));
    r.add("StringToHashBucketStrong", strong_hash_bucket);
}

/// Joins the inputs elementwise: scalars broadcast, the other inputs must share one shape (no
/// general broadcasting, as in TensorFlow).
fn string_join(node: &NodeSpec) -> Made {
    let separator = node.attrs.bytes("separator").unwrap_or_default().to_vec();
    Ok(boxed(move |_, inputs| {
        let tensors = (0..inputs.len())
            .map(|i| tensor_input(inputs, i))
            .collect::<KResult<Vec<_>>>()?;
        let mut shape: Option<&[usize]> = None;
        for t in tensors.iter().filter(|t| t.rank() > 0) {
            match shape {
                Some(s) if s != t.shape() => {
                    return Err(fail(format!(
                        "Input shapes do not match: {s:?} vs. {:?}",
                        t.shape()
                    )))
                }
                _ => shape = Some(t.shape()),
            }
        }
        let shape = shape.unwrap_or(&[]).to_vec();
        let columns = tensors
            .iter()
            .enumerate()
            .map(|(i, t)| strings(t, &format!("input {i}")))
            .collect::<KResult<Vec<_>>>()?;
        let count = crate::tensor::element_count(&shape).unwrap_or(0);
        let joined = (0..count)
            .map(|e| {
                let mut out = Vec::new();
                for (i, column) in columns.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(&separator);
                    }
                    let item = if column.len() == 1 {
                        &column[0]
                    } else {
                        &column[e]
                    };
                    out.extend_from_slice(item);
                }
                out
            })
            .collect();
        one(strings_tensor(shape, joined)?)
    }))
}

fn sharded_filename(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let base = scalar_bytes(&*tensor_input(inputs, 0)?, "basename")?.to_vec();
        let shard = scalar_int(&*tensor_input(inputs, 1)?, "shard")?;
        let shards = scalar_int(&*tensor_input(inputs, 2)?, "num_shards")?;
        let mut name = base;
        name.extend_from_slice(format!("-{shard:05}-of-{shards:05}").as_bytes());
        one(Tensor::strings(Vec::new(), vec![name]))
    }))
}

fn sharded_filespec(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let base = scalar_bytes(&*tensor_input(inputs, 0)?, "basename")?.to_vec();
        let shards = scalar_int(&*tensor_input(inputs, 1)?, "num_shards")?;
        let mut spec = base;
        spec.extend_from_slice(format!("-?????-of-{shards:05}").as_bytes());
        one(Tensor::strings(Vec::new(), vec![spec]))
    }))
}

/// Whether a string op counts bytes or UTF-8 characters.
#[derive(Clone, Copy)]
enum Unit {
    Byte,
    Utf8Char,
}

fn unit(node: &NodeSpec) -> Result<Unit, String> {
    match node.attrs.string_or("unit", "BYTE")? {
        "BYTE" => Ok(Unit::Byte),
        "UTF8_CHAR" => Ok(Unit::Utf8Char),
        other => Err(format!("unknown unit {other:?} (BYTE or UTF8_CHAR)")),
    }
}

/// UTF-8 continuation bytes (0b10xxxxxx) do not start a character; TensorFlow counts every
/// other byte as one, valid UTF-8 or not.
fn starts_char(byte: u8) -> bool {
    byte & 0xC0 != 0x80
}

fn string_length(node: &NodeSpec) -> Made {
    let unit = unit(node)?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let lengths = strings(&t, "input")?
            .iter()
            .map(|s| match unit {
                Unit::Byte => s.len(),
                Unit::Utf8Char => s.iter().filter(|&&b| starts_char(b)).count(),
            })
            .map(|n| i32::try_from(n).unwrap_or(i32::MAX))
            .collect();
        one(Tensor::from_vec(t.shape().to_vec(), lengths))
    }))
}

/// Substr(input, pos, len): `pos` and `len` share a shape, which broadcasts against the
/// input's; a position outside `[-size, size]` is an error, a length past the end stops there.
fn substr(node: &NodeSpec) -> Made {
    let unit = unit(node)?;
    Ok(boxed(move |_, inputs| {
        let input = tensor_input(inputs, 0)?;
        let pos = tensor_input(inputs, 1)?;
        let len = tensor_input(inputs, 2)?;
        if pos.shape() != len.shape() {
            return Err(fail(format!(
                "pos and len should have the same shape, got: {:?} vs. {:?}",
                pos.shape(),
                len.shape()
            )));
        }
        let items = strings(&input, "input")?;
        let starts = int_values(&pos, "pos")?;
        let lengths = int_values(&len, "len")?;
        let shape = broadcast_shape(input.shape(), pos.shape())?;
        let si = broadcast_offsets(input.shape(), &shape);
        let pi = broadcast_offsets(pos.shape(), &shape);
        let out = si
            .iter()
            .zip(&pi)
            .enumerate()
            .map(|(index, (&s, &p))| cut(&items[s], starts[p], lengths[p], unit, index))
            .collect::<KResult<Vec<_>>>()?;
        one(strings_tensor(shape, out)?)
    }))
}

/// One substring; `index` names the element in errors.
fn cut(s: &[u8], pos: i64, len: i64, unit: Unit, index: usize) -> KResult<Vec<u8>> {
    let offsets: Vec<usize> = match unit {
        Unit::Byte => Vec::new(),
        Unit::Utf8Char => (0..s.len())
            .filter(|&i| starts_char(s[i]))
            .chain([s.len()])
            .collect(),
    };
    let size = match unit {
        Unit::Byte => s.len(),
        Unit::Utf8Char => offsets.len() - 1,
    } as i64;
    if pos < -size || pos > size {
        return Err(fail(format!(
            "pos {pos} out of range for string b'{}' at index {index}",
            s.escape_ascii()
        )));
    }
    let start = if pos < 0 { pos + size } else { pos };
    // A negative length means "to the end" in bytes, but no characters in UTF8_CHAR
    // (TensorFlow counts that many characters forward).
    let stop = match unit {
        Unit::Byte if len < 0 => size,
        Unit::Utf8Char if len < 0 => start,
        _ => size.min(start.saturating_add(len)),
    };
    let (start, stop) = (start as usize, stop as usize);
    Ok(match unit {
        Unit::Byte => s[start..stop].to_vec(),
        Unit::Utf8Char => s[offsets[start]..offsets[stop]].to_vec(),
    })
}

#[derive(Clone, Copy)]
enum Case {
    Lower,
    Upper,
}

/// Without an encoding only ASCII letters change; with `utf-8` the text changes case as
/// Unicode, and each ill-formed sequence becomes U+FFFD (one per maximal ill-formed part, as
/// TensorFlow's ICU conversion writes it).
fn change_case(node: &NodeSpec, case: Case) -> Made {
    let unicode = match node.attrs.string_or("encoding", "")? {
        "" => false,
        "utf-8" | "UTF-8" => true,
        other => return Err(format!("unsupported encoding {other:?}")),
    };
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let changed = strings(&t, "input")?
            .iter()
            .map(|s| match (unicode, case) {
                (false, Case::Lower) => s.to_ascii_lowercase(),
                (false, Case::Upper) => s.to_ascii_uppercase(),
                (true, _) => unicode_case(s, case),
            })
            .collect();
        one(strings_tensor(t.shape().to_vec(), changed)?)
    }))
}

fn unicode_case(s: &[u8], case: Case) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for chunk in s.utf8_chunks() {
        let text = match case {
            Case::Lower => chunk.valid().to_lowercase(),
            Case::Upper => chunk.valid().to_uppercase(),
        };
        out.extend_from_slice(text.as_bytes());
        if !chunk.invalid().is_empty() {
            out.extend_from_slice(
                char::REPLACEMENT_CHARACTER
                    .encode_utf8(&mut [0; 4])
                    .as_bytes(),
            );
        }
    }
    out
}

/// ASCII whitespace (space, \t, \n, \v, \f, \r) off both ends of each string.
fn string_strip(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let stripped = strings(&t, "input")?
            .iter()
            .map(|s| strip(s).to_vec())
            .collect();
        one(strings_tensor(t.shape().to_vec(), stripped)?)
    }))
}

fn strip(s: &[u8]) -> &[u8] {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let start = s.iter().position(|b| !space(b)).unwrap_or(s.len());
    let stop = s.iter().rposition(|b| !space(b)).map_or(start, |i| i + 1);
    s.get(start..stop).unwrap_or_default()
}

/// Which hash a bucketing op takes of each string.
#[derive(Clone, Copy)]
enum Hash {
    /// FarmHash Fingerprint64 (StringToHashBucketFast).
    Fingerprint,
    /// tensorflow::Hash64 (the deprecated StringToHashBucket).
    Murmur,
    /// SipHash-2-4 under a 128-bit key (StringToHashBucketStrong).
    Sip([u64; 2]),
}

impl Hash {
    fn of(self, s: &[u8]) -> u64 {
        match self {
            Hash::Fingerprint => super::fingerprint64(s),
            Hash::Murmur => super::keyed_hash::hash64(s),
            Hash::Sip(key) => super::keyed_hash::siphash24(key, s),
        }
    }
}

/// Each string's hash modulo the number of buckets.
fn hash_bucket(node: &NodeSpec, hash: Hash) -> Made {
    let buckets = node.attrs.int("num_buckets")?;
    let buckets = u64::try_from(buckets)
        .ok()
        .filter(|&b| b >= 1)
        .ok_or_else(|| format!("num_buckets must be at least 1, got {buckets}"))?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let hashed = strings(&t, "input")?
            .iter()
            .map(|s| (hash.of(s) % buckets) as i64)
            .collect();
        one(Tensor::from_vec(t.shape().to_vec(), hashed))
    }))
}

/// The `key` attr's two int64s are read as the two unsigned words of the SipHash key.
fn strong_hash_bucket(node: &NodeSpec) -> Made {
    match node.attrs.ints("key")?.as_slice() {
        &[k0, k1] => hash_bucket(node, Hash::Sip([k0 as u64, k1 as u64])),
        other => Err(format!("Key must have 2 elements, got {}", other.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substrings_count_characters_or_bytes() {
        let s = "h\u{e9}llo\u{20ac}".as_bytes();
        assert_eq!(
            cut(s, 1, 4, Unit::Utf8Char, 0).unwrap(),
            "\u{e9}llo".as_bytes()
        );
        assert_eq!(
            cut(s, -2, 9, Unit::Utf8Char, 0).unwrap(),
            "o\u{20ac}".as_bytes()
        );
        assert_eq!(cut(b"hello", 5, 1, Unit::Byte, 0).unwrap(), b"");
        assert!(cut(b"hello", 6, 1, Unit::Byte, 0).is_err());
        assert!(cut(b"hello", -6, 1, Unit::Byte, 0).is_err());
        assert_eq!(cut(b"hello", 1, i64::MAX, Unit::Byte, 0).unwrap(), b"ello");
        assert_eq!(cut(b"hello", 1, -1, Unit::Byte, 0).unwrap(), b"ello");
        assert_eq!(cut(s, 1, -1, Unit::Utf8Char, 0).unwrap(), b"");
    }

    #[test]
    fn strips_ascii_whitespace() {
        assert_eq!(strip(b" \t a b\x0b\r\n"), b"a b");
        assert_eq!(strip(b" \n "), b"");
        assert_eq!(strip(b"\xc2\xa0x"), b"\xc2\xa0x");
    }

    #[test]
    fn unicode_case_replaces_invalid_bytes() {
        assert_eq!(
            unicode_case(b"\xff\xc3\x84A\xe2\x82", Case::Lower),
            "\u{fffd}\u{e4}a\u{fffd}".as_bytes()
        );
        assert_eq!(
            unicode_case(b"\xed\xa0\x80x", Case::Upper),
            "\u{fffd}\u{fffd}\u{fffd}X".as_bytes()
        );
        assert_eq!(
            unicode_case("\u{3a3}\u{391}\u{3a3}".as_bytes(), Case::Lower),
            "\u{3c3}\u{3b1}\u{3c2}".as_bytes()
        );
    }
}
