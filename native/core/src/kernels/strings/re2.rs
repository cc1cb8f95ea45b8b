//! RE2 patterns (TensorFlow's regular expressions) in the `regex` crate's syntax.
//!
//! [`translate`] parses a pattern with RE2's grammar and writes what it means for the `regex`
//! crate, piece by piece, so that RE2's rules decide what is accepted and what is matched:
//!
//! - Rejected as RE2 rejects them: lookarounds, backreferences, atomic groups, `(?<name>`,
//!   possessive and doubled quantifiers (`a++`, `a**`, `x{2}{3}`), repetitions over 1000 (in
//!   one `{n,m}` or multiplied through nesting), flags other than `imsU`, `\Z`, `\u`, `\e`,
//!   any unknown escape, unknown POSIX classes and Unicode class names.
//! - Rewritten: `\d`, `\w`, `\s`, `\b` and POSIX classes are ASCII (the crate's are Unicode),
//!   octal escapes (`\101`, `\0`) and `\a \f \t \n \r \v` become code points, `\p{^L}` is
//!   `\P{L}`, `\Q...\E` quotes literals, `(?)` is nothing, a `{` that starts no repetition
//!   (`a{,2}`, `a{01}`) is literal, `[` `&&` `~~` `--` inside a class are literal.
//! - Text is bytes: RE2 reads a UTF-8-encoded surrogate (`\xED\xA0\x80`) as one character,
//!   which `.` and every class that contains U+D800..U+DFFF (negated classes, `\PL`, `\p{C}`)
//!   match, while the crate reads it as three bytes no class matches; such classes get an
//!   alternative that matches the encoded surrogates byte by byte. Other ill-formed bytes
//!   match nothing in both.
//!
//! Refused because the translation cannot express it: `\C` (any byte).

use std::fmt::Write as _;

/// The largest repetition count RE2 accepts, in one `{n,m}` and as the product of nested ones.
const MAX_REPEAT: u32 = 1000;

/// The surrogate code points, which RE2 matches as their (ill-formed) UTF-8 encodings.
const SURROGATES: (u32, u32) = (0xD800, 0xDFFF);

/// RE2's Unicode general categories (`\p{Lu}`); other names are scripts or `Any`.
const CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N",
    "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So",
    "Z", "Zl", "Zp", "Zs",
];

/// RE2's POSIX classes (`[[:alpha:]]`), which the `regex` crate has with the same ASCII sets.
const POSIX: &[&str] = &[
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
    "space", "upper", "word", "xdigit",
];

/// The `regex` crate pattern that matches what RE2 matches with `pattern`; Err (RE2's wording
/// where it has one) when RE2 rejects the pattern or the translation cannot express it.
pub(super) fn translate(pattern: &str) -> Result<String, String> {
    let mut t = Translator {
        pattern,
        chars: pattern.chars().collect(),
        at: 0,
        out: String::with_capacity(pattern.len() * 2),
        groups: vec![0],
    };
    while t.at < t.chars.len() {
        t.step()?;
    }
    if t.groups.len() > 1 {
        return Err(format!("missing ): {pattern}"));
    }
    Ok(t.out)
}

/// A set of characters inside a class: the text the crate reads inside `[...]` for it, and
/// whether the set holds every surrogate (true) or none (false).
struct Named {
    text: String,
    surrogates: bool,
}

/// One item of a class: a code point range or a named set.
enum Item {
    Range(u32, u32),
    Set(Named),
}

struct Translator<'a> {
    pattern: &'a str,
    chars: Vec<char>,
    at: usize,
    out: String,
    /// Per open group (the whole pattern first): the largest product of `{n,m}` counts
    /// nested inside it so far.
    groups: Vec<u32>,
}

impl Translator<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    /// The pattern text from char `from` on, at most `n` chars, for messages.
    fn text(&self, from: usize, n: usize) -> String {
        self.chars.iter().skip(from).take(n).collect()
    }

    fn step(&mut self) -> Result<(), String> {
        let c = self.chars[self.at];
        self.at += 1;
        match c {
            '\\' => self.escape(),
            '[' => {
                let class = self.class()?;
                self.atom(&class, 1)
            }
            '(' => self.open_group(),
            ')' => self.close_group(),
            '|' => {
                self.out.push('|');
                Ok(())
            }
            '^' => self.atom("(?:^)", 1),
            '$' => self.atom("(?:$)", 1),
            '.' => self.atom(&format!("(?:.|(?-u:{}))", surrogate_bytes(SURROGATES)), 1),
            '*' | '+' | '?' => Err(format!("missing argument to repetition operator: {c}")),
            '{' => match repeat(&self.chars[self.at..]) {
                Some((_, _, len)) => Err(format!(
                    "missing argument to repetition operator: {{{}",
                    self.text(self.at, len)
                )),
                None => self.atom(r"\{", 1),
            },
            _ => self.atom(&literal(u32::from(c)), 1),
        }
    }

    /// Emits an atom (`weight`: the largest product of repetition counts inside it), then the
    /// quantifier that follows it, if any.
    fn atom(&mut self, text: &str, weight: u32) -> Result<(), String> {
        self.out.push_str(text);
        let (op_len, count) = match self.peek(0) {
            Some('*' | '+' | '?') => (1, None),
            Some('{') => match repeat(&self.chars[self.at + 1..]) {
                Some((low, high, len)) => {
                    let op = self.text(self.at, len + 1);
                    if low > MAX_REPEAT || high.is_some_and(|h| h > MAX_REPEAT || h < low) {
                        return Err(format!("invalid repetition size: {op}"));
                    }
                    (len + 1, Some(high.unwrap_or(low)))
                }
                None => (0, None),
            },
            _ => (0, None),
        };
        let weight = match count {
            Some(n) if n > 0 => {
                let product = weight.saturating_mul(n);
                if product > MAX_REPEAT {
                    return Err(format!(
                        "bad repetition operator: {}",
                        self.text(self.at, op_len)
                    ));
                }
                product
            }
            _ => weight,
        };
        if op_len > 0 {
            let lazy = usize::from(self.peek(op_len) == Some('?'));
            let op = self.text(self.at, op_len + lazy);
            self.out.push_str(&op);
            self.at += op_len + lazy;
            let doubled = match self.peek(0) {
                Some('*' | '+' | '?') => true,
                Some('{') => repeat(&self.chars[self.at + 1..]).is_some(),
                _ => false,
            };
            if doubled {
                return Err(format!(
                    "bad repetition operator: {op}{}",
                    self.text(self.at, 1)
                ));
            }
        }
        if let Some(top) = self.groups.last_mut() {
            *top = (*top).max(weight);
        }
        Ok(())
    }

    /// An escape outside a class (the backslash read).
    fn escape(&mut self) -> Result<(), String> {
        let Some(kind) = self.peek(0) else {
            return Err("trailing \\".to_string());
        };
        match kind {
            'b' | 'B' => {
                self.at += 1;
                self.atom(&format!(r"(?-u:\{kind})"), 1)
            }
            'A' | 'z' => {
                self.at += 1;
                self.atom(&format!(r"(?:\{kind})"), 1)
            }
            'Q' => {
                self.at += 1;
                let rest = &self.chars[self.at..];
                let end = rest.windows(2).position(|w| w == ['\\', 'E']);
                let quoted: Vec<char> = rest[..end.unwrap_or(rest.len())].to_vec();
                self.at += quoted.len() + if end.is_some() { 2 } else { 0 };
                // A quantifier after `\E` repeats the last quoted character only.
                let Some((last, init)) = quoted.split_last() else {
                    return Ok(());
                };
                for &c in init {
                    self.out.push_str(&literal(u32::from(c)));
                }
                self.atom(&literal(u32::from(*last)), 1)
            }
            'C' => Err(r"\C (any byte) is not supported by this engine".to_string()),
            _ => match self.class_escape()? {
                Some(set) => {
                    let class = class_text(false, &[Item::Set(set)]);
                    self.atom(&class, 1)
                }
                None => {
                    let code = self.char_escape()?;
                    self.atom(&literal(code), 1)
                }
            },
        }
    }

    /// `\d`-style and `\p`-style escapes (the backslash read), or None for other escapes.
    fn class_escape(&mut self) -> Result<Option<Named>, String> {
        let Some(kind) = self.peek(0) else {
            return Ok(None);
        };
        let (text, negated) = match kind.to_ascii_lowercase() {
            'd' => ("0-9", kind == 'D'),
            'w' => ("0-9A-Za-z_", kind == 'W'),
            's' => (r"\t\n\x0C\r\x20", kind == 'S'),
            'p' => {
                self.at += 1;
                return self.unicode_class(kind == 'P').map(Some);
            }
            _ => return Ok(None),
        };
        self.at += 1;
        Ok(Some(if negated {
            Named {
                text: format!("[^{text}]"),
                surrogates: true,
            }
        } else {
            Named {
                text: text.to_string(),
                surrogates: false,
            }
        }))
    }

    /// `\pL`, `\p{Greek}`, `\p{^Lu}` and their `\P` negations (`\p` or `\P` read).
    fn unicode_class(&mut self, negated: bool) -> Result<Named, String> {
        let start = self.at - 2;
        let name: String = match self.peek(0) {
            Some('{') => {
                let rest = &self.chars[self.at + 1..];
                let Some(end) = rest.iter().position(|&c| c == '}') else {
                    return Err(format!(
                        "invalid character class range: {}",
                        self.text(start, 12)
                    ));
                };
                let name = rest[..end].iter().collect();
                self.at += end + 2;
                name
            }
            Some(c) => {
                self.at += 1;
                c.to_string()
            }
            None => return Err(r"invalid escape sequence: \p".to_string()),
        };
        let (name, negated) = match name.strip_prefix('^') {
            Some(inner) => (inner.to_string(), !negated),
            None => (name, negated),
        };
        let all = r"\x{0}-\x{10FFFF}";
        let (text, surrogates) = match name.as_str() {
            "Any" => (all.to_string(), true),
            "Cs" => (String::new(), true),
            // The crate's C holds the unassigned code points too, RE2's does not.
            "C" => (r"\p{Cc}\p{Cf}\p{Co}".to_string(), true),
            n if CATEGORIES.contains(&n) => (format!(r"\p{{{n}}}"), false),
            n if is_script_name(n) => (format!(r"\p{{sc={n}}}"), false),
            _ => {
                return Err(format!(
                    "invalid character class range: {}",
                    self.text(start, self.at - start)
                ))
            }
        };
        Ok(match (negated, text.is_empty()) {
            (false, _) => Named { text, surrogates },
            (true, true) => Named {
                text: all.to_string(),
                surrogates: !surrogates,
            },
            (true, false) => Named {
                text: if text == all {
                    String::new()
                } else {
                    format!("[^{text}]")
                },
                surrogates: !surrogates,
            },
        })
    }

    /// The code point of a one-character escape (the backslash read): octal, `\x41`,
    /// `\x{263a}`, `\n`-style controls, or escaped ASCII punctuation.
    fn char_escape(&mut self) -> Result<u32, String> {
        let start = self.at - 1;
        let bad = |t: &Self| format!("invalid escape sequence: {}", t.text(start, 2));
        let Some(kind) = self.peek(0) else {
            return Err("trailing \\".to_string());
        };
        let octal = |c: Option<char>| c.is_some_and(|c| ('0'..='7').contains(&c));
        // `\0` takes up to two more octal digits; `\1`..`\7` (a backreference alone) need one.
        if kind == '0' || (('1'..='7').contains(&kind) && octal(self.peek(1))) {
            let mut value = 0;
            let mut n = 0;
            while n < 3 && octal(self.peek(0)) {
                value = value * 8 + self.chars[self.at].to_digit(8).unwrap_or(0);
                self.at += 1;
                n += 1;
            }
            return Ok(value);
        }
        if kind == 'x' {
            self.at += 1;
            let digits: String = if self.peek(0) == Some('{') {
                let rest = &self.chars[self.at + 1..];
                let end = rest
                    .iter()
                    .position(|&c| c == '}')
                    .ok_or_else(|| bad(self))?;
                let digits: String = rest[..end].iter().collect();
                self.at += end + 2;
                digits
            } else {
                let digits: String = self.chars[self.at..].iter().take(2).collect();
                self.at += digits.chars().count();
                if digits.chars().count() != 2 {
                    return Err(bad(self));
                }
                digits
            };
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(bad(self));
            }
            return u32::from_str_radix(&digits, 16)
                .ok()
                .filter(|&v| v <= 0x10FFFF)
                .ok_or_else(|| bad(self));
        }
        let control = match kind {
            'a' => Some(7),
            'f' => Some(12),
            't' => Some(9),
            'n' => Some(10),
            'r' => Some(13),
            'v' => Some(11),
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => Some(u32::from(c)),
            _ => None,
        };
        match control {
            Some(code) => {
                self.at += 1;
                Ok(code)
            }
            None => Err(bad(self)),
        }
    }

    /// A class (the `[` read), as the crate's text.
    fn class(&mut self) -> Result<String, String> {
        let negated = self.peek(0) == Some('^');
        self.at += usize::from(negated);
        let mut items = Vec::new();
        let mut first = true;
        loop {
            let Some(c) = self.peek(0) else {
                return Err(format!("missing ]: {}", self.pattern));
            };
            if c == ']' && !first {
                self.at += 1;
                break;
            }
            first = false;
            if c == '[' && self.peek(1) == Some(':') {
                if let Some(set) = self.posix_class()? {
                    items.push(Item::Set(set));
                    continue;
                }
            }
            let low = match self.class_item()? {
                Item::Range(low, _) => low,
                set => {
                    items.push(set);
                    continue;
                }
            };
            if self.peek(0) == Some('-') && !matches!(self.peek(1), Some(']') | None) {
                let start = self.at - 1;
                self.at += 1;
                match self.class_item()? {
                    Item::Range(high, _) if high >= low => items.push(Item::Range(low, high)),
                    _ => {
                        return Err(format!(
                            "invalid character class range: {}",
                            self.text(start, self.at - start)
                        ))
                    }
                }
            } else {
                items.push(Item::Range(low, low));
            }
        }
        Ok(class_text(negated, &items))
    }

    /// `[:name:]` or `[:^name:]` (at the `[`): RE2 takes the text up to the first `:]`
    /// anywhere after it as the name. None when there is no `:]` (the `[` is then literal).
    fn posix_class(&mut self) -> Result<Option<Named>, String> {
        let rest = &self.chars[self.at + 2..];
        let Some(end) = rest.windows(2).position(|w| w == [':', ']']) else {
            return Ok(None);
        };
        let whole = self.text(self.at, end + 4);
        let name: String = rest[..end].iter().collect();
        let (name, negated) = match name.strip_prefix('^') {
            Some(inner) => (inner.to_string(), true),
            None => (name, false),
        };
        if !POSIX.contains(&name.as_str()) {
            return Err(format!("invalid character class range: {whole}"));
        }
        self.at += end + 4;
        Ok(Some(if negated {
            Named {
                text: format!("[:^{name}:]"),
                surrogates: true,
            }
        } else {
            Named {
                text: format!("[:{name}:]"),
                surrogates: false,
            }
        }))
    }

    /// One item inside a class: a character (as a one-point range) or a class escape.
    fn class_item(&mut self) -> Result<Item, String> {
        let Some(c) = self.peek(0) else {
            return Err(format!("missing ]: {}", self.pattern));
        };
        self.at += 1;
        if c != '\\' {
            return Ok(Item::Range(u32::from(c), u32::from(c)));
        }
        if self.peek(0) == Some('b') {
            return Err(r"invalid escape sequence: \b".to_string());
        }
        if let Some(set) = self.class_escape()? {
            return Ok(Item::Set(set));
        }
        let code = self.char_escape()?;
        Ok(Item::Range(code, code))
    }

    /// After `(`: a group, a named group, a flag group or flags for the rest of the group.
    fn open_group(&mut self) -> Result<(), String> {
        if self.peek(0) != Some('?') {
            self.out.push('(');
            self.groups.push(0);
            return Ok(());
        }
        let start = self.at - 1;
        if self.peek(1) == Some('P') && self.peek(2) == Some('<') {
            let rest = &self.chars[self.at + 3..];
            let end = rest.iter().position(|&c| c == '>');
            let name: String = rest[..end.unwrap_or(0)].iter().collect();
            let valid = end.is_some()
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "invalid named capture group: {}",
                    self.text(start, 4 + name.chars().count() + 1)
                ));
            }
            self.at += 3 + name.chars().count() + 1;
            let _ = write!(self.out, "(?P<{name}>");
            self.groups.push(0);
            return Ok(());
        }
        // Flags: [imsU]* optionally followed by `-` and at least one more, then `:` or `)`.
        let mut at = self.at + 1;
        let mut negated = false;
        let mut saw_flag = false;
        let mut flags = String::new();
        let bad = |t: &Self, at: usize| {
            format!("invalid perl operator: {}", t.text(start, at + 1 - start))
        };
        let end = loop {
            let Some(c) = self.chars.get(at).copied() else {
                return Err(format!("missing ): {}", self.pattern));
            };
            match c {
                'i' | 'm' | 's' | 'U' => {
                    saw_flag = true;
                    flags.push(c);
                }
                '-' if !negated => {
                    negated = true;
                    saw_flag = false;
                    flags.push(c);
                }
                ':' | ')' if !negated || saw_flag => break c,
                _ => return Err(bad(self, at)),
            }
            at += 1;
        };
        self.at = at + 1;
        if end == ')' {
            // Flags for the rest of the current group: no atom, so nothing to repeat.
            if !flags.is_empty() {
                let _ = write!(self.out, "(?{flags})");
            }
        } else {
            let _ = write!(self.out, "(?{flags}:");
            self.groups.push(0);
        }
        Ok(())
    }

    fn close_group(&mut self) -> Result<(), String> {
        if self.groups.len() == 1 {
            return Err(format!("unexpected ): {}", self.pattern));
        }
        let weight = self.groups.pop().unwrap_or(0).max(1);
        self.atom(")", weight)
    }
}

/// A repetition at `rest` (what follows a `{`): `n}`, `n,}` or `n,m}` as RE2 reads them
/// (no leading zeros, fewer than 9 digits): (n, m or None when unbounded, chars read).
/// `{n}` is (n, Some(n)).
fn repeat(rest: &[char]) -> Option<(u32, Option<u32>, usize)> {
    let number = |s: &[char]| -> Option<(u32, usize)> {
        let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 || n > 8 || (n > 1 && s[0] == '0') {
            return None;
        }
        let value = s[..n]
            .iter()
            .fold(0u32, |v, c| v * 10 + c.to_digit(10).unwrap_or(0));
        Some((value, n))
    };
    let (low, n) = number(rest)?;
    match rest.get(n) {
        Some('}') => Some((low, Some(low), n + 1)),
        Some(',') if rest.get(n + 1) == Some(&'}') => Some((low, None, n + 2)),
        Some(',') => {
            let (high, m) = number(&rest[n + 1..])?;
            (rest.get(n + 1 + m) == Some(&'}')).then_some((low, Some(high), n + m + 2))
        }
        _ => None,
    }
}

/// Whether `name` can be an RE2 script name (`Greek`, `Old_Italic`); the crate checks that
/// it is one.
fn is_script_name(name: &str) -> bool {
    name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One code point as a literal atom: the crate's `\x{...}` (letters and digits as they are),
/// a surrogate as its encoded bytes.
fn literal(code: u32) -> String {
    if (SURROGATES.0..=SURROGATES.1).contains(&code) {
        return format!("(?-u:{})", surrogate_bytes((code, code)));
    }
    match char::from_u32(code) {
        Some(c) if c.is_ascii_alphanumeric() => c.to_string(),
        _ => format!(r"\x{{{code:X}}}"),
    }
}

/// The byte-level alternatives (for a `(?-u:...)` group) matching the UTF-8 encodings of the
/// surrogates `low..=high`.
fn surrogate_bytes((low, high): (u32, u32)) -> String {
    let lead = |c: u32| 0x80 | ((c >> 6) & 0x3F);
    let trail = |c: u32| 0x80 | (c & 0x3F);
    let mut parts = Vec::new();
    if low >> 6 == high >> 6 {
        parts.push(format!(
            r"\xED\x{:X}[\x{:X}-\x{:X}]",
            lead(low),
            trail(low),
            trail(high)
        ));
    } else if trail(low) == 0x80 && trail(high) == 0xBF {
        parts.push(format!(
            r"\xED[\x{:X}-\x{:X}][\x80-\xBF]",
            lead(low),
            lead(high)
        ));
    } else {
        parts.push(format!(r"\xED\x{:X}[\x{:X}-\xBF]", lead(low), trail(low)));
        if (high >> 6) - (low >> 6) >= 2 {
            parts.push(format!(
                r"\xED[\x{:X}-\x{:X}][\x80-\xBF]",
                lead(low) + 1,
                lead(high) - 1
            ));
        }
        parts.push(format!(r"\xED\x{:X}[\x80-\x{:X}]", lead(high), trail(high)));
    }
    parts.join("|")
}

/// A class of `items` (negated or not) as one crate atom: a crate class for the characters,
/// with an alternative for the surrogates the class holds, if any.
fn class_text(negated: bool, items: &[Item]) -> String {
    let (s_low, s_high) = SURROGATES;
    let mut surrogates = vec![false; (s_high - s_low + 1) as usize];
    let mut body = String::new();
    let range = |body: &mut String, low: u32, high: u32| {
        if low > high {
            return;
        }
        if low == high {
            let _ = write!(body, r"\x{{{low:X}}}");
        } else {
            let _ = write!(body, r"\x{{{low:X}}}-\x{{{high:X}}}");
        }
    };
    for item in items {
        match item {
            Item::Range(low, high) => {
                range(&mut body, *low, (*high).min(s_low - 1));
                range(&mut body, (*low).max(s_high + 1), *high);
                for code in (*low).max(s_low)..=(*high).min(s_high) {
                    surrogates[(code - s_low) as usize] = true;
                }
            }
            Item::Set(set) => {
                body.push_str(&set.text);
                if set.surrogates {
                    surrogates.iter_mut().for_each(|s| *s = true);
                }
            }
        }
    }
    if negated {
        surrogates.iter_mut().for_each(|s| *s = !*s);
    }
    let chars = match (negated, body.is_empty()) {
        (false, true) => None,
        (false, false) => Some(format!("[{body}]")),
        (true, true) => Some(r"[\x{0}-\x{10FFFF}]".to_string()),
        (true, false) => Some(format!("[^{body}]")),
    };
    // The surrogates held, as runs.
    let mut runs = Vec::new();
    let mut code = 0;
    while code < surrogates.len() {
        if surrogates[code] {
            let start = code;
            while code < surrogates.len() && surrogates[code] {
                code += 1;
            }
            runs.push(surrogate_bytes((
                s_low + start as u32,
                s_low + code as u32 - 1,
            )));
        }
        code += 1;
    }
    let bytes = (!runs.is_empty()).then(|| format!("(?-u:{})", runs.join("|")));
    match (chars, bytes) {
        (Some(c), None) => c,
        (None, Some(b)) => format!("(?:{b})"),
        (Some(c), Some(b)) => format!("(?:{c}|{b})"),
        (None, None) => r"[^\x{0}-\x{10FFFF}]".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &[u8]) -> bool {
        let source = format!(r"\A(?:{})\z", translate(pattern).unwrap());
        regex::bytes::Regex::new(&source).unwrap().is_match(text)
    }

    #[test]
    fn rejects_what_re2_rejects() {
        for bad in [
            r"(?<n>a)",
            "a{1001}",
            "a++",
            "a*+",
            "a**",
            "a*?*",
            "(?x)",
            r"\u0041",
            r"\U00000041",
            "[[:foo:]]",
            "x{2}{3}",
            r"\Z",
            r"\1",
            r"(a)\1",
            r"\8",
            "(?=a)",
            "(?!a)",
            "(?<=a)",
            "(?<!a)",
            "a{2,1}",
            "(?>a)",
            "(?#c)",
            r"\e",
            r"[a-\d]",
            r"\x{110000}",
            r"\cA",
            r"\N{LATIN SMALL LETTER A}",
            "(?P=n)",
            r"[\b]",
            "*a",
            "(a",
            "a)",
            "[a",
            "[z-a]",
            "(?i-)a",
            r"\p{Foo}",
            r"\pX",
            "(?-)",
            "((a{10}){10}){11}",
            r"\C",
            r"\p{Cn}",
            "\\",
            "{2}",
        ] {
            let compiled = translate(bad)
                .and_then(|t| regex::bytes::Regex::new(&t).map_err(|e| e.to_string()));
            assert!(compiled.is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn reads_re2_syntax() {
        assert!(matches(r"\101\12\0", b"A\n\0"));
        assert!(matches(r"\p{^L}+", b"1 2"));
        assert!(!matches(r"\p{^L}", b"a"));
        assert!(matches("a(?)b", b"ab"));
        assert!(matches("a{01}", b"a{01}"));
        assert!(matches("a{,2}", b"a{,2}"));
        assert!(matches("(?i)a(?-i)b", b"Ab"));
        assert!(!matches("(?i)a(?-i)b", b"AB"));
        assert!(matches(r"\Qa+\E+", b"a++"));
        assert!(matches(r"[[:^alpha:]\d]+", b"1-"));
        assert!(matches(r"[\x{3a9}-\x{3c9}]+", "\u{3a9}\u{3c9}".as_bytes()));
        assert!(matches(r"\d\w\s", b"1_\t"));
        assert!(!matches(r"\d", "\u{663}".as_bytes()));
        assert!(matches("((a{10}){10}){10}", &[b'a'; 1000]));
        assert!(matches(r"\p{Greek}+", "\u{3b1}\u{3b2}".as_bytes()));
    }

    #[test]
    fn encoded_surrogates_are_one_character() {
        let surrogate = b"\xed\xa0\x80";
        for pattern in [
            ".",
            "[^a]",
            r"\W",
            r"\S",
            r"\PL",
            "[[:^alpha:]]",
            r"[^\pL]",
            r"\p{Cs}",
        ] {
            assert!(matches(pattern, surrogate), "{pattern}");
        }
        for pattern in [r"\pL", "[a-z]", r"\w", r"\P{Cs}", "[^\\x{D800}]"] {
            assert!(!matches(pattern, surrogate), "{pattern}");
        }
        assert!(matches(r"\x{D800}", surrogate));
        assert!(matches(r"[\x{D7FF}-\x{DC00}]", b"\xed\xb0\x80"));
        assert!(!matches(r"[\x{D7FF}-\x{DC00}]", b"\xed\xb0\x81"));
        for pattern in [".", "[^a]", r"\PL"] {
            assert!(!matches(pattern, b"\xff"), "{pattern}");
        }
    }

    #[test]
    fn surrogate_runs_cover_exactly() {
        for (low, high) in [
            (0xD800, 0xDFFF),
            (0xD801, 0xD801),
            (0xD83F, 0xD900),
            (0xD805, 0xDFFE),
        ] {
            let source = format!("(?-u:{})", surrogate_bytes((low, high)));
            let re = regex::bytes::Regex::new(&format!(r"\A(?:{source})\z")).unwrap();
            for code in SURROGATES.0..=SURROGATES.1 {
                let bytes = [
                    0xED,
                    (0x80 | ((code >> 6) & 0x3F)) as u8,
                    (0x80 | (code & 0x3F)) as u8,
                ];
                assert_eq!(
                    re.is_match(&bytes),
                    (low..=high).contains(&code),
                    "{code:X}"
                );
            }
        }
    }
}
