"""`sm.saved_model.save(obj, export_dir, signatures=None)`: write a SavedModel that TensorFlow
2.21 loads (`tf.saved_model.load`, the TensorFlow 1 / C++ loaders, `saved_model_cli`) and that
`savedmodel.runtime.load` runs.

The whole model is built in memory first (object graph, signatures, exported graph, checkpoint),
so that anything that cannot be saved is reported before a file is touched. Then it is written
into a fresh hidden directory beside `export_dir` (`.<name>.tmp-*`: `saved_model.pb`,
`variables/`, `assets/`, `fingerprint.pb`) and put in place by `atomic_files.replace_directory`:

- a missing or empty `export_dir` is replaced by the new directory in one rename;
- an existing SavedModel is swapped with the new one in one step (Linux's RENAME_EXCHANGE) and
  then deleted, so `export_dir` always holds a complete model, the old one or the new one.
  Where the system cannot swap, the old one is renamed aside first (`.<name>.old-*`); a kill
  between the two renames leaves no model at `export_dir`, and the next save moves the old one
  back before it starts. TensorFlow overwrites such a directory file by file instead;
- a directory holding anything besides a SavedModel is refused rather than replaced, so that
  saving cannot delete other files;
- a symbolic link is followed: the directory it points to is the one replaced.

A failure, a full disk (DiskFullError naming `export_dir`) or a kill part-way thus never leaves
a half-written model at `export_dir`; what a kill leaves beside it is removed by the next save.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from savedmodel import context
from savedmodel.protos import meta_graph_pb2, saved_model_pb2
from savedmodel.runtime.atomic_files import (AtomicFiles, leftover_name, naming_full_disk,
                                             recover_directory, replace_directory)
from savedmodel.runtime.bundle_writer import write_bundle
from savedmodel.runtime.fingerprint import write_fingerprint
from savedmodel.saved_model import exported_graph
from savedmodel.saved_model.assets import Asset
from savedmodel.saved_model.object_graph import gather, root_functions, saved_object_graph
from savedmodel.saved_model.signatures import SignatureMap, canonicalize, default_signature
from savedmodel.trackable import Trackable

SCHEMA_VERSION = 1
SERVING_TAG = "serve"
TENSORFLOW_VERSION = "2.21.0"
"""The TensorFlow release whose SavedModels ours reproduce (written as the producer version)."""
SAVED_MODEL_ENTRIES = frozenset({"saved_model.pb", "saved_model.pbtxt", "variables", "assets",
                                 "fingerprint.pb", "debug"})
"""What a SavedModel directory holds; saving replaces a directory holding only these."""


def save(obj: Trackable, export_dir: str | os.PathLike, signatures: Any = None,
         options: Any = None) -> None:
    """Save `obj` (a Module, Checkpoint or any trackable) and its functions as a SavedModel.

    `signatures`: a Function with an input signature, a ConcreteFunction, or a dict of them by
    signature key (see `signatures`); `options` is accepted for TensorFlow's signature."""
    if context.current_graph() is not None:
        raise RuntimeError("`sm.saved_model.save` is not supported inside a traced "
                           "sm.function. Move the call to the outer eagerly-executed context.")
    if not isinstance(obj, Trackable):
        raise ValueError("Expected an object of type `Trackable`, such as `sm.Module` or a "
                         f"subclass of the `Trackable` class, for export. Got {obj!r} with "
                         f"type {type(obj)}.")
    destination = Path(os.path.realpath(os.fspath(export_dir)))
    recover_directory(destination)
    _check_destination(destination)
    model, checkpoint, assets = build(obj, signatures)
    _write(destination, model, checkpoint, assets)


def build(obj: Trackable, signatures: Any = None):
    """The SavedModel message of `obj`, its variables checkpoint (tensors by key) and its
    asset files (source path by file name under `assets/`)."""
    if signatures is None:
        signatures = default_signature(root_functions(obj))
    wrappers = canonicalize(signatures)
    objects = gather(obj, SignatureMap(wrappers))
    assets = _asset_files(objects)
    exported = exported_graph.export(objects, wrappers, list(assets))
    meta_graph = meta_graph_pb2.MetaGraphDef()
    info = meta_graph.meta_info_def
    info.stripped_op_list.CopyFrom(exported_graph.stripped_op_list(exported.graph_def,
                                                                   exported.loaded_op_defs))
    info.tags.append(SERVING_TAG)
    info.tensorflow_version = TENSORFLOW_VERSION
    info.tensorflow_git_version = "savedmodel"
    info.stripped_default_attrs = True
    meta_graph.graph_def.CopyFrom(exported.graph_def)
    meta_graph.saver_def.CopyFrom(exported.saver_def)
    meta_graph.collection_def[exported_graph.MAIN_OP_COLLECTION].node_list.value.append(
        exported.init_op)
    for key, signature in exported.signature_defs.items():
        meta_graph.signature_def[key].CopyFrom(signature)
    meta_graph.signature_def[exported_graph.INIT_OP_SIGNATURE].CopyFrom(
        exported_graph.init_op_signature(exported.init_op))
    meta_graph.asset_file_def.extend(exported.asset_file_defs)
    meta_graph.object_graph_def.CopyFrom(saved_object_graph(objects, exported.names))
    model = saved_model_pb2.SavedModel(saved_model_schema_version=SCHEMA_VERSION,
                                       meta_graphs=[meta_graph])
    return model, exported.checkpoint, assets


def _asset_files(objects) -> dict[str, Path]:
    """Each asset's file by the name it gets under `assets/` (its base name, made unique)."""
    files: dict[str, Path] = {}
    for _, asset in objects.of_type(Asset):
        source = Path(asset.path)
        if not source.is_file():
            raise FileNotFoundError(f"Cannot save asset {asset.path!r}: no such file")
        name, count = source.name, 0
        while name in files:
            count += 1
            name = f"{source.stem}_{count}{source.suffix}"
        files[name] = source
    return files


# ----------------------------------------------------------------------------- files

def _check_destination(destination: Path) -> None:
    if destination.exists() and not destination.is_dir():
        raise FileExistsError(f"Cannot save a SavedModel to {destination}: it is a file")
    if destination.is_dir():
        foreign = sorted(entry.name for entry in destination.iterdir()
                         if entry.name not in SAVED_MODEL_ENTRIES)
        if foreign:
            raise FileExistsError(
                f"Cannot save a SavedModel to {destination}: the directory holds other files "
                f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}), which saving "
                "would delete. Save to a new or empty directory, or to an existing SavedModel "
                "directory (which is replaced).")


def _write(destination: Path, model: saved_model_pb2.SavedModel,
           checkpoint: Mapping, assets: Mapping[str, Path]) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    temp = leftover_name(destination, "tmp")
    try:
        with naming_full_disk(destination):
            _fill(temp, model, checkpoint, assets)
            replace_directory(temp, destination)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def _fill(temp: Path, model: saved_model_pb2.SavedModel, checkpoint: Mapping,
          assets: Mapping[str, Path]) -> None:
    """Write the model's files into the new directory `temp`."""
    temp.mkdir()
    write_bundle(temp / "variables" / "variables", checkpoint)
    if assets:
        (temp / "assets").mkdir()
    with AtomicFiles() as files:
        for name, source in assets.items():
            files.write(temp / "assets" / name, lambda out, source=source: _copy(source, out))
        files.write(temp / "saved_model.pb",
                    lambda out: out.write(model.SerializeToString(deterministic=True)))
        files.commit()
    write_fingerprint(temp, model)


def _copy(source: Path, out) -> None:
    with open(source, "rb") as data:
        while chunk := data.read(1 << 20):
            out.write(chunk)
