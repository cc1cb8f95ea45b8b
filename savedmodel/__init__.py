"""savedmodel: TensorFlow-format graphs, SavedModels and checkpoints without TensorFlow.

This package is the parent of `savedmodel.runtime`, which servers import on its own, so this
module must stay cheap: it imports none of the project at import time. The authoring API
(`sm.Variable`, `sm.Module`, `sm.train`, `sm.function`, `sm.constant` and the other op
functions, the dtypes, `sm.nn`/`sm.math`/`sm.random`, ...) is imported on first use, through the
module `__getattr__`. Names follow TensorFlow's; `sm.print` is `tf.print`.
"""
import importlib
import os

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.isfile(os.path.join(_CHECKOUT, "pyproject.toml")) and os.path.isfile(
        os.path.join(_CHECKOUT, "runtime", "__init__.py")):
    # A source checkout: pyproject maps savedmodel.runtime, .protos and .cli to the folders
    # runtime/, protos/ and cli/ beside this one. Python started in the checkout's root imports
    # this folder as `savedmodel` (the current directory comes first on sys.path), shadowing any
    # installed copy, so the package also searches the root for its subpackages: the README's
    # snippets then run from the root whether the package was installed editable or not.
    __path__.append(_CHECKOUT)

_LAZY = {
    "Module": ("savedmodel.module", "Module"),
    "Variable": ("savedmodel.variables", "Variable"),
    "train": ("savedmodel.train", None),
    "saved_model": ("savedmodel.saved_model", None),
    "save": ("savedmodel.saved_model.saving", "save"),
    "load": ("savedmodel.saved_model.loading", "load"),
    "Tensor": ("savedmodel.tensor", "Tensor"),
    "TensorShape": ("savedmodel.shapes", "TensorShape"),
    "TensorSpec": ("savedmodel.tensor_spec", "TensorSpec"),
    "TensorArray": ("savedmodel.ops.tensor_array_ops", "TensorArray"),
    "autograph": ("savedmodel.autograph", None),
    "compat": ("savedmodel.compat", None),
    "function": ("savedmodel.polymorphic_function", "function"),
    "name_scope": ("savedmodel.scopes", "name_scope"),
    "executing_eagerly": ("savedmodel.context", "executing_eagerly"),
    "convert_to_tensor": ("savedmodel.op_builder", "convert_to_tensor"),
    **{name: ("savedmodel.ops.control_flow_ops", name) for name in (
        "cond", "switch_case", "while_loop")},
    "print": ("savedmodel.ops.logging_ops", "print_"),
    "config": ("savedmodel.config", None),
    "dtypes": ("savedmodel.dtypes", None),
    "errors": ("savedmodel.errors", None),
    "math": ("savedmodel.ops.math_ops", None),
    "nn": ("savedmodel.ops.nn_ops", None),
    "random": ("savedmodel.ops.random_ops", None),
    **{name: ("savedmodel.dtypes", name) for name in (
        "bfloat16", "bool", "complex64", "complex128", "double", "float16", "float32",
        "float64", "half", "int8", "int16", "int32", "int64", "resource", "string", "uint8",
        "uint16", "uint32", "uint64", "variant")},
    **{name: ("savedmodel.ops.array_ops", name) for name in (
        "concat", "constant", "expand_dims", "eye", "fill", "gather", "identity", "ones",
        "ones_like", "rank", "reshape", "shape", "size", "squeeze", "stack", "tile",
        "transpose", "where", "zeros", "zeros_like")},
    **{name: ("savedmodel.ops.math_ops", name) for name in (
        "abs", "add", "argmax", "argmin", "cast", "divide", "equal", "exp", "floordiv",
        "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_not",
        "logical_or", "matmul", "maximum", "minimum", "multiply", "negative", "not_equal",
        "pow", "range", "reduce_all", "reduce_any", "reduce_max", "reduce_mean", "reduce_min",
        "reduce_prod", "reduce_sum", "round", "sigmoid", "sign", "sqrt", "square", "subtract",
        "tanh", "truediv")},
}


def __getattr__(name: str):
    if name == "__version__":
        from importlib.metadata import version
        return version("savedmodel")
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
