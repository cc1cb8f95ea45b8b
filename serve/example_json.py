"""The `examples` (and shared `context`) of TensorFlow Serving's REST :classify and :regress
requests as serialized tf.Example protos, and classification results as its JSON.

A feature value is a number, a string, `{"b64": ...}`, or a list of one kind of them: whole
numbers become an int64_list, any decimal a float_list, text and b64 values a bytes_list.
Context features are added to every example and must not appear in one.
"""
from __future__ import annotations

import base64
import binascii

import numpy as np

from savedmodel.protos import example_pb2, feature_pb2
from savedmodel.serve.errors import invalid


def serialized_examples(document: dict) -> list[bytes]:
    examples = document.get("examples")
    if not isinstance(examples, list):
        raise invalid("Expecting 'examples' to be a list of objects (one per example)")
    context = document.get("context", {})
    if not isinstance(context, dict):
        raise invalid("Expecting 'context' to be an object of features")
    shared = _features(context, "context")
    out = []
    for i, example in enumerate(examples):
        if not isinstance(example, dict):
            raise invalid(f"Expecting example {i} of 'examples' to be an object of features")
        both = sorted(example.keys() & context.keys())
        if both:
            raise invalid(f"example {i}: features {both} also appear in 'context'")
        message = example_pb2.Example()
        for name, feature in (*shared, *_features(example, f"example {i}")):
            message.features.feature[name].CopyFrom(feature)
        out.append(message.SerializeToString(deterministic=True))
    return out


def _features(values: dict, where: str) -> list:
    return [(name, _feature(value, f"{where} feature {name!r}")) for name, value in values.items()]


def _feature(value, where: str) -> feature_pb2.Feature:
    items = value if isinstance(value, list) else [value]
    feature = feature_pb2.Feature()
    if not items:
        feature.float_list.SetInParent()
        return feature
    if all(isinstance(v, (str, dict)) for v in items):
        feature.bytes_list.value.extend(_bytes(v, where) for v in items)
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        if not all(-(1 << 63) <= v < (1 << 63) for v in items):
            raise invalid(f"{where}: an integer does not fit in int64")
        feature.int64_list.value.extend(items)
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        feature.float_list.value.extend(float(v) for v in items)
    else:
        kinds = sorted({type(v).__name__ for v in items})
        raise invalid(f"{where}: a feature is numbers, or strings, not {', '.join(kinds)}")
    return feature


def _bytes(value, where: str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if len(value) != 1 or not isinstance(value.get("b64"), str):
        raise invalid(f"{where}: an object value must be {{\"b64\": \"<base64 string>\"}}")
    try:
        return base64.b64decode(value["b64"], validate=True)
    except (binascii.Error, ValueError):
        raise invalid(f"{where}: Unable to base64 decode") from None


def classification_results(classes: np.ndarray | None, scores: np.ndarray | None) -> list:
    """[[[label, score], ...] per example]: labels "" without a classes output, scores 0 without
    a scores output (as ClassificationResult's defaults)."""
    shape = (classes if classes is not None else scores).shape
    if len(shape) != 2:
        raise invalid(f"classification outputs must be [examples, classes], got shape {list(shape)}")
    labels = ([["" for _ in range(shape[1])] for _ in range(shape[0])] if classes is None
              else [[_text(v) for v in row] for row in classes.tolist()])
    values = np.zeros(shape, np.float32).tolist() if scores is None else scores.tolist()
    return [[[label, score] for label, score in zip(row_labels, row_scores)]
            for row_labels, row_scores in zip(labels, values)]


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
