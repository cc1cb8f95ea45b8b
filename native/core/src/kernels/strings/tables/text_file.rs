//! InitializeTableFromTextFileV2: a static table filled from a text file, one entry per line,
//! key and value each a column (split at the delimiter), the whole line, or the line number.
//! The file is read through the run's file-access policy.

use super::table::{Kind, Table};
use super::{initialize_static, on_table};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, NodeSpec};
use crate::kernels::strings::convert::{parse_f32, parse_f64, parse_int};
use crate::kernels::strings::file::read_named;
use crate::kernels::strings::{scalar_bytes, Made};
use crate::tensor::{Storage, Tensor};

const OP: &str = "InitializeTableFromTextFileV2";
/// `key_index` / `value_index` for the line number (TextFileIndex.LINE_NUMBER).
const LINE_NUMBER: i64 = -1;
/// ... and for the whole line (TextFileIndex.WHOLE_LINE).
const WHOLE_LINE: i64 = -2;

/// Where a line's key and value come from.
struct Columns {
    key_index: i64,
    value_index: i64,
    delimiter: u8,
    vocab_size: i64,
    offset: i64,
}

pub fn initialize(node: &NodeSpec) -> Made {
    let a = &node.attrs;
    let delimiter = a.bytes("delimiter").unwrap_or(b"\t");
    let &[delimiter] = delimiter else {
        return Err(format!(
            "delimiter should be one character, got {:?}",
            String::from_utf8_lossy(delimiter)
        ));
    };
    let columns = Columns {
        key_index: a.int("key_index")?,
        value_index: a.int("value_index")?,
        delimiter,
        vocab_size: a.int_or("vocab_size", -1)?,
        offset: a.int_or("offset", 0)?,
    };
    for index in [columns.key_index, columns.value_index] {
        if index < WHOLE_LINE {
            return Err(format!("invalid column index {index}"));
        }
    }
    Ok(boxed(move |ctx, inputs| {
        let filename = tensor_input(inputs, 1)?;
        let data = read_named(ctx, &filename, OP)?;
        let path = String::from_utf8_lossy(scalar_bytes(&filename, "filename")?).into_owned();
        on_table(inputs, OP, |t| {
            if t.kind != Kind::Static {
                return Err(fail(format!(
                    "{OP}: table {:?} is not initializable",
                    t.name
                )));
            }
            check_columns(t, &columns)?;
            if t.initialized {
                return Ok(());
            }
            let lines = lines(&data, &path)?;
            let (keys, values) = columns.entries(&lines, t, &path)?;
            let keys =
                Tensor::new(vec![keys.len()], keys).ok_or_else(|| fail("internal: key count"))?;
            let k = t.keys_of(&keys, OP)?;
            let values = Tensor::new(vec![values.len()], values)
                .ok_or_else(|| fail("internal: value count"))?;
            initialize_static(t, OP, &k, &values)
        })?;
        Ok(Vec::new())
    }))
}

fn check_columns(t: &Table, c: &Columns) -> KResult<()> {
    for (index, dtype, role) in [
        (c.key_index, t.key_dtype, "key"),
        (c.value_index, t.value_dtype, "value"),
    ] {
        if index == LINE_NUMBER && dtype != DType::Int64 {
            return Err(fail(format!(
                "{OP}: {role} index for line number requires a table {role} dtype of int64, got {dtype}"
            )));
        }
        if index == WHOLE_LINE && !matches!(dtype, DType::String | DType::Int32 | DType::Int64) {
            return Err(fail(format!(
                "{OP}: {role} index for whole line requires a table {role} dtype of integer or string, got {dtype}"
            )));
        }
        if !matches!(
            dtype,
            DType::String | DType::Int32 | DType::Int64 | DType::Float32 | DType::Float64
        ) {
            return Err(fail(format!(
                "{OP}: a text file cannot give {dtype} {role}s"
            )));
        }
    }
    Ok(())
}

/// A file's lines without their line ends (`\n` or `\r\n`); a last line without one counts.
fn lines<'a>(data: &'a [u8], path: &str) -> KResult<Vec<&'a [u8]>> {
    if data.is_empty() {
        return Err(fail(format!("{OP}: {path}: the file is empty")));
    }
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    Ok(body
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .collect())
}

impl Columns {
    /// The key and value columns of the first `vocab_size` lines (all when -1).
    fn entries(&self, lines: &[&[u8]], t: &Table, path: &str) -> KResult<(Storage, Storage)> {
        let count = match usize::try_from(self.vocab_size) {
            Ok(n) if n > lines.len() => {
                return Err(fail(format!(
                    "{OP}: invalid vocab_size in {path}: expected {n} but got {}",
                    lines.len()
                )))
            }
            Ok(n) => n,
            Err(_) => lines.len(),
        };
        let needed = usize::try_from(self.key_index.max(self.value_index) + 1).unwrap_or(0);
        let mut keys = Column::new(t.key_dtype);
        let mut values = Column::new(t.value_dtype);
        for (number, &line) in lines[..count].iter().enumerate() {
            if line.is_empty() {
                return Err(fail(format!(
                    "{OP}: invalid content in {path}: line {number} is empty"
                )));
            }
            let tokens: Vec<&[u8]> = if needed > 0 {
                line.split(|&b| b == self.delimiter).collect()
            } else {
                Vec::new()
            };
            if tokens.len() < needed {
                return Err(fail(format!(
                    "{OP}: invalid number of columns in {path} line {number} ({:?}): expected at least {needed}, got {}",
                    String::from_utf8_lossy(line),
                    tokens.len()
                )));
            }
            let field = |index: i64| match index {
                WHOLE_LINE => Some(line),
                LINE_NUMBER => None,
                i => tokens.get(i as usize).copied(),
            };
            let n = number as i64 + self.offset;
            keys.push(field(self.key_index), n, self.offset, number, path)?;
            values.push(field(self.value_index), n, self.offset, number, path)?;
        }
        Ok((keys.0, values.0))
    }
}

/// A column being read from a file.
struct Column(Storage);

impl Column {
    fn new(dtype: DType) -> Self {
        Self(match dtype {
            DType::String => Storage::String(Vec::new()),
            DType::Int32 => Storage::Int32(Vec::new()),
            DType::Int64 => Storage::Int64(Vec::new()),
            DType::Float32 => Storage::Float32(Vec::new()),
            _ => Storage::Float64(Vec::new()),
        })
    }

    /// Appends `token` parsed to the column's dtype, or `line_number` where there is no token.
    /// TensorFlow adds the offset to int32 columns too (and only to them among columns).
    fn push(
        &mut self,
        token: Option<&[u8]>,
        line_number: i64,
        offset: i64,
        number: usize,
        path: &str,
    ) -> KResult<()> {
        let bad = |token: &[u8], dtype: DType| {
            fail(format!(
                "{OP}: field {:?} in line {number} of {path} is not a valid {dtype}",
                String::from_utf8_lossy(token)
            ))
        };
        let Some(token) = token else {
            return match &mut self.0 {
                Storage::Int64(v) => {
                    v.push(line_number);
                    Ok(())
                }
                other => Err(fail(format!(
                    "{OP}: line numbers cannot be {} values",
                    other.dtype()
                ))),
            };
        };
        match &mut self.0 {
            Storage::String(v) => v.push(token.to_vec()),
            Storage::Int32(v) => {
                let x = parse_int::<i32>(token).ok_or_else(|| bad(token, DType::Int32))?;
                v.push(x.wrapping_add(offset as i32));
            }
            Storage::Int64(v) => {
                v.push(parse_int::<i64>(token).ok_or_else(|| bad(token, DType::Int64))?)
            }
            Storage::Float32(v) => {
                v.push(parse_f32(token).ok_or_else(|| bad(token, DType::Float32))?)
            }
            Storage::Float64(v) => {
                v.push(parse_f64(token).ok_or_else(|| bad(token, DType::Float64))?)
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(key_index: i64, value_index: i64, vocab_size: i64, offset: i64) -> Columns {
        Columns {
            key_index,
            value_index,
            delimiter: b'\t',
            vocab_size,
            offset,
        }
    }

    #[test]
    fn lines_drop_their_ends() {
        assert_eq!(lines(b"a\r\nb\nc", "f").unwrap(), [&b"a"[..], b"b", b"c"]);
        assert_eq!(lines(b"a\n", "f").unwrap(), [b"a"]);
        assert!(lines(b"", "f").is_err());
    }

    #[test]
    fn columns_give_keys_and_values() {
        let t = Table::new("t".into(), Kind::Static, DType::String, DType::Int64);
        let file: [&[u8]; 3] = [b"red", b"green", b"blue"];
        let (keys, values) = columns(WHOLE_LINE, LINE_NUMBER, -1, 1)
            .entries(&file, &t, "vocab")
            .unwrap();
        assert_eq!(
            keys,
            Storage::String(vec![b"red".to_vec(), b"green".to_vec(), b"blue".to_vec()])
        );
        assert_eq!(values, Storage::Int64(vec![1, 2, 3]));
        assert!(columns(WHOLE_LINE, LINE_NUMBER, 4, 0)
            .entries(&file, &t, "vocab")
            .is_err());

        let t = Table::new("t".into(), Kind::Static, DType::String, DType::Float32);
        let tsv: [&[u8]; 3] = [b"red\t1\t0.5", b"green\t2\t-1.25", b"bad"];
        let (_, values) = columns(0, 2, 2, 0).entries(&tsv, &t, "scores").unwrap();
        assert_eq!(values, Storage::Float32(vec![0.5, -1.25]));
        assert!(columns(0, 2, -1, 0).entries(&tsv, &t, "scores").is_err());
    }
}
