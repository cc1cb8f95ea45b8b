//! StringNGrams: the n-grams of ragged token sequences (a flat token vector with row splits),
//! as Keras' TextVectorization(ngrams=...) and tf.strings.ngrams emit them. For each row and
//! each width in turn, every window of `width` tokens over the row padded at each end, the
//! tokens joined by the separator.

use super::{strings, strings_tensor, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, NodeSpec, Registry};
use crate::engine::Value;
use crate::kernels::util::int_values;
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("StringNGrams", string_ngrams);
}

/// The op's attributes.
struct NGrams {
    separator: Vec<u8>,
    widths: Vec<usize>,
    left: Vec<u8>,
    right: Vec<u8>,
    pad_width: i64,
    preserve_short: bool,
}

impl NGrams {
    /// Pads at each end for `width`: `pad_width` (width - 1 when negative), at most width - 1.
    fn pad(&self, width: usize) -> usize {
        let most = width - 1;
        usize::try_from(self.pad_width).map_or(most, |p| p.min(most))
    }

    /// Token `i` of `row` padded with `pad` pads at each end.
    fn padded<'a>(&'a self, row: &'a [Vec<u8>], pad: usize, i: usize) -> &'a [u8] {
        if i < pad {
            &self.left
        } else {
            row.get(i - pad).unwrap_or(&self.right)
        }
    }

    /// The n-grams of one row, all widths in turn; `out` gets them.
    fn row(&self, row: &[Vec<u8>], out: &mut Vec<Vec<u8>>) -> KResult<()> {
        let before = out.len();
        for &width in &self.widths {
            let pad = self.pad(width);
            let padded = row.len() + 2 * pad;
            for start in 0..(padded + 1).saturating_sub(width) {
                let mut gram = Vec::new();
                for k in 0..width {
                    if k > 0 {
                        gram.extend_from_slice(&self.separator);
                    }
                    gram.extend_from_slice(self.padded(row, pad, start + k));
                }
                out.push(gram);
            }
        }
        if out.len() == before && !row.is_empty() && self.preserve_short {
            out.push(self.whole(row)?);
        }
        Ok(())
    }

    /// A short row kept whole, with `pad_width` pads at each end.
    fn whole(&self, row: &[Vec<u8>]) -> KResult<Vec<u8>> {
        let pad = usize::try_from(self.pad_width).map_err(|_| {
            fail(format!(
                "Pad width should be >= 0 when preserve_short_sequences is True and \
                 ngram_widths are not provided, got {}",
                self.pad_width
            ))
        })?;
        let pieces = std::iter::repeat_n(self.left.as_slice(), pad)
            .chain(row.iter().map(Vec::as_slice))
            .chain(std::iter::repeat_n(self.right.as_slice(), pad));
        let mut gram = Vec::new();
        for (i, piece) in pieces.enumerate() {
            if i > 0 {
                gram.extend_from_slice(&self.separator);
            }
            gram.extend_from_slice(piece);
        }
        Ok(gram)
    }
}

fn string_ngrams(node: &NodeSpec) -> Made {
    let widths = node
        .attrs
        .ints("ngram_widths")?
        .into_iter()
        .map(|w| {
            usize::try_from(w)
                .ok()
                .filter(|&w| w > 0)
                .ok_or_else(|| "ngram_widths must contain positive values".to_string())
        })
        .collect::<Result<_, _>>()?;
    let attrs = NGrams {
        separator: node.attrs.bytes("separator").unwrap_or_default().to_vec(),
        widths,
        left: node.attrs.bytes("left_pad").unwrap_or_default().to_vec(),
        right: node.attrs.bytes("right_pad").unwrap_or_default().to_vec(),
        pad_width: node.attrs.int_or("pad_width", -1)?,
        preserve_short: node.attrs.bool_or("preserve_short_sequences", false)?,
    };
    Ok(boxed(move |_, inputs| {
        let data = tensor_input(inputs, 0)?;
        let tokens = strings(&data, "data")?;
        let splits_tensor = tensor_input(inputs, 1)?;
        let splits = checked_splits(&int_values(&splits_tensor, "data_splits")?, tokens.len())?;
        let mut out = Vec::new();
        let mut out_splits = vec![0i64; splits.len()];
        // TensorFlow returns no n-grams at all for no tokens (even for padded empty rows).
        if !tokens.is_empty() {
            for (i, pair) in splits.windows(2).enumerate() {
                attrs.row(tokens.get(pair[0]..pair[1]).unwrap_or_default(), &mut out)?;
                if let Some(s) = out_splits.get_mut(i + 1) {
                    *s = out.len() as i64;
                }
            }
        }
        let count = out.len();
        let out_splits = match splits_tensor.dtype() {
            DType::Int32 => Tensor::from_vec(
                vec![out_splits.len()],
                out_splits.iter().map(|&s| s as i32).collect(),
            ),
            _ => Tensor::from_vec(vec![out_splits.len()], out_splits),
        };
        Ok(vec![
            Value::tensor(strings_tensor(vec![count], out)?),
            Value::tensor(out_splits),
        ])
    }))
}

/// Row splits must start at 0, never decrease, and end at the number of tokens.
fn checked_splits(splits: &[i64], size: usize) -> KResult<Vec<usize>> {
    let Some(&first) = splits.first() else {
        return Ok(Vec::new());
    };
    if first != 0 {
        return Err(fail(format!("First split value must be 0, got {first}")));
    }
    let mut out = Vec::with_capacity(splits.len());
    let mut previous = 0;
    for &s in splits {
        let at = usize::try_from(s)
            .ok()
            .filter(|&at| at >= previous && at <= size)
            .ok_or_else(|| {
                fail(format!(
                    "Invalid split value {s}, must be in [{previous}, {size}]"
                ))
            })?;
        out.push(at);
        previous = at;
    }
    if previous != size {
        return Err(fail(format!(
            "Last split value must be data size. Expected {size}, got {previous}"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grams(widths: &[usize], pad_width: i64, preserve_short: bool, row: &[&str]) -> Vec<String> {
        let attrs = NGrams {
            separator: b" ".to_vec(),
            widths: widths.to_vec(),
            left: b"L".to_vec(),
            right: b"R".to_vec(),
            pad_width,
            preserve_short,
        };
        let row: Vec<Vec<u8>> = row.iter().map(|s| s.as_bytes().to_vec()).collect();
        let mut out = Vec::new();
        attrs.row(&row, &mut out).unwrap();
        out.into_iter()
            .map(|g| String::from_utf8(g).unwrap())
            .collect()
    }

    #[test]
    fn windows_over_padded_rows() {
        assert_eq!(grams(&[2], 0, false, &["a", "b", "c"]), ["a b", "b c"]);
        assert_eq!(grams(&[2], -1, false, &["a"]), ["L a", "a R"]);
        assert_eq!(grams(&[3], 1, false, &["a"]), ["L a R"]);
        assert_eq!(grams(&[2], -1, false, &[]), ["L R"]);
        assert_eq!(grams(&[4], 0, true, &["a", "b"]), ["a b"]);
        assert_eq!(grams(&[], 1, true, &["a"]), ["L a R"]);
    }

    #[test]
    fn checks_splits() {
        assert_eq!(checked_splits(&[0, 2, 3], 3).unwrap(), [0, 2, 3]);
        assert!(checked_splits(&[1, 3], 3).is_err());
        assert!(checked_splits(&[0, 2, 1, 3], 3).is_err());
        assert!(checked_splits(&[0, 4], 3).is_err());
        assert!(checked_splits(&[0, 2], 3).is_err());
    }
}
