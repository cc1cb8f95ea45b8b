"""The runtime's behaviour on small hand-built SavedModels: non-strict execution, and a clear
error naming the cause for every kind of bad input."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from conftest import SAVEDMODELS
from savedmodel.protos import attr_value_pb2, meta_graph_pb2, node_def_pb2, saved_model_pb2, types_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime import load as load_any_engine
from savedmodel.runtime.errors import FileFormatError, SavedModelError
from savedmodel.runtime.feeds import to_input
from savedmodel.runtime.tensor_proto import from_numpy, shape_to_proto


def load(*args, **kwargs):
    """These tests pin the numpy engine's message texts; test_native_engine checks the native
    engine's errors (same classes, its own wording)."""
    return load_any_engine(*args, engine="numpy", **kwargs)


SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")


def _node(name: str, op: str, inputs=(), **attrs) -> node_def_pb2.NodeDef:
    node = node_def_pb2.NodeDef(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        node.attr[key].CopyFrom(value)
    return node


def _type(enum: int) -> attr_value_pb2.AttrValue:
    return attr_value_pb2.AttrValue(type=enum)


def _placeholder(name: str, shape=(None,)) -> node_def_pb2.NodeDef:
    return _node(name, "Placeholder", dtype=_type(types_pb2.DT_FLOAT),
                 shape=attr_value_pb2.AttrValue(shape=shape_to_proto(shape)))


def _const(name: str, value: np.ndarray) -> node_def_pb2.NodeDef:
    proto = from_numpy(value)
    return _node(name, "Const", value=attr_value_pb2.AttrValue(tensor=proto), dtype=_type(proto.dtype))


def _gather(name: str, params: str, indices: str) -> node_def_pb2.NodeDef:
    return _node(name, "GatherV2", [params, indices, "axis"], Tparams=_type(types_pb2.DT_FLOAT),
                 Tindices=_type(types_pb2.DT_INT32), Taxis=_type(types_pb2.DT_INT32),
                 batch_dims=attr_value_pb2.AttrValue(i=0))


def _write(path, nodes, outputs: dict[str, str], library_nodes=None):
    """A SavedModel with one signature 'sig' taking float32 vector 'x' (tensor x:0)."""
    model = saved_model_pb2.SavedModel(saved_model_schema_version=1)
    meta = model.meta_graphs.add()
    meta.meta_info_def.tags.append("serve")
    meta.graph_def.node.extend(nodes)
    if library_nodes is not None:
        function = meta.graph_def.library.function.add()
        function.signature.name = "inner"
        function.signature.input_arg.add(name="a", type=types_pb2.DT_FLOAT)
        function.signature.output_arg.add(name="b", type=types_pb2.DT_FLOAT)
        function.node_def.extend(library_nodes)
        function.ret["b"] = f"{library_nodes[-1].name}:z:0"
    signature = meta.signature_def["sig"]
    signature.inputs["x"].CopyFrom(meta_graph_pb2.TensorInfo(
        name="x:0", dtype=types_pb2.DT_FLOAT, tensor_shape=shape_to_proto((None,))))
    for key, tensor in outputs.items():
        signature.outputs[key].CopyFrom(meta_graph_pb2.TensorInfo(name=tensor, dtype=types_pb2.DT_FLOAT))
    path.mkdir(exist_ok=True)
    (path / "saved_model.pb").write_bytes(model.SerializeToString())
    return path


@pytest.fixture
def gather_model(tmp_path):
    nodes = [_placeholder("x"), _const("axis", np.array(0, np.int32)),
             _const("good", np.array([0], np.int32)), _const("bad", np.array([7], np.int32)),
             _gather("first", "x", "good"), _gather("broken", "x", "bad")]
    return _write(tmp_path / "gather", nodes, {"y": "first:0"})


def test_only_what_the_outputs_need_runs(gather_model):
    out = load(gather_model).signatures["sig"](x=np.array([3.0, 4.0], np.float32))
    np.testing.assert_array_equal(out["y"], np.array([3.0], np.float32))


def test_a_failing_kernel_names_the_node(tmp_path):
    nodes = [_placeholder("x"), _const("axis", np.array(0, np.int32)),
             _const("bad", np.array([7], np.int32)), _gather("broken", "x", "bad")]
    model = load(_write(tmp_path / "m", nodes, {"y": "broken:0"}))
    with pytest.raises(SavedModelError, match=r"node 'broken' \(op GatherV2\)"):
        model.signatures["sig"](x=np.array([3.0, 4.0], np.float32))


def test_node_names_that_look_like_code_are_only_names(tmp_path):
    """Plans run as generated Python (runtime.straight_line): node names and attrs must never
    reach its source. Nodes named like statements run, and a failure still names its node."""
    sneaky = "x'); import os; os._exit(3)  # "
    nodes = [_placeholder("x"), _const("axis", np.array(0, np.int32)),
             _const("good", np.array([1], np.int32)), _const("bad\n  raise SystemExit", np.array([7], np.int32)),
             _gather(sneaky, "x", "good"), _gather("broken", sneaky, "bad\n  raise SystemExit")]
    model = load(_write(tmp_path / "m", nodes, {"y": f"{sneaky}:0", "z": "broken:0"}))
    with pytest.raises(SavedModelError, match=r"node 'broken' \(op GatherV2\)"):
        model.signatures["sig"](x=np.array([3.0, 4.0], np.float32))
    fine = load(_write(tmp_path / "n", nodes[:-1], {"y": f"{sneaky}:0"}))
    out = fine.signatures["sig"](x=np.array([3.0, 4.0], np.float32))
    np.testing.assert_array_equal(out["y"], np.array([4.0], np.float32))


def test_unknown_signature_lists_the_available_ones(gather_model):
    with pytest.raises(KeyError, match="no signature 'nope'; available: sig"):
        load(gather_model).signatures["nope"]


@pytest.mark.parametrize("feeds, message", [
    ({}, r"signature 'sig' takes inputs x: DT_FLOAT \(None,\); missing \['x'\]"),
    ({"x": [1.0], "z": [2.0]}, r"unexpected \['z'\]"),
    ({"x": "text"}, r"input 'x' of signature 'sig' expects float32, got a non-numeric value"),
    ({"x": [[1.0]]}, r"input 'x' of signature 'sig' expects shape \(None,\) of float32, got shape \(1, 1\)"),
])
def test_bad_feeds_are_named(gather_model, feeds, message):
    with pytest.raises(SavedModelError, match=message):
        load(gather_model).signatures["sig"](**feeds)


def test_feeds_convert_as_tensorflow_converts(gather_model):
    out = load(gather_model).signatures["sig"](x=np.array([5, 6], np.int64))
    assert out["y"].dtype == np.float32 and out["y"].tolist() == [5.0]


def test_unsupported_op_names_op_node_and_function(tmp_path):
    call = _node("call", "PartitionedCall", ["x"], f=attr_value_pb2.AttrValue(
        func=attr_value_pb2.NameAttrList(name="inner")))
    inner = [_node("mystery", "FancyNewOp", ["a"])]
    model = load(_write(tmp_path / "m", [_placeholder("x"), call], {"y": "call:0"}, inner))
    with pytest.raises(SavedModelError, match=r"op 'FancyNewOp' \(node 'call/mystery' in function 'inner'.*\) is not supported"):
        model.signatures["sig"](x=np.array([1.0], np.float32))


def test_corrupt_variables_name_file_and_key(tmp_path):
    copy = tmp_path / "seeds"
    shutil.copytree(SEEDS, copy)
    shard = copy / "variables" / "variables.data-00000-of-00001"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(FileFormatError, match=r"variables\.index: tensor '.*'.*checksum mismatch"):
        load(copy)


def test_truncated_variables_name_the_shard(tmp_path):
    copy = tmp_path / "seeds"
    shutil.copytree(SEEDS, copy)
    shard = copy / "variables" / "variables.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:10])
    with pytest.raises(FileFormatError, match=r"outside the 10-byte shard .*variables\.data-00000-of-00001"):
        load(copy)


def test_missing_saved_model_is_named(tmp_path):
    with pytest.raises(FileFormatError, match="not a SavedModel directory"):
        load(tmp_path)


def test_an_empty_python_list_converts_to_any_numeric_dtype():
    converted = to_input([], dtypes.from_name("int32"), (None,), "input 'x'")
    assert converted.dtype == np.int32 and converted.shape == (0,)


def _loop_model(path, cond, body):
    """A SavedModel whose serving signature loops `(i, total)` from (0, 0.0) over x."""
    import savedmodel as sm

    class Loop(sm.Module):
        @sm.function(input_signature=[sm.TensorSpec([None], sm.float32)])
        def __call__(self, x):
            return sm.while_loop(lambda i, total: cond(x, i), lambda i, total: body(x, i, total),
                                 (0, 0.0))[1]

    sm.saved_model.save(Loop(), str(path))
    return load(path).signatures["serving_default"]


def test_a_failing_kernel_in_a_loop_body_names_the_body_and_node(tmp_path):
    import savedmodel as sm
    signature = _loop_model(tmp_path / "m", lambda x, i: i < 4,
                            lambda x, i, total: (i + 1, total + sm.gather(x, i)))
    assert signature(x=np.arange(4, dtype=np.float32))["output_0"] == 6.0
    with pytest.raises(SavedModelError, match=r"function '[^']*while_body[^']*': node '[^']*GatherV2' "
                                              r"\(op GatherV2\): .*indices"):
        signature(x=np.arange(3, dtype=np.float32))


def test_a_failing_kernel_in_a_later_loop_condition_names_the_condition_and_node(tmp_path):
    import savedmodel as sm
    signature = _loop_model(tmp_path / "m", lambda x, i: sm.gather(x, i) < 100.0,
                            lambda x, i, total: (i + 1, total + 1.0))
    with pytest.raises(SavedModelError, match=r"function '[^']*while_cond[^']*': node '[^']*GatherV2' "
                                              r"\(op GatherV2\): .*indices"):
        signature(x=np.arange(3, dtype=np.float32))
