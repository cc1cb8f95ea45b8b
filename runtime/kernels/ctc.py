"""Connectionist temporal classification decoding: CTCGreedyDecoder.

Outputs are a SparseTensor of the decoded label sequences (indices [N, 2] as (batch, position),
values [N], dense shape [batch, longest sequence]) and each sequence's negative log probability
sum, as TensorFlow's ctc_decoder_ops.cc computes them.
"""
from __future__ import annotations

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
