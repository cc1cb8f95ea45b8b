"""Statistics of a model's weights for the viewer's side panel: min, max, mean and standard
deviation of each variable's value, read from the model's checkpoint when the page is written
(the page then needs no checkpoint). Which checkpoint key holds which variable comes from
`static_shapes` (the object graphs of the SavedModel and of its checkpoint)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.tensor_bundle import BundleReader, index_path
from savedmodel.static_shapes import Variable


@dataclass(frozen=True)
class WeightStats:
    """A variable's value summarized, or `error` saying why it cannot be (no checkpoint, not
    in it, strings)."""

    stats: dict[str, float | str] | None = None
    error: str | None = None


def weight_stats(prefix: Path | None, variables: list[Variable]) -> dict[str, WeightStats]:
    """WeightStats by variable key, reading each value once from the checkpoint at `prefix`."""
    if prefix is None or not index_path(prefix).is_file():
        return {v.key: WeightStats(error="no checkpoint") for v in variables}
    try:
        reader = BundleReader(prefix)
    except SavedModelError as err:
        return {v.key: WeightStats(error=str(err)) for v in variables}
    return {v.key: _stats_of(reader, v) for v in variables}


def _stats_of(reader: BundleReader, variable: Variable) -> WeightStats:
    """A TensorFlow 2 variable's value is under the key its object graph gives; a TensorFlow 1
    variable's under its name (what `tf.compat.v1.train.Saver` writes)."""
    key = variable.checkpoint_key or (variable.name if variable.name in reader.entries else None)
    if key is None:
        return WeightStats(error="not in the checkpoint")
    try:
        value = reader.read(key)
    except SavedModelError as err:
        return WeightStats(error=str(err))
    if value.dtype.kind not in "biuf" and value.dtype.name != "bfloat16":
        return WeightStats(error=f"no statistics for {variable.dtype} values")
    if value.size == 0:
        return WeightStats(error="no values")
    data = value.astype(np.float64)
    found = {"min": data.min(), "max": data.max(), "mean": data.mean(), "std": data.std()}
    return WeightStats({k: float(v) if math.isfinite(v) else str(v) for k, v in found.items()})
