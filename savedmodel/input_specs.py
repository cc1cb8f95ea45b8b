"""Parsing the input specifications of `savedmodel run` and `compare`.

`--inputs 'x=a.npy;y=b.npz[key]'` names numpy files (loaded without pickle, so a file cannot run
code; regular files only, and a header must not claim more bytes than the file holds, since
numpy allocates what it claims before reading); `--input-exprs 'x=[[1,2]]'` gives Python literals, parsed with `ast.literal_eval`, never
evaluated as code.
"""
from __future__ import annotations

import ast
import io
import math
import re
import zipfile
from pathlib import Path

import numpy as np

from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.protofiles import open_regular

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
    where = f"--inputs: {name}: {path}"
    try:
        file, size = open_regular(path)
    except FileFormatError as err:
        raise InputSpecError(f"--inputs: {name}: {err}") from None
    with io.BufferedReader(file) as stream:
        is_zip = zipfile.is_zipfile(stream)
        stream.seek(0)
        if not is_zip:
            if key:
                raise InputSpecError(f"{where} is a .npy file; [key] applies to .npz")
            return _read_npy(stream, size, where)
        try:
            with zipfile.ZipFile(stream) as archive:
                return _read_npz_member(archive, key, where, path)
        except (zipfile.BadZipFile, EOFError, OSError) as err:
            raise InputSpecError(f"{where}: damaged .npz file ({err})") from None


DEFLATE_MAX_RATIO = 1032
"""Deflate cannot expand data more than about 1032-fold: what an .npz member may claim."""


def _read_npz_member(archive: zipfile.ZipFile, key: str | None, where: str, path: Path) -> np.ndarray:
    """One array of an .npz archive (a zip of .npy files), by key; the only one without a key."""
    names = {n.removesuffix(".npy"): n for n in archive.namelist()}
    if key is None and len(names) == 1:
        key = next(iter(names))
    if key not in names:
        raise InputSpecError(f"{where} has arrays {list(names)}; name one as {path}[key]")
    info = archive.getinfo(names[key])
    bound = {zipfile.ZIP_STORED: info.compress_size,
             zipfile.ZIP_DEFLATED: info.compress_size * DEFLATE_MAX_RATIO}.get(info.compress_type)
    if bound is None or info.file_size > bound:
        raise InputSpecError(f"{where}[{key}]: the archive claims {info.file_size} bytes from "
                             f"{info.compress_size} stored (compression type {info.compress_type}); "
                             "only stored or deflated members that can hold their size are read")
    with archive.open(info) as member:
        return _read_npy(member, info.file_size, f"{where}[{key}]")


def _read_npy(stream, size: int, where: str) -> np.ndarray:
    """The array of a .npy stream of `size` bytes, once its header's shape and dtype are known
    to fit those bytes: numpy would allocate whatever the header claims before reading."""
    try:
        version = np.lib.format.read_magic(stream)
        header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                  else np.lib.format.read_array_header_2_0)
        shape, _, dtype = header(stream)
    except (ValueError, EOFError) as err:
        raise InputSpecError(f"{where}: not a numpy .npy file ({err})") from None
    if dtype.hasobject:
        raise InputSpecError(f"{where}: holds Python objects, which load only with pickle")
    claimed = math.prod(shape) * dtype.itemsize
    if claimed > size:
        raise InputSpecError(f"{where}: the header claims shape {list(shape)} of {dtype} "
                             f"({claimed} bytes), but the file has {size} bytes")
    stream.seek(0)
    try:
        return np.lib.format.read_array(stream, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise InputSpecError(f"{where}: cannot load ({err})") from None


def load_npz(path: Path, option: str = "--load-inputs") -> dict[str, np.ndarray]:
    """Every array of an .npz file by key, read as `--inputs` reads one (without pickle, sizes
    checked against the file)."""
    where = f"{option}: {path}"
    try:
        file, _ = open_regular(path)
    except FileFormatError as err:
        raise InputSpecError(f"{option}: {err}") from None
    with io.BufferedReader(file) as stream:
        if not zipfile.is_zipfile(stream):
            raise InputSpecError(f"{where} is not an .npz file")
        stream.seek(0)
        try:
            with zipfile.ZipFile(stream) as archive:
                keys = [n.removesuffix(".npy") for n in archive.namelist()]
                return {key: _read_npz_member(archive, key, where, path) for key in keys}
        except (zipfile.BadZipFile, EOFError, OSError) as err:
            raise InputSpecError(f"{where}: damaged .npz file ({err})") from None
