"""Turning the values a caller passes (numpy arrays, numpy scalars, Python scalars and lists)
into the tensors a signature or function expects, the way TensorFlow converts them: numpy values
are cast to the expected dtype; Python floats never become integers; text never becomes a number.
"""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.dtypes import DType
from savedmodel.runtime.errors import SavedModelError, TensorProtoError


class FeedError(SavedModelError, TypeError):
    """A value that does not fit the input it is passed for."""


def to_input(value, dtype: DType, shape, where: str) -> np.ndarray:
    """`value` as an array of `dtype`, checked against `shape` (None: any; None dims: any)."""
    array = _as_string_array(value, where) if dtype.is_string else _as_numeric(value, dtype, where)
    if shape is not None and not (len(shape) == array.ndim and all(
            want is None or want == got for want, got in zip(shape, array.shape))):
        raise FeedError(f"{where} expects shape {_shape_text(shape)} of {dtype.name}, "
                        f"got shape {_shape_text(array.shape)}")
    return array


def _as_numeric(value, dtype: DType, where: str) -> np.ndarray:
    if dtype.numpy is None:
        raise FeedError(f"{where} has data type {dtype.name}, which has no value a caller can pass")
    from_numpy = isinstance(value, (np.ndarray, np.generic))
    array = np.asarray(value)
    kind, target = array.dtype.kind, dtype.numpy.kind
    if kind in "OSUV":
        raise FeedError(f"{where} expects {dtype.name}, got a non-numeric value of {array.dtype}")
    lossy = kind == "c" and target != "c" or not from_numpy and kind == "f" and target in "iub"
    if lossy and array.size:
        raise FeedError(f"{where} expects {dtype.name}; cannot convert {_preview(array)} "
                        f"({array.dtype}) without losing its value")
    return array if array.dtype == dtype.numpy else array.astype(dtype.numpy)


def _as_string_array(value, where: str) -> np.ndarray:
    # Imported here: tensor_proto loads protobuf, which numeric feeds on the native engine skip.
    from savedmodel.runtime.tensor_proto import string_array
    try:
        return string_array(value)
    except TensorProtoError as err:
        raise FeedError(f"{where} expects strings: {err}") from None


def _preview(array: np.ndarray) -> str:
    text = np.array2string(array, threshold=6)
    return text if len(text) < 60 else text[:57] + "..."


def _shape_text(shape) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
