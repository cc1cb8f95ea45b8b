"""Ops whose effect is output: printing and assertions."""
from __future__ import annotations

import sys

import numpy as np

from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_STREAMS = {"stderr": lambda ctx: ctx.stderr, "log(error)": lambda ctx: ctx.stderr,
            "log(warning)": lambda ctx: ctx.stderr, "log(info)": lambda ctx: ctx.stderr,
            "stdout": lambda ctx: sys.stdout}


@kernel("PrintV2", context=True, stateful=True)
def print_v2(ctx, message, *, output_stream="stderr", end="\n", **_):
    """Printing goes to the context's stderr (TensorFlow's default stream) unless the op
    asks for stdout; file streams (`file://...`) are written to stderr as well."""
    stream = _STREAMS.get(output_stream, lambda c: c.stderr)(ctx)
    text = np.asarray(message).item()
    stream.write((text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)) + end)
    stream.flush()
    return ()


@kernel("Assert", stateful=True)
def assert_(condition, *data, summarize=3, **_):
    if not bool(np.asarray(condition)):
        shown = "; ".join(_summary(np.asarray(d), summarize) for d in data)
        check(False, f"assertion failed: {shown}")
    return ()


def _summary(value: np.ndarray, summarize: int) -> str:
    flat = value.ravel()[:summarize].tolist()
    flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in flat]
    more = "..." if value.size > summarize else ""
    return (str(flat[0]) if value.ndim == 0 else f"{flat}{more}")
