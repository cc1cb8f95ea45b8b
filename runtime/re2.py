"""RE2 patterns (TensorFlow's regular expressions) as patterns for Python's `re`.

TensorFlow's regex ops compile their patterns with RE2. Python's `re` reads much of the same
syntax differently, so `translate` rewrites a pattern piece by piece instead of handing it over:

- `\\d`, `\\w`, `\\s`, `\\b` and `[[:class:]]` are ASCII-only in RE2 (RE2's `\\s` is
  `[\\t\\n\\f\\r ]`, without `\\v`), they become explicit ASCII sets; `\\pN`, `\\p{Lu}` and their
  negations become sets of the Unicode general category (from `unicodedata`).
- `$` outside multi-line mode is the end of the text only (Python's also matches before a
  final newline): it becomes `\\Z`. `\\z` becomes `\\Z`.
- Octal escapes (`\\101`), `\\x{10FFFF}`, `\\Q...\\E` literals, RE2's ungreedy flag `U` (which
  swaps greedy and lazy quantifiers) and flags set in the middle of a group (Python accepts
  global flags only at the start) are rewritten into their Python equivalents.
- A `{` that does not start a repetition is a literal (Python reads `a{,2}` as a repetition).

What RE2 rejects is rejected (`Re2Error`, with RE2's wording where it has one): lookarounds,
backreferences, atomic groups, possessive quantifiers, comments, `(?x)`, `\\Z`, `\\e`, `\\u`,
repetitions over 1000. What RE2 accepts but this translation cannot express is rejected too,
saying so: Unicode scripts (`\\p{Greek}`) and `\\C`.

Text: `decode` reads bytes as RE2 does: UTF-8, where a UTF-8-encoded surrogate (`\\xed\\xa0\\x80`)
is one character and every other ill-formed byte matches nothing (it becomes U+DC80..U+DCFF,
which `.` and every class leave out); `encode` turns the result back into the same bytes.

`replace` is RE2's GlobalReplace over those bytes, matches inside multi-byte characters
included (see there).

Known differences that remain: a repetition of a sub-pattern that can match empty (`(|a)+`)
may stop at a different point; an encoded surrogate in U+DC80..U+DCFF reads as three
ill-formed bytes.
"""
from __future__ import annotations

import codecs
import functools
import re
import sys
import unicodedata
from collections.abc import Callable

import numpy as np

MAX_REPEAT = 1000
_MAX_CODE_POINT = sys.maxunicode
_ESCAPED_BYTES = (0xDC80, 0xDCFF)
Ranges = tuple[tuple[int, int], ...]


class Re2Error(ValueError):
    """A pattern RE2 rejects, or one this translation cannot express."""


def _ranges(text: str) -> Ranges:
    """`a-z0-9_`-style text as code point ranges."""
    return tuple((ord(m[0]), ord(m[-1])) for m in re.findall(r".-.|.", text, re.DOTALL))


_PERL = {"d": _ranges("0-9"), "w": _ranges("0-9A-Za-z_"), "s": _ranges("\t\n\f\r ")}
_POSIX = {
    "alnum": _ranges("0-9A-Za-z"), "alpha": _ranges("A-Za-z"), "ascii": ((0, 0x7F),),
    "blank": _ranges("\t "), "cntrl": ((0, 0x1F), (0x7F, 0x7F)), "digit": _ranges("0-9"),
    "graph": _ranges("!-~"), "lower": _ranges("a-z"), "print": _ranges(" -~"),
    "punct": _ranges("!-/:-@[-`{-~"), "space": _ranges("\t\n\v\f\r "), "upper": _ranges("A-Z"),
    "word": _ranges("0-9A-Za-z_"), "xdigit": _ranges("0-9A-Fa-f")}
_WORD = "[0-9A-Za-z_]"
_BOUNDARY = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY = f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"
_CONTROL_ESCAPES = {"a": 7, "f": 12, "t": 9, "n": 10, "r": 13, "v": 11}
_FLAGS = re.compile(r"\(\?([imsU]*)(?:-([imsU]*))?([:)])")
_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")


def complement(ranges: Ranges) -> Ranges:
    """The code points not in `ranges`."""
    out, start = [], 0
    for low, high in sorted(ranges):
        if low > start:
            out.append((start, low - 1))
        start = max(start, high + 1)
    if start <= _MAX_CODE_POINT:
        out.append((start, _MAX_CODE_POINT))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _categories() -> dict[str, Ranges]:
    """Code point ranges of every Unicode general category (two letters, and one letter for
    the major class), computed once."""
    runs: dict[str, list[list[int]]] = {}
    for code in range(_MAX_CODE_POINT + 1):
        name = unicodedata.category(chr(code))
        for key in (name, name[0]):
            found = runs.setdefault(key, [])
            if found and found[-1][1] == code - 1:
                found[-1][1] = code
            else:
                found.append([code, code])
    return {k: tuple(map(tuple, v)) for k, v in runs.items()}


def _unicode_class(name: str, negated: bool) -> Ranges:
    if name.startswith("^"):
        name, negated = name[1:], not negated
    if name == "Any":
        ranges: Ranges = ((0, _MAX_CODE_POINT),)
    elif name in _categories():
        ranges = _categories()[name]
    else:
        raise Re2Error(f"invalid character class range: \\p{{{name}}} (Unicode scripts are not "
                       f"supported by this engine; general categories such as \\p{{L}} are)")
    return complement(ranges) if negated else ranges


def _without_invalid_bytes(ranges: Ranges) -> Ranges:
    """`ranges` less the characters that stand for bytes that are not valid UTF-8 (see
    `decode`): RE2 matches such bytes with no class at all."""
    low_end, high_start = _ESCAPED_BYTES[0] - 1, _ESCAPED_BYTES[1] + 1
    return tuple((low, high) for a, b in ranges
                 for low, high in ((a, min(b, low_end)), (max(a, high_start), b)) if low <= high)


def _positive_set(ranges: Ranges) -> str:
    return f"[{_set_text(_without_invalid_bytes(ranges))}]"


def _set_text(ranges: Ranges) -> str:
    """Ranges as the inside of a Python character class."""
    def one(code: int) -> str:
        return re.escape(chr(code)) if 0x20 < code < 0x7F else f"\\U{code:08x}"
    return "".join(one(a) if a == b else f"{one(a)}-{one(b)}" for a, b in ranges)


class _Translator:
    """One pass over the pattern. `groups` holds, per open group, whether multi-line, dot-all
    and ungreedy mode are on and the flag groups this translation opened inside it (RE2's
    mid-group flags become Python flag groups, closed at each `|` and at the group's end and
    reopened after each `|`)."""

    def __init__(self, pattern: str):
        self.pattern, self.at, self.out = pattern, 0, []
        self.groups = [{"m": False, "s": False, "U": False, "opened": []}]

    def fail(self, message: str) -> None:
        raise Re2Error(message)

    def run(self) -> str:
        while self.at < len(self.pattern):
            self.step()
        if len(self.groups) > 1:
            self.fail("missing ): " + self.pattern)
        self.close_flag_groups()
        return "".join(self.out)

    def emit(self, text: str, atom: bool = True) -> None:
        self.out.append(text)
        if atom:
            self.quantifier()

    def step(self) -> None:
        char = self.pattern[self.at]
        self.at += 1
        if char == "\\":
            self.escape()
        elif char == "[":
            self.emit(self.char_class())
        elif char == "(":
            self.open_group()
        elif char == ")":
            self.close_group()
        elif char == "|":
            opened = self.close_flag_groups()
            self.out.append("|")
            self.reopen(opened)
        elif char == "$":
            self.emit("$" if self.groups[-1]["m"] else r"\Z", atom=False)
        elif char in "*+?" or self.repeat_at(self.at - 1):
            self.fail(f"missing argument to repetition operator: {char}")
        elif char == "{":
            self.emit(r"\{")
        else:
            self.emit(self.dot() if char == "." else char if char == "^" else re.escape(char),
                      atom=char != "^")

    # -- quantifiers -------------------------------------------------------------------------

    def repeat_at(self, at: int) -> bool:
        """Whether a `{n}`, `{n,}` or `{n,m}` repetition starts at `at`."""
        return _REPEAT.match(self.pattern, at) is not None

    def quantifier(self) -> None:
        rest = self.pattern[self.at:]
        if rest[:1] in ("*", "+", "?"):
            op, size = rest[0], 1
        elif (found := _REPEAT.match(rest)) is not None:
            low, high = int(found[1]), found[3]
            if low > MAX_REPEAT or (high and int(high) > MAX_REPEAT):
                self.fail(f"invalid repetition size: {found[0]}")
            if high and int(high) < low:
                self.fail(f"invalid repetition size: {found[0]}")
            op, size = found[0], len(found[0])
        else:
            return
        self.at += size
        lazy = self.pattern[self.at:self.at + 1] == "?"
        self.at += lazy
        following = self.pattern[self.at:self.at + 1]
        if following in ("*", "+", "?") or self.repeat_at(self.at):
            self.fail(f"bad repetition operator: {op}{'?' if lazy else ''}{following}")
        self.out.append(op + ("?" if lazy != self.groups[-1]["U"] else ""))

    # -- escapes -----------------------------------------------------------------------------

    def escape(self) -> None:
        kind = self.pattern[self.at:self.at + 1]
        if kind == "b":
            self.at += 1
            self.emit(_BOUNDARY, atom=False)
        elif kind == "B":
            self.at += 1
            self.emit(_NOT_BOUNDARY, atom=False)
        elif kind == "A":
            self.at += 1
            self.emit(r"\A", atom=False)
        elif kind == "z":
            self.at += 1
            self.emit(r"\Z", atom=False)
        elif kind == "Q":
            end = self.pattern.find(r"\E", self.at + 1)
            stop = len(self.pattern) if end < 0 else end
            literal = self.pattern[self.at + 1:stop]
            self.at = stop + 2 if end >= 0 else stop
            for char in literal:
                self.emit(re.escape(char))
        else:
            ranges = self.class_escape()
            if ranges is not None:
                self.emit(_positive_set(ranges))
            else:
                self.emit(re.escape(chr(self.char_escape())))

    def class_escape(self) -> Ranges | None:
        """`\\d`-style and `\\p`-style classes (the backslash read), or None."""
        kind = self.pattern[self.at:self.at + 1]
        if kind.lower() in _PERL:
            self.at += 1
            ranges = _PERL[kind.lower()]
            return complement(ranges) if kind.isupper() else ranges
        if kind in ("p", "P"):
            name = self.pattern[self.at + 1:self.at + 2]
            if name == "{":
                end = self.pattern.find("}", self.at)
                if end < 0:
                    self.fail("invalid character class range: " + self.pattern[self.at - 1:])
                name, self.at = self.pattern[self.at + 2:end], end + 1
            else:
                self.at += 2
            return _unicode_class(name, kind == "P")
        return None

    def char_escape(self) -> int:
        """The code point of a single-character escape (the backslash read)."""
        pattern, at = self.pattern, self.at
        kind = pattern[at:at + 1]
        octal = re.compile(r"0[0-7]{0,2}|[1-7][0-7]{1,2}").match(pattern, at)
        if octal:
            self.at = octal.end()
            return int(octal[0], 8)
        if kind == "x":
            hexa = re.compile(r"x\{([0-9A-Fa-f]+)\}|x([0-9A-Fa-f]{2})").match(pattern, at)
            if hexa is None or int(hexa[1] or hexa[2], 16) > _MAX_CODE_POINT:
                self.fail(f"invalid escape sequence: {pattern[at - 1:at + 9]}")
            self.at = hexa.end()
            return int(hexa[1] or hexa[2], 16)
        if kind in _CONTROL_ESCAPES:
            self.at += 1
            return _CONTROL_ESCAPES[kind]
        if kind and ord(kind) < 0x80 and not kind.isalnum():
            self.at += 1
            return ord(kind)
        if kind == "C":
            self.fail(r"\C (any byte) is not supported by this engine")
        self.fail(f"invalid escape sequence: \\{kind}")
        return 0

    # -- character classes -------------------------------------------------------------------

    def dot(self) -> str:
        """Any character but a newline (any at all in `s` mode), never an invalid byte."""
        newline = "" if self.groups[-1]["s"] else "\\n"
        return f"[^{newline}{_set_text((_ESCAPED_BYTES,))}]"

    def char_class(self) -> str:
        """A class (the `[` read) as a Python class."""
        pattern, negated = self.pattern, self.pattern[self.at:self.at + 1] == "^"
        self.at += negated
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            if self.at >= len(pattern):
                self.fail("missing ]: " + pattern)
            char = pattern[self.at]
            if char == "]" and not first:
                self.at += 1
                break
            first = False
            posix = re.compile(r"\[:(\^?)([a-z]+):\]").match(pattern, self.at)
            if posix:
                if posix[2] not in _POSIX:
                    self.fail(f"invalid character class range: {posix[0]}")
                self.at = posix.end()
                found = _POSIX[posix[2]]
                ranges += complement(found) if posix[1] else found
                continue
            low = self.class_item()
            if isinstance(low, tuple):
                ranges += low
                continue
            if pattern[self.at:self.at + 1] == "-" and pattern[self.at + 1:self.at + 2] not in "]":
                self.at += 1
                high = self.class_item()
                if isinstance(high, tuple) or high < low:
                    self.fail(f"invalid character class range: {pattern[self.at - 3:self.at]}")
                ranges.append((low, high))
            else:
                ranges.append((low, low))
        if not ranges:
            self.fail("missing ]: " + pattern)
        if negated:
            return "[^" + _set_text(tuple(ranges) + (_ESCAPED_BYTES,)) + "]"
        return _positive_set(tuple(ranges))

    def class_item(self) -> int | Ranges:
        """One character of a class (a code point) or a class escape (ranges)."""
        char = self.pattern[self.at]
        self.at += 1
        if char != "\\":
            return ord(char)
        if self.pattern[self.at:self.at + 1] == "b":
            self.fail(r"invalid escape sequence: \b")
        ranges = self.class_escape()
        return ranges if ranges is not None else self.char_escape()

    # -- groups and flags --------------------------------------------------------------------

    def open_group(self) -> None:
        pattern, at = self.pattern, self.at
        scope = dict(self.groups[-1], opened=[])
        if pattern.startswith("?P<", at):
            name = re.compile(r"\?P<([A-Za-z_][A-Za-z0-9_]*)>").match(pattern, at)
            if name is None:
                self.fail(f"invalid named capture group: {pattern[at - 1:at + 12]}")
            self.at = name.end()
            self.out.append("(" + name[0])
        elif pattern.startswith("?", at):
            flags = _FLAGS.match(pattern, at - 1)
            if flags is None or flags[0][-2] == "-":
                self.fail(f"invalid perl operator: {pattern[at - 1:at + 2]}")
            self.at = flags.end()
            on, off = flags[1], flags[2] or ""
            if flags[3] == ")":
                self.set_flags(on, off)
                return
            self.apply_modes(scope, on, off)
            self.out.append(self.flag_group(on, off))
        else:
            self.out.append("(")
        self.groups.append(scope)

    def apply_modes(self, scope: dict, on: str, off: str) -> None:
        for mode in "msU":
            if mode in on:
                scope[mode] = True
            if mode in off:
                scope[mode] = False

    @staticmethod
    def flag_group(on: str, off: str) -> str:
        on, off = on.replace("U", ""), off.replace("U", "")
        return f"(?{on}{'-' + off if off else ''}:" if on or off else "(?:"

    def set_flags(self, on: str, off: str) -> None:
        """`(?flags)`: the rest of the current group (each remaining alternative) in a flag
        group, which Python allows anywhere."""
        scope = self.groups[-1]
        self.apply_modes(scope, on, off)
        opener = self.flag_group(on, off)
        scope["opened"].append(opener)
        self.out.append(opener)

    def close_flag_groups(self) -> list[str]:
        opened = self.groups[-1]["opened"]
        self.out.append(")" * len(opened))
        self.groups[-1]["opened"] = []
        return opened

    def reopen(self, opened: list[str]) -> None:
        self.groups[-1]["opened"] = opened
        self.out.extend(opened)

    def close_group(self) -> None:
        if len(self.groups) == 1:
            self.fail("unexpected ): " + self.pattern)
        self.close_flag_groups()
        self.groups.pop()
        self.emit(")")


@functools.lru_cache(maxsize=256)
def translate(pattern: str) -> str:
    """The Python `re` pattern matching what RE2 matches with `pattern`; Re2Error if RE2
    rejects it or the translation cannot express it."""
    return _Translator(pattern).run()


_CODEC_ERRORS = "savedmodel-re2"


def _decode_error(error: UnicodeDecodeError) -> tuple[str, int]:
    data, start = error.object, error.start
    tail = data[start:start + 3]
    if len(tail) == 3 and tail[0] == 0xED and 0xA0 <= tail[1] <= 0xBF and 0x80 <= tail[2] <= 0xBF:
        code = 0xD000 | (tail[1] & 0x3F) << 6 | (tail[2] & 0x3F)
        if not _ESCAPED_BYTES[0] <= code <= _ESCAPED_BYTES[1]:
            return chr(code), start + 3
    return "".join(chr(0xDC00 + byte) for byte in data[start:error.end]), error.end


def _encode_error(error: UnicodeEncodeError) -> tuple[bytes, int]:
    pieces = error.object[error.start:error.end]
    return b"".join(bytes([ord(c) - 0xDC00]) if _ESCAPED_BYTES[0] <= ord(c) <= _ESCAPED_BYTES[1]
                    else c.encode("utf-8", "surrogatepass") for c in pieces), error.end


def _codec_errors(error: UnicodeError) -> tuple:
    if isinstance(error, UnicodeDecodeError):
        return _decode_error(error)
    if isinstance(error, UnicodeEncodeError):
        return _encode_error(error)
    raise error


codecs.register_error(_CODEC_ERRORS, _codec_errors)


def decode(data: bytes) -> str:
    """Bytes as the text RE2 matches (see the module docstring)."""
    return data.decode("utf-8", _CODEC_ERRORS)


def encode(text: str) -> bytes:
    """The inverse of `decode`."""
    return text.encode("utf-8", _CODEC_ERRORS)


_INSIDE_CHARACTER = "\udc80\udc80"
"""Two continuation bytes as `decode` reads them: position 1 stands for a position between two
bytes of one character, where RE2 (which scans bytes) also looks for matches."""


@functools.lru_cache(maxsize=256)
def _inside_match(compiled: re.Pattern) -> re.Match | None:
    """The empty match RE2 finds between two bytes of one character, if the pattern has one
    (`x*`, `\\B`: nothing else can match there, no character starting inside another)."""
    found = compiled.match(_INSIDE_CHARACTER, 1)
    return found if found is not None and found.end() == 1 else None


def _byte_starts(text: str) -> np.ndarray:
    """The byte offset in `encode(text)` of each character, and the length at the end."""
    code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    escaped = (code_points >= _ESCAPED_BYTES[0]) & (code_points <= _ESCAPED_BYTES[1])
    sizes = np.where(escaped, 1, 1 + (code_points >= 0x80) + (code_points >= 0x800)
                     + (code_points >= 0x10000))
    return np.concatenate([[0], np.cumsum(sizes)])


def replace(compiled: re.Pattern, data: bytes, rewrite: Callable[[re.Match], str],
            replace_global: bool) -> bytes:
    """RE2's GlobalReplace (or Replace, the first match only) as TensorFlow runs it. RE2 scans
    the bytes for the leftmost match, so a pattern that matches empty inside a character
    (`\\B`) matches there when it does not match at the character's start; an empty match
    right where the previous match ended is skipped by one character (Python's `re.sub` takes
    it)."""
    text = decode(data)
    starts = _byte_starts(text) if len(data) != len(text) else None
    inside = _inside_match(compiled) if starts is not None else None
    out, at, last_end = [], 0, -1
    while at <= len(data):
        found = _next_match(compiled, text, starts, at, inside)
        if found is None:
            break
        start, end, match = found
        out.append(data[at:start])
        if start == end == last_end:
            step = _character_size(text, starts, at)
            out.append(data[at:at + step])
            at += step
            continue
        out.append(encode(rewrite(match)))
        at = last_end = end
        if not replace_global:
            break
    out.append(data[at:])
    return b"".join(out)


def _character_size(text: str, starts: np.ndarray | None, at: int) -> int:
    """How far RE2 steps past an empty match at byte `at`: the whole character there, or one
    byte inside a character, at an ill-formed byte or at the end."""
    if starts is None:
        return 1
    char = int(np.searchsorted(starts, at))
    if char >= len(text) or starts[char] != at:
        return 1
    return int(starts[char + 1] - at)


def _next_match(compiled: re.Pattern, text: str, starts: np.ndarray | None, at: int,
                inside: re.Match | None) -> tuple[int, int, re.Match] | None:
    """The first match at byte `at` or later: (start byte, end byte, match)."""
    if starts is None:
        found = compiled.search(text, at)
        return None if found is None else (found.start(), found.end(), found)
    char = int(np.searchsorted(starts, at))
    if inside is not None and starts[char] != at:
        return at, at, inside
    found = compiled.search(text, char)
    if inside is not None:
        stop = found.start() if found is not None else len(text)
        multibyte = np.flatnonzero(np.diff(starts[char:stop + 1]) > 1)
        if multibyte.size:
            position = int(starts[char + multibyte[0]]) + 1
            return position, position, inside
    return None if found is None else (int(starts[found.start()]), int(starts[found.end()]), found)
