"""savedmodel.static_shapes: shapes through calls and control flow, variables, layers.

The oracle for shapes is TensorFlow's own shape inference, which it records as the
`_output_shapes` attr on every node of a saved function body: the analysis runs with
`recorded_shapes=False` (so it cannot read them) and must agree with them.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from savedmodel.describe import describe_checkpoint
from savedmodel.protos import function_pb2, graph_pb2, node_def_pb2
from savedmodel.runtime.tensor_proto import shape_from_proto
from savedmodel.shapes import TensorShape
from savedmodel.static_shapes import SEPARATOR, analyze, analyze_meta_graph
from savedmodel.runtime.graph_file import graph_meta_graph
from savedmodel.views.body import ViewError

DATA = Path(__file__).parent / "data"
KERAS = [DATA / "reference" / "savedmodels" / name for name in ("keras_cnn", "keras_mlp")] + [
    DATA / "models" / name for name in ("attention", "conv_family", "separable_cnn",
                                        "lstm_stacked", "gru", "exact_gelu", "keras_resizing")]
"""Keras models (numeric layers, recurrent layers with While loops): TensorFlow knows every
dimension of their tensors but the batch, and so must we."""
ALL_MODELS = sorted(p for p in list((DATA / "models").iterdir()) + list(
    (DATA / "reference" / "savedmodels").iterdir()) if p.is_dir())


def _recorded(node) -> list:
    return [shape_from_proto(s) for s in node.attrs.attr["_output_shapes"].list.shape]


def _function_nodes(structure):
    return [n for n in structure.nodes.values() if "_output_shapes" in n.attrs.attr]


@pytest.mark.parametrize("model", KERAS, ids=lambda p: p.name)
def test_keras_shapes_equal_tensorflows(model):
    structure = analyze(model, recorded_shapes=False)
    nodes = _function_nodes(structure)
    assert len(nodes) > 10
    for node in nodes:
        ours = [o.shape for o in node.outputs]
        assert ours == _recorded(node)[:len(ours)], node.path


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda p: p.name)
def test_shapes_never_contradict_tensorflows(model):
    structure = analyze(model, recorded_shapes=False)
    for node in _function_nodes(structure):
        for ours, theirs in zip(node.outputs, _recorded(node)):
            assert TensorShape(ours.shape).is_compatible_with(TensorShape(theirs)), node.path


def test_recorded_shapes_fill_what_inference_does_not_know():
    model = DATA / "models" / "detector_head"
    unknown = sum(o.shape is None for n in analyze(model, recorded_shapes=False).nodes.values()
                  for o in n.outputs)
    still = sum(o.shape is None for n in analyze(model).nodes.values() for o in n.outputs)
    assert still < unknown


def test_nodes_come_after_their_producers_and_inputs_name_nodes():
    structure = analyze(DATA / "models" / "lstm_stacked")
    seen = set()
    for node in structure.nodes.values():
        for producer, index in node.inputs:
            assert producer in seen, (node.path, producer)
            assert index < len(structure.nodes[producer].outputs)
        seen.add(node.path)


def test_paths_go_through_calls_and_loop_bodies():
    structure = analyze(DATA / "models" / "lstm_stacked")
    deepest = max(structure.nodes, key=lambda p: p.count(SEPARATOR))
    assert deepest.count(SEPARATOR) >= 3
    assert any("[body]" + SEPARATOR in p for p in structure.nodes)
    assert any("[cond]" + SEPARATOR in p for p in structure.nodes)


def test_variables_match_the_checkpoint_and_the_object_graph():
    model = DATA / "reference" / "savedmodels" / "keras_cnn"
    structure = analyze(model)
    stored = {t["key"]: t for t in describe_checkpoint(model)["tensors"]}
    assert structure.variables
    for variable in structure.variables.values():
        entry = stored[variable.checkpoint_key]
        assert list(variable.shape) == entry["shape"]
        assert variable.bytes == entry["bytes"]
    trainable = {v.name: v.trainable for v in structure.variables.values()}
    assert trainable["sequential_1/batch_normalization/moving_mean"] is False
    assert trainable["sequential_1/batch_normalization/gamma"] is True


def test_layers_group_nodes_by_keras_scope_and_own_their_variables():
    structure = analyze(DATA / "reference" / "savedmodels" / "keras_cnn")
    owners = {v.name.rsplit("/", 1)[0].rsplit("/", 1)[1] for v in structure.variables.values()}
    named = {layer.name for layer in structure.layers.values() if layer.variables}
    assert named == owners
    for layer in structure.layers.values():
        for key in layer.variables:
            assert structure.variables[key].name.split("/")[-2] == layer.name
        assert layer.outputs and all(structure.nodes[p].layer == layer.key for p, _ in layer.outputs)
    last = list(structure.layers.values())[-1]
    assert [structure.output(o).shape for o in last.outputs] == [structure.outputs[0].output.shape]


def test_signature_ports_carry_shapes():
    structure = analyze(DATA / "reference" / "savedmodels" / "keras_cnn")
    (image,) = structure.inputs
    assert image.output.shape == (None, 28, 28, 1)
    (output,) = structure.outputs
    assert structure.output(output.ref) == output.output


def test_frozen_graph_files_are_analyzed_with_layers():
    structure = analyze(DATA / "frozen" / "keras_cnn.pb")
    (output,) = structure.outputs
    reference = analyze(DATA / "reference" / "savedmodels" / "keras_cnn")
    assert output.output == reference.outputs[0].output
    assert [[structure.output(o).shape for o in layer.outputs] for layer in structure.layers.values()] == \
        [[reference.output(o).shape for o in layer.outputs] for layer in reference.layers.values()]


def test_an_unknown_signature_names_the_known_ones():
    with pytest.raises(ViewError, match="serving_default"):
        analyze(DATA / "reference" / "savedmodels" / "keras_cnn", signature="nope")


def _graph(*nodes, functions=()) -> graph_pb2.GraphDef:
    graph = graph_pb2.GraphDef(node=list(nodes))
    graph.library.function.extend(functions)
    return graph


def _node(name, op, *inputs, **attrs) -> node_def_pb2.NodeDef:
    node = node_def_pb2.NodeDef(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        node.attr[key].CopyFrom(value)
    return node


def test_recursive_functions_are_not_walked_forever():
    from savedmodel.protos import attr_value_pb2, types_pb2
    function = function_pb2.FunctionDef()
    function.signature.name = "loop"
    function.signature.input_arg.add(name="x", type=types_pb2.DT_FLOAT)
    function.signature.output_arg.add(name="y", type=types_pb2.DT_FLOAT)
    call = function.node_def.add(name="again", op="PartitionedCall", input=["x"])
    call.attr["f"].func.name = "loop"
    call.attr["Tin"].list.type.append(types_pb2.DT_FLOAT)
    call.attr["Tout"].list.type.append(types_pb2.DT_FLOAT)
    function.ret["y"] = "again:output:0"
    dtype = attr_value_pb2.AttrValue(type=types_pb2.DT_FLOAT)
    shape = attr_value_pb2.AttrValue()
    shape.shape.dim.add(size=3)
    top = _node("call", "PartitionedCall", "x")
    top.attr["f"].func.name = "loop"
    top.attr["Tin"].list.type.append(types_pb2.DT_FLOAT)
    top.attr["Tout"].list.type.append(types_pb2.DT_FLOAT)
    graph = _graph(_node("x", "Placeholder", dtype=dtype, shape=shape), top, functions=[function])
    structure = analyze_meta_graph(graph_meta_graph(graph, "test", outputs=["call"]), where="test")
    assert structure.nodes["call"].outputs[0].dtype == "float32"
    assert structure.outputs[0].output.dtype == "float32"
