"""What savedmodel.static_shapes gives: a model's nodes as a signature runs them, through
function calls, with their static dtypes and shapes, variables and layers (plain data)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from savedmodel.protos import node_def_pb2
from savedmodel.runtime import dtypes

Shape = tuple[int | None, ...]
SEPARATOR = "::"
"""Joins the call nodes on a node's path to its name (TensorFlow node names never hold `:`)."""


@dataclass(frozen=True)
class Output:
    """One output tensor: dtype name (`float32`, `resource`, ...) and static shape (a tuple
    with None for unknown dimensions, or None for an unknown rank)."""

    dtype: str
    shape: Shape | None


@dataclass(frozen=True)
class Port:
    """A signature input or output: its key, the tensor it is (node path, output index), and
    that tensor's static dtype and shape."""

    key: str
    ref: tuple[str, int] | None
    output: Output


@dataclass
class Variable:
    """A variable the graph reads. `key` is the path of the node that creates its handle;
    `name` its Keras path or variable name (`sequential/dense/kernel`); `trainable` None when
    the files do not say; `checkpoint_key` the key of its value in variables/variables, when
    known; `object_id` its node in the SavedObjectGraph."""

    key: str
    name: str
    dtype: str
    shape: Shape | None
    trainable: bool | None = None
    checkpoint_key: str | None = None
    object_id: int | None = None

    @property
    def elements(self) -> int | None:
        if self.shape is None or None in self.shape:
            return None
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def bytes(self) -> int | None:
        """Bytes of its value (None for strings and unknown shapes)."""
        try:
            itemsize = dtypes.from_name(self.dtype).itemsize
        except dtypes.UnknownDTypeError:
            return None
        return None if not itemsize or self.elements is None else itemsize * self.elements


@dataclass(frozen=True)
class Node:
    """One node as the signature runs it (see the module docstring)."""

    path: str
    name: str
    op: str
    function: str
    inputs: tuple[tuple[str, int], ...]
    outputs: tuple[Output, ...]
    variables: tuple[str, ...]
    attrs: node_def_pb2.NodeDef = field(repr=False, compare=False)
    layer: str | None = None

    @property
    def scope(self) -> str:
        return self.name.rpartition("/")[0]


@dataclass
class Layer:
    """Nodes grouped by name scope. `key` is unique (the call path plus the scope); `outputs`
    are the (node path, index) tensors that nodes outside the layer read (or the signature
    returns); `variables` the keys of the variables its nodes read, in first-read order."""

    key: str
    name: str
    scope: str
    nodes: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    outputs: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class ModelStructure:
    """What `analyze` returns. `nodes` are in an order where producers come first."""

    name: str
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    nodes: dict[str, Node]
    layers: dict[str, Layer]
    variables: dict[str, Variable]

    def output(self, ref: tuple[str, int]) -> Output | None:
        node = self.nodes.get(ref[0])
        if node is None or ref[1] >= len(node.outputs):
            return None
        return node.outputs[ref[1]]
