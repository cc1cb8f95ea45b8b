"""Comparing two runs of a signature node by node (`savedmodel compare --per-node`): where the
outputs of two engines (or of a model and a changed copy of it) start to differ.

Both sides run the same inlined graph (savedmodel.per_node) on the same inputs, and every
tensor is compared in execution order. A diverging tensor whose inputs all agree is an
*origin*: the difference starts at its node, and what follows it inherits the difference.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from savedmodel.compare import differences
from savedmodel.per_node import PER_NODE_SIGNATURE, Exposed, Tensor, exposed_copy
from savedmodel.runtime import load
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.loader import INIT_OP_COLLECTIONS, INIT_OP_SIGNATURE, TABLE_INITIALIZERS

Run = Callable[[Exposed, dict], dict]
"""One side: runs the exposed copy's PER_NODE_SIGNATURE on feeds; tensors by key."""


@dataclass(frozen=True)
class NodeDifference:
    key: str
    """`node:output index` of the inlined node."""
    op: str
    function: str | None
    dtype: str
    shape: tuple
    max_abs: float
    max_rel: float
    origin: bool
    """Every input of the node agrees on both sides: the difference starts here."""


@dataclass(frozen=True)
class NonFinite:
    """The first tensor where one side has NaN or Inf where the other has a finite value."""

    key: str
    op: str
    side: str
    """Which side has them: "ours" or "theirs"."""
    nan: int
    inf: int


@dataclass
class NodeReport:
    signature: str
    compared: int = 0
    diverging: list[NodeDifference] = field(default_factory=list)
    non_finite: NonFinite | None = None


def engine_run(engine: str, tags: set[str], allow_file_access: bool = False, limits: Limits = DEFAULT,
               used: list | None = None) -> Run:
    """A side that runs on one of our engines ("numpy", "native" or "auto"); the engine that
    ran is appended to `used`."""
    def run(exposed: Exposed, feeds: dict) -> dict:
        model = load(exposed.export_dir, tags, allow_file_access=allow_file_access, limits=limits,
                     engine=engine)
        if used is not None:
            used.append(model.engine)
        return model.signatures[PER_NODE_SIGNATURE](**feeds)
    return run


def tensorflow_run(tf, tags: set[str]) -> Run:
    """A side that runs on TensorFlow, through its TensorFlow 1 loader (which reads the graph's
    signatures, as the copy needs; TensorFlow 2's reads the object graph's)."""
    def run(exposed: Exposed, feeds: dict) -> dict:
        graph = tf.Graph()
        with tf.compat.v1.Session(graph=graph) as session:
            meta_graph = tf.compat.v1.saved_model.loader.load(session, sorted(tags), str(exposed.export_dir))
            if _tables_left_uninitialized(meta_graph):
                session.run(tf.compat.v1.tables_initializer(), _asset_feeds(exposed.export_dir, meta_graph))
            signature = meta_graph.signature_def[PER_NODE_SIGNATURE]
            values = session.run({k: v.name for k, v in signature.outputs.items()},
                                 {signature.inputs[k].name: v for k, v in feeds.items()})
        return {k: _as_ours(v) for k, v in values.items()}
    return run


def _tables_left_uninitialized(meta_graph) -> bool:
    """A TensorFlow 1 export with tables and no init op: TensorFlow's TensorFlow 1 loader
    leaves its tables empty, where its TensorFlow 2 loader and ours run the table initializers
    (runtime.loader)."""
    collections = meta_graph.collection_def
    return (INIT_OP_SIGNATURE not in meta_graph.signature_def and TABLE_INITIALIZERS in collections
            and not any(key in collections for key in INIT_OP_COLLECTIONS))


def _asset_feeds(export_dir: Path, meta_graph) -> dict:
    """The asset placeholders fed the paths of the model's asset copies, as TensorFlow's loader
    feeds them to an init op (its own function: TensorFlow 1 exports list assets in two ways)."""
    from tensorflow.python.saved_model import loader_impl
    return loader_impl.get_asset_tensors(str(export_dir), meta_graph)


def _as_ours(value) -> np.ndarray:
    """A value a TensorFlow session returned, as our engines return it: strings (bytes, or
    arrays of fixed-width bytes for scalars) as object arrays of bytes."""
    array = np.asarray(value)
    return array.astype(object) if array.dtype.kind == "S" else array


def compare_nodes(export_dir: str | Path, signature: str, tags: set[str], feeds: dict, ours: Run,
                  theirs: Run, atol: float, rtol: float, other_dir: str | Path | None = None) -> NodeReport:
    """Run `signature` on both sides exposing every intermediate tensor (`theirs` on the copy
    at `other_dir` when given, whose nodes are matched by name) and compare them in order."""
    with exposed_copy(export_dir, signature, tags) as exposed:
        tensors, mine = exposed.tensors, ours(exposed, feeds)
        if other_dir is None:
            other = theirs(exposed, feeds)
    if other_dir is not None:
        with exposed_copy(other_dir, signature, tags) as copy:
            other = theirs(copy, feeds)
    return _report(signature, tensors, mine, other, atol, rtol)


def _report(signature: str, tensors: tuple[Tensor, ...], ours: dict, theirs: dict, atol: float,
            rtol: float) -> NodeReport:
    report = NodeReport(signature)
    agree: dict[str, bool] = {}
    for tensor in tensors:
        a, b = ours.get(tensor.key), theirs.get(tensor.key)
        row = differences({tensor.key: a} if a is not None else {}, {tensor.key: b} if b is not None else {},
                          atol, rtol)[0]
        report.compared += 1
        agree[tensor.key] = row.within
        if report.non_finite is None and row.same_dtype_and_shape:
            report.non_finite = _non_finite(tensor, a, b)
        if not row.within:
            origin = all(agree.get(key, True) for key in tensor.inputs)
            report.diverging.append(NodeDifference(tensor.key, tensor.op, tensor.function, row.dtype,
                                                   tuple(row.shape), row.max_abs, row.max_rel, origin))
    return report


def _non_finite(tensor: Tensor, a: np.ndarray, b: np.ndarray) -> NonFinite | None:
    """Which side has NaN or Inf where the other side's value is finite, if one does."""
    if a.dtype.kind not in "fc" or a.size == 0:
        return None
    finite_a, finite_b = np.isfinite(a), np.isfinite(b)
    for side, values, mine, other in (("ours", a, finite_a, finite_b), ("theirs", b, finite_b, finite_a)):
        extra = ~mine & other
        if extra.any():
            return NonFinite(tensor.key, tensor.op, side, int(np.isnan(values[extra]).sum()),
                             int(np.isinf(values[extra]).sum()))
    return None
