//! Python literals for `--input-exprs`: numbers, `True`/`False`, strings and bytes, and nested
//! lists or tuples of them, read as numpy reads them with `np.asarray` (booleans stay bool,
//! integers become int64, any float makes float64). Nothing is evaluated.

use savedmodel_core::Tensor;

/// How deep lists may nest (a command line cannot build a deeper array sensibly).
const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug)]
enum Item {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(Vec<u8>),
    List(Vec<Item>),
}

/// The array a literal denotes, or what is wrong with it.
pub fn parse(text: &str) -> Result<Tensor, String> {
    let mut parser = Parser {
        text: text.as_bytes(),
        at: 0,
    };
    let item = parser.value(0)?;
    parser.skip_space();
    if parser.at != parser.text.len() {
        return Err("is not a Python literal".into());
    }
    to_tensor(&item)
}

struct Parser<'t> {
    text: &'t [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.text.get(self.at).copied()
    }

    fn value(&mut self, depth: usize) -> Result<Item, String> {
        if depth > MAX_DEPTH {
            return Err("is nested too deeply to parse as a Python literal".into());
        }
        match self.peek() {
            Some(open @ (b'[' | b'(')) => self.list(open, depth),
            Some(b'\'' | b'"') => self.text_item(false),
            Some(b'b' | b'B') if matches!(self.text.get(self.at + 1), Some(b'\'' | b'"')) => {
                self.at += 1;
                self.text_item(true)
            }
            Some(_) => self.scalar(),
            None => Err("is not a Python literal".into()),
        }
    }

    fn list(&mut self, open: u8, depth: usize) -> Result<Item, String> {
        let close = if open == b'[' { b']' } else { b')' };
        self.at += 1;
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.at += 1;
                return Ok(Item::List(items));
            }
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(c) if c == close => {}
                _ => return Err("is not a Python literal".into()),
            }
        }
    }

    fn text_item(&mut self, _bytes: bool) -> Result<Item, String> {
        let quote = self.text[self.at];
        self.at += 1;
        let mut out = Vec::new();
        while let Some(&c) = self.text.get(self.at) {
            self.at += 1;
            match c {
                c if c == quote => return Ok(Item::Text(out)),
                b'\\' => {
                    let escaped = *self
                        .text
                        .get(self.at)
                        .ok_or_else(|| "is not a Python literal".to_string())?;
                    self.at += 1;
                    out.push(match escaped {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        b'0' => 0,
                        other => other,
                    });
                }
                c => out.push(c),
            }
        }
        Err("is not a Python literal".into())
    }

    fn scalar(&mut self) -> Result<Item, String> {
        let start = self.at;
        while self
            .text
            .get(self.at)
            .is_some_and(|c| c.is_ascii_alphanumeric() || b"+-._".contains(c))
        {
            self.at += 1;
        }
        let word = std::str::from_utf8(&self.text[start..self.at])
            .map_err(|_| "is not a Python literal".to_string())?
            .replace('_', "");
        match word.as_str() {
            "True" => return Ok(Item::Bool(true)),
            "False" => return Ok(Item::Bool(false)),
            _ => {}
        }
        if let Ok(i) = word.parse::<i64>() {
            return Ok(Item::Int(i));
        }
        let finite = word.parse::<f64>().ok().filter(|f| {
            f.is_finite()
                && !word.to_ascii_lowercase().contains("inf")
                && !word.to_ascii_lowercase().contains("nan")
        });
        finite
            .map(Item::Float)
            .ok_or_else(|| "is not a Python literal".into())
    }
}

/// The shape of a nested list (which must be rectangular, as numpy requires).
fn shape_of(item: &Item) -> Result<Vec<usize>, String> {
    match item {
        Item::List(items) => {
            let inner = match items.first() {
                Some(first) => shape_of(first)?,
                None => Vec::new(),
            };
            for other in items.iter().skip(1) {
                if shape_of(other)? != inner {
                    return Err("is a ragged nested list, which is not an array".into());
                }
            }
            Ok(std::iter::once(items.len()).chain(inner).collect())
        }
        _ => Ok(Vec::new()),
    }
}

fn leaves<'i>(item: &'i Item, out: &mut Vec<&'i Item>) {
    match item {
        Item::List(items) => items.iter().for_each(|i| leaves(i, out)),
        leaf => out.push(leaf),
    }
}

fn to_tensor(item: &Item) -> Result<Tensor, String> {
    let shape = shape_of(item)?;
    let mut flat = Vec::new();
    leaves(item, &mut flat);
    let texts = flat.iter().filter(|i| matches!(i, Item::Text(_))).count();
    if texts == flat.len() && !flat.is_empty() {
        let items = flat
            .iter()
            .map(|i| match i {
                Item::Text(t) => t.clone(),
                _ => Vec::new(),
            })
            .collect();
        return Ok(Tensor::strings(shape, items));
    }
    if texts > 0 {
        return Err("mixes strings and numbers".into());
    }
    if !flat.is_empty() && flat.iter().all(|i| matches!(i, Item::Bool(_))) {
        let values = flat.iter().map(|i| matches!(i, Item::Bool(true))).collect();
        return Ok(Tensor::from_vec(shape, values));
    }
    if flat
        .iter()
        .all(|i| matches!(i, Item::Bool(_) | Item::Int(_)))
        && !flat.is_empty()
    {
        let values = flat
            .iter()
            .map(|i| match i {
                Item::Int(v) => *v,
                Item::Bool(b) => i64::from(*b),
                _ => 0,
            })
            .collect();
        return Ok(Tensor::from_vec(shape, values));
    }
    let values = flat
        .iter()
        .map(|i| match i {
            Item::Int(v) => *v as f64,
            Item::Float(f) => *f,
            Item::Bool(b) => f64::from(u8::from(*b)),
            _ => 0.0,
        })
        .collect();
    Ok(Tensor::from_vec(shape, values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use savedmodel_core::DType;

    #[test]
    fn literals_read_as_numpy_reads_them() {
        let t = parse("[[1, 2], [3, 4]]").unwrap();
        assert_eq!((t.dtype(), t.shape()), (DType::Int64, &[2usize, 2][..]));
        let t = parse("(1, 2.5)").unwrap();
        assert_eq!(t.values::<f64>().unwrap(), &[1.0, 2.5]);
        let t = parse("[True, False]").unwrap();
        assert_eq!(t.values::<bool>().unwrap(), &[true, false]);
        let t = parse("[b'ab', 'c']").unwrap();
        assert_eq!(t.string_values().unwrap(), &[b"ab".to_vec(), b"c".to_vec()]);
        assert_eq!(parse("-3").unwrap().values::<i64>().unwrap(), &[-3]);
        assert_eq!(parse("[]").unwrap().shape(), &[0]);
    }

    #[test]
    fn anything_else_is_an_error() {
        for bad in [
            "__import__('os')",
            "[1, 2",
            "[[1], [1, 2]]",
            "1 + 2",
            "'a",
            "[1, 'a']",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse(&deep).unwrap_err().contains("too deeply"));
    }
}
