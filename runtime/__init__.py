"""File readers and the two engines; imports only numpy, protobuf, `savedmodel.protos` and the
native extension.

`load(export_dir)` returns a Model whose `signatures[name](**feeds)` run on the native engine
when it has every op, else on numpy (`engine=` picks one);
`load_graph(path)` does the same for a GraphDef file (`.pb`, `.pbtxt`), signature "serving_default";
`with time_limit(seconds):` bounds the runs inside the block (runtime.deadline);
`load(export_dir, limits=Limits(...))` raises the bounds on what a model's files may claim.
Ragged and sparse signature outputs and function arguments are `RaggedTensor` and
`SparseTensor` values (their numpy components).

The names below are imported on first use: `from savedmodel.runtime import load` then costs
only the engine a model runs on, which is most of a short-lived process's start-up.
"""
from __future__ import annotations

import importlib

_HOMES = {
    "DeadlineExceededError": "savedmodel.runtime.deadline",
    "time_limit": "savedmodel.runtime.deadline",
    "FileAccessError": "savedmodel.runtime.errors",
    "Limits": "savedmodel.runtime.limits",
    "load_graph": "savedmodel.runtime.graph_file",
    "Model": "savedmodel.runtime.loader",
    "load": "savedmodel.runtime.engines",
    "RaggedTensor": "savedmodel.runtime.structure",
    "SparseTensor": "savedmodel.runtime.structure",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
