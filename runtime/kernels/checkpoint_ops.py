"""Ops of the restore path of saver graphs: reading tensors from a checkpoint."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel
from savedmodel.runtime.tensor_bundle import BundleReader


def _text(value) -> str:
    item = np.asarray(value).item()
    return item.decode("utf-8", "surrogateescape") if isinstance(item, bytes) else str(item)


@kernel("RestoreV2", stateful=True)
def restore_v2(prefix, tensor_names, shape_and_slices, *, dtypes, **_):
    reader = BundleReader(_text(prefix))
    names = [_text(n) for n in np.asarray(tensor_names).ravel()]
    slices = [_text(s) for s in np.asarray(shape_and_slices).ravel()]
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
