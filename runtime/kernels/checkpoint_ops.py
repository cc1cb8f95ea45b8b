"""Ops of saver graphs: saving tensors to a checkpoint, merging shards, restoring.

Every checkpoint prefix is checked against the execution context's file-access policy
(runtime.file_access): a loaded model restores from its own `variables/` and writes only where
the caller lets it."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.bundle_writer import merge_bundles, write_bundle
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel
from savedmodel.runtime.tensor_bundle import BundleReader, index_path
from savedmodel.runtime.tensor_proto import string_text


def _prefix(ctx, prefix, op: str, write: bool = False) -> str:
    """A checkpoint prefix the context lets `op` read (or write): the prefix and its index
    file (which could be a link elsewhere) are checked; a reader checks each data shard too."""
    text = string_text(prefix)
    ctx.file_access.check(text, op, write)
    ctx.file_access.check(index_path(text), op, write)
    return text


@kernel("RestoreV2", context=True, stateful=True)
def restore_v2(ctx, prefix, tensor_names, shape_and_slices, *, dtypes, **_):
    reader = BundleReader(_prefix(ctx, prefix, "RestoreV2"),
                          confine=lambda path, _: ctx.file_access.check(path, "RestoreV2"))
    names = [string_text(n) for n in np.asarray(tensor_names).ravel()]
    slices = [string_text(s) for s in np.asarray(shape_and_slices).ravel()]
    check(len(names) == len(dtypes) == len(slices),
          f"RestoreV2: {len(names)} names, {len(slices)} slice specs and {len(dtypes)} dtypes")
    check(not any(slices), "RestoreV2: restoring partitioned slices is not supported")
    values = []
    for name, dtype in zip(names, dtypes):
        value = reader.read(name)
        check(dtype.is_string and value.dtype == object or value.dtype == dtype.numpy,
              f"RestoreV2: checkpoint tensor {name!r} is {value.dtype}, the graph expects {dtype.name}")
        values.append(value)
    return tuple(values)


@kernel("SaveV2", context=True, stateful=True)
def save_v2(ctx, prefix, tensor_names, shape_and_slices, *tensors, dtypes=(), **_):
    names = [string_text(n) for n in np.asarray(tensor_names).ravel()]
    slices = [string_text(s) for s in np.asarray(shape_and_slices).ravel()]
    check(len(names) == len(slices) == len(tensors),
          f"SaveV2: {len(names)} names, {len(slices)} slice specs and {len(tensors)} tensors")
    check(not dtypes or len(dtypes) == len(tensors),
          f"SaveV2: {len(dtypes)} dtypes for {len(tensors)} tensors")
    check(not any(slices), "SaveV2: saving partitioned slices is not supported")
    check(len(set(names)) == len(names), "SaveV2: tensor names must be unique")
    try:
        write_bundle(_prefix(ctx, prefix, "SaveV2", write=True), dict(zip(names, tensors)))
    except (TypeError, ValueError) as err:
        raise KernelError(f"SaveV2: {err}") from None
    return ()


@kernel("MergeV2Checkpoints", context=True, stateful=True)
def merge_v2_checkpoints(ctx, checkpoint_prefixes, destination_prefix, *, delete_old_dirs=True,
                         allow_missing_files=False, **_):
    """The sources are deleted once merged, so they must be writable as well."""
    merge_bundles([_prefix(ctx, p, "MergeV2Checkpoints", write=True)
                   for p in np.asarray(checkpoint_prefixes).ravel()],
                  _prefix(ctx, destination_prefix, "MergeV2Checkpoints", write=True), delete_old_dirs=delete_old_dirs,
                  allow_missing=allow_missing_files)
    return ()
