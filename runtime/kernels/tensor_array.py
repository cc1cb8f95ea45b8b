"""TensorFlow 1 TensorArrays (the TensorArrayV3 ops of `tf.TensorArray` in graph mode with
control flow v1, and of `dynamic_rnn`).

Unlike a TensorList, a TensorArray is a mutable resource: TensorArrayV3 makes one and returns its
handle and a `flow` scalar; the other ops change or read it through the handle and thread the
flow from one to the next, which is what orders them in the graph. The rules are TensorFlow's
(core/kernels/tensor_array.h): each index is written once (a gradient array adds later writes),
a fixed-size array rejects indices past its size, a read of an index never written gives zeros
when the element shape is fully known, and with `clear_after_read` an index cannot be read
twice. Shapes are tuples with None for an unknown dimension, or None for an unknown rank.
"""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check, scalar_int
from savedmodel.runtime.registry import kernel

_FLOW = np.zeros((), np.float32)


class TensorArray:
    """One TensorArray: its items (None where never written) and the rules it was made with."""

    def __init__(self, size: int, dtype, element_shape, dynamic_size: bool, clear_after_read: bool,
                 identical_element_shapes: bool, name: str, is_grad: bool = False):
        self.items: list[np.ndarray | None] = [None] * size
        self.read: list[bool] = [False] * size
        self.cleared: list[bool] = [False] * size
        self.dtype = dtype
        self.element_shape = element_shape
        self.dynamic_size = dynamic_size
        self.clear_after_read = clear_after_read
        self.identical_element_shapes = identical_element_shapes
        self.name = name or "TensorArray"
        self.is_grad = is_grad
        self.gradients: dict[str, TensorArray] = {}
        self.closed = False

    def write(self, index: int, value: np.ndarray) -> None:
        where = f"TensorArray {self.name}: Could not write to TensorArray index {index}"
        if index < 0 or (not self.dynamic_size and index >= len(self.items)):
            raise KernelError(f"TensorArray {self.name}: Tried to write to index {index} but array "
                              f"is not resizeable and size is: {len(self.items)}")
        if index >= len(self.items):
            grow = index + 1 - len(self.items)
            self.items += [None] * grow
            self.read += [False] * grow
            self.cleared += [False] * grow
        value = np.asarray(value)
        check(value.dtype == self.dtype.numpy, f"{where} because the value dtype is "
                                               f"{_type_name(value.dtype)} but TensorArray dtype is "
                                               f"{_type_name(self.dtype.numpy)}.")
        if not _compatible(self.element_shape, value.shape):
            raise KernelError(f"{where} because the value shape is {_shape_text(value.shape)} which "
                              f"is incompatible with the TensorArray's inferred element shape: "
                              f"{_shape_text(self.element_shape)} (consider setting infer_shape=False).")
        if self.identical_element_shapes and not _fully_defined(self.element_shape):
            self.element_shape = value.shape
        check(not self.read[index], f"{where} because it has already been read.")
        existing = self.items[index]
        if existing is not None:
            check(self.is_grad, f"{where} because it has already been written to.")
            check(existing.shape == value.shape,
                  f"TensorArray {self.name}: Could not aggregate to TensorArray index {index} because "
                  f"the existing shape is {_shape_text(existing.shape)} but the new input shape is "
                  f"{_shape_text(value.shape)}.")
            value = existing + value
        self.items[index] = value

    def get(self, index: int) -> np.ndarray:
        if index < 0 or (not self.is_grad and index >= len(self.items)):
            raise KernelError(f"Tried to read from index {index} but array size is: {len(self.items)}")
        if index >= len(self.items) or (self.items[index] is None and not self.cleared[index]):
            return self._zeros(index)
        if self.cleared[index]:
            raise KernelError(f"TensorArray {self.name}: Could not read index {index} twice because it "
                              "was cleared after a previous read (perhaps try setting "
                              "clear_after_read = false?).")
        value = self.items[index]
        if self.clear_after_read:
            self.items[index] = None
            self.cleared[index] = True
        self.read[index] = True
        return value

    def _zeros(self, index: int) -> np.ndarray:
        """What reading an index never written gives: zeros, if the element shape is known."""
        if not _fully_defined(self.element_shape):
            raise KernelError(f"TensorArray {self.name}: Could not read from TensorArray index {index}."
                              f"  Furthermore, the element shape is not fully defined: "
                              f"{_shape_text(self.element_shape)}.  It is possible you are working "
                              "with a resizeable TensorArray and stop_gradients is not allowing the "
                              "gradients to be written.  If you set the full element_shape property "
                              "on the forward TensorArray, the proper all-zeros tensor will be "
                              "returned instead of incurring this error.")
        return np.zeros(self.element_shape, self.dtype.numpy)


def _the_array(handle, op: str) -> TensorArray:
    if not isinstance(handle, TensorArray):
        raise KernelError(f"{op}: the handle must be a TensorArray, got {type(handle).__name__}")
    if handle.closed:
        raise KernelError(f"{op}: TensorArray {handle.name} has already been closed.")
    return handle


def _check_dtype(array: TensorArray, dtype, op: str) -> None:
    check(dtype is None or dtype.numpy == array.dtype.numpy,
          f"{op}: TensorArray dtype is {_type_name(array.dtype.numpy)} but Op requested dtype "
          f"{_type_name(dtype.numpy)}.")


@kernel("TensorArrayV3", stateful=True)
def tensor_array(size, *, dtype, element_shape=None, dynamic_size=False, clear_after_read=True,
                 identical_element_shapes=False, tensor_array_name="", **_):
    count = scalar_int(size, "TensorArrayV3: size")
    check(count >= 0, f"TensorArrayV3: Size should be >= 0, got {count}")
    array = TensorArray(count, dtype, element_shape, dynamic_size, clear_after_read,
                        identical_element_shapes, tensor_array_name)
    return array, _FLOW


@kernel("TensorArrayWriteV3")
def write(handle, index, value, flow_in, **_):
    _the_array(handle, "TensorArrayWriteV3").write(scalar_int(index, "TensorArrayWriteV3: index"), value)
    return (_FLOW,)


@kernel("TensorArrayReadV3")
def read(handle, index, flow_in, *, dtype=None, **_):
    array = _the_array(handle, "TensorArrayReadV3")
    _check_dtype(array, dtype, "TensorArrayReadV3")
    return (array.get(scalar_int(index, "TensorArrayReadV3: index")),)


@kernel("TensorArraySizeV3")
def size(handle, flow_in, **_):
    return (np.array(len(_the_array(handle, "TensorArraySizeV3").items), np.int32),)


@kernel("TensorArrayCloseV3", stateful=True)
def close(handle, **_):
    _the_array(handle, "TensorArrayCloseV3").closed = True
    return ()


@kernel("TensorArrayGatherV3")
def gather(handle, indices, flow_in, *, dtype=None, element_shape=None, **_):
    array = _the_array(handle, "TensorArrayGatherV3")
    _check_dtype(array, dtype, "TensorArrayGatherV3")
    wanted = np.asarray(indices)
    check(wanted.ndim == 1, f"TensorArrayGatherV3: Expected indices to be a vector, but received "
                            f"shape: {_shape_text(wanted.shape)}")
    if wanted.size == 0:
        shape = _merge(element_shape, array.element_shape)
        check(_fully_defined(shape), f"TensorArrayGatherV3: TensorArray has size zero, but element "
                                     f"shape {_shape_text(shape)} is not fully defined. Currently only "
                                     "static shapes are supported when packing zero-size TensorArrays.")
        return (np.zeros((0, *shape), array.dtype.numpy),)
    values = [array.get(int(i)) for i in wanted.tolist()]
    return (_stacked(values, "TensorArrayGatherV3"),)


@kernel("TensorArrayScatterV3")
def scatter(handle, indices, value, flow_in, **_):
    array = _the_array(handle, "TensorArrayScatterV3")
    where = np.asarray(indices)
    value = np.asarray(value)
    check(where.ndim == 1, f"TensorArrayScatterV3: Expected indices to be a vector, but received "
                           f"shape: {_shape_text(where.shape)}")
    check(value.ndim >= 1 and value.shape[0] == where.size,
          f"TensorArrayScatterV3: Expected len(indices) == values.shape[0], but saw: {where.size} vs. "
          f"{value.shape[0] if value.ndim else 0}")
    for position, index in enumerate(where.tolist()):
        array.write(int(index), value[position])
    return (_FLOW,)


@kernel("TensorArrayConcatV3")
def concat(handle, flow_in, *, dtype=None, element_shape_except0=None, **_):
    array = _the_array(handle, "TensorArrayConcatV3")
    _check_dtype(array, dtype, "TensorArrayConcatV3")
    if not array.items:
        check(_fully_defined(element_shape_except0),
              f"TensorArrayConcatV3: TensorArray has size zero, but element_shape_except0 "
              f"{_shape_text(element_shape_except0)} is not fully defined. Currently only static "
              "shapes are supported when concatenating zero-size TensorArrays.")
        return np.zeros((0, *element_shape_except0), array.dtype.numpy), np.zeros(0, np.int64)
    values = [array.get(i) for i in range(len(array.items))]
    for index, value in enumerate(values):
        check(value.ndim >= 1, f"TensorArrayConcatV3: Concat saw a scalar shape at index {index} but "
                               "requires at least vectors.")
        check(value.shape[1:] == values[0].shape[1:],
              f"TensorArrayConcatV3: Concat saw inconsistent shapes at index {index}: index 0 has "
              f"shape {_shape_text(values[0].shape)} but index {index} has shape "
              f"{_shape_text(value.shape)}")
    lengths = np.array([v.shape[0] for v in values], np.int64)
    return np.concatenate(values, axis=0), lengths


@kernel("TensorArraySplitV3")
def split(handle, value, lengths, flow_in, **_):
    array = _the_array(handle, "TensorArraySplitV3")
    value = np.asarray(value)
    sizes = np.asarray(lengths)
    check(sizes.ndim == 1, f"TensorArraySplitV3: Expected lengths to be a vector, received shape: "
                           f"{_shape_text(sizes.shape)}")
    check(value.ndim >= 1, f"TensorArraySplitV3: Expected value to be at least a vector, but "
                           f"received shape: {_shape_text(value.shape)}")
    check(int(sizes.sum()) == value.shape[0] and bool((sizes >= 0).all()),
          f"TensorArraySplitV3: Expected sum of lengths to be equal to values.shape[0], but sum of "
          f"lengths is: {int(sizes.sum())} and value's shape is: {_shape_text(value.shape)}")
    check(array.dynamic_size or sizes.size == len(array.items),
          f"TensorArraySplitV3: TensorArray's size is not equal to the size of lengths "
          f"({len(array.items)} vs. {sizes.size}), and the TensorArray is not marked as "
          "dynamically resizeable")
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    for index in range(sizes.size):
        array.write(index, value[starts[index]:starts[index + 1]])
    return (_FLOW,)


@kernel("TensorArrayGradV3", stateful=True)
def gradient(handle, flow_in, *, source, **_):
    """The gradient array of `handle` for `source`, made on first use: same size, dtype and
    element shape, and later writes to an index add to it."""
    array = _the_array(handle, "TensorArrayGradV3")
    found = array.gradients.get(source)
    if found is None:
        found = array.gradients[source] = TensorArray(
            len(array.items), array.dtype, array.element_shape, False, True, False,
            f"{array.name}@{source}", is_grad=True)
    return found, _FLOW


def _stacked(values: list[np.ndarray], op: str) -> np.ndarray:
    for index, value in enumerate(values):
        check(value.shape == values[0].shape, f"{op}: TensorArray has inconsistent shapes.  Index 0 "
                                              f"has shape: {_shape_text(values[0].shape)} but index "
                                              f"{index} has shape: {_shape_text(value.shape)}")
    return np.stack(values)


def _type_name(dtype: np.dtype) -> str:
    names = {"float32": "float", "float64": "double", "bool": "bool", "object": "string"}
    return names.get(np.dtype(dtype).name, np.dtype(dtype).name)


def _shape_text(shape) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _fully_defined(shape) -> bool:
    return shape is not None and None not in shape


def _compatible(partial, shape: tuple[int, ...]) -> bool:
    return partial is None or (len(partial) == len(shape)
                                and all(p is None or p == d for p, d in zip(partial, shape)))


def _merge(a, b):
    """The more specific of two compatible partial shapes."""
    if a is None:
        return b
    if b is None or len(a) != len(b):
        return a
    return tuple(x if x is not None else y for x, y in zip(a, b))
