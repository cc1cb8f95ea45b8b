"""Which engine runs a model: `load(dir, engine=...)`.

This module is what `from savedmodel.runtime import load` imports, and it imports each engine
only when it picks it: a model that runs on the native engine never imports the numpy engine
(its kernels, planner and executor), which keeps a Python process's start to first result short.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.limits import DEFAULT, Limits

ENGINES = ("auto", "native", "numpy")
"""What `load(engine=...)` accepts: "native" (the Rust engine, runtime.native), "numpy" (the
reference engine, runtime.loader), or "auto": native when it has a kernel for every op the
signatures need, numpy otherwise."""

log = logging.getLogger("savedmodel.runtime")


def load(export_dir: str | Path, tags: Iterable[str] = ("serve",), *, allow_file_access: bool = False,
         output_dir: str | Path | None = None, limits: Limits = DEFAULT, engine: str = "auto"):
    """Load the MetaGraphDef of `export_dir` tagged exactly `tags`.

    The model's file-system ops may read inside `export_dir` and `output_dir` and write inside
    `output_dir` only; `allow_file_access=True` lets them (and assets) use any file, as
    TensorFlow does. `limits` bounds what its files may make the numpy engine read, allocate or
    nest (see runtime.limits). `engine` picks the engine (see ENGINES); the model's `engine`
    attribute says which one runs it and `engine_reason` why, which "auto" also logs. A GraphDef
    file (`.pb`, `.pbtxt`) loads as `runtime.graph_file.load_graph` loads it."""
    if Path(export_dir).is_file():
        from savedmodel.runtime.graph_file import is_graph_file, load_graph
        if is_graph_file(export_dir):
            return load_graph(export_dir, engine=engine, allow_file_access=allow_file_access,
                              output_dir=output_dir, limits=limits)
    check_engine(engine)
    reason = "engine='numpy' was asked for"
    if engine == "native":
        from savedmodel.runtime import native
        return native.load_native(export_dir, tags, allow_file_access=allow_file_access, output_dir=output_dir)
    if engine == "auto":
        model, reason = try_native(export_dir, tags, allow_file_access, output_dir, limits)
        if model is not None:
            log.info("%s: native engine: %s", export_dir, model.engine_reason)
            return model
        log.info("%s: numpy engine: %s", export_dir, reason)
    from savedmodel.runtime.loader import load_numpy
    return load_numpy(export_dir, tags, allow_file_access=allow_file_access, output_dir=output_dir,
                      limits=limits, reason=reason)


def check_engine(engine: str) -> None:
    """ValueError unless `engine` is one of ENGINES."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")


def try_native(export_dir, tags, allow_file_access, output_dir, limits):
    """The model on the native engine, or None and why not."""
    from savedmodel.runtime import native
    if not native.available():
        return None, "the native engine is not built in this installation"
    if limits is not DEFAULT:
        return None, "custom limits apply to the numpy engine only"
    try:
        model = native.load_native(export_dir, tags, allow_file_access=allow_file_access,
                                   output_dir=output_dir)
    except native.NativeUnsupportedError as err:
        return None, f"the native engine has no kernel for {', '.join(err.ops)}"
    except (SavedModelError, OSError) as err:
        return None, f"the native engine could not load it ({err})"
    return _weigh_unavailable(model)


def _weigh_unavailable(model):
    """`model`, unless an object-graph function needs an op that only the numpy engine has:
    then None, so that every method the numpy engine could run stays callable. Ops neither
    engine has do not decide, and the reason names the functions they leave uncallable."""
    unavailable = model.unavailable
    if not unavailable:
        return model, ""
    from savedmodel.runtime.registry import is_supported
    ops = sorted({op for uses in unavailable.values() for op, _, _ in uses})
    functions = ", ".join(unavailable)
    numpy_has = [op for op in ops if is_supported(op)]
    if numpy_has:
        return None, (f"the native engine has no kernel for {', '.join(numpy_has)}, needed by "
                      f"functions no signature calls ({functions})")
    model.engine_reason += (f"; functions {functions} need {', '.join(ops)}, which neither engine "
                            "has, and cannot be called")
    return model, ""
