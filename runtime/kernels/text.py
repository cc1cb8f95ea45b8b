"""String ops that change a tensor's structure: splitting strings into tokens (StringSplit,
StringSplitV2), n-grams of token sequences (StringNGrams), and joining strings across elements
(ReduceJoin, UnsortedSegmentJoin).

Token sequences are ragged: a flat vector of tokens with row splits (`splits[i]:splits[i+1]`
are row i's tokens), or a sparse matrix (indices, values, dense shape) for the split ops.
Joins run over numpy object arrays one position at a time, so the Python loop is over the
positions joined, not over the output elements.
"""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.string_util import attr_bytes, byte_items, objects, scalar_bytes
from savedmodel.runtime.kernels.util import check, scalar_int
from savedmodel.runtime.registry import kernel

# ---------------------------------------------------------------------------------------------
# Splitting into tokens: StringSplit, StringSplitV2

_WHITESPACE = b" \t\n\v\f\r"


def _split_at_whitespace(text: bytes, maxsplit: int) -> list[bytes]:
    """TensorFlow's whitespace split: tokens between runs of whitespace, none empty, except
    that after `maxsplit` tokens the rest (past the whitespace that follows the last one)
    is one more token even when it is empty, and a `maxsplit` of 0 keeps the text whole.
    (Python's `bytes.split(None, maxsplit)` differs on both.)"""
    if maxsplit == 0:
        return [text]
    tokens = []
    rest = text.lstrip(_WHITESPACE)
    while rest:
        token = rest.split(None, 1)[0]
        tokens.append(token)
        rest = rest[len(token):].lstrip(_WHITESPACE)
        if len(tokens) == maxsplit:
            tokens.append(rest)
            break
    return tokens


@kernel("StringSplitV2")
def string_split_v2(input: np.ndarray, sep: np.ndarray, *, maxsplit: int = -1, **_) -> tuple:
    """Split each string of a vector; the result is a sparse matrix (indices, values, shape).
    A separator splits as Python's `bytes.split(sep, maxsplit)` does; an empty one splits at
    runs of whitespace (see `_split_at_whitespace`)."""
    _check_vector(input, "StringSplitV2")
    separator = scalar_bytes(sep, "StringSplitV2", "sep")
    return _sparse_tokens([s.split(separator, maxsplit) if separator
                           else _split_at_whitespace(s, maxsplit) for s in byte_items(input)])


def _check_vector(input: np.ndarray, op: str) -> None:
    check(np.ndim(input) == 1, f"{op}: input must be a vector, got shape: {list(np.shape(input))}")


def _sparse_tokens(tokens: list[list[bytes]]) -> tuple:
    """Rows of tokens as a sparse matrix: (indices, values, dense shape)."""
    lengths = np.array([len(row) for row in tokens], dtype=np.int64)
    rows = np.repeat(np.arange(len(tokens), dtype=np.int64), lengths)
    columns = _positions_within(lengths)
    return (np.stack([rows, columns], axis=1),
            objects([t for row in tokens for t in row], (rows.size,)),
            np.array([len(tokens), lengths.max(initial=0)], dtype=np.int64))


def _split_any(text: bytes, delimiters: bytes, skip_empty: bool) -> list[bytes]:
    """Split at every byte that is one of `delimiters` (absl::ByAnyChar); an empty delimiter
    splits into single bytes. An empty string has no tokens, empty ones kept or not."""
    if not text:
        return []
    if not delimiters:
        return [text[i:i + 1] for i in range(len(text))]
    table = bytes.maketrans(delimiters, delimiters[:1] * len(delimiters))
    pieces = text.translate(table).split(delimiters[:1])
    return [p for p in pieces if p] if skip_empty else pieces


@kernel("StringSplit")
def string_split(input: np.ndarray, delimiter: np.ndarray, *, skip_empty: bool = True,
                 **_) -> tuple:
    """The first version: each byte of `delimiter` is a delimiter of its own."""
    _check_vector(input, "StringSplit")
    delimiters = scalar_bytes(delimiter, "StringSplit", "delimiter")
    return _sparse_tokens([_split_any(s, delimiters, skip_empty) for s in byte_items(input)])


# ---------------------------------------------------------------------------------------------
# N-grams of token sequences: StringNGrams


def _check_splits(splits: np.ndarray, size: int, op: str) -> None:
    """Row splits must start at 0, never decrease, and end at the number of values."""
    if splits.size == 0:
        return
    check(splits[0] == 0, f"{op}: First split value must be 0, got {splits[0]}")
    steps = np.diff(splits)
    bad = np.flatnonzero((steps < 0) | (splits[1:] > size))
    if bad.size:
        i = bad[0] + 1
        raise KernelError(f"{op}: Invalid split value {splits[i]}, must be in "
                          f"[{splits[i - 1]}, {size}]")
    check(splits[-1] == size,
          f"{op}: Last split value must be data size. Expected {size}, got {splits[-1]}")


def _windows(data: np.ndarray, lengths: np.ndarray, width: int, pad: int, left: bytes,
             right: bytes, separator: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Every window of `width` tokens over each row padded with `pad` pads at each end,
    joined by the separator: (n-grams in row order, n-grams per row)."""
    padded_lengths = lengths + 2 * pad
    counts = np.maximum(padded_lengths - width + 1, 0)
    padded = np.full(int(padded_lengths.sum()), left, dtype=object)
    row_starts = np.cumsum(padded_lengths) - padded_lengths
    padded[np.repeat(row_starts + pad, lengths) + _positions_within(lengths)] = data
    right_at = np.repeat(row_starts + pad + lengths, pad) + np.tile(np.arange(pad), lengths.size)
    padded[right_at] = right
    starts = np.repeat(row_starts, counts) + _positions_within(counts)
    grams = padded[starts]
    if not grams.size:
        return grams, counts
    for k in range(1, width):
        grams = grams + separator + padded[starts + k]
    return grams, counts


@kernel("StringNGrams")
def string_ngrams(data: np.ndarray, data_splits: np.ndarray, *, separator: str,
                  ngram_widths: list, left_pad: str, right_pad: str, pad_width: int,
                  preserve_short_sequences: bool, **_) -> tuple[np.ndarray, np.ndarray]:
    """For each width, the windows over each row padded with min(pad_width, width - 1) pads
    at each end (width - 1 when pad_width is negative). A non-empty row with no n-gram of any
    width gives one n-gram of the whole padded row when preserve_short_sequences is set."""
    check(all(w > 0 for w in ngram_widths),
          "StringNGrams: ngram_widths must contain positive values")
    tokens = np.asarray(data, dtype=object).ravel()
    splits = np.asarray(data_splits)
    _check_splits(splits, tokens.size, "StringNGrams")
    if tokens.size == 0 or splits.size == 0:
        return objects([], np.shape(data)), np.zeros_like(splits)
    lengths = np.diff(splits).astype(np.int64)
    sep, left, right = attr_bytes(separator), attr_bytes(left_pad), attr_bytes(right_pad)
    per_width = [_windows(tokens, lengths, w, min(w - 1 if pad_width < 0 else pad_width, w - 1),
                          left, right, sep) for w in ngram_widths]
    counts = sum((c for _, c in per_width), np.zeros_like(lengths))
    short = (counts == 0) & (lengths > 0) & preserve_short_sequences
    out_splits = np.concatenate([[0], np.cumsum(counts + short)])
    out = np.empty(int(out_splits[-1]), dtype=object)
    block_start = out_splits[:-1].copy()
    for grams, width_counts in per_width:
        out[block_start.repeat(width_counts) + _positions_within(width_counts)] = grams
        block_start += width_counts
    if short.any():
        check(pad_width >= 0, f"StringNGrams: Pad width should be >= 0 when "
                              f"preserve_short_sequences is True and ngram_widths are not "
                              f"provided, got {pad_width}")
        lefts, rights = [left] * pad_width, [right] * pad_width
        out[out_splits[:-1][short]] = [
            sep.join(lefts + tokens[start:stop].tolist() + rights)
            for start, stop in zip(splits[:-1][short], splits[1:][short])]
    return out, out_splits.astype(splits.dtype)


def _positions_within(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., count - 1 for each count in turn."""
    return np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


# ---------------------------------------------------------------------------------------------
# Joining across elements: ReduceJoin, UnsortedSegmentJoin


def _join_rows(rows: np.ndarray, separator: bytes) -> list[bytes]:
    """Each row of a 2-D object array joined into one string."""
    return [separator.join(row) for row in rows.tolist()]


@kernel("ReduceJoin")
def reduce_join(inputs: np.ndarray, reduction_indices: np.ndarray, *, keep_dims: bool = False,
                separator: str = "", **_) -> tuple[np.ndarray]:
    """Join along the listed axes, the first listed varying fastest (TensorFlow joins
    `[[a, b], [c, d]]` over axes [0, 1] as a, c, b, d); no axes leaves the tensor as it is."""
    strings = np.asarray(inputs, dtype=object)
    axes = [int(a) for a in np.asarray(reduction_indices).ravel()]
    reduced: list[int] = []
    for axis in axes:
        if not -strings.ndim <= axis < strings.ndim:
            raise KernelError(f"ReduceJoin: Invalid reduction dimension {axis} for input with "
                              f"{strings.ndim} dimension(s)")
        check(axis % strings.ndim not in reduced,
              f"ReduceJoin: Duplicate reduction dimension {axis}")
        reduced.append(axis % strings.ndim)
    kept = [a for a in range(strings.ndim) if a not in reduced]
    sizes = [int(np.prod([strings.shape[a] for a in group])) for group in (kept, reduced)]
    rows = strings.transpose(kept + reduced[::-1]).reshape(sizes)
    shape = [1 if a in reduced else n for a, n in enumerate(strings.shape)
             if keep_dims or a in kept]
    return (objects(_join_rows(rows, attr_bytes(separator)), shape),)


@kernel("UnsortedSegmentJoin")
def unsorted_segment_join(inputs: np.ndarray, segment_ids: np.ndarray,
                          num_segments: np.ndarray, *, separator: str = "",
                          **_) -> tuple[np.ndarray]:
    """The slices of `inputs` whose segment id is k joined into output k, in order. As in
    TensorFlow, the separator goes in only once a segment's string is non-empty (joining "" and
    "a" gives "a"), and stops at a NUL byte (it is passed on as a C string)."""
    strings = np.asarray(inputs, dtype=object)
    ids = np.asarray(segment_ids)
    check(np.ndim(num_segments) == 0, "UnsortedSegmentJoin: Number of segments must be a scalar")
    count = scalar_int(num_segments, "UnsortedSegmentJoin: num_segments")
    check(ids.ndim != 0, "UnsortedSegmentJoin: Segment_id cannot have rank 0")
    if ids.ndim > strings.ndim:
        raise KernelError(f"UnsortedSegmentJoin: Invalid segment_id rank {ids.ndim} for input with "
                          f"{strings.ndim} dimension(s)")
    check(ids.shape == strings.shape[:ids.ndim],
          f"UnsortedSegmentJoin: segment_ids shape {list(ids.shape)} is not a prefix of the input "
          f"shape {list(strings.shape)}")
    check(count >= 0,
          f"UnsortedSegmentJoin: Number of segments must be non-negative but got {count}")
    check(bool(((ids >= 0) & (ids < count)).all()),
          "UnsortedSegmentJoin: segment_ids are not allowed to exceed num_segments or to have "
          "negative values.")
    separator = attr_bytes(separator).split(b"\0")[0]
    width = int(np.prod(strings.shape[ids.ndim:]))
    slices = strings.reshape(ids.size, width)
    out = np.full((count, width), b"", dtype=object)
    for row, segment in zip(slices, ids.ravel().tolist()):
        joined = out[segment]
        out[segment] = np.where(joined.astype(bool), joined + separator, joined) + row
    return (out.reshape((count,) + strings.shape[ids.ndim:]),)
