"""Connectionist temporal classification decoding: CTCGreedyDecoder and CTCBeamSearchDecoder.

Outputs are a SparseTensor of the decoded label sequences (indices [N, 2] as (batch, position),
values [N], dense shape [batch, longest sequence]) and a log probability per sequence, as
TensorFlow's ctc_decoder_ops.cc and util/ctc/ctc_beam_search.h compute them.
"""
from __future__ import annotations

import math

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel


def _checked(inputs, sequence_length, op: str) -> tuple[np.ndarray, np.ndarray]:
    logits, lengths = np.asarray(inputs), np.asarray(sequence_length)
    check(logits.ndim == 3, f"{op}: inputs is not a 3-Tensor, got shape {list(logits.shape)}")
    check(lengths.ndim == 1, f"{op}: sequence_length is not a vector, got shape "
          f"{list(lengths.shape)}")
    max_time, batch, classes = logits.shape
    check(logits.size > 0, f"{op}: inputs must not be empty")
    check(lengths.size == batch, f"{op}: len(sequence_length) != batch_size.  "
          f"len(sequence_length):  {lengths.size} batch_size: {batch}")
    check(classes > 0, f"{op}: num_classes cannot be 0.")
    too_long = lengths > max_time
    if too_long.any():
        b = int(np.argmax(too_long))
        raise KernelError(f"{op}: sequence_length({b}) <= {max_time}")
    return logits, lengths


def _row_max(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's maximum and its first position, by TensorFlow's scan: the first class is
    always taken and a later one only when strictly greater, so NaN wins only in first place."""
    scan = logits.copy()
    tail = scan[..., 1:]
    tail[np.isnan(tail)] = -np.inf
    best = np.argmax(scan, axis=-1)
    return np.take_along_axis(logits, best[..., None], axis=-1)[..., 0], best


@kernel("CTCGreedyDecoder")
def ctc_greedy_decoder(inputs, sequence_length, *, merge_repeated: bool = False,
                       blank_index: int = -1, **_) -> tuple[np.ndarray, ...]:
    """Per time step, the most likely class; a path drops blanks and (with merge_repeated)
    a class equal to the previous step's most likely class."""
    op = "CTCGreedyDecoder"
    logits, lengths = _checked(inputs, sequence_length, op)
    max_time, batch, classes = logits.shape
    blank = blank_index + classes if blank_index < 0 else blank_index
    check(0 <= blank < classes, f"{op}: blank_index expected to be between {-classes} and "
          f"{classes} but was {blank_index}")
    values, best = _row_max(logits)  # (T, B)
    running = (np.arange(max_time)[:, None] < lengths[None, :])
    previous = np.concatenate([np.full((1, batch), -1), best[:-1]], axis=0)
    keep = running & (best != blank)
    if merge_repeated:
        keep &= best != previous
    batch_of, time_of = np.nonzero(keep.T)
    counts = keep.sum(axis=0)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.arange(batch_of.size) - starts[batch_of]
    indices = np.stack([batch_of, position], axis=1).astype(np.int64).reshape(-1, 2)
    decoded = best[time_of, batch_of].astype(np.int64)
    shape = np.array([batch, int(counts.max()) if batch else 0], np.int64)
    log_probability = -np.where(running, values, 0).sum(axis=0, dtype=logits.dtype)
    return indices, decoded, shape, log_probability.reshape(batch, 1).astype(logits.dtype)


# Beam search ---------------------------------------------------------------------------------

_LOG_ZERO = -np.inf


def _log_sum_exp(a: float, b: float) -> float:
    if a == _LOG_ZERO:
        return b
    if b == _LOG_ZERO:
        return a
    high, low = (a, b) if a > b else (b, a)
    return high + math.log1p(math.exp(low - high))


class _Beam:
    """A prefix in the beam search tree: its label, parent, children by label, and its
    probabilities (total, ending in blank, ending in its label) at the last step (old) and
    this one (new), all logs."""

    __slots__ = ("label", "parent", "children", "old", "new")

    def __init__(self, parent: _Beam | None, label: int):
        self.label, self.parent, self.children = label, parent, {}
        self.old = [_LOG_ZERO] * 3
        self.new = [_LOG_ZERO] * 3

    def active(self) -> bool:
        return self.new[0] != _LOG_ZERO

    def labels(self, merge_repeated: bool) -> list[int]:
        out, previous, entry = [], -1, self
        while entry.parent is not None:
            if not merge_repeated or entry.label != previous:
                out.append(entry.label)
            previous, entry = entry.label, entry.parent
        return out[::-1]


class _Leaves:
    """The beam: at most `width` prefixes, a new one entering a full beam only when it is more
    probable than the least probable, which leaves (TensorFlow's TopN)."""

    def __init__(self, width: int):
        self.width, self.items = width, []
        self._bottom: _Beam | None = None
        """The least probable prefix, found once after each change of the beam: it is asked
        for once per candidate child, far more often than the beam changes."""

    def bottom(self) -> _Beam:
        if self._bottom is None:
            self._bottom = min(self.items, key=lambda b: b.new[0])
        return self._bottom

    def push(self, beam: _Beam) -> None:
        if len(self.items) < self.width:
            self.items.append(beam)
        else:
            bottom = self.bottom()
            if beam.new[0] <= bottom.new[0]:
                return
            self.items.remove(bottom)
            self.items.append(beam)
        self._bottom = None

    def extract(self) -> list[_Beam]:
        """Most probable first (ties in the order they entered)."""
        found = sorted(self.items, key=lambda b: -b.new[0])
        self.items, self._bottom = [], None
        return found


def _step(leaves: _Leaves, logits: np.ndarray, blank: int) -> None:
    """One time step of TensorFlow's CTCBeamSearchDecoder::Step, on the log-softmax of the
    step's logits."""
    shifted = logits - logits.max()
    scores = (shifted - np.log(np.exp(shifted).sum())).tolist()
    branches = leaves.extract()
    for b in branches:
        b.old = list(b.new)
    for b in branches:
        if b.parent is not None:
            if b.parent.active():
                previous = b.parent.old[1] if b.label == b.parent.label else b.parent.old[0]
                b.new[2] = _log_sum_exp(b.new[2], previous)
            b.new[2] += scores[b.label]
        b.new[1] = b.old[0] + scores[blank]
        b.new[0] = _log_sum_exp(b.new[1], b.new[2])
        leaves.push(b)
    for b in branches:
        if not _candidate(leaves, b.old[0]):
            continue
        for label in range(blank):
            child = b.children.get(label)
            if child is None:
                child = b.children[label] = _Beam(b, label)
            if child.active():
                continue
            previous = b.old[1] if label == b.label else b.old[0]
            total = scores[label] + previous
            child.new = [total, _LOG_ZERO, total]
            if _candidate(leaves, total):
                if len(leaves.items) == leaves.width:
                    leaves.bottom().new = [_LOG_ZERO] * 3  # leaves the beam by the push below
                leaves.push(child)
            else:
                child.old = [_LOG_ZERO] * 3
                child.new = [_LOG_ZERO] * 3


def _candidate(leaves: _Leaves, total: float) -> bool:
    return total > _LOG_ZERO and (len(leaves.items) < leaves.width
                                  or total > leaves.bottom().new[0])


@kernel("CTCBeamSearchDecoder")
def ctc_beam_search_decoder(inputs, sequence_length, *, beam_width: int, top_paths: int,
                            merge_repeated: bool = True, **_) -> tuple[np.ndarray, ...]:
    """The top_paths most probable label sequences of each batch entry by prefix beam search
    (blank is the last class), as TensorFlow's decoder finds them, and their log
    probabilities. The search is sequential by nature: a Python loop over time steps, beam
    entries and classes, fine for the sizes decoders run at but not fast."""
    op = "CTCBeamSearchDecoder"
    logits, lengths = _checked(inputs, sequence_length, op)
    _, batch, classes = logits.shape
    check(beam_width > 0, f"{op}: beam_width must be > 0, got {beam_width}")
    check(top_paths > 0, f"{op}: top_paths must be > 0, got {top_paths}")
    check(top_paths <= beam_width, f"{op}: requested more paths than the beam width.")
    paths = [[None] * top_paths for _ in range(batch)]
    scores = np.zeros((batch, top_paths), logits.dtype)
    for b in range(batch):
        leaves = _Leaves(beam_width)
        root = _Beam(None, -1)
        root.new = [0.0, 0.0, _LOG_ZERO]
        leaves.push(root)
        for t in range(int(lengths[b])):
            _step(leaves, logits[t, b].astype(np.float64), classes - 1)
        check(top_paths <= len(leaves.items), f"{op}: Less leaves in the beam search than "
                                              "requested.")
        for i, beam in enumerate(leaves.extract()[:top_paths]):
            paths[b][i] = beam.labels(merge_repeated)
            scores[b, i] = beam.new[0]
    outputs = [_sparse([paths[b][i] for b in range(batch)]) for i in range(top_paths)]
    return (*(o[0] for o in outputs), *(o[1] for o in outputs), *(o[2] for o in outputs),
            scores)


def _sparse(sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A batch of label sequences as SparseTensor parts (indices, values, dense shape)."""
    rows = [np.stack([np.full(len(s), b), np.arange(len(s))], axis=1) for b, s in
            enumerate(sequences)]
    indices = np.concatenate(rows).astype(np.int64) if rows else np.zeros((0, 2), np.int64)
    values = np.array([v for s in sequences for v in s], np.int64)
    longest = max((len(s) for s in sequences), default=0)
    return indices.reshape(-1, 2), values, np.array([len(sequences), longest], np.int64)
