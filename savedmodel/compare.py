"""Running a SavedModel's signatures on our runtime and on TensorFlow, and measuring how far
the outputs differ. TensorFlow is imported only here, only when asked, and only if installed."""
from __future__ import annotations

import importlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from savedmodel.runtime import load
from savedmodel.runtime.atomic_files import write_file
from savedmodel.runtime.graph_file import SIGNATURE as GRAPH_SIGNATURE
from savedmodel.runtime.graph_file import is_graph_file
from savedmodel.runtime.errors import UnknownSignatureError
from savedmodel.runtime.saved_model_file import read_saved_model
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.dtypes import from_name
from savedmodel.runtime.feeds import to_input


@dataclass(frozen=True)
class OutputDifference:
    key: str
    dtype: str
    shape: tuple
    max_abs: float
    max_rel: float
    same_dtype_and_shape: bool
    within: bool


def random_feeds(signature, batch: int, seed: int) -> dict[str, np.ndarray]:
    """Inputs for every input of a signature: unknown dimensions become `batch`; floats are
    standard normal, integers in [0, 10), bools random, strings empty."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for key, spec in signature.inputs.items():
        dtype = from_name(spec.dtype)
        shape = tuple(batch if d is None else d for d in (spec.shape or ()))
        if dtype.is_string:
            feeds[key] = np.full(shape, b"", dtype=object)
        elif dtype.numpy.kind == "b":
            feeds[key] = rng.integers(0, 2, shape).astype(bool)
        elif dtype.numpy.kind in "iu":
            feeds[key] = rng.integers(0, 10, shape).astype(dtype.numpy)
        else:
            feeds[key] = rng.standard_normal(shape).astype(dtype.numpy)
    return feeds


def import_tensorflow():
    """TensorFlow, or None when it is not installed."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        return importlib.import_module("tensorflow")
    except ImportError:
        return None


def run_tensorflow(tf, export_dir: Path, signature: str, feeds: dict) -> dict[str, np.ndarray]:
    if is_graph_file(export_dir):
        return _run_tensorflow_graph(tf, Path(export_dir), signature, feeds)
    loaded = tf.saved_model.load(str(export_dir))
    outputs = loaded.signatures[signature](**{k: tf.constant(v) for k, v in feeds.items()})
    return {k: v.numpy() for k, v in outputs.items()}


def _run_tensorflow_graph(tf, path: Path, signature: str, feeds: dict) -> dict[str, np.ndarray]:
    """A GraphDef file's signature (runtime.graph_file) run by a TensorFlow 1 Session."""
    model = read_saved_model(path)
    found = model.meta_graphs[0].signature_def.get(signature)
    if found is None:
        raise UnknownSignatureError(f"no signature {signature!r}; available: {GRAPH_SIGNATURE}")
    graph_def = tf.compat.v1.GraphDef.FromString(model.meta_graphs[0].graph_def.SerializeToString())
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph) as session:
        values = session.run({k: v.name for k, v in found.outputs.items()},
                             {found.inputs[k].name: v for k, v in feeds.items()})
    return {k: np.asarray(v) for k, v in values.items()}


def differences(ours: dict, theirs: dict, atol: float, rtol: float) -> list[OutputDifference]:
    found = []
    for key in sorted(ours.keys() | theirs.keys()):
        a, b = ours.get(key), theirs.get(key)
        if a is None or b is None:
            found.append(OutputDifference(key, "missing", (), float("inf"), float("inf"), False, False))
            continue
        same = a.dtype == b.dtype and a.shape == b.shape
        max_abs, max_rel, close = _distance(a, b, atol, rtol) if same else (float("inf"), float("inf"), False)
        found.append(OutputDifference(key, str(a.dtype), a.shape, max_abs, max_rel, same, same and close))
    return found


def _distance(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> tuple[float, float, bool]:
    if a.dtype == object or a.dtype.kind == "b":
        equal = bool(np.array_equal(a, b))
        return (0.0 if equal else float("inf")), (0.0 if equal else float("inf")), equal
    wide_a, wide_b = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), b.astype(
        np.complex128 if b.dtype.kind == "c" else np.float64)
    if a.size == 0:
        return 0.0, 0.0, True
    with np.errstate(all="ignore"):
        diff = np.abs(wide_a - wide_b)
        # NaN against NaN, and an infinity against the same infinity (whose difference is NaN),
        # agree.
        same = (np.isnan(wide_a) & np.isnan(wide_b)) | ((wide_a == wide_b) & np.isinf(wide_a))
        diff = np.where(same, 0.0, diff)
        rel = np.where(diff == 0, 0.0, diff / np.maximum(np.abs(wide_b), np.finfo(np.float64).tiny))
    close = bool(np.all((diff <= atol + rtol * np.abs(wide_b)) | same))
    return float(np.max(diff)), float(np.max(rel)), close


def run_ours(export_dir: Path, signature: str, feeds: dict, tags, allow_file_access: bool = False,
             limits: Limits = DEFAULT, engine: str = "auto") -> dict[str, np.ndarray]:
    """One signature's outputs on a freshly loaded model (as TensorFlow's side loads it), so
    that a signature that changes variables does not change what the next one sees."""
    model = load(export_dir, tags, allow_file_access=allow_file_access, limits=limits, engine=engine)
    return model.signatures[signature](**feeds)


def save_inputs(path: Path, feeds: dict[str, dict], signatures) -> None:
    """Write the inputs each signature is fed (`feeds[signature][input]`, converted as the
    signature converts them) to an .npz file, keyed `signature/input`, so that a later
    `compare --load-inputs` (or `run --inputs`) feeds exactly the same values; written
    atomically. Strings are stored as fixed-width bytes (object arrays need pickle)."""
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path}: no directory {str(path.parent)!r} to write the inputs to")
    arrays = {}
    for name, values in feeds.items():
        specs = signatures[name].inputs
        for key, value in values.items():
            array = to_input(value, from_name(specs[key].dtype), specs[key].shape,
                             f"input {key!r} of signature {name!r}")
            arrays[f"{name}/{key}"] = array.astype(bytes) if array.dtype == object else array
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_file(path, lambda out: out.write(buffer.getvalue()))


def saved_inputs(loaded: dict[str, np.ndarray], signature: str, inputs) -> dict[str, np.ndarray]:
    """The arrays of a `save_inputs` file for one signature's inputs: keyed `signature/input`,
    or by the bare input name (which then applies to every signature with that input)."""
    found = {key: value for key, value in loaded.items() if key in inputs}
    prefix = f"{signature}/"
    found.update({key[len(prefix):]: value for key, value in loaded.items()
                  if key.startswith(prefix) and key[len(prefix):] in inputs})
    return found
