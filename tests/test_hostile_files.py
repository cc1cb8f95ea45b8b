"""Hostile and damaged files against the runtime's readers, loader and planner (issue 12).

Each case is built in tmp_path from a committed fixture by editing its protos or bytes, and
must end in a project error (SavedModelError) that names the file, node, function, signature
or key, never a hang, an unbounded allocation or an exception from deep inside. The cases that
would allocate or hang without their check run in a child process with an address-space limit
and a time limit (`bounded`), so a regression fails the test instead of the machine.
"""
from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bounded import bounded_call
from conftest import CHECKPOINTS, EXTRA_MODELS, SAVEDMODELS, special_file
from savedmodel.cli import main
from savedmodel.input_specs import InputSpecError, parse_inputs
from savedmodel.protos import (attr_value_pb2, node_def_pb2, saved_model_pb2, tensor_bundle_pb2, tensor_pb2,
                               types_pb2)
from savedmodel.runtime import Limits, load
from savedmodel.runtime.errors import FileFormatError, SavedModelError
from savedmodel.runtime.table import read_table
from savedmodel.runtime.table_writer import write_table
from savedmodel.runtime.tensor_bundle import BundleReader
from savedmodel.runtime.tensor_proto import shape_to_proto
from test_runtime_errors import _node, _type

SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")
ASSET_MODEL = next(p for p in EXTRA_MODELS if p.name == "text_file_tables")


def bounded(fn, *args) -> str:
    """The message of the SavedModelError that `fn(*args)` must raise within bounded memory
    and time."""
    outcome, message = bounded_call(fn, *args)
    assert outcome == "SavedModelError", f"{getattr(fn, '__name__', fn)} gave {outcome}: {message}"
    return message


def _seeds(tmp_path: Path, edit=None) -> Path:
    """A copy of the seeds SavedModel, its MetaGraphDef edited by `edit`."""
    copy = tmp_path / "seeds"
    shutil.copytree(SEEDS, copy)
    if edit is not None:
        model = saved_model_pb2.SavedModel.FromString((copy / "saved_model.pb").read_bytes())
        edit(model.meta_graphs[0])
        (copy / "saved_model.pb").write_bytes(model.SerializeToString())
    return copy


def _load_and_call(export_dir, limits=Limits(), allow_file_access=False):
    load(export_dir, limits=limits, allow_file_access=allow_file_access).signatures["simple_relu"](x=np.int32(3))


def _load_allowing_any_file(export_dir):
    load(export_dir, allow_file_access=True)


def _returning(node: node_def_pb2.NodeDef, tensor: str = ""):
    """An edit adding `node` to the graph and making signature 'simple_relu' return it."""
    def edit(meta_graph):
        meta_graph.graph_def.node.append(node)
        meta_graph.signature_def["simple_relu"].outputs["y"].name = tensor or f"{node.name}:0"
    return edit


def _const(name: str, dtype: int, shape, **values) -> node_def_pb2.NodeDef:
    proto = tensor_pb2.TensorProto(dtype=dtype, **values)
    proto.tensor_shape.CopyFrom(shape_to_proto(shape))
    return _node(name, "Const", value=attr_value_pb2.AttrValue(tensor=proto), dtype=_type(dtype))


# Files of the wrong kind or size


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
@pytest.mark.parametrize("name", ["saved_model.pb", "variables/variables.index",
                                  "variables/variables.data-00000-of-00001"])
def test_a_fifo_or_device_in_place_of_a_model_file_is_refused(tmp_path, name, kind):
    model = _seeds(tmp_path)
    target = model / name
    described = special_file(target, kind)
    # /dev/zero lies outside the model: with any file allowed, the kind check must refuse it
    message = bounded(_load_and_call, model, Limits(), True)
    assert f"{target} is {described}, not a regular file" in message


def test_a_directory_in_place_of_saved_model_pb_is_refused(tmp_path):
    model = _seeds(tmp_path)
    (model / "saved_model.pb").unlink()
    (model / "saved_model.pb").mkdir()
    with pytest.raises(FileFormatError, match=r"saved_model\.pb is a directory, not a regular file"):
        load(model)


def test_a_sparse_5_gb_saved_model_pb_is_refused_before_reading(tmp_path):
    model = _seeds(tmp_path)
    os.truncate(model / "saved_model.pb", 5 << 30)
    message = bounded(_load_and_call, model)
    assert f"{model / 'saved_model.pb'}: the file is {5 << 30} bytes" in message
    assert "max_file_bytes=2147483647" in message and "Limits(max_file_bytes=...)" in message


def test_the_file_size_limit_can_be_lowered_and_raised(tmp_path):
    model = _seeds(tmp_path)
    size = (model / "saved_model.pb").stat().st_size
    with pytest.raises(FileFormatError, match=f"the file is {size} bytes, more than the limit "
                                              "max_file_bytes=1000"):
        load(model, limits=Limits(max_file_bytes=1000))
    load(model, limits=Limits(max_file_bytes=size))


# Constants whose compact form claims more than the file holds


def test_a_compact_const_of_2_to_the_40_elements_is_refused(tmp_path):
    model = _seeds(tmp_path, _returning(_const("big", types_pb2.DT_INT32, (2**40,), int_val=[1])))
    message = bounded(_load_and_call, model)
    assert "node 'big' (op Const)" in message
    assert f"would expand to {2**40} elements" in message and "max_const_bytes" in message


def test_the_compact_const_limit_can_be_raised(tmp_path):
    model = _seeds(tmp_path, _returning(_const("ones", types_pb2.DT_INT32, (300,), int_val=[7])))
    with pytest.raises(SavedModelError, match=r"node 'ones' \(op Const\).*max_const_bytes=1000"):
        _load_and_call(model, Limits(max_const_bytes=1000))
    out = load(model, limits=Limits(max_const_bytes=1200)).signatures["simple_relu"](x=np.int32(3))
    np.testing.assert_array_equal(out["y"], np.full(300, 7, np.int32))


def test_a_const_with_more_values_than_its_shape_names_the_node(tmp_path):
    model = _seeds(tmp_path, _returning(_const("over", types_pb2.DT_INT32, (2,), int_val=[1, 2, 3])))
    with pytest.raises(SavedModelError, match=r"node 'over' \(op Const\).*holds 3 values, more "
                                              "than the 2 elements"):
        _load_and_call(model)


def test_a_const_of_rank_70_names_numpys_limit(tmp_path):
    model = _seeds(tmp_path, _returning(_const("deep", types_pb2.DT_INT32, (1,) * 70, int_val=[1])))
    with pytest.raises(SavedModelError, match=r"node 'deep' \(op Const\).*rank 70; numpy arrays "
                                              r"have at most 64 dimensions \(TensorFlow allows 254\)"):
        _load_and_call(model)


def test_an_empty_const_whose_other_dimensions_overflow_names_the_node(tmp_path):
    model = _seeds(tmp_path, _returning(_const("empty", types_pb2.DT_INT32, (2**40, 0, 2**40))))
    with pytest.raises(SavedModelError, match=r"node 'empty' \(op Const\).*shape \[1099511627776, 0, "
                                              r"1099511627776\] has more elements than an array can"):
        _load_and_call(model)


@pytest.mark.parametrize("enum", [types_pb2.DT_INVALID, 77])
def test_a_const_of_an_unknown_dtype_names_the_node(tmp_path, enum):
    model = _seeds(tmp_path, _returning(_const("odd", enum, ())))
    with pytest.raises(SavedModelError, match=r"node 'odd' \(op Const\).*unsupported DataType enum "
                                              f"value {enum}"):
        _load_and_call(model)


def test_an_npy_header_claiming_2_to_the_40_elements_is_refused(tmp_path):
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32))
    header["shape"] = (2**40,)
    with open(tmp_path / "big.npy", "wb") as out:
        np.lib.format.write_array_header_1_0(out, header)
        out.write(bytes(8))
    message = bounded(_parse_inputs, f"x={tmp_path / 'big.npy'}")
    assert "big.npy: the header claims shape [1099511627776] of float32" in message


def _parse_inputs(spec: str) -> None:
    try:
        parse_inputs(spec)
    except InputSpecError as err:  # the CLI's error for a bad --inputs, reported as ours
        raise SavedModelError(str(err)) from None


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_an_npy_input_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    target = tmp_path / "x.npy"
    special_file(target, kind)
    message = bounded(_parse_inputs, f"x={target}")
    assert "not a regular file" in message


def test_an_npz_member_claiming_more_than_deflate_can_expand_is_refused(tmp_path):
    np.savez_compressed(tmp_path / "a.npz", x=np.zeros(100, np.float32))
    data = bytearray((tmp_path / "a.npz").read_bytes())
    # the uncompressed size, in the local header (offset 22) and the central directory entry
    name = b"x.npy"
    for start in (0, data.index(b"PK\x01\x02")):
        field = start + (22 if start == 0 else 24)
        data[field:field + 4] = (2**31).to_bytes(4, "little")
        assert name in data[start:start + 80]
    (tmp_path / "a.npz").write_bytes(bytes(data))
    message = bounded(_parse_inputs, f"x={tmp_path / 'a.npz'}")
    assert "a.npz[x]" in message or "damaged .npz" in message


# Signatures, graphs and functions


@pytest.mark.parametrize("role", ["inputs", "outputs"])
def test_a_signature_tensor_with_an_output_index_out_of_range_is_a_load_error(tmp_path, role):
    def edit(meta_graph):
        tensors = getattr(meta_graph.signature_def["simple_relu"], role)
        key = next(iter(tensors))
        tensors[key].name = tensors[key].name.split(":")[0] + ":2147483647"

    model = _seeds(tmp_path, edit)
    message = bounded(load, model)
    assert f"signature 'simple_relu': {role[:-1]}" in message
    assert ":2147483647' names output 2147483647 of node" in message and "which has 1 output(s)" in message


def test_a_signature_tensor_of_a_missing_node_is_a_load_error(tmp_path):
    model = _seeds(tmp_path, _returning(_node("unused", "NoOp"), "nowhere:0"))
    with pytest.raises(SavedModelError, match="signature 'simple_relu': output 'y': tensor 'nowhere:0' "
                                              "names node 'nowhere', which the graph does not have"):
        load(model)


def test_a_signature_tensor_of_a_node_without_its_output_count_attr_is_a_load_error(tmp_path):
    def edit(meta_graph):
        call = next(n for n in meta_graph.graph_def.node if n.name == "PartitionedCall_2")
        del call.attr["Tout"]

    with pytest.raises(SavedModelError, match=r"node 'PartitionedCall_2' \(op PartitionedCall\) has no "
                                              "attr 'Tout', which says how many outputs it has"):
        load(_seeds(tmp_path, edit))


def test_an_input_naming_an_output_an_identity_lacks_names_the_node(tmp_path):
    def edit(meta_graph):
        meta_graph.graph_def.node.extend([
            _node("id", "Identity", ["simple_relu_x", "^Const"], T=_type(types_pb2.DT_INT32)),
            _node("relu", "Relu", ["id:3"], T=_type(types_pb2.DT_INT32))])
        meta_graph.signature_def["simple_relu"].outputs["y"].name = "relu:0"

    with pytest.raises(SavedModelError, match=r"reference to output 3 of node 'id' \(op Identity\), "
                                              "which has 1"):
        _load_and_call(_seeds(tmp_path, edit))


def _call_chain(meta_graph, depth: int, loop: bool = False) -> None:
    """Functions f0 .. f{depth-1}, each calling the next through PartitionedCall (the last
    returns its input, or calls f0 again when `loop`); signature 'simple_relu' returns f0(x)."""
    int32 = attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(type=[types_pb2.DT_INT32]))

    def call(name: str, inputs, callee: str) -> node_def_pb2.NodeDef:
        return _node(name, "PartitionedCall", inputs, Tin=int32, Tout=int32,
                     f=attr_value_pb2.AttrValue(func=attr_value_pb2.NameAttrList(name=callee)))

    for i in range(depth):
        function = meta_graph.graph_def.library.function.add()
        function.signature.name = f"f{i}"
        function.signature.input_arg.add(name="a", type=types_pb2.DT_INT32)
        function.signature.output_arg.add(name="b", type=types_pb2.DT_INT32)
        if i + 1 < depth or loop:
            function.node_def.append(call("call", ["a"], f"f{(i + 1) % depth}"))
            function.ret["b"] = "call:output:0"
        else:
            function.ret["b"] = "a"
    _returning(call("deep", ["simple_relu_x"], "f0"))(meta_graph)


def test_a_variable_handle_whose_shared_name_is_not_utf8_still_binds_its_variable(tmp_path):
    """Found by fuzzing: the loader decoded a captured VarHandleOp's shared_name strictly
    (UnicodeDecodeError); attrs are bytes, decoded as the kernel decodes them."""
    def edit(meta_graph):
        handle = next(n for n in meta_graph.graph_def.node if n.op == "VarHandleOp" and n.name == "calls")
        handle.attr["shared_name"].s = b"ca\xffls"

    model = load(_seeds(tmp_path, edit))
    first = model.signatures["dense"](x=np.ones((1, 2), np.float32))["calls"]
    second = model.signatures["dense"](x=np.ones((1, 2), np.float32))["calls"]
    assert (int(first), int(second)) == (1, 2)  # the restored counter (0), shared across calls


def test_10000_nested_function_calls_are_a_depth_error(tmp_path):
    model = _seeds(tmp_path, lambda meta_graph: _call_chain(meta_graph, 10_000))
    message = bounded(_load_and_call, model)
    assert message.startswith("signature 'simple_relu': ")
    assert "function calls nest more than the limit max_function_depth=64" in message
    assert "(f0 -> f1 -> f2 -> ... -> f62 -> f63 -> f64)" in message


def test_an_input_from_an_unknown_node_names_the_node_that_takes_it(tmp_path):
    """Found by auditing: `graph: reference to unknown node 'nope'` named neither the node that
    takes the input nor the signature."""
    adding = _node("big", "AddN", ["nope:0"] * 1000, T=_type(types_pb2.DT_INT32),
                   N=attr_value_pb2.AttrValue(i=1000))
    with pytest.raises(SavedModelError, match=r"^signature 'simple_relu': graph: node 'big' \(op AddN\) "
                                              r"takes an input from unknown node 'nope'$"):
        _load_and_call(_seeds(tmp_path, _returning(adding)))


def test_a_depth_limit_raised_beyond_pythons_stack_is_a_depth_error(tmp_path):
    model = _seeds(tmp_path, lambda meta_graph: _call_chain(meta_graph, 10_000))
    message = bounded(functools.partial(_load_and_call, limits=Limits(max_function_depth=20_000)), model)
    assert message == ("signature 'simple_relu': graph: function calls nest deeper than Python's "
                       "stack allows; lower the limit max_function_depth")


def test_the_command_line_raises_limits(tmp_path):
    model = _seeds(tmp_path, lambda meta_graph: _call_chain(meta_graph, 100))
    run = ["run", model, "--signature-def", "simple_relu", "--input-exprs", "x=-3"]
    refused = CliRunner().invoke(main, [str(a) for a in run])
    assert refused.exit_code == 1
    assert "or `--limit max_function_depth=N` on the command line" in refused.stderr
    raised = CliRunner().invoke(main, [str(a) for a in run] + ["--limit", "max_function_depth=100"])
    assert raised.exit_code == 0 and "array(-3, dtype=int32)" in raised.output
    for setting, message in [("depth=3", "no limit named 'depth'; the limits are max_file_bytes, "
                                         "max_const_bytes, max_function_depth"),
                             ("max_const_bytes=many", "max_const_bytes takes a whole number"),
                             ("max_function_depth=0", "max_function_depth must be at least 1")]:
        bad = CliRunner().invoke(main, [str(a) for a in run] + ["--limit", setting])
        assert bad.exit_code == 1 and message in bad.stderr, bad.output


@pytest.mark.parametrize("depth", [1, 2])
def test_a_function_that_calls_itself_is_a_depth_error(tmp_path, depth):
    model = _seeds(tmp_path, lambda meta_graph: _call_chain(meta_graph, depth, loop=True))
    message = bounded(_load_and_call, model)
    assert "calls nest more than the limit max_function_depth=64" in message
    assert "does a function call itself?" in message


def test_deep_but_finite_nesting_runs_and_its_limit_can_be_raised(tmp_path):
    model = _seeds(tmp_path, lambda meta_graph: _call_chain(meta_graph, 100))
    with pytest.raises(SavedModelError, match="max_function_depth=64"):
        _load_and_call(model)
    out = load(model, limits=Limits(max_function_depth=100)).signatures["simple_relu"](x=np.int32(-3))
    np.testing.assert_array_equal(out["y"], np.int32(-3))  # f0 .. f99 pass x on unchanged


@pytest.mark.parametrize("dtype", [types_pb2.DT_RESOURCE, types_pb2.DT_VARIANT])
def test_a_signature_input_of_a_handle_dtype_is_a_feed_error(tmp_path, dtype):
    def edit(meta_graph):
        meta_graph.signature_def["simple_relu"].inputs["x"].dtype = dtype

    with pytest.raises(SavedModelError, match="input 'x' of signature 'simple_relu' has data type "
                                              f"{'resource' if dtype == types_pb2.DT_RESOURCE else 'variant'}"):
        _load_and_call(_seeds(tmp_path, edit))


@pytest.mark.parametrize("enum", [types_pb2.DT_INVALID, 77])
def test_a_signature_input_of_an_unknown_dtype_names_it(tmp_path, enum):
    def edit(meta_graph):
        meta_graph.signature_def["simple_relu"].inputs["x"].dtype = enum

    with pytest.raises(FileFormatError, match="signature 'simple_relu': input 'x' has data type"):
        load(_seeds(tmp_path, edit))


# The object graph


@pytest.mark.parametrize("child", [99, -1, -2])
def test_object_graph_child_ids_out_of_range_are_a_load_error(tmp_path, child):
    def edit(meta_graph):
        meta_graph.object_graph_def.nodes[0].children.add(node_id=child, local_name="ghost")

    with pytest.raises(FileFormatError, match=f"object graph is damaged: object 0 has child 'ghost' = "
                                              f"object {child}, but there are"):
        load(_seeds(tmp_path, edit))


def test_a_signature_map_entry_that_is_not_a_function_is_a_load_error(tmp_path):
    def edit(meta_graph):
        nodes = meta_graph.object_graph_def.nodes
        signature_map = next(n for n in nodes if n.user_object.identifier == "signature_map")
        signature_map.children[0].node_id = 0

    with pytest.raises(FileFormatError, match=r"signature '\w+' is object 0, a user_object, not a function"):
        load(_seeds(tmp_path, edit))


def test_an_input_signature_whose_arguments_are_not_a_sequence_names_the_function(tmp_path):
    def edit(meta_graph):
        graph = meta_graph.object_graph_def
        name = next(n.function.concrete_functions[0] for n in graph.nodes if n.HasField("function"))
        arguments = graph.concrete_functions[name].canonicalized_input_signature.tuple_value.values[0]
        arguments.none_value.SetInParent()

    with pytest.raises(FileFormatError, match=r"concrete function '\w+': canonicalized_input_signature "
                                              r"is not an \(args, kwargs\) pair"):
        load(_seeds(tmp_path, edit))


@pytest.mark.parametrize("leaves", [0, 3])
def test_an_output_signature_with_another_number_of_tensors_names_the_function(tmp_path, leaves):
    def edit(meta_graph):
        function = meta_graph.object_graph_def.concrete_functions[name]
        original = type(function.output_signature)()
        original.CopyFrom(function.output_signature)  # one tensor
        function.output_signature.Clear()
        for _ in range(leaves):
            function.output_signature.list_value.values.add().CopyFrom(original)

    probe = load(SEEDS)
    name = probe.functions["simple_relu"].concrete_functions[0].name
    model = load(_seeds(tmp_path, edit))
    with pytest.raises(FileFormatError, match=f"concrete function '{name}': the saved output structure "
                                              f"has {leaves} tensors, but the function returns 1"):
        model.functions["simple_relu"](np.int32(3))


def test_a_variable_of_an_unknown_dtype_names_the_variable(tmp_path):
    def edit(meta_graph):
        variable = next(n.variable for n in meta_graph.object_graph_def.nodes if n.HasField("variable"))
        variable.dtype = types_pb2.DT_INVALID

    with pytest.raises(FileFormatError, match=r"variable '\w+' \(object \d+\): unsupported DataType "
                                              r"enum value 0 \(DT_INVALID\)"):
        load(_seeds(tmp_path, edit))


# The tensor bundle


def _copy_checkpoint(tmp_path: Path) -> Path:
    shutil.copytree(CHECKPOINTS / "single", tmp_path / "single")
    return tmp_path / "single" / "ckpt"


def _rewrite_index(prefix: Path, edit) -> None:
    """Rewrite the index of `prefix` after `edit(header, entries)` changed its parsed records
    (entries: a list of [key, BundleEntryProto], which `edit` may change in place)."""
    records = read_table(f"{prefix}.index")
    header = tensor_bundle_pb2.BundleHeaderProto.FromString(records[0][1])
    entries = [[key, tensor_bundle_pb2.BundleEntryProto.FromString(value)] for key, value in records[1:]]
    edit(header, entries)
    with open(f"{prefix}.index", "wb") as out:
        write_table(out, [(b"", header.SerializeToString())]
                    + sorted((key, entry.SerializeToString()) for key, entry in entries))


def _read_all(prefix):
    reader = BundleReader(prefix)
    for key in reader.keys():
        reader.read(key)


def _entry(entries, key: bytes):
    return next(entry for name, entry in entries if name == key)


BIG = b"model/big/.ATTRIBUTES/VARIABLE_VALUE"


def test_a_truncated_index_names_the_file(tmp_path):
    prefix = _copy_checkpoint(tmp_path)
    index = Path(f"{prefix}.index")
    for size in (0, 10, index.stat().st_size - 1):
        os.truncate(index, size)
        with pytest.raises(FileFormatError, match=r"ckpt\.index: "):
            BundleReader(prefix)


def test_an_index_claiming_huge_blocks_names_the_file(tmp_path):
    prefix = _copy_checkpoint(tmp_path)
    index = Path(f"{prefix}.index")
    data = bytearray(index.read_bytes())
    footer = len(data) - 48
    # the footer's metaindex and index handles, as varints: claim an index block of 2**62 bytes
    data[footer:footer + 20] = bytes([0x00, 0x00, 0x00]) + bytes([0xFF] * 8) + bytes([0x3F]) + bytes(8)
    index.write_bytes(bytes(data))
    message = bounded(BundleReader, prefix)
    assert "ckpt.index" in message and "extends past the end" in message


def test_a_shard_shorter_than_an_entry_names_file_and_key(tmp_path):
    prefix = _copy_checkpoint(tmp_path)
    os.truncate(f"{prefix}.data-00000-of-00001", 1000)
    with pytest.raises(FileFormatError, match=r"tensor 'model/big/.ATTRIBUTES/VARIABLE_VALUE': extent "
                                              r"\(offset 28, size 1200000\) lies outside the 1000-byte shard"):
        BundleReader(prefix).read(BIG.decode())


def test_a_header_claiming_2_to_the_31_shards_names_the_missing_shard(tmp_path):
    prefix = _copy_checkpoint(tmp_path)
    _rewrite_index(prefix, lambda header, entries: setattr(header, "num_shards", 2**31 - 1))
    message = bounded(_read_all, prefix)
    assert f"data shard {prefix}.data-00000-of-2147483647 is missing" in message


@pytest.mark.parametrize("dims", [(-5,), (2**40, 2**40), (1,) * 70, (2**31, 2**31, 8), (2**40, 0, 2**40)])
def test_entries_with_negative_huge_or_deep_shapes_name_file_and_key(tmp_path, dims):
    prefix = _copy_checkpoint(tmp_path)

    def edit(header, entries):
        _entry(entries, BIG).shape.CopyFrom(shape_to_proto(dims))

    _rewrite_index(prefix, edit)
    message = bounded(BundleReader(prefix).read, BIG.decode())
    assert f"ckpt.index: tensor {BIG.decode()!r}" in message


def test_an_entry_of_an_unknown_dtype_names_file_and_key(tmp_path):
    prefix = _copy_checkpoint(tmp_path)
    _rewrite_index(prefix, lambda header, entries: setattr(_entry(entries, BIG), "dtype", 77))
    with pytest.raises(FileFormatError, match=r"tensor 'model/big/.ATTRIBUTES/VARIABLE_VALUE': "
                                              "unsupported DataType enum value 77"):
        BundleReader(prefix).read(BIG.decode())


def test_a_non_utf8_key_is_readable_and_a_missing_key_is_a_project_error(tmp_path):
    prefix = _copy_checkpoint(tmp_path)

    def edit(header, entries):
        for record in entries:
            if record[0] == BIG:
                record[0] = b"model/\xff\xfe"

    _rewrite_index(prefix, edit)
    reader = BundleReader(prefix)
    assert reader.read("model/\\xff\\xfe").shape == (600, 500)
    with pytest.raises(SavedModelError, match=r"ckpt\.index: no tensor named 'model/big/"):
        reader.read(BIG.decode())


def test_a_model_whose_variables_index_lost_a_key_names_file_and_key(tmp_path):
    model = _seeds(tmp_path)
    prefix = model / "variables" / "variables"

    def edit(header, entries):
        for record in entries:
            if record[0] == b"w/.ATTRIBUTES/VARIABLE_VALUE":
                record[0] = b"w/\xff"

    _rewrite_index(prefix, edit)
    with pytest.raises(SavedModelError, match=r"variables\.index: no tensor named 'w/.ATTRIBUTES/VARIABLE_VALUE'"):
        load(model)


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_fifo_or_device_in_place_of_an_asset_is_refused(tmp_path, kind):
    model = tmp_path / "text_file_tables"
    shutil.copytree(ASSET_MODEL, model)
    asset = model / "assets" / "vocab.txt"  # read by the init op, when loading
    described = special_file(asset, kind)
    message = bounded(_load_allowing_any_file, model)  # /dev/zero lies outside the model
    assert f"{asset} is {described}, not a regular file" in message
