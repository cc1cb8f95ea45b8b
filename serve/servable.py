"""One loaded version of one model, as the front ends call it.

`predict` checks a request against the signature before anything runs (input names, then each
input's dtype and shape, through the runtime's own conversion rules), runs the model on a
worker thread, never on the event loop, through the signature's Batcher when batching is on,
and keeps only the outputs the request asked for. `classify` and `regress` feed serialized
tf.Example protos to a signature with TensorFlow Serving's classify or regress method name.
"""
from __future__ import annotations

import asyncio
import functools
import threading
from concurrent.futures import Executor
from pathlib import Path

import numpy as np

from savedmodel.protos import meta_graph_pb2
from savedmodel.runtime import DeadlineExceededError, time_limit
from savedmodel.runtime.dtypes import from_name
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.feeds import FeedError, to_input
from savedmodel.serve.batching import Batcher, BatchingParameters
from savedmodel.serve.errors import ServingError, invalid

DEFAULT_SIGNATURE = "serving_default"
PREDICT_METHOD = "tensorflow/serving/predict"
CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"


class Servable:
    """A model version: `name`, `version`, `signature_defs()`, and the async calls."""

    def __init__(self, name: str, version: int, model, signature_defs: dict[str, meta_graph_pb2.SignatureDef],
                 executor: Executor, *, batching: BatchingParameters | None = None,
                 timeout: float | None = None):
        self.name = name
        self.version = version
        self.model = model
        self._signature_defs = signature_defs
        self._executor = executor
        self._batching = batching
        self._timeout = timeout
        self._batchers: dict[str, Batcher | None] = {}
        # The numpy engine's models are not made to be called from several threads at once.
        self._lock = None if getattr(model, "engine", "numpy") == "native" else threading.Lock()

    def signature_defs(self) -> dict[str, meta_graph_pb2.SignatureDef]:
        """The SignatureDefs by key (for model metadata), init-op signature left out."""
        return self._signature_defs

    def signature(self, signature_name: str | None):
        """The runtime signature named (serving_default when None or empty)."""
        name = signature_name or DEFAULT_SIGNATURE
        signature = self.model.signatures.get(name)
        if signature is None:
            raise invalid(f"Serving signature name: \"{name}\" not found in signature def "
                          f"(model {self.name} version {self.version} has: "
                          f"{', '.join(sorted(self.model.signatures)) or 'none'})")
        return signature

    async def predict(self, signature_name: str | None, inputs: dict[str, np.ndarray],
                      output_filter: list[str] | None = None) -> tuple[str, dict[str, np.ndarray]]:
        """(the signature name used, its outputs, only those in `output_filter` when given)."""
        signature = self.signature(signature_name)
        feeds = check_inputs(signature, inputs)
        wanted = _output_filter(signature, output_filter)
        outputs = await self._call(signature, feeds)
        return signature.name, outputs if wanted is None else {k: outputs[k] for k in wanted}

    async def classify(self, signature_name: str | None,
                       serialized_examples: list[bytes]) -> tuple[str, np.ndarray | None, np.ndarray | None]:
        """(signature name, classes [examples, n] as bytes or None, scores [examples, n] or None)."""
        signature = self._method_signature(signature_name, CLASSIFY_METHOD)
        outputs = await self._examples_call(signature, serialized_examples)
        classes, scores = outputs.get("classes"), outputs.get("scores")
        if classes is None and scores is None:
            raise ServingError("FAILED_PRECONDITION", f"signature {signature.name!r} has neither a "
                               "'classes' nor a 'scores' output")
        count = len(serialized_examples)
        return (signature.name, None if classes is None else _per_example(classes, count, "classes"),
                None if scores is None else _per_example(scores, count, "scores").astype(np.float32))

    async def regress(self, signature_name: str | None, serialized_examples: list[bytes]) -> tuple[str, np.ndarray]:
        """(signature name, one float per example)."""
        signature = self._method_signature(signature_name, REGRESS_METHOD)
        outputs = await self._examples_call(signature, serialized_examples)
        if "outputs" not in outputs:
            raise ServingError("FAILED_PRECONDITION", f"signature {signature.name!r} has no 'outputs' output")
        values = _per_example(outputs["outputs"], len(serialized_examples), "outputs")
        if values.ndim == 2 and values.shape[1] == 1:
            values = values[:, 0]
        if values.ndim != 1:
            raise ServingError("INVALID_ARGUMENT", f"signature {signature.name!r}: expected one regression "
                               f"value per example, got output shape {list(values.shape)}")
        return signature.name, values.astype(np.float32)

    def _method_signature(self, signature_name: str | None, method: str):
        signature = self.signature(signature_name)
        if signature.method_name != method:
            raise invalid(f"Expected {method.rsplit('/', 1)[1]} signature method_name to be {method}. "
                          f"Was: {signature.method_name} (signature {signature.name!r})")
        if list(signature.inputs) != ["inputs"]:
            raise ServingError("FAILED_PRECONDITION", f"signature {signature.name!r} must take one "
                               f"input, 'inputs' (serialized tf.Example), not {list(signature.inputs)}")
        return signature

    async def _examples_call(self, signature, serialized_examples: list[bytes]) -> dict:
        if not serialized_examples:
            raise invalid("Input is empty: no examples given")
        feeds = check_inputs(signature, {"inputs": np.array(serialized_examples, dtype=object)})
        return await self._call(signature, feeds)

    async def _call(self, signature, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        batcher = self._batcher(signature)
        if batcher is not None:
            return await batcher.submit(feeds)
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._run, signature, feeds)

    def _batcher(self, signature) -> Batcher | None:
        if self._batching is None:
            return None
        if signature.name not in self._batchers:
            batchable = all(spec.shape is None or (spec.shape and spec.shape[0] is None)
                            for spec in (*signature.inputs.values(), *signature.outputs.values()))
            self._batchers[signature.name] = Batcher(
                lambda feeds: self._run(signature, feeds), self._executor, self._batching,
                f"model {self.name} version {self.version} signature {signature.name!r}") if batchable else None
        return self._batchers[signature.name]

    def _run(self, signature, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Blocking: runs on a worker thread."""
        try:
            with time_limit(self._timeout):
                if self._lock is None:
                    outputs = signature(**feeds)
                else:
                    with self._lock:
                        outputs = signature(**feeds)
        except DeadlineExceededError as err:
            raise ServingError("DEADLINE_EXCEEDED", f"model {self.name} version {self.version}: {err}") from None
        except FeedError as err:
            raise invalid(str(err)) from None
        except SavedModelError as err:
            raise invalid(f"model {self.name} version {self.version}: {err}") from None
        for key, value in outputs.items():
            if not isinstance(value, np.ndarray):
                raise ServingError("UNIMPLEMENTED", f"signature {signature.name!r} output {key!r} is a "
                                   f"{type(value).__name__}, which has no place in a serving response")
        return outputs

    def __repr__(self) -> str:
        return f"<Servable {self.name} version {self.version}>"


def check_inputs(signature, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The inputs converted to the signature's dtypes, or INVALID_ARGUMENT naming what does not
    fit: a missing or unexpected name, a value of the wrong type or shape."""
    expected = signature.inputs
    if inputs.keys() != expected.keys():
        missing = sorted(expected.keys() - inputs.keys())
        extra = sorted(inputs.keys() - expected.keys())
        raise invalid(f"input size does not match signature {signature.name!r}: {len(inputs)}!={len(expected)} "
                      f"len({{{','.join(sorted(inputs))}}}) != len({{{','.join(expected)}}}). "
                      f"Sent extra: {{{','.join(extra)}}}. Missing but required: {{{','.join(missing)}}}.")
    feeds = {}
    for key, spec in expected.items():
        where = f"input {key!r} of signature {signature.name!r}"
        try:
            feeds[key] = to_input(inputs[key], _dtype(spec.dtype), spec.shape, where)
        except (FeedError, SavedModelError) as err:
            raise invalid(str(err)) from None
        except (ValueError, TypeError, OverflowError) as err:
            raise invalid(f"{where}: {err}") from None
    return feeds


@functools.lru_cache(maxsize=None)
def _dtype(name: str):
    """The runtime's dtype for a DataType name, looked up once per name (from_name lists the
    enum's names on every call)."""
    return from_name(name)


def _output_filter(signature, output_filter: list[str] | None) -> list[str] | None:
    if not output_filter:
        return None
    unknown = [name for name in output_filter if name not in signature.outputs]
    if unknown:
        raise invalid(f"output tensor alias not found in signature {signature.name!r}: {unknown[0]} "
                      f"Outputs expected to be in the set {{{','.join(signature.outputs)}}}.")
    return list(dict.fromkeys(output_filter))


def _per_example(array: np.ndarray, count: int, name: str) -> np.ndarray:
    if array.ndim == 0 or array.shape[0] != count:
        raise invalid(f"output {name!r} has shape {list(array.shape)}; expected {count} rows, one per example")
    return array


def read_signature_defs(export_dir: Path) -> dict[str, meta_graph_pb2.SignatureDef]:
    """The serve tag-set's SignatureDefs, the init-op pseudo-signature included: TensorFlow
    Serving's metadata lists every entry of the MetaGraphDef's map."""
    from savedmodel.runtime.saved_model_file import find_meta_graph, read_saved_model
    meta_graph = find_meta_graph(read_saved_model(export_dir), {"serve"}, str(export_dir))
    return dict(meta_graph.signature_def.items())
