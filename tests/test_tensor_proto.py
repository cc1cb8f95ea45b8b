"""TensorProto <-> numpy conversion and the dtype table, checked against TensorFlow and numpy."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conftest import GRAPHS
from savedmodel.protos import graph_pb2, tensor_pb2, types_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import TensorProtoError
from savedmodel.runtime.tensor_proto import from_numpy, to_numpy

ROWS = [row for row in dtypes.ALL if row.numpy is not None]
NON_STRING_ROWS = [row for row in ROWS if not row.is_string]

MODERATE = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def over(rows):
    return pytest.mark.parametrize("row", rows, ids=[row.name for row in rows])


by_row = over(ROWS)
by_non_string_row = over(NON_STRING_ROWS)
by_any_row = over(dtypes.ALL)


def arrays_of(row, shape=SHAPES):
    """Arrays of any value the dtype holds; 16-bit floats are drawn as raw bit patterns."""
    if row.is_string:
        return hnp.arrays(object, shape, elements=st.binary(max_size=6))
    if row.field == "half_val":
        return hnp.arrays(np.uint16, shape).map(lambda bits: bits.view(row.numpy))
    return hnp.arrays(row.numpy, shape)


def bits(array):
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype.kind == "c":
        flat = flat.view(flat.real.dtype)
    return flat.view(f"u{flat.dtype.itemsize}")


def assert_same_array(actual, expected):
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if expected.dtype == object:
        assert all(type(item) is bytes for item in actual.flat)
        assert actual.tolist() == expected.tolist()
    else:
        np.testing.assert_array_equal(bits(actual), bits(expected))


def ours(tf_proto):
    return tensor_pb2.TensorProto.FromString(tf_proto.SerializeToString())


def wire(proto):
    return proto.SerializeToString(deterministic=True)


def proto_of(row, shape, **fields):
    enum = row if isinstance(row, int) else row.enum
    proto = tensor_pb2.TensorProto(dtype=enum, **fields)
    for size in shape:
        proto.tensor_shape.dim.add().size = size
    return proto


def typed_values(row, values):
    """The typed-field form of a flat array, as tensor.proto defines it."""
    if row.field == "half_val":
        return values.view(np.uint16).tolist()
    if row.numpy.kind == "c":
        return np.column_stack([values.real, values.imag]).ravel().tolist()
    return values.tolist()


def varint(value):
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def string_content(strings):
    return b"".join(varint(len(s)) for s in strings) + b"".join(strings)


@st.composite
def partial_fills(draw, row, allow_none=True):
    """(flat values, shape) with at most as many values as the shape holds."""
    shape = draw(SHAPES)
    size = math.prod(shape)
    least = 0 if allow_none or size == 0 else 1
    count = draw(st.integers(least, size))
    return draw(arrays_of(row, (count,))), shape


# Round trips, no TensorFlow.

@by_row
@MODERATE
@given(data=st.data())
def test_round_trip_is_exact(row, data):
    array = data.draw(arrays_of(row))
    back = to_numpy(from_numpy(array))
    assert_same_array(back, array)
    assert back.flags.writeable


@by_row
@MODERATE
@given(data=st.data())
def test_round_trip_through_serialized_bytes(row, data):
    array = data.draw(arrays_of(row))
    parsed = tensor_pb2.TensorProto.FromString(from_numpy(array).SerializeToString())
    assert_same_array(to_numpy(parsed), array)


@MODERATE
@given(strings=hnp.arrays(object, SHAPES, elements=st.binary(max_size=300)))
@example(strings=np.array([b"", b"\xff\xfe\x80", b"\x00"], dtype=object))
def test_string_round_trip_keeps_arbitrary_bytes(strings):
    assert_same_array(to_numpy(from_numpy(strings)), strings)


# Reading hand-built encodings, no TensorFlow.

@by_non_string_row
@MODERATE
@given(data=st.data())
def test_reads_little_endian_tensor_content(row, data):
    array = data.draw(arrays_of(row, hnp.array_shapes(min_dims=0, max_dims=3, min_side=1)))
    content = array.astype(array.dtype.newbyteorder("<")).tobytes()
    assert_same_array(to_numpy(proto_of(row, array.shape, tensor_content=content)), array)


@by_row
@MODERATE
@given(data=st.data())
def test_typed_field_with_fewer_values_repeats_the_last(row, data):
    values, shape = data.draw(partial_fills(row, allow_none=False))
    proto = proto_of(row, shape)
    getattr(proto, row.field).extend(typed_values(row, values))
    expected = np.pad(values, (0, math.prod(shape) - values.size), mode="edge").reshape(shape)
    assert_same_array(to_numpy(proto), expected)


@by_row
@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_typed_field_without_values_reads_as_zeros(row, shape):
    expected = np.full(shape, b"", dtype=object) if row.is_string else np.zeros(shape, row.numpy)
    assert_same_array(to_numpy(proto_of(row, shape)), expected)


@by_row
@pytest.mark.parametrize("shape", [(0,), (2, 0, 3), (0, 0)])
def test_empty_tensor(row, shape):
    expected = np.empty(shape, dtype=row.numpy)
    assert_same_array(to_numpy(proto_of(row, shape)), expected)
    assert_same_array(to_numpy(from_numpy(expected)), expected)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
def test_half_val_holds_16_bit_patterns(dtype):
    values = np.array([1.5, -2.0, np.inf, np.nan], dtype=dtype)
    proto = proto_of(dtypes.from_numpy(dtype), (4,))
    proto.half_val.extend(values.view(np.uint16).tolist())
    assert_same_array(to_numpy(proto), values)


@MODERATE
@given(strings=hnp.arrays(object, SHAPES, elements=st.binary(max_size=200)))
@example(strings=np.array([b"", b"a" * 127, b"b" * 128, b"\x80\xff" * 150], dtype=object))
@example(strings=np.array([[b"", b""], [b"", b""]], dtype=object))
def test_reads_string_tensor_content(strings):
    content = string_content(strings.ravel().tolist())
    proto = proto_of(types_pb2.DT_STRING, strings.shape, tensor_content=content)
    assert_same_array(to_numpy(proto), strings)


def test_where_names_the_source_in_errors():
    proto = proto_of(types_pb2.DT_FLOAT, (-1,))
    with pytest.raises(TensorProtoError, match=r"^node 'w': "):
        to_numpy(proto, where="node 'w'")


# Bad input.

def error_of(proto):
    with pytest.raises(TensorProtoError) as info:
        to_numpy(proto)
    return str(info.value)


@by_non_string_row
@pytest.mark.parametrize("delta", [-1, 1], ids=["short", "long"])
def test_tensor_content_of_wrong_size(row, delta):
    content = bytes(3 * row.itemsize + delta)
    message = error_of(proto_of(row, (3,), tensor_content=content))
    assert "tensor_content" in message and str(len(content)) in message
    assert str(3 * row.itemsize) in message


@by_row
def test_more_typed_values_than_the_shape_holds(row):
    values = np.zeros(3, dtype=row.numpy) if not row.is_string else np.array([b"a"] * 3, object)
    proto = proto_of(row, (2,))
    getattr(proto, row.field).extend(typed_values(row, values))
    message = error_of(proto)
    assert row.field in message and "more than" in message


def test_negative_dimension():
    assert "negative dimension" in error_of(proto_of(types_pb2.DT_FLOAT, (2, -1)))


def test_unknown_rank():
    proto = proto_of(types_pb2.DT_FLOAT, ())
    proto.tensor_shape.unknown_rank = True
    assert "unknown rank" in error_of(proto)


def test_odd_number_of_scomplex_values():
    proto = proto_of(types_pb2.DT_COMPLEX64, (2,), scomplex_val=[1.0, 2.0, 3.0])
    assert "odd number" in error_of(proto)


@pytest.mark.parametrize("pattern", [-1, 0x10000, 2**31 - 1])
@pytest.mark.parametrize("enum", [types_pb2.DT_HALF, types_pb2.DT_BFLOAT16])
def test_half_val_outside_16_bits(enum, pattern):
    proto = proto_of(enum, (2,), half_val=[0, pattern])
    assert "0..65535" in error_of(proto)


@pytest.mark.parametrize("enum", [types_pb2.DT_RESOURCE, types_pb2.DT_VARIANT])
def test_resource_and_variant_have_no_numpy_value(enum):
    assert types_pb2.DataType.Name(enum) in error_of(proto_of(enum, ()))


@pytest.mark.parametrize("enum", [types_pb2.DT_INVALID, types_pb2.DT_FLOAT8_E5M2,
                                  types_pb2.DT_INT4, 100, 99, 999])
def test_unknown_dtype_enum(enum):
    assert f"enum value {enum}" in error_of(proto_of(enum, ()))


@pytest.mark.parametrize("content", [b"\x01a\x02bcd", b"\x01a\x02b"],
                         ids=["trailing bytes", "missing bytes"])
def test_string_tensor_content_lengths_disagree_with_bytes(content):
    proto = proto_of(types_pb2.DT_STRING, (2,), tensor_content=content)
    assert "string tensor_content" in error_of(proto)


@pytest.mark.parametrize("content", [b"\x01\x80", b"\xff\xff", b"\x00"],
                         ids=["second length cut", "first length cut", "second length missing"])
def test_string_tensor_content_ending_inside_a_varint(content):
    proto = proto_of(types_pb2.DT_STRING, (2,), tensor_content=content)
    assert "varint" in error_of(proto)


def test_shape_with_more_elements_than_an_array_can_hold():
    proto = proto_of(types_pb2.DT_FLOAT, (2**40, 2**40))
    assert str(2**40) in error_of(proto)


@pytest.mark.parametrize("real, imag", [(1.0, np.inf), (2.0, -np.inf), (1.0, np.nan), (-0.0, 0.0)])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_typed_values_keep_infinities_nans_and_signed_zeros(dtype, real, imag):
    expected = np.array([complex(real, imag)], dtype=dtype)
    proto = proto_of(dtypes.from_numpy(dtype), (1,))
    getattr(proto, dtypes.from_numpy(dtype).field).extend([real, imag])
    assert_same_array(to_numpy(proto), expected)


# Writing matches TensorFlow byte for byte.

@by_row
@MODERATE
@given(data=st.data())
def test_writes_what_tensorflow_writes(tf, row, data):
    array = data.draw(arrays_of(row))
    assert wire(from_numpy(array)) == wire(tf.make_tensor_proto(array))


@pytest.mark.parametrize("value, dtype", [
    (["a", "é", ""], None), ([b"\xff", b""], None), ("text", None), (b"", None),
    ([1.5, 2.0], "float16"), ([1, 2, 3], "bfloat16"), ([[1, 2], [3, 4]], "uint16"),
    ([True, False], None), (7, "int8"), ([1 + 2j], "complex64"), (3.25, "float64"), ([], "float32"),
], ids=repr)
def test_writes_python_values_as_tensorflow_does(tf, value, dtype):
    tf_dtype = None if dtype is None else tf.as_dtype(dtype)
    assert wire(from_numpy(value, dtype)) == wire(tf.make_tensor_proto(value, dtype=tf_dtype))


@pytest.mark.parametrize("dtype", ["<f4", ">f4", ">i8", ">u2", ">c8", ">f2"])
def test_writes_non_native_byte_order_as_native_values(tf, dtype):
    array = np.arange(6, dtype=dtype).reshape(2, 3)
    native = array.astype(array.dtype.newbyteorder("="))
    assert wire(from_numpy(array)) == wire(tf.make_tensor_proto(native))


# Reading agrees with TensorFlow.

@by_row
@MODERATE
@given(data=st.data())
def test_reads_tensorflow_typed_fields(tf, row, data):
    values, shape = data.draw(partial_fills(row, allow_none=not row.is_string))
    tf_proto = tf.make_tensor_proto(values, dtype=tf.as_dtype(row.name), shape=list(shape))
    assert_same_array(to_numpy(ours(tf_proto)), tf.make_ndarray(tf_proto))


@by_row
@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3), (2, 2, 2)])
def test_reads_tensorflow_broadcast_of_one_value(tf, row, shape):
    value = np.array([b"\xc3x"], object) if row.is_string else np.ones(1, row.numpy)
    tf_proto = tf.make_tensor_proto(value, dtype=tf.as_dtype(row.name), shape=list(shape))
    assert_same_array(to_numpy(ours(tf_proto)), tf.make_ndarray(tf_proto))


@pytest.mark.parametrize("value, dtype", [
    ([1, 2, 3], "int64"), ([[1.5, 2.5], [3.5, 4.5]], "float16"), ([True, False, True], "bool"),
    ([b"ab", b"", b"\x00\xff"], "string"), ([1 + 1j, -2j], "complex128"), (5, "uint8"),
    ([0.1, 0.2], "bfloat16"), ([2**40, 1], "uint64"), ([-(2**31), 2**31 - 1], "int32"),
], ids=repr)
def test_reads_tensorflow_protos_of_python_lists(tf, value, dtype):
    tf_proto = tf.make_tensor_proto(value, dtype=tf.as_dtype(dtype))
    assert_same_array(to_numpy(ours(tf_proto)), tf.make_ndarray(tf_proto))


@by_non_string_row
@MODERATE
@given(data=st.data())
def test_reads_tensorflow_tensor_content(tf, row, data):
    array = data.draw(arrays_of(row))
    serialized = tf.io.serialize_tensor(tf.constant(array)).numpy()
    tf_proto = type(tf.make_tensor_proto(0)).FromString(serialized)
    assert tf_proto.tensor_content or array.size == 0
    assert_same_array(to_numpy(tensor_pb2.TensorProto.FromString(serialized)),
                      tf.make_ndarray(tf_proto))


# The dtype table.

@by_any_row
def test_dtype_enum_and_name_match_tensorflow(tf, row):
    tf_dtype = tf.as_dtype(row.name)
    assert tf_dtype.as_datatype_enum == row.enum
    assert tf_dtype.name == row.name
    assert tf.as_dtype(row.enum + dtypes.REF_OFFSET).base_dtype == tf_dtype


@by_row
def test_dtype_numpy_and_size_match_tensorflow(tf, row):
    tf_dtype = tf.as_dtype(row.name)
    assert np.dtype(tf_dtype.as_numpy_dtype) == row.numpy
    if row in dtypes.NUMERIC:
        assert tf_dtype.size == row.itemsize == row.numpy.itemsize


@by_row
def test_dtype_field_is_where_tensorflow_writes_a_scalar(tf, row):
    scalar = np.array(b"x", object) if row.is_string else np.ones((), row.numpy)
    written = {field.name for field, _ in tf.make_tensor_proto(scalar).ListFields()}
    assert written - {"dtype", "tensor_shape"} == {row.field}


@pytest.mark.parametrize("alias", ["half", "float", "double"])
def test_dtype_aliases_match_tensorflow(tf, alias):
    assert dtypes.from_name(alias).enum == tf.as_dtype(alias).as_datatype_enum


def test_numeric_rows_are_the_fixed_width_rows():
    fixed = [row for row in ROWS if not row.is_string]
    assert list(dtypes.NUMERIC) == fixed
    assert all(row.itemsize == 0 for row in dtypes.ALL if row not in fixed)


def test_dtype_table_keys_are_unique():
    assert len({row.enum for row in dtypes.ALL}) == len(dtypes.ALL)
    assert len({row.name for row in dtypes.ALL}) == len(dtypes.ALL)


@by_any_row
def test_dtype_lookups_round_trip(row):
    assert dtypes.from_enum(row.enum) is row
    assert dtypes.from_enum(row.enum + dtypes.REF_OFFSET) is row
    assert dtypes.from_name(row.name) is row
    assert dtypes.from_name(row.enum_name) is row
    for key in (row, row.enum, row.name, row.enum_name):
        assert dtypes.as_dtype(key) is row


@by_non_string_row
def test_dtype_numpy_lookups_round_trip(row):
    assert dtypes.from_numpy(row.numpy) is row
    assert dtypes.from_numpy(row.numpy.newbyteorder(">")) is row
    assert dtypes.as_dtype(row.numpy) is row
    assert dtypes.as_dtype(row.numpy.type) is row


@pytest.mark.parametrize("kind", [object, "S3", "U2", bytes, str])
def test_numpy_text_types_are_string(kind):
    assert dtypes.from_numpy(kind).is_string


@pytest.mark.parametrize("lookup, key", [
    (dtypes.from_enum, 24), (dtypes.from_enum, 0), (dtypes.from_name, "float8"),
    (dtypes.from_name, "DT_NOPE"), (dtypes.from_numpy, "M8[s]"), (dtypes.from_numpy, "V4"),
])
def test_unknown_dtypes_are_errors(lookup, key):
    with pytest.raises(dtypes.UnknownDTypeError):
        lookup(key)


# Const nodes of the reference graphs.

def const_nodes():
    found = []
    for path in GRAPHS:
        graph = text_format.Parse(path.read_text(), graph_pb2.GraphDef())
        nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
        found += [pytest.param(n, id=f"{path.stem}:{n.name}") for n in nodes if n.op == "Const"]
    return found


def test_reference_graphs_have_const_nodes():
    assert len(const_nodes()) > 10


@pytest.mark.parametrize("node", const_nodes())
def test_const_node_is_rewritten_as_tensorflow_rewrites_it(tf, node):
    tf_proto = type(tf.make_tensor_proto(0)).FromString(node.attr["value"].tensor.SerializeToString())
    expected = tf.make_tensor_proto(tf.make_ndarray(tf_proto))
    assert wire(from_numpy(to_numpy(node.attr["value"].tensor))) == wire(expected)


def _make_tensor_proto_arguments(stored):
    """The (values, shape) that TensorFlow's make_tensor_proto was given for a stored tensor:
    the stored typed values with the stored shape when they are fewer than the shape holds
    (TensorFlow's compact form for constants such as `ones([10])`), else the whole array."""
    value = to_numpy(stored)
    given = len(getattr(stored, dtypes.from_enum(stored.dtype).field))
    if not stored.tensor_content and 0 < given < value.size:
        return value.ravel()[:given], value.shape
    return value, None


@pytest.mark.parametrize("node", const_nodes())
def test_const_node_rewrites_identically(node):
    stored = node.attr["value"].tensor
    values, shape = _make_tensor_proto_arguments(stored)
    assert wire(from_numpy(values, dtype=stored.dtype, shape=shape)) == wire(stored)


@pytest.mark.parametrize("shape", [(10,), (2, 3), (4, 1, 2)])
@pytest.mark.parametrize("value, dtype", [(1, "int32"), (0.5, "float32"), (True, "bool"), (b"x", "string")])
def test_compact_form_of_one_value_with_a_shape_matches_tensorflow(tf, value, dtype, shape):
    expected = tf.make_tensor_proto(value, dtype=getattr(tf, dtype), shape=shape)
    assert wire(from_numpy(value, dtype=dtype, shape=shape)) == wire(expected)


def test_more_values_than_the_shape_holds_is_an_error():
    with pytest.raises(TensorProtoError, match="3 values do not fit shape"):
        from_numpy([1, 2, 3], dtype="int32", shape=(2,))
