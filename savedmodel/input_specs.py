"""Parsing the input specifications of `savedmodel run` and `compare`.

`--inputs 'x=a.npy;y=b.npz[key]'` names numpy files (loaded without pickle, so a file cannot run
code); `--input-exprs 'x=[[1,2]]'` gives Python literals, parsed with `ast.literal_eval`, never
evaluated as code.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np

_FILE_SPEC = re.compile(r"^(?P<path>.+?)(?:\[(?P<key>[^\]]+)\])?$")


class InputSpecError(ValueError):
    """An input specification that cannot be parsed or loaded."""


def parse_inputs(spec: str | None) -> dict[str, np.ndarray]:
    """`name=file.npy;name=file.npz[key]` -> arrays by input name."""
    return {name: _load_file(name, value) for name, value in _assignments(spec, "--inputs")}


def parse_input_exprs(spec: str | None) -> dict:
    """`name=<python literal>;...` -> values by input name."""
    return {name: _literal(name, text) for name, text in _assignments(spec, "--input-exprs")}


def _literal(name: str, text: str):
    """The value of one literal. Python's parser gives up on deep nesting (thousands of unary
    operators or `**` in a row) with RecursionError or MemoryError: a command-line argument is
    at most 128 KiB, so either means the nesting, never a real lack of memory."""
    try:
        return ast.literal_eval(ast.parse(text, mode="eval"))
    except (ValueError, TypeError, SyntaxError):  # TypeError: an unhashable key, {[1]: 2}
        problem = "is not a Python literal"
    except (RecursionError, MemoryError):
        problem = "is nested too deeply to parse as a Python literal"
    raise InputSpecError(f"--input-exprs: the value of {name!r} {problem}: {_elided(text)!r}")


def _elided(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _assignments(spec: str | None, option: str) -> list[tuple[str, str]]:
    if not spec:
        return []
    pairs = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InputSpecError(f"{option}: expected NAME=VALUE, got {part!r}")
        pairs.append((name.strip(), value.strip()))
    names = [n for n, _ in pairs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputSpecError(f"{option}: inputs given twice: {duplicates}")
    return pairs


def _load_file(name: str, value: str) -> np.ndarray:
    match = _FILE_SPEC.match(value)
    path, key = Path(match["path"]), match["key"]
    try:
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputSpecError(f"--inputs: {name}: no such file {path}") from None
    except ValueError as err:
        raise InputSpecError(f"--inputs: {name}: cannot load {path} without pickle ({err})") from None
    if isinstance(loaded, np.ndarray):
        if key:
            raise InputSpecError(f"--inputs: {name}: {path} is a .npy file; [key] applies to .npz")
        return loaded
    with loaded:
        keys = list(loaded.keys())
        if key is None and len(keys) == 1:
            key = keys[0]
        if key not in keys:
            raise InputSpecError(f"--inputs: {name}: {path} has arrays {keys}; name one as "
                                 f"{path}[key]")
        return loaded[key]
