"""Ragged and sparse (composite) values at a model's edges, and functions no signature needs.

Models were made with TensorFlow by tests/data/models/make_models_sparse.py: ragged_rows and
sparse_matmul (composite signature inputs, which TensorFlow lists as flat components and the
corpus tests feed), unused_function (a method needing Dilation2D, which neither engine has),
and composite/composite_outputs (ragged and sparse signature outputs, recorded as components).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import DATA, NUMPY_ONLY, sqrt_model, with_op_renamed
from savedmodel.protos import struct_pb2
from savedmodel.runtime import RaggedTensor, SparseTensor, load, native, registry, structure
from savedmodel.runtime.dtypes import from_name
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.feeds import FeedError
from savedmodel.runtime.object_graph import flatten_args
from test_runtime_corpus import assert_matches

MODELS = DATA / "models"
COMPOSITE = DATA / "composite" / "composite_outputs"


def _io(path) -> dict:
    return dict(np.load(f"{path}.io.npz"))


def _side(io: dict, signature: str, side: str) -> dict:
    prefix = f"sig/{signature}/{side}/"
    return {k[len(prefix):]: v for k, v in io.items() if k.startswith(prefix)}


def _components(value) -> list[np.ndarray]:
    return value.components() if isinstance(value, (RaggedTensor, SparseTensor)) else [value]


@pytest.mark.parametrize("signature, kind", [("doubled", RaggedTensor), ("reordered", SparseTensor)])
def test_composite_signature_outputs_give_tensorflows_components(signature, kind):
    io = _io(COMPOSITE)
    outputs = load(COMPOSITE).signatures[signature](**_side(io, signature, "in"))
    composite = [v for v in outputs.values() if isinstance(v, kind)]
    assert len(composite) == 1
    if kind is SparseTensor:
        np.testing.assert_array_equal(composite[0].to_dense(), outputs["dense"])
    flat = {f"{key}/{i}": c for key, value in outputs.items() for i, c in enumerate(_components(value))}
    assert_matches(flat, _side(io, signature, "out"), f"composite_outputs:{signature}")


@pytest.mark.parametrize("engine", ["numpy", pytest.param("native", marks=pytest.mark.skipif(
    not native.available(), reason="the native engine is not built in this installation"))])
def test_ragged_values_go_into_object_graph_functions(engine):
    io = _io(MODELS / "ragged_rows")
    feeds = _side(io, "rows", "in")
    model = load(MODELS / "ragged_rows", engine=engine)
    outputs = model.functions["rows"](RaggedTensor(feeds["x"], (feeds["x_1"],)))
    assert_matches(outputs, _side(io, "rows", "out"), "ragged_rows.rows")


def test_sparse_values_go_into_object_graph_functions():
    io = _io(MODELS / "sparse_matmul")
    feeds = _side(io, "matmul", "in")
    model = load(MODELS / "sparse_matmul", engine="numpy")
    outputs = model.functions["matmul"](SparseTensor(feeds["x"], feeds["x_1"], feeds["x_2"]))
    assert_matches(outputs, _side(io, "matmul", "out"), "sparse_matmul.matmul")


def test_ragged_values_come_out_of_object_graph_functions():
    io = _io(COMPOSITE)
    feeds = _side(io, "doubled", "in")
    result = load(COMPOSITE).functions["doubled"](RaggedTensor(feeds["x"], (feeds["x_1"],)))
    want = _side(io, "doubled", "out")
    np.testing.assert_array_equal(result["doubled"].flat_values, want["doubled/0"])
    np.testing.assert_array_equal(result["doubled"].nested_row_splits[0], want["doubled/1"])


@pytest.mark.parametrize("value, pattern", [
    (np.ones(3, np.float32), "expects a RaggedTensor"),
    (RaggedTensor(np.ones(2, np.float32), ()), "expects 1 row splits"),
    (RaggedTensor(np.ones(2, np.float32), (np.array([[0, 2]]),)), "shape"),
])
def test_a_value_that_does_not_fit_a_ragged_argument_is_refused(value, pattern):
    model = load(MODELS / "ragged_rows", engine="numpy")
    with pytest.raises(FeedError, match=pattern):
        model.functions["rows"](value)


def test_a_type_spec_the_runtime_cannot_pass_fails_only_when_called():
    proto = struct_pb2.StructuredValue(type_spec_value=struct_pb2.TypeSpecProto(
        type_spec_class=struct_pb2.TypeSpecProto.DATA_ITERATOR_SPEC, type_spec_class_name="IteratorSpec",
        num_flat_components=1))
    spec = structure.decode(proto, "test")
    assert spec == structure.OtherTypeSpec("IteratorSpec", 1)
    with pytest.raises(FeedError, match="IteratorSpec values"):
        flatten_args(spec, object(), [], "adapt_step")


def test_a_function_no_signature_needs_does_not_stop_loading():
    """unused_function's methods need Dilation2D and IteratorGetNext, which neither engine has:
    "auto" still takes the native engine for its signatures, says which methods it cannot call,
    and calling one names the op, the node and the function."""
    model = load(MODELS / "unused_function")
    io = _io(MODELS / "unused_function")
    assert_matches(model.signatures["serve"](**_side(io, "serve", "in")), _side(io, "serve", "out"),
                   "unused_function:serve")
    if registry.is_supported("Dilation2D") or "Dilation2D" in native.ops():
        pytest.skip("an engine has Dilation2D now: choose another missing op")
    if native.available():
        assert model.engine == "native"
        assert "__inference_adapt_step" in model.engine_reason and "Dilation2D" in model.engine_reason
        assert model.unavailable and all(name.startswith(("__inference_adapt_step", "__inference_dilate"))
                                         for name in model.unavailable)
    with pytest.raises(registry.UnsupportedOpError) as caught:
        model.functions["dilate"](np.zeros((1, 5, 5, 1), np.float32))
    assert re.search(r"Dilation2D.*node ['\"]Dilation2D['\"].*__inference_dilate", str(caught.value))


@pytest.mark.skipif(not native.available(), reason="the native engine is not built")
def test_auto_keeps_the_numpy_engine_when_only_it_can_run_a_method(monkeypatch):
    """A method needing an op only the numpy engine has keeps "auto" on the numpy engine, so
    every method stays callable; the reason names the op and the methods."""
    monkeypatch.setattr(registry, "is_supported", lambda op: op == "IteratorGetNext")
    model = load(MODELS / "unused_function")
    assert model.engine == "numpy"
    assert "IteratorGetNext" in model.engine_reason and "__inference_adapt_step" in model.engine_reason


def test_ragged_rows_round_trip_through_variants():
    """What tf.map_fn does to a ragged tensor of ragged rank 2: encode each row (ragged rank 1),
    split the variant vector into a list and stack it again, decode."""
    to_variant = registry.lookup("RaggedTensorToVariant").fn
    from_variant = registry.lookup("RaggedTensorFromVariant").fn
    outer, inner = np.array([0, 1, 1, 3]), np.array([0, 2, 2, 5])
    values = np.arange(5, dtype=np.float32)
    (variant,) = to_variant(outer, inner, values, RAGGED_RANK=2, batched_input=True)
    assert variant.shape == (3,) and [len(item.nested_row_splits) for item in variant.items] == [1, 1, 1]
    stacked = type(variant).stack(list(variant.rows()))
    dtypes = {"Tvalues": from_name("float32"), "Tsplits": from_name("int64")}
    got = from_variant(stacked, input_ragged_rank=-1, output_ragged_rank=2, **dtypes)
    for want, part in zip((outer, inner, values), got):
        np.testing.assert_array_equal(part, want)
        assert part.dtype == want.dtype
    with pytest.raises(KernelError, match="not a variant"):
        from_variant(values, input_ragged_rank=0, output_ragged_rank=1, **dtypes)
    with pytest.raises(KernelError, match="output_ragged_rank"):
        from_variant(stacked, input_ragged_rank=0, output_ragged_rank=2, **dtypes)


@pytest.mark.parametrize("engine", ["numpy", "native"])
def test_a_map_over_no_ragged_rows_gives_an_empty_result(engine):
    """tf.map_fn over a ragged batch of no rows stacks an empty list of variants; TensorFlow
    gives no rows (padded shape [0, 0], splits [0])."""
    if engine == "native" and not native.available():
        pytest.skip("the native engine is not built in this installation")
    model = load(MODELS / "ragged_map", engine=engine)
    out = model.signatures["scaled"](x=np.zeros(0, np.float32), x_1=np.array([0], np.int64))
    assert out["padded"].shape == (0, 0) and out["padded"].dtype == np.float32
    np.testing.assert_array_equal(out["splits"], np.array([0], np.int64))


@pytest.mark.parametrize("name", sorted(NUMPY_ONLY))
def test_ops_a_signature_needs_are_not_called_unused(name):
    """A model the native engine cannot run yet falls back for ops its signatures call, not
    for ops of functions no signature calls."""
    reason = load(MODELS / name).engine_reason
    assert "no kernel for" in reason and "no signature calls" not in reason


def test_an_op_a_built_signature_needs_is_not_called_unused(tmp_path):
    """The same on a model built here, whatever the native engine gains: a signature calling
    Dawsn, which the numpy engine has and the native engine lacks (Sqrt renamed, same attrs)."""
    model = with_op_renamed(sqrt_model(tmp_path / "sqrt"), tmp_path / "dawsn", "Sqrt", "Dawsn")
    assert "Dawsn" not in native.ops(), "the native engine has Dawsn now: pick another op it lacks"
    reason = load(model).engine_reason
    assert "no kernel for" in reason and "no signature calls" not in reason


def test_a_function_taking_a_dataset_iterator_does_not_stop_loading():
    """A Keras adapt_step takes an iterator (an IteratorSpec): such a method is an error only
    when called."""
    model = load(MODELS / "unused_function", engine="numpy")
    with pytest.raises(FeedError, match="IteratorSpec values"):
        model.functions["adapt_step"](iter([np.ones(2, np.float32)]))


def test_a_tensorflow1_sparse_placeholder_takes_a_sparse_tensor():
    path = DATA / "composite" / "tf1_sparse"
    io = _io(path)
    feeds = _side(io, "serving_default", "in")
    model = load(path)
    outputs = model.signatures["serving_default"](x=SparseTensor(*(feeds[f"x/{i}"] for i in range(3))))
    flat = {f"{key}/{i}": c for key, value in outputs.items() for i, c in enumerate(_components(value))}
    assert_matches(flat, _side(io, "serving_default", "out"), "tf1_sparse")
    with pytest.raises(FeedError, match="expects a SparseTensor"):
        model.signatures["serving_default"](x=np.ones((2, 4), np.float32))
    with pytest.raises(FeedError, match="shape"):
        model.signatures["serving_default"](x=SparseTensor(np.zeros((1, 3), np.int64), np.ones(1, np.float32),
                                                           np.array([4, 4, 4])))
