"""Freeze reference SavedModels into TensorFlow 1 style GraphDef files (`<name>.pb`), and record
TensorFlow's outputs for the recorded inputs (`<name>.io.npz`, keys `in/<placeholder>` and
`out/<node>` named as the native engine's synthesized `serving_default` signature names them).

Needs TensorFlow 2.21. Usage: python tests/data/frozen/make_frozen.py
"""
from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

HERE = Path(__file__).resolve().parent
MODELS = HERE.parent / "reference" / "savedmodels"


def freeze(name: str) -> None:
    loaded = tf.saved_model.load(str(MODELS / name))  # kept alive: the function reads its variables
    function = loaded.signatures["serving_default"]
    frozen = convert_variables_to_constants_v2(function)
    graph = frozen.graph.as_graph_def()
    (HERE / f"{name}.pb").write_bytes(graph.SerializeToString(deterministic=True))
    stored = np.load(MODELS / f"{name}.io.npz")
    feeds = {k.rsplit("/", 1)[1]: stored[k] for k in stored.files if k.startswith("sig/serving_default/in/")}
    placeholders = [n.name for n in graph.node if n.op == "Placeholder"]
    read = {i.lstrip("^").split(":")[0] for n in graph.node for i in n.input}
    sinks = [n.name for n in graph.node if n.name not in read and n.op not in ("NoOp", "Const", "Placeholder")]
    assert len(placeholders) == len(feeds) == 1, (placeholders, list(feeds))
    outputs = frozen(tf.constant(next(iter(feeds.values()))))
    del loaded
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    assert len(sinks) == len(outputs), (sinks, outputs)
    arrays = {f"in/{placeholders[0]}": next(iter(feeds.values()))}
    arrays.update({f"out/{sink}": np.asarray(value) for sink, value in zip(sinks, outputs)})
    np.savez(HERE / f"{name}.io.npz", **arrays)
    print(name, placeholders, sinks)


if __name__ == "__main__":
    for model in ("keras_mlp", "keras_cnn"):
        freeze(model)
