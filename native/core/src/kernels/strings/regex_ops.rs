//! Regular expressions: RegexFullMatch, StaticRegexFullMatch, RegexReplace and
//! StaticRegexReplace, with RE2's syntax and semantics on the `regex` crate: [`translate`]
//! reads a pattern as RE2 does (rejecting what RE2 rejects) and writes it in the crate's
//! syntax. Matching is on bytes: text that is not UTF-8 is searched as it is; an ill-formed
//! byte matches no class, and a UTF-8-encoded surrogate is one character, as in RE2.

use std::sync::Mutex;

use regex::bytes::{Captures, Regex};

use super::re2::translate;
use super::{scalar_bytes, strings, strings_tensor, Made};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec, Registry};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("StaticRegexFullMatch", static_full_match);
    r.add("RegexFullMatch", full_match);
    r.add("StaticRegexReplace", static_replace);
    r.add("RegexReplace", replace);
}

/// `pattern` compiled to match whole strings (`full`) or anywhere.
fn compile(pattern: &[u8], full: bool) -> Result<Regex, String> {
    let text = std::str::from_utf8(pattern)
        .map_err(|_| format!("Invalid pattern: {}: not UTF-8", pattern.escape_ascii()))?;
    let translated = translate(text).map_err(|e| format!("Invalid pattern: {text}, error: {e}"))?;
    let source = if full {
        format!(r"\A(?:{translated})\z")
    } else {
        translated
    };
    Regex::new(&source).map_err(|e| format!("Invalid pattern: {text}, error: {e}"))
}

fn full_matches(regex: &Regex, t: &Tensor) -> KResult<Tensor> {
    let matched = strings(t, "input")?
        .iter()
        .map(|s| regex.is_match(s))
        .collect();
    Ok(Tensor::from_vec(t.shape().to_vec(), matched))
}

fn static_full_match(node: &NodeSpec) -> Made {
    let regex = compile(node.attrs.bytes("pattern")?, true)?;
    Ok(boxed(move |_, inputs| {
        one(full_matches(&regex, &*tensor_input(inputs, 0)?)?)
    }))
}

/// The last pattern a kernel with a pattern input compiled: graphs feed one pattern again
/// and again, which is then compiled once.
struct Cache<T>(Mutex<Option<Cached<T>>>);

/// (pattern, rewrite, what was built from them).
type Cached<T> = (Vec<u8>, Vec<u8>, T);

impl<T: Clone> Cache<T> {
    fn new() -> Self {
        Self(Mutex::new(None))
    }

    fn get(&self, pattern: &[u8], rewrite: &[u8], make: impl FnOnce() -> KResult<T>) -> KResult<T> {
        let mut slot = match self.0.lock() {
            Ok(slot) => slot,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((p, r, value)) = slot.as_ref() {
            if p == pattern && r == rewrite {
                return Ok(value.clone());
            }
        }
        let value = make()?;
        *slot = Some((pattern.to_vec(), rewrite.to_vec(), value.clone()));
        Ok(value)
    }
}

fn full_match(_: &NodeSpec) -> Made {
    let cache = Cache::<Regex>::new();
    Ok(boxed(move |_, inputs| {
        let pattern = tensor_input(inputs, 1)?;
        let pattern = scalar_bytes(&pattern, "pattern")?;
        let regex = cache.get(pattern, b"", || compile(pattern, true).map_err(fail))?;
        one(full_matches(&regex, &*tensor_input(inputs, 0)?)?)
    }))
}

/// A rewrite string's parts: literal bytes, or a group whose match is copied.
#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(Vec<u8>),
    Group(usize),
}

/// RE2's rewrite syntax: `\0`..`\9` name groups (no more than the pattern has), `\\` is a
/// backslash, any other escape is an error; everything else (`$0` too) is literal.
fn rewrite_parts(rewrite: &[u8], groups: usize) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut text = Vec::new();
    let mut bytes = rewrite.iter();
    while let Some(&b) = bytes.next() {
        if b != b'\\' {
            text.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'\\') => text.push(b'\\'),
            Some(&d) if d.is_ascii_digit() && usize::from(d - b'0') <= groups => {
                parts.push(Part::Text(std::mem::take(&mut text)));
                parts.push(Part::Group(usize::from(d - b'0')));
            }
            _ => {
                return Err(format!(
                    "invalid rewrite pattern {:?} for a pattern with {groups} groups",
                    String::from_utf8_lossy(rewrite)
                ))
            }
        }
    }
    parts.push(Part::Text(text));
    Ok(parts)
}

/// A compiled replacement.
#[derive(Clone)]
struct Replacer {
    regex: Regex,
    parts: Vec<Part>,
    /// Whether the rewrite copies a group other than the whole match (else finding where
    /// each match is suffices, which is cheaper than capturing).
    groups: bool,
    global: bool,
}

impl Replacer {
    fn new(pattern: &[u8], rewrite: &[u8], global: bool) -> Result<Self, String> {
        let regex = compile(pattern, false)?;
        let parts = rewrite_parts(rewrite, regex.captures_len() - 1)?;
        let groups = parts.iter().any(|p| matches!(p, Part::Group(g) if *g > 0));
        Ok(Self {
            regex,
            parts,
            groups,
            global,
        })
    }

    /// Appends the rewrite of a match (`whole`, with its groups in `caps` when they are used).
    fn rewrite(&self, whole: &[u8], caps: Option<&Captures>, out: &mut Vec<u8>) {
        for part in &self.parts {
            match part {
                Part::Text(t) => out.extend_from_slice(t),
                Part::Group(0) => out.extend_from_slice(whole),
                Part::Group(g) => {
                    let group = caps.and_then(|c| c.get(*g));
                    out.extend_from_slice(group.map_or(&[][..], |m| m.as_bytes()))
                }
            }
        }
    }

    /// RE2's Replace / GlobalReplace: an empty match right where the previous match ended is
    /// skipped by copying one character (one UTF-8 sequence, or one byte).
    fn apply(&self, text: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        let mut p = 0;
        let mut last_end = None;
        while p <= text.len() {
            let (m, caps) = if self.groups {
                let Some(caps) = self.regex.captures_at(text, p) else {
                    break;
                };
                let Some(m) = caps.get(0) else { break };
                (m, Some(caps))
            } else {
                let Some(m) = self.regex.find_at(text, p) else {
                    break;
                };
                (m, None)
            };
            out.extend_from_slice(&text[p..m.start()]);
            if m.is_empty() && last_end == Some(m.start()) {
                let n = char_len(&text[m.start()..]);
                out.extend_from_slice(&text[m.start()..m.start() + n]);
                p = m.start() + n.max(1);
                continue;
            }
            self.rewrite(m.as_bytes(), caps.as_ref(), &mut out);
            p = m.end();
            last_end = Some(p);
            if !self.global {
                break;
            }
        }
        if p < text.len() {
            out.extend_from_slice(&text[p..]);
        }
        out
    }
}

/// The byte length of the UTF-8 character `s` starts with (1 for an invalid byte, 0 at the
/// end); an encoded surrogate is one character, as RE2 reads it.
fn char_len(s: &[u8]) -> usize {
    if let [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] = s {
        return 3;
    }
    let n = match s.first() {
        None => return 0,
        Some(&b) if b < 0x80 => 1,
        Some(&b) if b >= 0xF0 => 4,
        Some(&b) if b >= 0xE0 => 3,
        Some(&b) if b >= 0xC0 => 2,
        Some(_) => 1,
    };
    if s.len() >= n && std::str::from_utf8(&s[..n]).is_ok() {
        n
    } else {
        1
    }
}

fn replace_all(replacer: &Replacer, t: &Tensor) -> KResult<Tensor> {
    let replaced = strings(t, "input")?
        .iter()
        .map(|s| replacer.apply(s))
        .collect();
    strings_tensor(t.shape().to_vec(), replaced)
}

fn static_replace(node: &NodeSpec) -> Made {
    let replacer = Replacer::new(
        node.attrs.bytes("pattern")?,
        node.attrs.bytes("rewrite")?,
        node.attrs.bool_or("replace_global", true)?,
    )?;
    Ok(boxed(move |_, inputs| {
        one(replace_all(&replacer, &*tensor_input(inputs, 0)?)?)
    }))
}

fn replace(node: &NodeSpec) -> Made {
    let global = node.attrs.bool_or("replace_global", true)?;
    let cache = Cache::<Replacer>::new();
    Ok(boxed(move |_, inputs| {
        let pattern = tensor_input(inputs, 1)?;
        let pattern = scalar_bytes(&pattern, "pattern")?;
        let rewrite = tensor_input(inputs, 2)?;
        let rewrite = scalar_bytes(&rewrite, "rewrite")?;
        let replacer = cache.get(pattern, rewrite, || {
            Replacer::new(pattern, rewrite, global).map_err(fail)
        })?;
        one(replace_all(&replacer, &*tensor_input(inputs, 0)?)?)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(pattern: &str, text: &str) -> bool {
        compile(pattern.as_bytes(), true)
            .unwrap()
            .is_match(text.as_bytes())
    }

    #[test]
    fn classes_are_ascii_as_in_re2() {
        assert!(full(r"\d+", "123"));
        assert!(!full(r"\d", "\u{663}"));
        assert!(!full(r"\w", "\u{e9}"));
        assert!(full(r"\W", "\u{e9}"));
        assert!(full(r"[\d\s]+", "1 2"));
        assert!(!full(r"\s", "\u{b}"));
        assert!(full(r"a\b", "a"));
    }

    #[test]
    fn re2_literals_stay_literal() {
        assert!(full(r"[[]", "["));
        assert!(full(r"[a&&b]+", "a&b"));
        assert!(full(r"[~~]", "~"));
        assert!(full(r"a{", "a{"));
        assert!(full(r"a{,2}", "a{,2}"));
        assert!(full(r"a{2}", "aa"));
        assert!(full(r"[[:digit:]x]+", "1x"));
        assert!(full(r"[]a]+", "]a"));
        assert!(full(r"\p{Greek}+\x{41}", "\u{3b1}\u{3b2}A"));
        assert!(full(r"[\p{Lu}\x{61}]+", "Aa"));
        assert!(full(r"\Q.*[\E+", ".*[[["));
        assert!(full(r"a\Q.b", "a.b"));
    }

    #[test]
    fn empty_matches_follow_re2() {
        let r = Replacer::new(b"a*", b"-", true).unwrap();
        assert_eq!(r.apply(b"abc"), b"-b-c-");
        assert_eq!(r.apply(b"baab"), b"-b-b-");
        assert_eq!(r.apply("\u{e9}".as_bytes()), "-\u{e9}-".as_bytes());
        let first = Replacer::new(b"(b)(c)", br"<\1>", false).unwrap();
        assert_eq!(first.apply(b"abcabc"), b"a<b>abc");
    }

    #[test]
    fn rewrites_name_existing_groups() {
        assert!(rewrite_parts(br"\2", 1).is_err());
        assert!(rewrite_parts(br"\x", 1).is_err());
        assert!(rewrite_parts(b"\\", 1).is_err());
        assert_eq!(
            rewrite_parts(br"$0\\\1", 1).unwrap(),
            [
                Part::Text(b"$0\\".to_vec()),
                Part::Group(1),
                Part::Text(Vec::new())
            ]
        );
    }
}
