"""Checkpoint: saving and restoring a graph of trackable objects, as `tf.train.Checkpoint`.

Writing serializes the object graph (see `trackable`) into a tensor bundle. Restoring reads the
saved TrackableObjectGraph and walks it alongside the live objects by local names, from the
root: matched variables get their values (all checked before any is assigned), saved children
that have no live counterpart yet are remembered on their parent and restored when an object
is attached under that name later (deferred restoration). The returned status answers how well
the checkpoint and the program matched, raising AssertionError as TensorFlow's does.
"""
from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from savedmodel.checkpoint_management import update_checkpoint_state
from savedmodel.protos import trackable_object_graph_pb2
from savedmodel.runtime.bundle_writer import write_bundle
from savedmodel.runtime.errors import FileFormatError, SavedModelError
from savedmodel.runtime.tensor_bundle import OBJECT_GRAPH_KEY, BundleReader, index_path
from savedmodel.trackable import AutoTrackable, Trackable, gather, serialize
from savedmodel.variables import Variable

_RESTORE_UIDS = itertools.count(1)
_SUFFIX_HINT = ("Please double-check that the path is correct. You may be missing the "
                "checkpoint suffix (e.g. the '-1' in 'path/to/ckpt-1').")


class CheckpointNotFoundError(SavedModelError, FileNotFoundError):
    """No checkpoint exists under the given prefix (TensorFlow's NotFoundError)."""


class RestoreError(SavedModelError, ValueError):
    """A saved value does not fit the object it was matched with (dtype or shape)."""


@dataclass(frozen=True)
class CheckpointOptions:
    """Options for writing checkpoints.

    `max_shard_bytes` splits the data into several shards (`.data-0000k-of-0000n`), starting a
    new one when the next tensor would overflow the limit; a larger tensor gets a shard of its
    own. TensorFlow's `experimental_sharding_callback` policies also split single tensors into
    slices; we never do, and read both."""

    max_shard_bytes: int | None = None


class Checkpoint(AutoTrackable):
    """Groups trackable objects (keyword arguments, sorted by name, then any attribute assigned
    later) for saving and restoring.

    `save_counter` is created lazily, by `save`, `restore` or reading the property, which is why
    a checkpoint made only with `write` has none."""

    def __init__(self, **trackables: Any):
        for name, value in sorted(trackables.items()):
            setattr(self, name, value)
            if not isinstance(getattr(self, name), Trackable):
                raise ValueError(f"`Checkpoint` was expecting {name} to be a trackable object "
                                 f"(an object derived from `Trackable`), got {value!r}.")

    @property
    def save_counter(self) -> Variable:
        """How many times `save` has run (an int64 variable saved with the checkpoint)."""
        return self._counter()

    def _counter(self) -> Variable:
        counter = self._tracking().dependencies.get("save_counter")
        if counter is None:
            counter = Variable(0, dtype="int64", name="save_counter", trainable=False)
            self._track("save_counter", counter)
        return counter

    def write(self, file_prefix: str | os.PathLike,
              options: CheckpointOptions | None = None) -> str:
        """Write the checkpoint `file_prefix` (no numbering, no state file) and return it."""
        prefix = os.fspath(file_prefix)
        options = options or CheckpointOptions()
        write_bundle(prefix, serialize(self), max_shard_bytes=options.max_shard_bytes)
        return prefix

    def save(self, file_prefix: str | os.PathLike,
             options: CheckpointOptions | None = None) -> str:
        """Increment `save_counter`, write `file_prefix-N`, record it as the latest checkpoint
        in the directory's state file, and return the path."""
        counter = self._counter()
        counter.assign_add(1)
        path = self.write(f"{os.fspath(file_prefix)}-{int(counter.numpy())}", options)
        update_checkpoint_state(os.path.dirname(path), path, [path])
        return path

    def read(self, save_path: str | os.PathLike,
             options: CheckpointOptions | None = None) -> CheckpointLoadStatus:
        """Restore from `save_path` (a prefix, or a SavedModel directory) without creating
        `save_counter`. `options` is accepted for TensorFlow's signature; reading needs none."""
        restoration = _Restoration.open(save_path)
        restoration.bind(0, self)
        return CheckpointLoadStatus(restoration, self)

    def restore(self, save_path: str | os.PathLike | None,
                options: CheckpointOptions | None = None
                ) -> CheckpointLoadStatus | InitializationOnlyStatus:
        """As `read`, then create `save_counter` so that it takes the saved count too.
        With `save_path` None nothing is restored (as with a first run's latest_checkpoint)."""
        status = InitializationOnlyStatus() if save_path is None else self.read(save_path)
        self._counter()
        return status


class _Restoration:
    """One read of one checkpoint: its object graph and which nodes found live objects."""

    def __init__(self, prefix: str, reader: BundleReader,
                 graph: trackable_object_graph_pb2.TrackableObjectGraph):
        self.uid = next(_RESTORE_UIDS)
        self.prefix = prefix
        self.reader = reader
        self.graph = graph
        self.bound: dict[int, Trackable] = {}
        self.unused: dict[int, list[str]] = {}

    @classmethod
    def open(cls, save_path: str | os.PathLike) -> _Restoration:
        prefix = checkpoint_prefix(save_path)
        reader = BundleReader(prefix)
        if OBJECT_GRAPH_KEY not in reader.entries:
            raise FileFormatError(f"{prefix}: the checkpoint has no {OBJECT_GRAPH_KEY}; it was "
                                  "written by a name-based (TensorFlow 1) Saver, which object-"
                                  "based restore cannot match")
        data = reader.read(OBJECT_GRAPH_KEY)[()]
        try:
            graph = trackable_object_graph_pb2.TrackableObjectGraph.FromString(data)
        except Exception as err:  # protobuf raises DecodeError or RuntimeError by backend
            raise FileFormatError(f"{prefix}: cannot parse {OBJECT_GRAPH_KEY}: {err}") from None
        _check_graph(graph, prefix)
        return cls(prefix, reader, graph)

    def bind(self, node_id: int, obj: Trackable) -> None:
        """Match `obj` with node `node_id` and their descendants by name, then assign every
        value found; a value that does not fit raises before anything is assigned."""
        bound: dict[int, Trackable] = {}
        unused: dict[int, list[str]] = {}
        deferred: list[tuple[Trackable, str, int]] = []
        assignments: list[Callable[[], None]] = []
        queue = deque([(node_id, obj)])
        while queue:
            node_id, obj = queue.popleft()
            if node_id in self.bound or node_id in bound:
                continue
            bound[node_id] = obj
            node = self.graph.nodes[node_id]
            assignments.append(self._values_for(node_id, node, obj, unused))
            children = obj._checkpoint_children()
            for ref in node.children:
                child = children.get(ref.local_name)
                if child is None:
                    deferred.append((obj, ref.local_name, ref.node_id))
                else:
                    queue.append((ref.node_id, child))
        self.bound.update(bound)
        self.unused.update(unused)
        for parent, name, child_id in deferred:
            parent._defer_restore(name, _Deferred(self, child_id))
        for assign in assignments:
            assign()

    def _values_for(self, node_id: int, node, obj: Trackable,
                    unused: dict[int, list[str]]) -> Callable[[], None]:
        wanted = obj._checkpoint_values()
        values = {}
        for attribute in node.attributes:
            if attribute.name not in wanted:
                unused.setdefault(node_id, []).append(attribute.name)
                continue
            values[attribute.name] = self._read(attribute.checkpoint_key)
        if not values:
            return lambda: None
        try:
            return obj._prepare_restore(values, self.uid)
        except ValueError as err:
            keys = ", ".join(a.checkpoint_key for a in node.attributes if a.name in values)
            raise RestoreError(f"{self.prefix}: cannot restore {keys}: {err}") from None

    def _read(self, key: str) -> np.ndarray:
        if key not in self.reader.entries:
            raise FileFormatError(f"{index_path(self.prefix)}: the object graph names key "
                                  f"{key!r}, which the checkpoint does not hold")
        return self.reader.read(key)

    def node_names(self) -> list[str]:
        """Each node's path from the root, as TensorFlow prints it: `(root).model.kernel`."""
        names = ["(root)"] + [""] * (len(self.graph.nodes) - 1)
        queue = deque([0])
        while queue:
            node_id = queue.popleft()
            for ref in self.graph.nodes[node_id].children:
                if not names[ref.node_id] and ref.node_id != 0:
                    names[ref.node_id] = f"{names[node_id]}.{ref.local_name}"
                    queue.append(ref.node_id)
        return names


@dataclass
class _Deferred:
    """A saved child waiting on its parent for an object to be attached under its name."""

    restoration: _Restoration
    node_id: int

    @property
    def uid(self) -> int:
        return self.restoration.uid

    def restore(self, obj: Trackable) -> None:
        self.restoration.bind(self.node_id, obj)


class CheckpointLoadStatus:
    """How a restore went; the checks look at the objects as they are when called, so values
    restored later by deferred restoration count."""

    def __init__(self, restoration: _Restoration, root: Trackable):
        self._restoration = restoration
        self._root = root
        self._expect_partial = False

    def assert_consumed(self) -> CheckpointLoadStatus:
        """Every saved value found an object, and every object with values found a saved one."""
        self.assert_existing_objects_matched()
        restoration = self._restoration
        names = restoration.node_names()
        for node_id, node in enumerate(restoration.graph.nodes):
            if node.attributes and node_id not in restoration.bound:
                raise AssertionError(f"Unresolved object in checkpoint {names[node_id]}: {node}")
        if restoration.unused:
            lines = [f"{names[node_id]} ({restoration.bound[node_id]!r}): {attributes}"
                     for node_id, attributes in restoration.unused.items()]
            raise AssertionError("Unused attributes in these objects (the attributes exist in "
                                 "the checkpoint but were not restored):\n    "
                                 + "\n    ".join(lines))
        return self

    def assert_existing_objects_matched(self) -> CheckpointLoadStatus:
        """Every live object that saves values was matched with a saved object."""
        unmatched = [node.obj for node in self._unbound() if node.obj._checkpoint_values()]
        if unmatched:
            shown = unmatched[:10]
            raise AssertionError(
                f"Found {len(unmatched)} Python objects that were not bound to checkpointed "
                "values, likely due to changes in the Python program. Showing "
                f"{len(shown)} of {len(unmatched)} unmatched objects: {shown}")
        return self

    def assert_nontrivial_match(self) -> CheckpointLoadStatus:
        """Something besides the root was matched."""
        if len(self._restoration.bound) <= 1:
            unmatched = [node.obj for node in self._unbound()]
            if unmatched:
                raise AssertionError(
                    "Nothing except the root object matched a checkpointed value. Typically "
                    "this means that the checkpoint does not match the Python program. The "
                    f"following objects have no matching checkpointed value: {unmatched}")
            raise AssertionError(f"Nothing to load. No dependencies have been added to "
                                 f"{self._root!r} yet.")
        return self

    def expect_partial(self) -> CheckpointLoadStatus:
        """Declare that a partial match is intended (TensorFlow then stops warning)."""
        self._expect_partial = True
        return self

    def _unbound(self):
        bound = {id(obj) for obj in self._restoration.bound.values()}
        return [node for node in gather(self._root) if id(node.obj) not in bound]


class InitializationOnlyStatus:
    """The status of `restore(None)`: nothing was restored, so every check fails."""

    _MESSAGE = "No checkpoint specified (save_path=None); nothing is being restored."

    def assert_consumed(self):
        raise AssertionError(self._MESSAGE)

    def assert_existing_objects_matched(self):
        raise AssertionError(self._MESSAGE)

    def assert_nontrivial_match(self):
        raise AssertionError(self._MESSAGE)

    def expect_partial(self) -> InitializationOnlyStatus:
        return self


def checkpoint_prefix(save_path: str | os.PathLike) -> str:
    """The bundle prefix to read for `save_path`: the path itself, or `variables/variables`
    inside a SavedModel directory. A missing checkpoint raises CheckpointNotFoundError."""
    path = os.fspath(save_path)
    if os.path.isdir(path) and (Path(path) / "saved_model.pb").exists():
        path = os.path.join(path, "variables", "variables")
    if not index_path(path).is_file():
        raise CheckpointNotFoundError(
            f"Error when restoring from checkpoint or SavedModel at {os.fspath(save_path)}: "
            f"{index_path(path)} does not exist. {_SUFFIX_HINT}")
    return path


def _check_graph(graph, prefix: str) -> None:
    count = len(graph.nodes)
    if count == 0:
        raise FileFormatError(f"{prefix}: {OBJECT_GRAPH_KEY} has no nodes")
    for node_id, node in enumerate(graph.nodes):
        for ref in node.children:
            if not 0 <= ref.node_id < count:
                raise FileFormatError(f"{prefix}: {OBJECT_GRAPH_KEY} node {node_id} names "
                                      f"child node {ref.node_id}, but there are {count} nodes")
