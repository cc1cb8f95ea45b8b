"""`sm.print`: printing as a graph op (StringFormat + PrintV2), so it prints on every call.

Python's `print` inside a traced function runs once, while tracing; `sm.print` adds ops that
run whenever the graph runs (and immediately when executing eagerly). Tensors are formatted by
the StringFormat kernel as TensorFlow formats them; other arguments become text of the template.
"""
from __future__ import annotations

import sys
from typing import Any

from savedmodel.op_builder import apply_op, apply_op_node, convert_to_tensor
from savedmodel.tensor import Tensor

__all__ = ["print_"]


def print_(*inputs: Any, output_stream: Any = None, summarize: int = 3, sep: str = " ",
           end: str = "\n", name: str | None = None):
    """`tf.print`: returns the PrintV2 operation in a graph (None eagerly). The stream is
    standard error unless `output_stream` is sys.stdout or a TensorFlow stream name."""
    pieces, tensors = [], []
    for value in inputs:
        if isinstance(value, Tensor) or hasattr(value, "_sm_tensor"):
            pieces.append("{}")
            tensors.append(convert_to_tensor(value))
        else:
            pieces.append(str(value))
    (message,) = apply_op("StringFormat", [tensors],
                          {"template": sep.join(pieces), "placeholder": "{}",
                           "summarize": summarize}, name="StringFormat")
    return apply_op_node("PrintV2", [message],
                         {"output_stream": _stream_name(output_stream), "end": end},
                         name=name or "PrintV2")


def _stream_name(stream: Any) -> str:
    if stream is None or stream is sys.stderr or stream is sys.__stderr__:
        return "stderr"
    if stream is sys.stdout or stream is sys.__stdout__:
        return "stdout"
    if isinstance(stream, str):
        return stream
    raise ValueError(f"Unsupported output stream or logging level {stream!r}: use sys.stderr, "
                     "sys.stdout or a stream name such as 'stderr' or 'file:///path'")
