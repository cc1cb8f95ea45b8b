"""savedmodel: TensorFlow-format graphs, SavedModels and checkpoints without TensorFlow.

This package is the parent of `savedmodel.runtime`, which servers import on its own, so this
module must stay cheap: it imports none of the project at import time. The authoring API
(`sm.Variable`, `sm.Module`, `sm.train`, ...) is imported on first use, through the module
`__getattr__`.
"""
import importlib

_LAZY = {
    "Module": ("savedmodel.module", "Module"),
    "Variable": ("savedmodel.variables", "Variable"),
    "train": ("savedmodel.train", None),
}


def __getattr__(name: str):
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'savedmodel' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
