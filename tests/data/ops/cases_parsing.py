"""Kernel cases for the tf.Example parsing ops (ParseExampleV2, ParseExample, ParseSingleExample):
dense features of fixed and variable shape with defaults, sparse and ragged features, every
feature dtype, batches of 0, 1 and several, a scalar input, and what TensorFlow rejects:
a missing required feature, a wrong dtype or value count, bytes that are no Example."""
import numpy as np
import tensorflow as tf

EMPTY_LIST = object()
"""A feature value: a float_list with no values (an empty Feature is `None`)."""


def ex(**features) -> bytes:
    message = tf.train.Example()
    for key, values in features.items():
        feature = message.features.feature[key]
        if values is None:
            feature.SetInParent()
        elif values is EMPTY_LIST:
            feature.float_list.SetInParent()
        elif isinstance(values[0], float):
            feature.float_list.value.extend(values)
        elif isinstance(values[0], int):
            feature.int64_list.value.extend(values)
        else:
            feature.bytes_list.value.extend(values)
    return message.SerializeToString(deterministic=True)


def s(*items, shape=None):
    array = np.empty(len(items), dtype=object)
    array[:] = [i.encode() if isinstance(i, str) else i for i in items]
    return array.reshape(shape if shape is not None else (len(items),))


def f32(*values, shape=None):
    return np.array(values, np.float32).reshape(shape if shape is not None else (len(values),))


def i64(*values, shape=None):
    return np.array(values, np.int64).reshape(shape if shape is not None else (len(values),))


NONE = f32()
"""The default of a required dense feature."""
A = ex(x=[1.0], n=[3], w=[b"cat"], v=[1.5, 2.5, 3.5], r=[7, 8], t=[b"p", b"q"])
B = ex(x=[2.0], n=[4], v=[4.0], r=[9], t=[b"z"])
C = ex(x=[3.0], w=[b"dog", b"emu"], v=[5.0, 6.0, 7.0, 8.0])
UNPACKED = b"\n\x0e\n\x0c\n\x01x\x12\x07\x12\x05\r\x00\x00\xc0?"
"""Example {x: float_list [1.5]} with the float not packed (field 1, wire type 5): a legal
encoding TensorFlow's writers never choose."""
UNKNOWN_FIELD = ex(x=[2.5]) + b"\x10\x07"
"""An Example followed by field 2 (varint 7), which Example does not have: skipped."""


def v2(name, serialized, sparse=(), dense=(), ragged=(), names=None, error=False):
    """sparse: (key, dtype); dense: (key, default, shape); ragged: (key, dtype, split dtype)."""
    return case("ParseExampleV2", name=name, error=error, dynamic=error,
                serialized=serialized if isinstance(serialized, np.ndarray) else s(*serialized),
                names=s(*(names or ())), sparse_keys=s(*[k for k, _ in sparse]),
                dense_keys=s(*[k for k, _, _ in dense]), ragged_keys=s(*[k for k, _, _ in ragged]),
                dense_defaults=[d for _, d, _ in dense], num_sparse=len(sparse),
                sparse_types=[t for _, t in sparse], ragged_value_types=[t for _, t, _ in ragged],
                ragged_split_types=[t for _, _, t in ragged], dense_shapes=[sh for _, _, sh in dense])


def v1(name, serialized, sparse=(), dense=(), names=None, error=False):
    return case("ParseExample", name=name, error=error, dynamic=error,
                serialized=serialized if isinstance(serialized, np.ndarray) else s(*serialized),
                names=s(*(names or ())), sparse_keys=[s(k, shape=()) for k, _ in sparse],
                dense_keys=[s(k, shape=()) for k, _, _ in dense], dense_defaults=[d for _, d, _ in dense],
                sparse_types=[t for _, t in sparse], dense_shapes=[sh for _, _, sh in dense])


def single(name, serialized, sparse=(), dense=(), error=False):
    return case("ParseSingleExample", name=name, error=error, dynamic=error, serialized=s(serialized, shape=()),
                dense_defaults=[d for _, d, _ in dense], num_sparse=len(sparse),
                sparse_keys=[k for k, _ in sparse], dense_keys=[k for k, _, _ in dense],
                sparse_types=[t for _, t in sparse], dense_shapes=[sh for _, _, sh in dense])


F, I, S = tf.float32, tf.int64, tf.string
ALL_KINDS = dict(sparse=[("w", S), ("n", I)], dense=[("x", NONE, [1]), ("v", f32(-1), [None])],
                 ragged=[("r", I, tf.int32), ("t", S, tf.int64)])

V2 = [
    v2("dense_float", [A, B, C], dense=[("x", NONE, [1])]),
    v2("dense_default", [A, C], dense=[("n", i64(-1), [1])]),
    v2("dense_string_default", [A, B, ex(w=[b"fox"])], dense=[("w", s("?"), [1])]),
    v2("dense_scalar_shape", [A, B], dense=[("x", f32(0, shape=()), [])]),
    v2("dense_matrix", [ex(m=[1, 2, 3, 4]), ex(m=[5, 6, 7, 8])], dense=[("m", i64(0, 0, 0, 0, shape=(2, 2)), [2, 2])]),
    v2("dense_matrix_default", [ex(m=[1, 2, 3, 4]), ex()], dense=[("m", i64(9, 8, 7, 6, shape=(2, 2)), [2, 2])]),
    v2("dense_varlen", [A, B, C, ex()], dense=[("v", f32(-1), [None])]),
    v2("dense_varlen_string", [A, B, C], dense=[("t", s(""), [None])]),
    v2("dense_varlen_rows", [ex(m=[b"a", b"b", b"c", b"d"]), ex(m=[b"e", b"f"])], dense=[("m", s("-"), [None, 2])]),
    v2("dense_varlen_all_missing", [ex(), ex()], dense=[("v", f32(0), [None, 3])]),
    v2("sparse_kinds", [A, B, C], sparse=[("v", F), ("n", I), ("w", S)]),
    v2("sparse_all_missing", [ex(), ex()], sparse=[("v", F)]),
    v2("ragged_kinds", [A, B, C], ragged=[("r", I, tf.int32), ("t", S, tf.int64), ("v", F, tf.int64)]),
    v2("every_kind", [A, B, C], **ALL_KINDS),
    v2("batch_of_one", [A], **ALL_KINDS),
    v2("batch_of_zero", s(), **ALL_KINDS),
    v2("batch_of_zero_varlen_rows", s(), dense=[("m", s("-"), [None, 2])]),
    v2("scalar", s(A, shape=()), **ALL_KINDS),
    v2("scalar_missing", s(ex(x=[1.0]), shape=()), **ALL_KINDS),
    v2("names", [A, B], dense=[("x", NONE, [1])], names=["first", "second"]),
    v2("empty_feature_takes_default", [ex(x=None), A], dense=[("x", f32(-5), [1])]),
    v2("empty_feature_sparse", [ex(v=None), A], sparse=[("v", F)], ragged=[("t", S, tf.int32)]),
    v2("empty_list_varlen", [ex(v=EMPTY_LIST), A], dense=[("v", f32(0), [None])]),
    v2("empty_example", [b"", A], sparse=[("n", I)], dense=[("x", f32(4), [1])]),
    v2("concatenated_last_wins", [ex(x=[1.0], n=[1]) + ex(x=[5.0])], sparse=[("n", I)], dense=[("x", NONE, [1])]),
    v2("unpacked_floats", [UNPACKED], dense=[("x", NONE, [1])]),
    v2("unknown_field_skipped", [UNKNOWN_FIELD], dense=[("x", NONE, [1])]),
    v2("no_features", [A, B]),
    v2("required_missing", [A, ex(n=[1])], dense=[("x", NONE, [1])], error=True),
    v2("required_missing_named", [A, ex(n=[1])], dense=[("x", NONE, [1])], names=["a", "b"], error=True),
    v2("required_empty_feature", [ex(x=None)], dense=[("x", NONE, [1])], error=True),
    v2("dense_wrong_type", [A, ex(x=[1])], dense=[("x", NONE, [1])], error=True),
    v2("dense_wrong_count", [A, ex(x=[1.0, 2.0])], dense=[("x", NONE, [1])], error=True),
    v2("dense_string_wrong_count", [C], dense=[("w", s("?"), [1])], error=True),
    v2("dense_empty_list", [ex(x=EMPTY_LIST)], dense=[("x", f32(1), [1])], error=True),
    v2("dense_varlen_stride", [ex(v=[1.0, 2.0])], dense=[("v", f32(0), [None, 3])], error=True),
    v2("dense_varlen_wrong_type", [A, ex(v=[b"no"])], dense=[("v", f32(0), [None])], error=True),
    v2("sparse_wrong_type", [A, ex(v=[b"no"])], sparse=[("v", F)], error=True),
    v2("ragged_wrong_type", [A, ex(r=[1.0])], ragged=[("r", I, tf.int64)], error=True),
    v2("varlen_default_not_single", [A], dense=[("v", f32(0, 0), [None])], error=True),
    v2("varlen_default_empty", [A], dense=[("v", NONE, [None])], error=True),
    v2("default_shape_mismatch", [A], dense=[("x", f32(1, 2), [1])], error=True),
    v2("garbage", [A, b"garbage"], dense=[("x", NONE, [1])], error=True),
    v2("truncated", [A[:-3]], sparse=[("v", F)], error=True),
    v2("names_wrong_shape", [A], dense=[("x", NONE, [1])], names=["a", "b"], error=True),
]

V1 = [
    v1("every_kind", [A, B, C], sparse=[("w", S), ("n", I)], dense=[("x", NONE, [1]), ("v", f32(-1), [None])]),
    v1("dense_defaults", [A, ex()], dense=[("n", i64(-1), [1]), ("m", s("?", "!"), [2])], names=["a", "e"]),
    v1("batch_of_zero", s(), sparse=[("v", F)], dense=[("x", NONE, [1])]),
    v1("required_missing", [A, ex(n=[1])], dense=[("x", NONE, [1])], error=True),
    v1("wrong_type", [A, ex(w=[1.0])], sparse=[("w", S)], error=True),
    v1("garbage", [b"\n\x05ab"], sparse=[("v", F)], error=True),
]

SINGLE = [
    single("every_kind", A, sparse=[("w", S), ("r", I)], dense=[("x", NONE, [1]), ("v", f32(0), [None])]),
    single("defaults", ex(), sparse=[("v", F)], dense=[("x", f32(2), [1]), ("w", s("none", shape=()), [])]),
    single("required_missing", ex(n=[1]), dense=[("x", NONE, [1])], error=True),
    single("wrong_count", A, dense=[("v", f32(0, 0), [2])], error=True),
]

CASES = V2 + V1 + SINGLE
