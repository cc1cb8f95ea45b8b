"""Graph views (`savedmodel.views`) and the `savedmodel graph` command.

The text view is the golden format of tests, so it is checked for stability and completeness on
every TensorFlow-written SavedModel and graph in tests/data, and byte for byte against two
committed golden files. The other formats are checked structurally (the protobuf text against
TensorFlow's own printouts).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from google.protobuf import text_format

from conftest import DATA, EXTRA_MODELS, GRAPHS, SAVEDMODELS
from savedmodel.cli.graph import graph
from savedmodel.protos import attr_value_pb2, function_pb2, graph_pb2, meta_graph_pb2
from savedmodel.runtime.saved_model_file import read_saved_model
from savedmodel.views.body import MAX_EXPAND_DEPTH, Library
from savedmodel.views.diagram import build
from savedmodel.views.dot import render_dot
from savedmodel.views.jsonview import SCHEMA, graph_document
from savedmodel.views.layout import layered_layout
from savedmodel.views.pbtxt import render_pbtxt
from savedmodel.views.render import FORMATS, render
from savedmodel.views.select import Selection, select, select_graph_def
from savedmodel.views.svg import render_svg
from savedmodel.views.text import render_text

MODELS = SAVEDMODELS + EXTRA_MODELS
SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")
GOLDEN = DATA / "golden"
NODE_LINE = re.compile(r"^( *)%(\S+) = ")


def _meta_graph(model: Path) -> meta_graph_pb2.MetaGraphDef:
    return read_saved_model(model).meta_graphs[0]


def _graph_def(path: Path) -> graph_pb2.GraphDef:
    return text_format.Parse(path.read_text(), graph_pb2.GraphDef())


def _selections(model: Path) -> list[Selection]:
    meta_graph = _meta_graph(model)
    chosen = [select(meta_graph, signature=key) for key in sorted(meta_graph.signature_def)]
    return chosen + [select(meta_graph, whole_graph=True, graph_name=model.name)]


def _node_lines(text: str, depth: int = 1) -> list[str]:
    """Names of the nodes the text view lists at one indentation depth."""
    found = []
    for line in text.splitlines():
        match = NODE_LINE.match(line)
        if match and len(match.group(1)) == 2 * depth:
            found.append(match.group(2))
    return found


def _run(*args):
    return CliRunner().invoke(graph, [str(a) for a in args])


# --- text view -------------------------------------------------------------------------------

@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_text_view_of_every_signature_is_stable_and_lists_each_node_once(model):
    for selection in _selections(model):
        first = render_text(selection)
        assert render_text(selection) == first
        assert _node_lines(first) == [node.name for node in selection.body.nodes]
        assert first.endswith("\n") and not first.endswith("\n\n")


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_expanded_text_view_is_stable_and_keeps_the_top_level_nodes(model):
    for selection in _selections(model):
        expanded = render_text(selection, expand=True)
        assert render_text(selection, expand=True) == expanded
        assert _node_lines(expanded) == [node.name for node in selection.body.nodes]


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.stem)
def test_text_view_of_every_reference_graph_lists_each_node_once(path):
    selection = select_graph_def(_graph_def(path), path.stem)
    text = render_text(selection)
    assert text == render_text(select_graph_def(_graph_def(path), path.stem))
    assert text.splitlines()[0] == f"graph {path.stem}"
    assert _node_lines(text) == [node.name for node in _graph_def(path).node]


def test_golden_expanded_dense_signature():
    text = render_text(select(_meta_graph(SEEDS), signature="dense"), expand=True)
    assert text == (GOLDEN / "seeds_dense.txt").read_text()
    lines = text.splitlines()
    call = next(i for i, line in enumerate(lines) if line.startswith("  %StatefulPartitionedCall = "))
    inside = [line for line in lines[call + 1:] if line.startswith("    ")]
    for op in ("MatMul", "AssignAddVariableOp", "ReadVariableOp"):
        assert any(f"= {op}(" in line for line in inside), op
    assert "    f: @__inference_signature_wrapper_dense_308(" in text
    assert "        f: @__inference_dense_294(" in text
    assert lines[-1] == "  return calls=%StatefulPartitionedCall, y=%StatefulPartitionedCall:1"


def test_golden_get_mse_graph():
    text = render_text(select_graph_def(_graph_def(DATA / "reference/graphs/get_MSE.pbtxt"), "get_MSE"))
    assert text == (GOLDEN / "get_MSE.txt").read_text()
    assert "  %Mean = Mean(%Pow, %Const) {T=int32, Tidx=int32, keep_dims=false}" in text
    assert "_user_specified_name" not in text


def test_all_attrs_shows_internal_attrs():
    selection = select_graph_def(_graph_def(DATA / "reference/graphs/get_MSE.pbtxt"), "get_MSE")
    text = render_text(selection, all_attrs=True)
    assert '%y_true = Placeholder() {_user_specified_name="y_true", dtype=int32, shape=[5]}' in text


def test_function_view_shows_arguments_body_and_returns():
    selection = select(_meta_graph(SEEDS), function="__inference_dense_294")
    text = render_text(selection)
    lines = text.splitlines()
    assert lines[0] == ("function @__inference_dense_294(%x: float32, %assignaddvariableop_resource: resource, "
                        "%matmul_readvariableop_resource: resource, %add_readvariableop_resource: resource) "
                        "-> (identity_1: int64, identity_2: float32)")
    assert "  %MatMul = MatMul(%x, %MatMul/ReadVariableOp) {T=float32}" in lines
    assert lines[-1].startswith("  return identity_1=%Identity_1, identity_2=%Identity_2, ^AssignAddVariableOp")


def test_function_body_references_become_flat_output_indices():
    text = render_text(select(_meta_graph(SEEDS), function="__inference_signature_wrapper_dense_308"))
    assert "%Identity_1 = Identity(%StatefulPartitionedCall:1, ^NoOp) {T=float32}" in text


def test_references_to_ops_of_unknown_layout_keep_their_output_argument():
    """A bare GraphDef carries no op definitions: `node:arg:index` cannot be flattened safely."""
    selection = select_graph_def(_graph_def(DATA / "reference/graphs/sum_even.pbtxt"), "sum_even")
    text = render_text(selection, expand=True)
    assert "%while/Identity = Identity(%while/Less:z:0) {T=bool}" in text


def test_expansion_covers_every_branch_of_control_flow():
    model = next(p for p in EXTRA_MODELS if p.name == "nested_control_flow")
    text = render_text(select(_meta_graph(model), signature="branch"), expand=True)
    for label in ("branches[0]: @", "branches[1]: @", "branches[2]: @"):
        assert label in text
    text = render_text(select(_meta_graph(model), signature="run"), expand=True)
    for label in ("cond: @", "body: @", "then_branch: @", "else_branch: @"):
        assert label in text


def _recursive_selection() -> Selection:
    """A library function that calls itself, directly by op and through PartitionedCall."""
    function = function_pb2.FunctionDef()
    function.signature.name = "loop"
    function.signature.input_arg.add(name="x", type=1)
    function.signature.output_arg.add(name="y", type=1)
    function.node_def.add(name="again", op="loop", input=["x"])
    call = function.node_def.add(name="call", op="PartitionedCall", input=["again:y:0"])
    call.attr["f"].func.name = "loop"
    function.ret["y"] = "call:output:0"
    graph_def = graph_pb2.GraphDef()
    graph_def.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    graph_def.node.add(name="top", op="loop", input=["x"])
    graph_def.library.function.append(function)
    return select_graph_def(graph_def, "recursive")


def test_expansion_stops_at_recursion():
    selection = _recursive_selection()
    text = render_text(selection, expand=True)
    assert "    call: @loop (recursive: @loop -> @loop)" in text
    assert "        f: @loop (recursive: @loop -> @loop)" in text
    for fmt in FORMATS:
        assert render(selection, fmt, expand=True)


def _nested_calls(depth: int, cycle: bool = False) -> Selection:
    """f0 calls f1 ... calls f{depth-1} through PartitionedCall; with `cycle` the last calls f0."""
    graph_def = graph_pb2.GraphDef()
    graph_def.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    graph_def.node.add(name="top", op="PartitionedCall", input=["x"]).attr["f"].func.name = "f0"
    for i in range(depth):
        function = graph_def.library.function.add()
        function.signature.name = f"f{i}"
        function.signature.input_arg.add(name="x", type=1)
        function.signature.output_arg.add(name="y", type=1)
        callee = f"f{i + 1}" if i + 1 < depth else "f0" if cycle else None
        if callee is None:
            function.ret["y"] = "x"
            continue
        function.node_def.add(name="call", op="PartitionedCall", input=["x"]).attr["f"].func.name = callee
        function.ret["y"] = "call:output:0"
    return select_graph_def(graph_def, "nested")


def test_expansion_names_a_cycle_through_several_functions():
    text = render_text(_nested_calls(3, cycle=True), expand=True)
    assert "f: @f0 (recursive: @f0 -> @f1 -> @f2 -> @f0)" in text


def test_expansion_of_deeply_nested_calls_stops_at_a_depth_limit():
    selection = _nested_calls(10_000)
    text = render_text(selection, expand=True)
    assert f"f: @f{MAX_EXPAND_DEPTH} (not expanded: calls nested deeper than {MAX_EXPAND_DEPTH} levels)" in text
    for fmt in FORMATS:
        assert render(selection, fmt, expand=True)


def test_attr_values_are_spelled_compactly():
    node = graph_pb2.GraphDef().node.add(name="n", op="Op")
    node.attr["f"].f = 0.1
    node.attr["s"].s = b"a\"b\xff"
    node.attr["shape"].shape.unknown_rank = True
    node.attr["list"].list.i.extend([1, 2])
    node.attr["fn"].func.name = "g"
    node.attr["fn"].func.attr["T"].type = 1
    node.attr["empty"].CopyFrom(attr_value_pb2.AttrValue())
    node.attr["t"].tensor.dtype = 1
    node.attr["t"].tensor.tensor_shape.dim.add(size=6)
    node.attr["t"].tensor.float_val.extend([0.5, 1, 2, 3, 4, 5])
    node.device = "/device:CPU:0"
    text = render_text(select_graph_def(_single(node), "g"))
    assert text.splitlines()[1] == (
        '  %n = Op() {empty=none, f=0.1, fn=@g{T=float32}, list=[1, 2], s="a\\"b\\xff", '
        'shape=[...], t=float32[6] [0.5, 1.0, 2.0, 3.0, ...]} on "/device:CPU:0"')


def _single(node) -> graph_pb2.GraphDef:
    graph_def = graph_pb2.GraphDef()
    graph_def.node.append(node)
    return graph_def


# --- protobuf text ---------------------------------------------------------------------------

@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.stem)
def test_pbtxt_view_of_a_reference_graph_is_the_file(path):
    assert render_pbtxt(select_graph_def(_graph_def(path), path.stem)) == path.read_text()


def test_pbtxt_of_a_signature_is_a_graph_def_of_its_nodes_and_functions():
    selection = select(_meta_graph(SEEDS), signature="dense")
    parsed = text_format.Parse(render_pbtxt(selection), graph_pb2.GraphDef())
    assert [n.name for n in parsed.node] == [n.name for n in selection.body.nodes]
    assert sorted(f.signature.name for f in parsed.library.function) == [
        "__inference_dense_294", "__inference_signature_wrapper_dense_308"]


def test_pbtxt_of_a_function_is_its_function_def():
    meta_graph = _meta_graph(SEEDS)
    selection = select(meta_graph, function="__inference_dense_294")
    parsed = text_format.Parse(render_pbtxt(selection), function_pb2.FunctionDef())
    assert parsed == next(f for f in meta_graph.graph_def.library.function
                          if f.signature.name == "__inference_dense_294")


# --- DOT -------------------------------------------------------------------------------------

def _unquoted(dot: str) -> str:
    """DOT text with the contents of quoted strings removed."""
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', dot)


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_dot_has_balanced_braces_and_one_statement_per_node(model):
    for selection in _selections(model):
        dot = render_dot(selection)
        bare = _unquoted(dot)
        assert bare.count("{") == bare.count("}")
        assert dot.startswith("digraph ") and dot.rstrip().endswith("}")
        statements = re.findall(r'^\s*"((?:[^"\\]|\\.)*)" \[label=', dot, re.M)
        names = [s for s in statements if "::" not in s]
        assert sorted(names) == sorted(n.name for n in selection.body.nodes)


def test_expanded_dot_puts_callees_in_clusters():
    dot = render_dot(select(_meta_graph(SEEDS), signature="dense"), expand=True)
    assert 'subgraph "cluster_StatefulPartitionedCall::f::" {' in dot
    assert '"StatefulPartitionedCall::f::StatefulPartitionedCall::f::MatMul" [label="MatMul\\nMatMul"' in dot
    assert "[style=dashed];" in dot
    ids = re.findall(r'^\s*"((?:[^"\\]|\\.)*)" \[label=', dot, re.M)
    assert len(ids) == len(set(ids))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_graphviz_accepts_the_dot_view():
    dot = render_dot(select(_meta_graph(SEEDS), signature="sum_even"), expand=True)
    subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, check=True)


# --- SVG and layout --------------------------------------------------------------------------

@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_svg_is_valid_xml_with_one_group_per_node(model):
    for selection in _selections(model):
        for expand in (False, True):
            svg = render_svg(selection, expand=expand)
            root = ET.fromstring(svg.encode())
            assert root.tag == "{http://www.w3.org/2000/svg}svg"
            groups = root.findall(".//{http://www.w3.org/2000/svg}g[@class='node']")
            assert len(groups) == build(selection, expand).count("node")
            if not expand:
                assert len(groups) == len(selection.body.nodes)


def test_svg_is_byte_stable():
    selection = select(_meta_graph(SEEDS), signature="dense")
    assert render_svg(selection, expand=True) == render_svg(selection, expand=True)


def _chain_graph(size: int) -> tuple[dict, list]:
    """A long graph with skips and a cycle, like a large model's body."""
    sizes = {f"n{i}": (60.0 + i % 7 * 10, 38.0) for i in range(size)}
    edges = [(f"n{i}", f"n{i + 1}") for i in range(size - 1)]
    edges += [(f"n{i}", f"n{i + 7}") for i in range(0, size - 7, 3)]
    edges += [(f"n{i + 5}", f"n{i}") for i in range(0, size - 5, 50)]
    return sizes, edges


def test_layout_places_producers_above_consumers_without_overlaps():
    sizes, edges = _chain_graph(600)
    layout = layered_layout(sizes, edges, gap_x=10)
    for (source, target), route in zip(edges, layout.routes):
        if layout.positions[source][1] < layout.positions[target][1]:
            assert route[0][1] == layout.positions[source][1] + sizes[source][1]
            assert route[-1][1] == layout.positions[target][1]
    rows: dict[float, list] = {}
    for name, (x, y) in layout.positions.items():
        rows.setdefault(y, []).append((x, x + sizes[name][0]))
    for boxes in rows.values():
        boxes.sort()
        assert all(a[1] + 10 - 1e-6 <= b[0] for a, b in zip(boxes, boxes[1:]))
    forward = [(s, t) for s, t in edges if int(s[1:]) < int(t[1:])]
    assert all(layout.positions[s][1] < layout.positions[t][1] for s, t in forward)


def test_svg_of_a_large_graph_is_valid():
    graph_def = graph_pb2.GraphDef()
    for i in range(400):
        node = graph_def.node.add(name=f"layer_{i}/op", op="AddV2" if i else "Placeholder")
        node.input.extend([f"layer_{i - 1}/op"] * bool(i) + [f"layer_{i - 4}/op"] * (i >= 4 and i % 5 == 0))
    root = ET.fromstring(render_svg(select_graph_def(graph_def, "big")).encode())
    assert len(root.findall(".//{http://www.w3.org/2000/svg}g[@class='node']")) == 400


# --- JSON ------------------------------------------------------------------------------------

def _check_port(port: dict) -> None:
    assert {"name", "dtype"} <= port.keys() <= {"name", "dtype", "shape", "tensor"}
    assert isinstance(port["name"], str) and isinstance(port["dtype"], str)
    if "shape" in port:
        assert port["shape"] is None or all(d is None or isinstance(d, int) for d in port["shape"])


def _check_attr(value: dict) -> None:
    assert isinstance(value, dict) and len(value) <= 1
    for kind, item in value.items():
        assert kind in {"s", "i", "f", "b", "type", "shape", "tensor", "func", "list", "placeholder"}
        if kind == "list":
            for element in item:
                _check_attr(element)
        elif kind == "tensor":
            assert {"dtype", "shape", "size", "values", "truncated"} <= item.keys()
        elif kind == "func":
            assert isinstance(item["name"], str)
            for nested in item["attrs"].values():
                _check_attr(nested)


def _check_body(body: dict, functions: dict) -> None:
    for port in body["inputs"] + body["outputs"]:
        _check_port(port)
    assert all(c.keys() == {"name", "node"} for c in body["control_outputs"])
    for node in body["nodes"]:
        assert {"name", "op", "inputs", "control_inputs", "attrs"} <= node.keys()
        assert node.keys() <= {"name", "op", "inputs", "control_inputs", "attrs", "device", "function"}
        assert all(isinstance(i, str) and i.count(":") in (1, 2) for i in node["inputs"])
        assert all(isinstance(c, str) for c in node["control_inputs"])
        for value in node["attrs"].values():
            _check_attr(value)
        for callee in node.get("function", {}).values():
            assert callee in functions


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_json_follows_the_documented_schema(model):
    for selection in _selections(model):
        for expand in (False, True):
            document = json.loads(render(selection, "json", expand=expand))
            assert document == graph_document(selection, expand=expand)
            assert document["schema"] == SCHEMA
            assert document["kind"] in ("graph", "signature", "function")
            assert isinstance(document["graph"], str)
            _check_body(document, document["functions"])
            for body in document["functions"].values():
                _check_body(body, document["functions"])
            assert [n["name"] for n in document["nodes"]] == [n.name for n in selection.body.nodes]
            assert bool(document["functions"]) == (expand and bool(selection.library.reachable(selection.body.nodes)))


def test_json_of_the_dense_signature():
    document = graph_document(select(_meta_graph(SEEDS), signature="dense"), expand=True)
    assert document["inputs"] == [{"name": "x", "dtype": "float32", "shape": [None, 2], "tensor": "dense_x:0"}]
    call = next(n for n in document["nodes"] if n["name"] == "StatefulPartitionedCall")
    assert call["inputs"] == ["dense_x:0", "calls:0", "w:0", "b:0"]
    assert call["function"] == {"f": "__inference_signature_wrapper_dense_308"}
    body = document["functions"]["__inference_dense_294"]
    const = next(n for n in body["nodes"] if n["name"] == "Const")
    assert const["attrs"]["value"] == {"tensor": {"dtype": "int64", "shape": [], "size": 1, "values": [1],
                                                  "truncated": False}}


# --- selection and the command ---------------------------------------------------------------

def test_signature_selection_holds_what_its_outputs_need():
    selection = select(_meta_graph(SEEDS), signature="dense")
    assert [n.name for n in selection.body.nodes] == ["calls", "b", "w", "dense_x", "StatefulPartitionedCall"]


def test_library_lists_callees_in_branch_order():
    node = graph_pb2.GraphDef().node.add(name="if", op="If")
    node.attr["else_branch"].func.name = "no"
    node.attr["then_branch"].func.name = "yes"
    assert Library({}, {}).callees(node) == [("then_branch", "yes"), ("else_branch", "no")]


def test_command_defaults_to_serving_default_text():
    result = _run(SEEDS)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("signature serving_default(x: float32[?,2] = %serving_default_x)")
    assert result.stderr == ""


@pytest.mark.parametrize("fmt", FORMATS)
def test_command_prints_every_format(fmt):
    result = _run(SEEDS, "--tag_set", "serve", "--signature_def", "dense", "--format", fmt, "--expand")
    assert result.exit_code == 0, result.output
    assert result.stdout == render(select(_meta_graph(SEEDS), signature="dense"), fmt, expand=True)


def test_command_shows_a_function_and_the_whole_graph():
    result = _run(SEEDS, "--function", "__inference_power_368")
    assert result.exit_code == 0 and result.stdout.startswith("function @__inference_power_368(")
    result = _run(SEEDS, "--whole-graph", "--all_attrs")
    assert result.exit_code == 0 and result.stdout.startswith("graph seeds\n")
    assert "_output_shapes=" in result.stdout


def test_command_writes_output_atomically(tmp_path):
    target = tmp_path / "dense.svg"
    target.write_text("old")
    result = _run(SEEDS, "--signature-def", "dense", "--format", "svg", "--output", target)
    assert result.exit_code == 0 and result.stdout == ""
    ET.fromstring(target.read_bytes())
    assert [p.name for p in tmp_path.iterdir()] == ["dense.svg"]


@pytest.mark.parametrize("args, message", [
    ([SEEDS, "--signature-def", "nope"], "no signature 'nope' in tag-set 'serve' (signatures: "
                                          "dense, next_collatz, power,"),
    ([SEEDS, "--function", "nope"], "no function 'nope' in the graph's library (functions: "
                                    "__inference__traced_restore_564,"),
    ([DATA], "no saved_model.pb or saved_model.pbtxt; not a SavedModel directory"),
    ([DATA / "reference/MANIFEST.json"], "MANIFEST.json: not a directory"),
    ([SEEDS, "--tag-set", "train"], "no MetaGraphDef with tag-set 'train' (tag-sets present: serve)"),
    ([SEEDS, "--function", "f", "--signature-def", "dense"], "choose one of a signature, a function"),
    ([SEEDS, "--output", DATA / "missing-dir/x.txt"], "missing-dir/x.txt: cannot write"),
])
def test_command_errors_are_one_line_with_status_1(args, message):
    result = _run(*args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr
    assert "Traceback" not in result.stderr


# --- against TensorFlow ----------------------------------------------------------------------

@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_whole_graph_lists_the_nodes_tensorflow_imports(tf, model):
    meta_graph = _meta_graph(model)
    ours = _node_lines(render_text(select(meta_graph, whole_graph=True)))
    theirs = tf.compat.v1.GraphDef.FromString(meta_graph.graph_def.SerializeToString())
    with tf.Graph().as_default() as imported:
        tf.compat.v1.import_graph_def(theirs, name="")
    assert sorted(ours) == sorted(op.name for op in imported.get_operations())
    assert len(ours) == len(set(ours))
