"""A SavedModel signature as a function of dict-of-numpy batches: what Ray Data's
`Dataset.map_batches` runs in each actor of an `ActorPoolStrategy` pool.

Nothing here imports Ray: a batch is a dict of column name -> array whose first axis is the row,
which is what Ray Data hands a callable class with `batch_format="numpy"` (and what a plain loop
can hand it too). The class loads the model once, in its constructor, so each actor pays for the
load once and not per batch.

How rows become feeds. A signature runs either on a whole batch at once (every input declares an
unknown leading dimension, and the rows fit the rest of its shape: `features: (-1, 8)` takes
rows of 8 values) or once per row (every row fits the input's whole shape: `power`'s `x: (10, 10)`
and `n: ()`, or a variable-length list for an input of shape `(-1,)` that reduces it). A batched
run is preferred when both fit. A row whose values have the input's row shape's number of
elements is reshaped to it (a flat list of 784 numbers for a `(-1, 28, 28, 1)` image), so CSV and
JSON inputs can feed multi-dimensional inputs. Outputs that are per row (a declared unknown
leading dimension, or any output of a per-row run) become columns; an output of a batched run
that is one value for the whole batch (the seeds model's `calls` counter) is not a column, and
`skipped_outputs` names it.

Batches may be read-only (Ray hands zero-copy views of its object store): nothing here writes
into an input array; conversions copy.

A row that the model cannot run (wrong shape, a value the dtype cannot hold, a kernel that rejects
it) is found by running the batch's rows one at a time. With `on_error="raise"` the first one is
raised as a RowError naming the row (its index in the batch, and its file when the batch has a
`path` column); with `on_error="record"` every row gets a message in the ERROR_COLUMN column ("" for
rows that ran) and the failed rows' outputs are zeros, so the caller can name the row by its
place in the whole input (the `savedmodel batch` pipeline does). A mistake in the column mapping
(BatchColumnsError) is recorded against every row of the batch too, rather than raised inside a
Ray worker, whose stack trace Ray would print.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from savedmodel.runtime import load
from savedmodel.runtime.errors import SavedModelError

ERROR_COLUMN = "savedmodel_error"
"""The column `on_error="record"` adds: the message of a row that failed, "" for one that ran."""
PATH_COLUMN = "path"
"""The column Ray Data's readers add with `include_paths=True`: never an input of the model."""
ROW_ERRORS = (SavedModelError, ValueError, TypeError, ArithmeticError)
"""What a row the model cannot run raises (feeds, conversions, kernels); anything else is a defect
and propagates."""


class BatchColumnsError(SavedModelError, ValueError):
    """The batch's columns do not give the signature its inputs (a missing column, an output
    whose column name is taken): a mistake in the mapping, not in one row."""


class RowError(SavedModelError, ValueError):
    """A row the model cannot run; `row` is its index in the batch, `path` its file if known."""

    def __init__(self, message: str, row: int, path: str | None = None):
        super().__init__(message)
        self.row, self.path = row, path


class SavedModelPredictor:
    """Runs one signature of a SavedModel over dict-of-numpy batches (see the module docstring).

    `columns` maps an input key to the column that feeds it, or to several scalar columns that
    are stacked, in order, into one vector per row (CSV features); by default an input takes the
    column of its own name, and a signature with one input takes the batch's only column when no
    column has its name (`data`, for `.npy` files). `output_columns` renames outputs; by default a
    column is named for its output key. The batch comes back with its columns and the outputs.
    """

    def __init__(self, model_dir: str | Path, signature: str = "serving_default", *,
                 columns: Mapping[str, str | Sequence[str]] | None = None,
                 output_columns: Mapping[str, str] | None = None, engine: str = "auto",
                 on_error: str = "raise"):
        if on_error not in ("raise", "record"):
            raise ValueError(f"on_error must be 'raise' or 'record'; got {on_error!r}")
        self.model = load(model_dir, engine=engine)
        self.signature = self.model.signatures[signature]
        self._inputs = self.signature.inputs
        self._columns = _check_mapping(dict(columns or {}), self._inputs, "input", signature)
        self._renamed = _check_mapping(dict(output_columns or {}), self.signature.outputs, "output",
                                       signature)
        self._on_error = on_error
        self._batchable = all(s.shape is None or (s.shape and s.shape[0] is None) for s in self._inputs.values())
        self.skipped_outputs: list[str] = []

    def __call__(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = _row_count(batch)
        try:
            return self._with_outputs(batch, rows)
        except BatchColumnsError as err:
            if self._on_error == "raise":
                raise
            return {**batch, ERROR_COLUMN: np.full(rows, _one_line(err), dtype=object)}

    def _with_outputs(self, batch: Mapping[str, np.ndarray], rows: int) -> dict[str, np.ndarray]:
        sources = {key: self._source(key, batch) for key in self._inputs}
        try:
            outputs, errors = self._run_batch(sources, rows), None
        except ROW_ERRORS:
            outputs, errors = self._run_rows(sources, rows, _paths(batch))
        result = dict(batch)
        for key, values in outputs.items():
            name = self._renamed.get(key, key)
            if name in result:
                raise BatchColumnsError(f"output {key!r} of signature {self.signature.name!r} would "
                                        f"replace the input column {name!r}; give it another name "
                                        "with output_columns")
            result[name] = values
        if self._on_error == "record":
            result[ERROR_COLUMN] = np.array(errors if errors is not None else [""] * rows, dtype=object)
        return result

    def _source(self, key: str, batch: Mapping[str, np.ndarray]) -> np.ndarray:
        """The column (or stacked columns) that feed input `key`, one entry per row."""
        named = self._columns.get(key, key)
        if isinstance(named, str):
            if named in batch:
                return batch[named]
            data = _data_columns(batch)
            if key not in self._columns and len(self._inputs) == 1 and len(data) == 1:
                return batch[data[0]]
            raise BatchColumnsError(f"no column {named!r} for input {key!r} of signature "
                                    f"{self.signature.name!r}; the columns are {sorted(data)} "
                                    "(map inputs to columns with `columns`)")
        missing = [c for c in named if c not in batch]
        if missing:
            raise BatchColumnsError(f"no column(s) {missing} for input {key!r} of signature "
                                    f"{self.signature.name!r}; the columns are {sorted(_data_columns(batch))}")
        parts = [_plain_rows(batch[c], c) for c in named]
        return np.stack(parts, axis=-1)

    def _run_batch(self, sources: dict[str, np.ndarray], rows: int) -> dict[str, np.ndarray]:
        feeds = self._batched_feeds(sources, rows) if self._batchable else None
        if feeds is not None:
            return self._per_row_outputs(self.signature(**feeds), rows)
        return _stack_rows([self._run_row(sources, row) for row in range(rows)])

    def _batched_feeds(self, sources: dict[str, np.ndarray], rows: int) -> dict | None:
        """The rows as one feed per input, or None when some input's rows do not fit its shape
        after the leading (batch) dimension."""
        feeds = {}
        for key, spec in self._inputs.items():
            values = _dense(sources[key], rows)
            fitted = None if values is None else _fit(values, _row_shape(spec.shape), leading=1)
            if fitted is None:
                return None
            feeds[key] = fitted
        return feeds

    def _run_row(self, sources: dict[str, np.ndarray], row: int) -> dict[str, np.ndarray]:
        """The outputs for one row: as a batch of one when the row fits that way, else as the
        signature's whole input."""
        if self._batchable:
            feeds = self._batched_feeds({k: v[row:row + 1] for k, v in sources.items()}, 1)
            if feeds is not None:
                return {k: v[0] for k, v in self._per_row_outputs(self.signature(**feeds), 1).items()}
        feeds = {}
        for key, spec in self._inputs.items():
            value = _as_array(sources[key][row])
            fitted = _fit(value, spec.shape, leading=0)
            feeds[key] = value if fitted is None else fitted
        return self.signature(**feeds)

    def _per_row_outputs(self, results: dict, rows: int) -> dict[str, np.ndarray]:
        """The outputs of a batched run that have one entry per row (see the module docstring)."""
        kept, skipped = {}, []
        for key, value in results.items():
            spec = self.signature.outputs[key].shape
            declared = spec is not None and len(spec) >= 1 and spec[0] is None
            unknown = spec is None and np.ndim(value) >= 1 and np.shape(value)[0] == rows
            if not (declared or unknown):
                skipped.append(key)
                continue
            if np.shape(value)[0] != rows:
                raise RowError(f"output {key!r} of signature {self.signature.name!r} has "
                               f"{np.shape(value)[0]} rows for a batch of {rows}", 0)
            kept[key] = value
        self.skipped_outputs = skipped
        return kept

    def _run_rows(self, sources: dict[str, np.ndarray], rows: int,
                  paths: np.ndarray | None) -> tuple[dict[str, np.ndarray], list[str]]:
        """Every row on its own, to find the ones that fail (see the module docstring)."""
        results: list[dict | None] = []
        errors: list[str] = []
        for row in range(rows):
            try:
                results.append(self._run_row(sources, row))
                errors.append("")
            except ROW_ERRORS as err:
                path = None if paths is None else str(paths[row])
                if self._on_error == "raise":
                    where = f"row {row} of the batch" + (f" (from {path})" if path else "")
                    raise RowError(f"{where}: {_one_line(err)}", row, path) from None
                results.append(None)
                errors.append(_one_line(err))
        return _fill_failed(results), errors


def _check_mapping(mapping: dict, specs: Mapping, kind: str, signature: str) -> dict:
    unknown = sorted(set(mapping) - set(specs))
    if unknown:
        raise BatchColumnsError(f"signature {signature!r} has no {kind}(s) {unknown}; its {kind}s "
                                f"are {sorted(specs)}")
    return mapping


def _row_count(batch: Mapping[str, np.ndarray]) -> int:
    lengths = {len(v) for v in batch.values()}
    if len(lengths) > 1:
        raise BatchColumnsError(f"the batch's columns have different lengths: "
                                f"{ {k: len(v) for k, v in batch.items()} }")
    return lengths.pop() if lengths else 0


def _data_columns(batch: Mapping[str, np.ndarray]) -> list[str]:
    """The batch's columns other than those the pipeline adds (file paths, recorded errors)."""
    return [c for c in batch if c not in (PATH_COLUMN, ERROR_COLUMN)]


def _paths(batch: Mapping[str, np.ndarray]) -> np.ndarray | None:
    return batch.get(PATH_COLUMN)


def _plain_rows(column: np.ndarray, name: str) -> np.ndarray:
    if column.ndim != 1:
        raise BatchColumnsError(f"column {name!r} holds {column.shape[1:]} values per row; only "
                                "columns of one value per row can be stacked into an input")
    return column


def _row_shape(shape: tuple | None) -> tuple | None:
    return None if shape is None else shape[1:]


def _as_array(value) -> np.ndarray:
    """One row's value as an array: nested lists (JSON) and arrays of arrays (Arrow list
    columns) become one array of their values; a ragged one raises ValueError."""
    if isinstance(value, np.ndarray) and value.dtype == object and value.size and isinstance(
            value.flat[0], (np.ndarray, list, tuple)):
        return np.stack([_as_array(v) for v in value])
    return np.asarray(value)


def _dense(column: np.ndarray, rows: int) -> np.ndarray | None:
    """`column` with its rows as the trailing axes of one array, or None when the rows differ in
    shape or are not arrays (ragged lists: only a per-row run can take them)."""
    if column.dtype != object or rows == 0 or isinstance(column[0], (bytes, str)):
        return column
    try:
        items = [_as_array(v) for v in column]
    except ValueError:
        return None
    if len({v.shape for v in items}) != 1:
        return None
    return np.stack(items)


def _fit(values: np.ndarray, shape: tuple | None, leading: int) -> np.ndarray | None:
    """`values` (with `leading` batch axes) fitted to `shape` (None dims: any), reshaping rows
    with the same number of elements into a fully known shape; None when they do not fit."""
    if shape is None:
        return values
    rows = values.shape[leading:]
    if len(rows) == len(shape) and all(w is None or w == g for w, g in zip(shape, rows)):
        return values
    if rows and shape and all(d is not None for d in shape) and math.prod(rows) == math.prod(shape):
        return values.reshape(values.shape[:leading] + tuple(shape))
    return None


def _stack_rows(results: list[dict]) -> dict[str, np.ndarray]:
    if not results:
        return {}
    return {key: _stack([r[key] for r in results]) for key in results[0]}


def _stack(values: list) -> np.ndarray:
    arrays = [np.asarray(v) for v in values]
    if len({a.shape for a in arrays}) == 1:
        return np.stack(arrays)
    column = np.empty(len(arrays), dtype=object)
    column[:] = arrays
    return column


def _fill_failed(results: list[dict | None]) -> dict[str, np.ndarray]:
    """One column per output from single-row results; failed rows (None) get zeros shaped like
    the rows that ran (no row ran: no output columns)."""
    ran = [r for r in results if r is not None]
    if not ran:
        return {}
    columns = {}
    for key, first in ran[0].items():
        first = np.asarray(first)
        zero = np.zeros_like(first) if first.dtype != object else np.full(first.shape, b"", dtype=object)
        columns[key] = _stack([zero if r is None else r[key] for r in results])
    return columns


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())
