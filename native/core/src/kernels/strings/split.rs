//! StringSplitV2 and StringSplit: each string of a vector split into tokens, returned as a
//! sparse matrix (indices, values, dense shape), which Keras' TextVectorization turns into a
//! ragged tensor. StringSplitV2 splits at a separator string (or runs of whitespace);
//! the first StringSplit at any one of the delimiter's bytes.

use super::{scalar_bytes, strings, strings_tensor, Made};
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, NodeSpec, Registry};
use crate::engine::Value;
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("StringSplitV2", string_split);
    r.add("StringSplit", string_split_any);
}

fn check_vector(input: &Tensor) -> KResult<()> {
    if input.rank() != 1 {
        return Err(fail(format!(
            "input must be a vector, got shape: {:?}",
            input.shape()
        )));
    }
    Ok(())
}

/// Rows of tokens as a sparse matrix: each row's tokens are appended to `values` by `split`.
fn sparse_tokens(
    texts: &[Vec<u8>],
    mut split: impl FnMut(&[u8], &mut Vec<Vec<u8>>),
) -> KResult<Vec<Value>> {
    let mut indices = Vec::new();
    let mut values = Vec::new();
    let mut width = 0;
    for (row, text) in texts.iter().enumerate() {
        let before = values.len();
        split(text, &mut values);
        for column in 0..values.len() - before {
            indices.extend([row as i64, column as i64]);
        }
        width = width.max(values.len() - before);
    }
    let count = values.len();
    Ok(vec![
        Value::tensor(Tensor::from_vec(vec![count, 2], indices)),
        Value::tensor(strings_tensor(vec![count], values)?),
        Value::tensor(Tensor::from_vec(
            vec![2],
            vec![texts.len() as i64, width as i64],
        )),
    ])
}

/// StringSplit: every byte of `delimiter` is a delimiter of its own.
fn string_split_any(node: &NodeSpec) -> Made {
    let skip_empty = node.attrs.bool_or("skip_empty", true)?;
    Ok(boxed(move |_, inputs| {
        let input = tensor_input(inputs, 0)?;
        check_vector(&input)?;
        let delimiter = tensor_input(inputs, 1)?;
        let delimiters = scalar_bytes(&delimiter, "delimiter")?;
        sparse_tokens(strings(&input, "input")?, |text, out| {
            split_any(text, delimiters, skip_empty, out)
        })
    }))
}

/// Split at every byte that is one of `delimiters`; an empty delimiter splits into single
/// bytes. An empty string has no tokens, whether empty tokens are kept or not.
fn split_any(text: &[u8], delimiters: &[u8], skip_empty: bool, out: &mut Vec<Vec<u8>>) {
    if text.is_empty() {
        return;
    }
    if delimiters.is_empty() {
        out.extend(text.iter().map(|&b| vec![b]));
        return;
    }
    out.extend(
        text.split(|b| delimiters.contains(b))
            .filter(|piece| !skip_empty || !piece.is_empty())
            .map(<[u8]>::to_vec),
    );
}

fn string_split(node: &NodeSpec) -> Made {
    let maxsplit = node.attrs.int_or("maxsplit", -1)?;
    Ok(boxed(move |_, inputs| {
        let input = tensor_input(inputs, 0)?;
        check_vector(&input)?;
        let sep = tensor_input(inputs, 1)?;
        let sep = scalar_bytes(&sep, "sep")?;
        sparse_tokens(strings(&input, "input")?, |text, out| {
            if sep.is_empty() {
                split_at_whitespace(text, maxsplit, out);
            } else {
                split_at(text, sep, maxsplit, out);
            }
        })
    }))
}

/// Every piece between occurrences of `sep` (empty pieces too), at most `maxsplit` splits
/// when it is not negative (Python's `bytes.split(sep, maxsplit)`).
fn split_at(text: &[u8], sep: &[u8], maxsplit: i64, out: &mut Vec<Vec<u8>>) {
    let mut rest = text;
    let mut splits = 0;
    while maxsplit < 0 || splits < maxsplit {
        let Some(at) = find(rest, sep) else { break };
        out.push(rest[..at].to_vec());
        rest = &rest[at + sep.len()..];
        splits += 1;
    }
    out.push(rest.to_vec());
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() == 1 {
        return haystack.iter().position(|&b| b == needle[0]);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// ASCII whitespace as TensorFlow splits at it.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn skip_space(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_space(b)).count();
    &s[n..]
}

/// Tokens between runs of whitespace, none empty; after `maxsplit` tokens (when it is not
/// negative) the rest past the following whitespace is one more token, even when empty, and a
/// `maxsplit` of 0 keeps the text whole.
fn split_at_whitespace(text: &[u8], maxsplit: i64, out: &mut Vec<Vec<u8>>) {
    if maxsplit == 0 {
        out.push(text.to_vec());
        return;
    }
    let mut rest = skip_space(text);
    let mut tokens = 0;
    while !rest.is_empty() {
        let n = rest.iter().take_while(|&&b| !is_space(b)).count();
        out.push(rest[..n].to_vec());
        rest = skip_space(&rest[n..]);
        tokens += 1;
        if tokens == maxsplit {
            out.push(rest.to_vec());
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &[u8], sep: &[u8], maxsplit: i64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if sep.is_empty() {
            split_at_whitespace(text, maxsplit, &mut out);
        } else {
            split_at(text, sep, maxsplit, &mut out);
        }
        out
    }

    #[test]
    fn splits_as_python_bytes_split() {
        assert_eq!(pieces(b"a,,b,", b",", -1), [&b"a"[..], b"", b"b", b""]);
        assert_eq!(pieces(b"a,,b,c", b",", 2), [&b"a"[..], b"", b"b,c"]);
        assert_eq!(pieces(b"", b",", -1), [b""]);
        assert_eq!(pieces(b"  a  b c d", b"", 1), [&b"a"[..], b"b c d"]);
        assert_eq!(pieces(b" x ", b"", 1), [&b"x"[..], b""]);
        assert_eq!(pieces(b"   ", b"", -1), Vec::<Vec<u8>>::new());
    }

    fn any_of(text: &[u8], delimiters: &[u8], skip_empty: bool) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        split_any(text, delimiters, skip_empty, &mut out);
        out
    }

    #[test]
    fn splits_at_any_delimiter_byte() {
        assert_eq!(any_of(b"a,b;;c", b",;", true), [&b"a"[..], b"b", b"c"]);
        assert_eq!(
            any_of(b"a,b;;c", b",;", false),
            [&b"a"[..], b"b", b"", b"c"]
        );
        assert_eq!(any_of(b"", b",", false), Vec::<Vec<u8>>::new());
        assert_eq!(any_of(b"ab", b"", true), [&b"a"[..], b"b"]);
    }
}
