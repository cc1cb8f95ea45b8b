"""TensorList ops: the list values that Keras recurrent layers, TensorArrays and tf.function
loops carry through their While loops (DT_VARIANT tensors in TensorFlow).

A list is a `TensorList`: the declared element dtype and (partial) element shape, an optional
capacity, and its items, each a numpy array or None for an item never set. TensorFlow gives lists
value semantics (an op that "modifies" a list outputs a new list and its input is unchanged), so
a TensorList is immutable: its items are a tuple, and kernels build new lists. Items themselves
are shared between lists, as TensorFlow shares their buffers; like every tensor in the runtime
they are never written in place.

Reading an item that was never set yields zeros of the element shape. That shape is the list's
declared element shape merged with the element_shape input of the reading op, and (for GetItem,
Stack, Gather and ConcatV2, as in TensorFlow) with the shapes of the items that are set; it must
come out fully defined. Shapes here are tuples with None for an unknown dimension, or None for an
unknown rank.

A list that tf.map_fn makes over a ragged tensor holds variant items: encoded ragged tensors
(`RaggedVariant`, see kernels.ragged), which FromTensor splits and Stack stacks as such.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.ragged import RaggedVariant
from savedmodel.runtime.kernels.util import check, scalar_int
from savedmodel.runtime.registry import fast_path, kernel

Shape = tuple[int | None, ...] | None
"""A partial shape: None for an unknown rank, None entries for unknown dimensions."""


@dataclass(frozen=True, eq=False, slots=True)
class TensorList:
    """One TensorList value (compared by identity: its items are arrays)."""

    element_dtype: dtypes.DType
    element_shape: Shape
    items: tuple[np.ndarray | None, ...] = ()
    max_num_elements: int = -1

    def with_items(self, items) -> TensorList:
        """The same list with other items (dtype, shape and capacity kept)."""
        return TensorList(self.element_dtype, self.element_shape, tuple(items),
                          self.max_num_elements)

    def __len__(self) -> int:
        return len(self.items)


# ---------------------------------------------------------------------------------------------
# Partial shapes (TensorFlow's PartialTensorShape)


def _shape_text(shape: Shape) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _shape_from_tensor(value: np.ndarray, op: str) -> Shape:
    """An element_shape input: -1 (a scalar) for an unknown rank, else dims with -1 unknown."""
    array = value if type(value) is np.ndarray else np.asarray(value)
    if array.dtype.kind not in "iu" or array.ndim > 1:
        raise KernelError(f"{op}: element_shape must be an int32 or int64 scalar or vector, got "
                          f"shape {list(array.shape)} of {array.dtype}")
    if array.ndim == 0:
        check(int(array) == -1, f"{op}: The only valid scalar shape tensor is the fully unknown "
                                f"shape specified as -1.")
        return None
    return _partial_shape(tuple(array.tolist()), op)


@functools.lru_cache(maxsize=256)
def _partial_shape(dims: tuple[int, ...], op: str) -> Shape:
    check(all(d >= -1 for d in dims), f"{op}: element_shape dimensions must be >= -1, got "
                                      f"{list(dims)}")
    return tuple(None if d == -1 else d for d in dims)


def _merge(a: Shape, b: Shape, op: str) -> Shape:
    """The most specific shape compatible with both; an error if they conflict."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    return _merged(a, b, op)


@functools.lru_cache(maxsize=256)
def _merged(a: Shape, b: Shape, op: str) -> Shape:
    check(len(a) == len(b), f"{op}: PartialTensorShape: Incompatible ranks during merge: "
                            f"{len(a)} vs. {len(b)}")
    for x, y in zip(a, b):
        check(x is None or y is None or x == y, f"{op}: PartialTensorShape: Incompatible shapes "
                                                f"during merge: {_shape_text(a)} vs. "
                                                f"{_shape_text(b)}")
    return tuple(y if x is None else x for x, y in zip(a, b))


def _compatible(partial: Shape, shape: tuple[int, ...]) -> bool:
    return partial is None or partial == shape or _compatible_dims(partial, shape)


@functools.lru_cache(maxsize=256)
def _compatible_dims(partial: tuple[int | None, ...], shape: tuple[int, ...]) -> bool:
    """Cached: a loop sets items of one shape into a list of one partial shape many times."""
    return len(partial) == len(shape) and all(p is None or p == d for p, d in zip(partial, shape))


def _fully_defined(shape: Shape) -> bool:
    return shape is not None and None not in shape


def _read_shape(tensor_list: TensorList, element_shape: np.ndarray, op: str) -> Shape:
    """The op's element_shape input merged with the list's declared element shape."""
    return _merge(_shape_from_tensor(element_shape, op), tensor_list.element_shape, op)


def _merge_items(shape: Shape, items, op: str) -> Shape:
    """Refine `shape` with the shapes of the set items among `items`."""
    for item in items:
        if item is not None:
            shape = _merge(shape, item.shape, op)
    return shape


# ---------------------------------------------------------------------------------------------
# Checks shared by the kernels


def _tf_type_name(dtype: dtypes.DType) -> str:
    """TensorFlow's DataTypeString (`float`, `int32`, ...), as its error messages spell types."""
    return dtype.enum_name.removeprefix("DT_").lower()


def _the_list(value, op: str) -> TensorList:
    if type(value) is not TensorList and not isinstance(value, TensorList):
        raise KernelError(f"{op}: input_handle must be a TensorList, got {type(value).__name__}")
    return value


def _check_dtype(tensor_list: TensorList, element_dtype, op: str) -> None:
    if element_dtype is None or element_dtype is tensor_list.element_dtype:
        return
    wanted = dtypes.as_dtype(element_dtype)
    if wanted.enum != tensor_list.element_dtype.enum:
        raise KernelError(f"{op}: Invalid data types; op elements {_tf_type_name(wanted)} but "
                          f"list elements {_tf_type_name(tensor_list.element_dtype)}")


def _check_item(tensor_list: TensorList, item: np.ndarray, op: str, complaint: str) -> None:
    declared = tensor_list.element_dtype
    variant = isinstance(item, RaggedVariant)
    if variant or declared.numpy is None or item.dtype != declared.numpy:
        dtype = dtypes.from_name("variant") if variant else dtypes.from_numpy(item.dtype)
        if dtype.enum != declared.enum:
            raise KernelError(f"{op}: Invalid data types; op elements {_tf_type_name(dtype)} but "
                              f"list elements {_tf_type_name(declared)}")
    if not _compatible(tensor_list.element_shape, item.shape):
        raise KernelError(f"{op}: {complaint} {_shape_text(item.shape)} list shape: "
                          f"{_shape_text(tensor_list.element_shape)}")


def _zeros(shape: tuple[int, ...], dtype: dtypes.DType) -> np.ndarray:
    """What an unset item reads as: zeros, or empty strings for a string list."""
    check(dtype.numpy is not None, f"cannot make a default value of dtype {dtype.name}")
    if dtype.is_string:
        return np.full(shape, b"", dtype=object)
    return np.zeros(shape, dtype.numpy)


def _stacked(items, shape: tuple[int, ...], dtype: dtypes.DType) -> np.ndarray:
    """Items stacked along a new first axis; unset items read as zeros of `shape`."""
    if items and all(item is not None for item in items):
        first = items[0]
        if any(item.shape != first.shape or item.dtype != first.dtype for item in items):
            return np.stack(items)
        out = np.empty((len(items),) + first.shape, first.dtype)
        for i, item in enumerate(items):
            out[i, ...] = item  # `...` copies a 0-d object array's item, not the array
        return out
    out = _zeros((len(items),) + shape, dtype)
    for i, item in enumerate(items):
        if item is not None:
            out[i, ...] = item
    return out


def _count(value: np.ndarray, op: str, what: str) -> int:
    if type(value) is np.ndarray and value.size == 1 and value.dtype.kind in "iu":
        return int(value.item())
    return scalar_int(value, f"{op}: {what}")


# ---------------------------------------------------------------------------------------------
# Making lists


@kernel("EmptyTensorList")
def empty_tensor_list(element_shape: np.ndarray, max_num_elements: np.ndarray, *,
                      element_dtype, **_) -> tuple[TensorList]:
    op = "EmptyTensorList"
    shape = _shape_from_tensor(element_shape, op)
    capacity = _count(max_num_elements, op, "max_num_elements")
    if capacity < -1:
        raise KernelError(f"{op}: max_num_elements must be -1 (unlimited) or non-negative, got "
                          f"{capacity}")
    return (TensorList(dtypes.as_dtype(element_dtype), shape, (), capacity),)


@kernel("TensorListReserve")
def tensor_list_reserve(element_shape: np.ndarray, num_elements: np.ndarray, *, element_dtype,
                        **_) -> tuple[TensorList]:
    op = "TensorListReserve"
    shape = _shape_from_tensor(element_shape, op)
    count = _count(num_elements, op, "num_elements")
    if count < 0:
        raise KernelError(f"{op}: The num_elements to reserve must be a non negative number, but "
                          f"got {count}")
    return (TensorList(dtypes.as_dtype(element_dtype), shape, (None,) * count),)


@kernel("TensorListFromTensor")
def tensor_list_from_tensor(tensor: np.ndarray, element_shape: np.ndarray,
                            **_) -> tuple[TensorList]:
    op = "TensorListFromTensor"
    if isinstance(tensor, RaggedVariant):
        check(tensor.ndim >= 1, f"{op}: Tensor must be at least a vector, but saw shape: []")
        return (TensorList(dtypes.from_name("variant"), _shape_from_tensor(element_shape, op), tensor.rows()),)
    if tensor.ndim < 1:
        raise KernelError(f"{op}: Tensor must be at least a vector, but saw shape: "
                          f"{_shape_text(tensor.shape)}")
    shape = _shape_from_tensor(element_shape, op)
    if not _compatible(shape, tensor.shape[1:]):
        raise KernelError(f"{op}: Specified a list with shape {_shape_text(shape)} from a tensor "
                          f"with shape {_shape_text(tensor.shape[1:])}")
    return (TensorList(dtypes.from_numpy(tensor.dtype), shape, _rows(tensor)),)


@kernel("TensorListSplit")
def tensor_list_split(tensor: np.ndarray, element_shape: np.ndarray, lengths: np.ndarray,
                      **_) -> tuple[TensorList]:
    """Consecutive pieces of `tensor` along its first axis, `lengths[i]` rows each; together
    they must use every row. element_shape constrains all but the first dimension."""
    op = "TensorListSplit"
    tensor = np.asarray(tensor)
    check(tensor.ndim >= 1, f"{op}: Tensor must be at least a vector, but saw shape: "
                            f"{_shape_text(tensor.shape)}")
    shape = _shape_from_tensor(element_shape, op)
    check(shape is None or _compatible((None, *shape[1:]), tensor.shape),
          f"{op}: tensor shape {_shape_text(tensor.shape)} is not compatible with element_shape "
          f"{_shape_text(shape)}")
    lengths = np.asarray(lengths)
    check(lengths.ndim == 1, f"{op}: Expected lengths to be a vector, received shape: "
                             f"{_shape_text(lengths.shape)}")
    rows, start, items = tensor.shape[0], 0, []
    for length in (int(n) for n in lengths):
        check(start + length <= rows, f"{op}: Attempting to slice [{start}, {start + length}] "
                                      f"from tensor with length {rows}")
        check(length >= 0, f"{op}: Invalid value in lengths: {length}")
        items.append(tensor[start:start + length])
        start += length
    check(start == rows, f"{op}: Unused values in tensor. Length of tensor: {rows} Values used: "
                         f"{start}")
    return (TensorList(dtypes.from_numpy(tensor.dtype), shape, tuple(items)),)


def _rows(tensor: np.ndarray) -> tuple[np.ndarray, ...]:
    """The rows of `tensor` as arrays (0-d ones for a vector, where iteration gives scalars)."""
    if tensor.ndim == 1:
        return tuple(tensor[i, ...] for i in range(tensor.shape[0]))
    return tuple(tensor)


# ---------------------------------------------------------------------------------------------
# Reading lists


@kernel("TensorListLength")
def tensor_list_length(input_handle, **_) -> tuple[np.ndarray]:
    return (np.array(len(_the_list(input_handle, "TensorListLength")), np.int32),)


@kernel("TensorListElementShape")
def tensor_list_element_shape(input_handle, *, shape_type=None, **_) -> tuple[np.ndarray]:
    """The declared element shape (setting items never refines it): -1 for an unknown rank."""
    shape = _the_list(input_handle, "TensorListElementShape").element_shape
    dtype = shape_type.numpy if shape_type is not None else np.int32
    if shape is None:
        return (np.array(-1, dtype),)
    return (np.array([-1 if d is None else d for d in shape], dtype),)


def _index(value: np.ndarray, size: int, op: str, verb: str) -> int:
    index = _count(value, op, "index")
    if not 0 <= index < size:
        raise KernelError(f"{op}: Trying to {verb} element {index} in a list with {size} "
                          "elements.")
    return index


@kernel("TensorListGetItem")
def tensor_list_get_item(input_handle, index: np.ndarray, element_shape: np.ndarray, *,
                         element_dtype=None, **_) -> tuple[np.ndarray]:
    op = "TensorListGetItem"
    tensor_list = _the_list(input_handle, op)
    _check_dtype(tensor_list, element_dtype, op)
    items = tensor_list.items
    i = _index(index, len(items), op, "access")
    if items[i] is not None:
        return (items[i],)
    shape = _read_shape(tensor_list, element_shape, op)
    if not _fully_defined(shape):
        shape = _merge_items(shape, tensor_list.items, op)
    check(_fully_defined(shape), f"{op}: Trying to read an uninitialized tensor but element_shape "
                                 f"is not fully defined: {_shape_text(shape)} and no list "
                                 f"element is set.")
    return (_zeros(shape, tensor_list.element_dtype),)


def _index_in(index, items: tuple) -> int | None:
    """A 0-d integer array index that is valid for `items`, as an int; None otherwise."""
    if type(index) is np.ndarray and not index.ndim and index.dtype.kind in "iu":
        i = int(index)
        if 0 <= i < len(items):
            return i
    return None


@fast_path("TensorListGetItem")
def _get_item_fast(attrs: dict) -> Callable[..., tuple]:
    """A set item of a list of the node's element dtype at a valid 0-d index, as a loop body
    reads its input sequence; anything else goes to the kernel."""
    element_dtype = attrs.get("element_dtype")

    def get_item_fast(input_handle, index, element_shape):
        if type(input_handle) is TensorList and input_handle.element_dtype is element_dtype:
            i = _index_in(index, input_handle.items)
            if i is not None and input_handle.items[i] is not None:
                return (input_handle.items[i],)
        return tensor_list_get_item(input_handle, index, element_shape, **attrs)
    return get_item_fast


@kernel("TensorListStack")
def tensor_list_stack(input_handle, element_shape: np.ndarray, *, element_dtype=None,
                      num_elements: int = -1, **_) -> tuple[np.ndarray]:
    op = "TensorListStack"
    tensor_list = _the_list(input_handle, op)
    _check_dtype(tensor_list, element_dtype, op)
    if num_elements != -1 and num_elements != len(tensor_list):
        raise KernelError(f"{op}: Operation expected a list with {num_elements} elements but got "
                          f"a list with {len(tensor_list)} elements.")
    shape = _read_shape(tensor_list, element_shape, op)
    if tensor_list.items and all(isinstance(item, RaggedVariant) for item in tensor_list.items):
        return (RaggedVariant.stack(list(tensor_list.items)),)
    if not tensor_list.items and _fully_defined(shape) and tensor_list.element_dtype.name == "variant":
        return (RaggedVariant((0, *shape), ()),)  # tf.map_fn over a ragged tensor with no rows
    if not _fully_defined(shape) and len(tensor_list) == 0:
        raise KernelError(f"{op}: Tried to stack elements of an empty list with non-fully-defined "
                          f"element_shape: {_shape_text(shape)}")
    if not _fully_defined(tensor_list.element_shape):
        shape = _merge_items(shape, tensor_list.items, op)
    if not _fully_defined(shape):
        raise KernelError(f"{op}: Tried to stack list which only contains uninitialized tensors "
                          f"and has a non-fully-defined element_shape: {_shape_text(shape)}")
    return (_stacked(tensor_list.items, shape, tensor_list.element_dtype),)


@kernel("TensorListGather")
def tensor_list_gather(input_handle, indices: np.ndarray, element_shape: np.ndarray, *,
                       element_dtype=None, **_) -> tuple[np.ndarray]:
    op = "TensorListGather"
    tensor_list = _the_list(input_handle, op)
    _check_dtype(tensor_list, element_dtype, op)
    positions = [int(i) for i in np.asarray(indices).ravel()]
    shape = _read_shape(tensor_list, element_shape, op)
    check(_fully_defined(shape) or positions, f"{op}: Tried to gather 0-elements from a list with "
                                              f"non-fully-defined shape: {_shape_text(shape)}")
    size = len(tensor_list)
    for i in positions:
        check(0 <= i < size, f"{op}: Trying to gather element {i} in a list with {size} "
                             f"elements.")
    if not _fully_defined(tensor_list.element_shape):
        shape = _merge_items(shape, (tensor_list.items[i] for i in positions), op)
    check(_fully_defined(shape), f"{op}: Tried to gather uninitialized tensors from a list with "
                                 f"non-fully-defined element_shape: {_shape_text(shape)}")
    return (_stacked([tensor_list.items[i] for i in positions], shape,
                     tensor_list.element_dtype),)


@kernel("TensorListConcatV2")
def tensor_list_concat_v2(input_handle, element_shape: np.ndarray, leading_dims: np.ndarray, *,
                          element_dtype=None, **_) -> tuple[np.ndarray, np.ndarray]:
    """Items joined along their first axis, and each item's length along it. An unset item is
    zeros whose first dimension is element_shape's, else the one length all set items share,
    else its entry of leading_dims."""
    op = "TensorListConcatV2"
    tensor_list = _the_list(input_handle, op)
    _check_dtype(tensor_list, element_dtype, op)
    shape = _read_shape(tensor_list, element_shape, op)
    check(shape is None or len(shape) >= 1,
          f"{op}: Concat requires elements to be at least vectors, found scalars instead.")
    first, rest = (None, None) if shape is None else (shape[0], shape[1:])
    check(len(tensor_list) > 0 or _fully_defined(rest),
          f"{op}: All except the first dimension must be fully defined when concating an empty "
          f"tensor list. element_shape: {_shape_text(shape)}")
    if not _fully_defined(tensor_list.element_shape):
        first, rest = _infer_concat_shape(tensor_list.items, first, rest, op)
    check(_fully_defined(rest), f"{op}: Trying to concat list with only uninitialized tensors but "
                                f"element_shape_except_first_dim is not fully defined: "
                                f"{_shape_text(rest)}")
    lengths = _concat_lengths(tensor_list.items, first, np.asarray(leading_dims).ravel(), op)
    pieces = [item if item is not None else _zeros((n,) + rest, tensor_list.element_dtype)
              for item, n in zip(tensor_list.items, lengths)]
    if pieces:
        joined = np.concatenate(pieces)
    else:
        joined = _zeros((0,) + rest, tensor_list.element_dtype)
    return joined, np.array(lengths, np.int64)


def _infer_concat_shape(items, first: int | None, rest: Shape, op: str):
    """Refine the trailing dims with the set items; the first dim becomes the one all set items
    share when element_shape leaves it unknown."""
    inferred, agreed = first, first is None
    for i, item in enumerate(items):
        if item is None:
            continue
        check(item.ndim >= 1, f"{op}: Concat saw a scalar shape at index {i} but requires at "
                              f"least vectors.")
        rest = _merge(rest, item.shape[1:], op)
        check(first is None or first == item.shape[0],
              f"{op}: First entry of element_shape input does not match the first dim of list "
              f"element at index: {i} Expected: {first} Actual: {item.shape[0]}")
        if agreed:
            if inferred is None:
                inferred = item.shape[0]
            elif inferred != item.shape[0]:
                inferred, agreed = None, False
    return inferred, rest


def _concat_lengths(items, first: int | None, leading_dims: np.ndarray, op: str) -> list[int]:
    lengths = []
    for i, item in enumerate(items):
        if item is not None:
            lengths.append(item.shape[0])
        elif i >= leading_dims.size and first is not None:
            lengths.append(first)
        else:
            check(i < leading_dims.size, f"{op}: List contains uninitialized tensor at index {i} "
                                         f"but leading_dims has only {leading_dims.size} "
                                         f"elements.")
            lengths.append(int(leading_dims[i]))
    return lengths


# ---------------------------------------------------------------------------------------------
# Changing lists (each returns a new list)


@kernel("TensorListSetItem")
def tensor_list_set_item(input_handle, index: np.ndarray, item: np.ndarray, *,
                         element_dtype=None, resize_if_index_out_of_bounds: bool = False,
                         **_) -> tuple[TensorList]:
    op = "TensorListSetItem"
    tensor_list = _the_list(input_handle, op)
    _check_dtype(tensor_list, element_dtype, op)
    i = _count(index, op, "index")
    items = tensor_list.items
    size = len(items)
    if not (0 <= i and (i < size or resize_if_index_out_of_bounds)):
        raise KernelError(f"{op}: Trying to modify element {i} in a list with {size} elements.")
    _check_item(tensor_list, item, op, "Tried to set a tensor with incompatible shape at a list "
                                       "index. Item element shape:")
    if i < size:
        items = items[:i] + (item,) + items[i + 1:]
    else:
        items = items + (None,) * (i - size) + (item,)
    return (TensorList(tensor_list.element_dtype, tensor_list.element_shape, items,
                       tensor_list.max_num_elements),)


@fast_path("TensorListSetItem")
def _set_item_fast(attrs: dict) -> Callable[..., tuple]:
    """An item of the list's dtype and element shape set at a valid 0-d index, as a loop body
    writes its output sequence; anything else goes to the kernel."""
    element_dtype = attrs.get("element_dtype")

    def set_item_fast(input_handle, index, item):
        if (type(input_handle) is TensorList and input_handle.element_dtype is element_dtype
                and type(item) is np.ndarray and item.dtype == element_dtype.numpy
                and _compatible(input_handle.element_shape, item.shape)):
            items = input_handle.items
            i = _index_in(index, items)
            if i is not None:
                return (input_handle.with_items(items[:i] + (item,) + items[i + 1:]),)
        return tensor_list_set_item(input_handle, index, item, **attrs)
    return set_item_fast


@kernel("TensorListPushBack")
def tensor_list_push_back(input_handle, tensor: np.ndarray, *, element_dtype=None,
                          **_) -> tuple[TensorList]:
    op = "TensorListPushBack"
    tensor_list = _the_list(input_handle, op)
    _check_dtype(tensor_list, element_dtype, op)
    _check_item(tensor_list, tensor, op, "Tried to append a tensor with incompatible shape to a "
                                         "list. Op element shape:")
    capacity = tensor_list.max_num_elements
    if capacity != -1 and len(tensor_list) >= capacity:
        raise KernelError(f"{op}: Tried to push item into a full list list size: "
                          f"{len(tensor_list)} max_num_elements: {capacity}")
    return (TensorList(tensor_list.element_dtype, tensor_list.element_shape,
                       tensor_list.items + (tensor,), capacity),)


@kernel("TensorListPopBack")
def tensor_list_pop_back(input_handle, element_shape: np.ndarray, *, element_dtype=None,
                         **_) -> tuple[TensorList, np.ndarray]:
    """The last item (zeros of the element shape if unset; unlike GetItem, other items are not
    consulted for that shape) and the list without it."""
    op = "TensorListPopBack"
    tensor_list = _the_list(input_handle, op)
    _check_dtype(tensor_list, element_dtype, op)
    check(len(tensor_list) > 0, f"{op}: Trying to pop from an empty list.")
    last = tensor_list.items[-1]
    if last is None:
        shape = _read_shape(tensor_list, element_shape, op)
        check(_fully_defined(shape), f"{op}: Trying to read an uninitialized tensor but "
                                     f"element_shape is not fully defined.{_shape_text(shape)}")
        last = _zeros(shape, tensor_list.element_dtype)
    return tensor_list.with_items(tensor_list.items[:-1]), last


@kernel("TensorListResize")
def tensor_list_resize(input_handle, size: np.ndarray, **_) -> tuple[TensorList]:
    op = "TensorListResize"
    tensor_list = _the_list(input_handle, op)
    new_size = _count(size, op, "size")
    check(new_size >= 0, f"{op}: TensorListSlice expects size to be non-negative. Got: {new_size}")
    items = tensor_list.items[:new_size] + (None,) * max(0, new_size - len(tensor_list))
    return (tensor_list.with_items(items),)


@kernel("TensorListScatterIntoExistingList")
def tensor_list_scatter_into_existing_list(input_handle, tensor: np.ndarray, indices: np.ndarray,
                                           **_) -> tuple[TensorList]:
    """Rows of `tensor` set at `indices`, growing the list to the largest index; a later
    duplicate index wins. Unlike TensorFlow (which corrupts memory or crashes there), rows of an
    incompatible shape and negative indices are errors."""
    op = "TensorListScatterIntoExistingList"
    tensor_list = _the_list(input_handle, op)
    tensor = np.asarray(tensor)
    dtype = dtypes.from_numpy(tensor.dtype)
    check(dtype.enum == tensor_list.element_dtype.enum,
          f"{op}: Invalid data types; input tensor type: {_tf_type_name(dtype)} list "
          f"element_type: {_tf_type_name(tensor_list.element_dtype)}")
    check(tensor.ndim >= 1, f"{op}: Tensor must be at least a vector, but saw shape: "
                            f"{_shape_text(tensor.shape)}")
    indices = np.asarray(indices)
    check(indices.ndim == 1, f"{op}: Expected indices to be a vector, but received shape: "
                             f"{_shape_text(indices.shape)}")
    check(indices.size == tensor.shape[0], f"{op}: Expected len(indices) == tensor.shape[0], but "
                                           f"saw: {indices.size} vs. {tensor.shape[0]}")
    check(_compatible(tensor_list.element_shape, tensor.shape[1:]),
          f"{op}: Tried to scatter elements of shape {_shape_text(tensor.shape[1:])} into a list "
          f"with element shape {_shape_text(tensor_list.element_shape)}")
    positions = [int(i) for i in indices]
    check(all(i >= 0 for i in positions),
          f"{op}: Indices in TensorListScatter must all be non-negative.")
    items = list(tensor_list.items)
    items += [None] * (max(positions, default=-1) + 1 - len(items))
    for row, i in zip(_rows(tensor), positions):
        items[i] = row
    return (tensor_list.with_items(items),)
