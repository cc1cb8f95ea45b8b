"""What `savedmodel batch` reads (through Ray Data's readers) and writes (one file, in row order).

Inputs: Parquet, CSV, JSON lines, `.npy` (one column, `data`, rows along the first axis) and
`.npz` (one column per array), as one file or a folder of files of one format. Each reader adds
the `path` column (`include_paths=True`), which names a bad row's file.

Output: one file whose suffix names its format (Parquet when it names none): Parquet, CSV, JSON
lines or `.npz`, written batch by batch under a temporary name and renamed into place when
complete, so a failed run leaves no partial output. Multi-dimensional columns become Arrow's
canonical fixed-shape tensor type in Parquet, nested lists in JSON, arrays in `.npz`; CSV holds
one value per cell, and refuses them.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import ray.data
from ray.data.block import BlockAccessor
from ray.data.datasource import FileBasedDatasource

from savedmodel.runtime.atomic_files import AtomicFiles, naming_full_disk
from savedmodel.runtime.errors import SavedModelError

INPUT_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json",
                 ".jsonl": "json", ".ndjson": "json", ".npy": "npy", ".npz": "npz"}
OUTPUT_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json",
                  ".jsonl": "json", ".ndjson": "json", ".npz": "npz"}


class BatchFormatError(SavedModelError, ValueError):
    """An input or output the batch command cannot read or write (format, layout, column)."""


def input_format(path: str) -> str:
    """The format of `path`: a file's by its suffix, a local folder's by its files' suffixes
    (they must agree)."""
    local = Path(path)
    if "://" not in path and local.is_dir():
        found = {INPUT_FORMATS.get(_suffix(str(f))) for f in sorted(local.rglob("*"))
                 if f.is_file() and not f.name.startswith((".", "_"))}
        if not found:
            raise BatchFormatError(f"{path}: the folder holds no files")
        if None in found or len(found) > 1:
            raise BatchFormatError(f"{path}: the folder's files must all be of one format "
                                   f"({_known(INPUT_FORMATS)}); found {sorted(map(str, found))}")
        return found.pop()
    if "://" not in path and not local.exists():
        raise BatchFormatError(f"{path}: no such file or folder")
    kind = INPUT_FORMATS.get(_suffix(path))
    if kind is None:
        raise BatchFormatError(f"{path}: cannot tell the format from the name; inputs are "
                               f"{_known(INPUT_FORMATS)} files or folders of them")
    return kind


def read(path: str) -> ray.data.Dataset:
    """`path` as a Ray dataset with a `path` column, rows in file order (files sorted by name)."""
    kind = input_format(path)
    extensions = [s.lstrip(".") for s, k in INPUT_FORMATS.items() if k == kind]
    if kind == "parquet":
        return ray.data.read_parquet(path, include_paths=True, file_extensions=extensions)
    if kind == "csv":
        return ray.data.read_csv(path, include_paths=True, file_extensions=extensions)
    if kind == "json":
        return ray.data.read_json(path, lines=True, include_paths=True, file_extensions=extensions)
    if kind == "npy":
        return ray.data.read_numpy(path, include_paths=True, file_extensions=extensions)
    return ray.data.read_datasource(_NpzDatasource(path, include_paths=True, file_extensions=extensions))


class _NpzDatasource(FileBasedDatasource):
    """`.npz` files: one column per array, rows along their first axes (Ray reads `.npy` only).
    Never unpickles: object arrays are refused."""

    _FILE_EXTENSIONS = ["npz"]

    def _read_stream(self, f, path: str) -> Iterator:
        with np.load(BytesIO(f.readall()), allow_pickle=False) as archive:
            columns = {name: archive[name] for name in archive.files}
        lengths = {name: (len(a) if a.ndim else None) for name, a in columns.items()}
        if None in lengths.values() or len(set(lengths.values())) > 1:
            raise BatchFormatError(f"{path}: the arrays of an .npz input are columns, and need one "
                                   f"first axis of equal length; found {lengths}")
        yield BlockAccessor.batch_to_block(columns)


def output_format(path: Path) -> str:
    return OUTPUT_FORMATS.get(_suffix(str(path)), "parquet")


def check_output(path: Path, overwrite: bool) -> None:
    """Refuse an output that exists (unless `overwrite`) or whose folder does not, before any work."""
    if _suffix(str(path)) == ".npy":
        raise BatchFormatError(f"{path}: an .npy file holds one array; write the columns to .npz, "
                               ".parquet, .csv or .jsonl")
    if path.is_dir():
        raise BatchFormatError(f"{path}: is a folder; the output is one file")
    if path.exists() and not overwrite:
        raise BatchFormatError(f"{path}: exists (pass --overwrite to replace it)")
    if not path.parent.is_dir():
        raise BatchFormatError(f"{path}: the folder {path.parent} does not exist")


class OutputWriter:
    """Writes batches (dicts of numpy columns) to one file of `output_format(path)`, in the order
    given; `commit` renames the complete file into place (see the module docstring)."""

    def __init__(self, path: Path):
        self.path = path
        self._kind = output_format(path)
        self._files = AtomicFiles()
        self._temp = self._files.temp_for(path)
        self._sink = None
        self._npz: dict[str, list[np.ndarray]] = {}

    def __enter__(self) -> OutputWriter:
        return self

    def __exit__(self, *exc) -> None:
        self._close()
        self._files.__exit__(*exc)

    def write(self, batch: dict[str, np.ndarray]) -> None:
        with naming_full_disk(self.path):
            if self._kind == "npz":
                for name, column in batch.items():
                    self._npz.setdefault(name, []).append(_npz_column(name, column))
            elif self._kind == "json":
                self._write_json(batch)
            else:
                self._write_arrow(_arrow_table(batch, self._kind == "csv"))

    def commit(self) -> None:
        with naming_full_disk(self.path):
            if self._kind == "npz":
                with open(self._temp, "wb") as out:
                    np.savez(out, **{name: np.concatenate(parts) for name, parts in self._npz.items()})
            elif self._sink is None:
                self._write_arrow(pa.table({}))
            self._close()
            with open(self._temp, "rb+") as out:
                os.fsync(out.fileno())
        self._files.commit()

    def _write_arrow(self, table: pa.Table) -> None:
        if self._sink is None:
            if self._kind == "parquet":
                self._sink = pq.ParquetWriter(self._temp, table.schema)
            else:
                self._sink = pa_csv.CSVWriter(self._temp, table.schema)
        elif table.schema != self._sink.schema:
            table = table.cast(self._sink.schema)
        self._sink.write_table(table)

    def _write_json(self, batch: dict[str, np.ndarray]) -> None:
        if self._sink is None:
            self._sink = open(self._temp, "w", encoding="utf-8")
        names = list(batch)
        lists = [_json_values(batch[n]) for n in names]
        for row in zip(*lists):
            self._sink.write(json.dumps(dict(zip(names, row))) + "\n")

    def _close(self) -> None:
        if self._sink is not None:
            self._sink.close()
            self._sink = None


def _arrow_table(batch: dict[str, np.ndarray], flat: bool) -> pa.Table:
    columns = {}
    for name, column in batch.items():
        if flat and column.ndim > 1:
            raise BatchFormatError(f"column {name!r} holds {column.shape[1:]} values per row; a CSV "
                                   "cell holds one: write .parquet, .jsonl or .npz instead")
        columns[name] = _arrow_column(column)
    return pa.table(columns)


def _arrow_column(column: np.ndarray) -> pa.Array:
    if column.dtype == object:
        return pa.array([_plain(v) for v in column])
    if column.ndim > 1:
        return pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(column))
    return pa.array(column)


def _plain(value):
    """A cell of an object column (bytes, text, a ragged row, nested lists as Ray gives JSON's)
    as Arrow and JSON take it."""
    if isinstance(value, bytes):
        return _text(value)
    if isinstance(value, (np.ndarray, list, tuple)):
        return [_plain(v) for v in value] if _is_object(value) else np.asarray(value).tolist()
    return value.item() if isinstance(value, np.generic) else value


def _is_object(value) -> bool:
    return isinstance(value, (list, tuple)) or value.dtype == object


def _text(value: bytes) -> str | bytes:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value


def _json_values(column: np.ndarray) -> list:
    values = [_plain(v) for v in column] if column.dtype == object else column.tolist()
    if any(isinstance(v, bytes) for v in values):
        raise BatchFormatError("a string column holds bytes that are not UTF-8 text, which JSON "
                               "cannot hold: write .parquet or .npz instead")
    return values


def _npz_column(name: str, column: np.ndarray) -> np.ndarray:
    """A column as an array `np.savez` writes without pickling: text and bytes as fixed-width
    strings; ragged rows cannot be one array."""
    if column.dtype != object:
        return column
    values = list(column)
    if all(isinstance(v, bytes) for v in values):
        return np.array(values, dtype=bytes)
    if all(isinstance(v, str) for v in values):
        return np.array(values, dtype=str)
    try:
        return np.stack([np.asarray(v) for v in values])
    except ValueError:
        raise BatchFormatError(f"column {name!r} has rows of different shapes, which one .npz array "
                               "cannot hold: write .parquet or .jsonl instead") from None


def _suffix(path: str) -> str:
    return os.path.splitext(path.rstrip("/"))[1].lower()


def _known(formats: dict) -> str:
    return ", ".join(sorted(formats))
