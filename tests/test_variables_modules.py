"""sm.Variable and sm.Module against tf.Variable and tf.Module: the same code runs on both."""
from __future__ import annotations

import collections
import subprocess
import sys

import numpy as np
import pytest

import savedmodel as sm
from savedmodel.variables import name_scope

INITIAL_VALUES = [1, 2**40, -3, 1.5, True, [1, 2.5], [[1, 2], [3, 4]], [], "text", b"bytes",
                  ["a", "bc"], np.float64(1.25), np.int64(3), np.arange(6, dtype=np.int16),
                  np.array([1.5, -2.25], np.float16), np.zeros((2, 3)), np.array(["x", "yz"])]
Pair = collections.namedtuple("Pair", "first second")


def _same_value(ours, theirs) -> None:
    theirs = np.asarray(theirs)
    assert np.asarray(ours).dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), theirs)


def _raises(call) -> type | None:
    try:
        call()
    except Exception as err:  # noqa: BLE001 - we compare what TensorFlow and we raise
        return type(err)
    return None


@pytest.mark.parametrize("value", INITIAL_VALUES, ids=repr)
def test_initial_value_gets_tensorflows_dtype_shape_and_value(tf, value):
    ours, theirs = sm.Variable(value), tf.Variable(value)
    assert ours.dtype.name == theirs.dtype.name
    assert ours.shape == tuple(theirs.shape)
    assert type(ours.numpy()) is type(theirs.numpy())
    _same_value(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("value, dtype", [(1, "float32"), (np.float64(2), "float32"),
                                          (np.array([1.7, 2.2]), "int32"), (3, "int64"),
                                          (1.0, "bfloat16"), (np.array([1, 0]), "bool"),
                                          (True, "int32"), (300, "uint8")], ids=repr)
def test_explicit_dtype_converts_as_tensorflow(tf, value, dtype):
    ours, theirs = sm.Variable(value, dtype=dtype), tf.Variable(value, dtype=dtype)
    assert ours.dtype.name == theirs.dtype.name
    _same_value(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("value, dtype", [(1.5, "int32"), ([1.0, 2.0], "int32"), ("a", "float32"),
                                          ([1, 0], "bool")])
def test_lossy_or_impossible_conversion_is_a_type_error_as_in_tensorflow(tf, value, dtype):
    assert issubclass(_raises(lambda: tf.Variable(value, dtype=dtype)), TypeError)
    with pytest.raises(TypeError):
        sm.Variable(value, dtype=dtype)


@pytest.mark.parametrize("value", [[1.0, 2.0], 0.1, 3, True, "abc", ["a", "b"],
                                   np.zeros((2, 3)), np.zeros((20, 30)),
                                   np.array([0.1, 1e-9], np.float32), np.float16(1.5)], ids=repr)
def test_repr_is_tensorflows_with_our_name(tf, value):
    ours, theirs = sm.Variable(value, name="x"), tf.Variable(value, name="x")
    assert repr(ours) == repr(theirs).replace("<tf.Variable", "<savedmodel.Variable")


def test_dtype_is_the_table_row():
    variable = sm.Variable([1.0])
    assert variable.dtype is sm.Variable(np.float32(0)).dtype
    assert repr(variable.dtype) == "savedmodel.float32"


def test_names_follow_tensorflows_eager_rules(tf):
    names = []
    for lib in (tf, sm):
        scope = lib.name_scope if lib is tf else name_scope
        created = [lib.Variable(1.0), lib.Variable(1.0, name="w"), lib.Variable(1.0, name="a/"),
                   lib.Variable(1.0, name="a/b")]
        with scope("outer"):
            created.append(lib.Variable(1.0, name="w"))
            with scope("inner"):
                created.append(lib.Variable(1.0))
            with scope("abs/"):
                created.append(lib.Variable(1.0, name="v"))
        names.append([v.name for v in created])
    assert names[0] == names[1]


def test_assign_family_returns_the_variable_and_computes_as_tensorflow(tf):
    results = []
    for lib in (tf, sm):
        v = lib.Variable([1.0, 2.0])
        v.assign([4, 5])
        v.assign_add(np.array([0.5, 0.25]))
        v.assign_sub([1.0, 1.0])
        i = lib.Variable(7, dtype="int64")
        i.assign_add(3)
        results.append((v.numpy(), i.numpy()))
    for ours, theirs in zip(results[1], results[0]):
        _same_value(ours, theirs)
    v = sm.Variable(1.0)
    assert v.assign(2.0) is v and v.assign_add(1.0) is v and v.assign_sub(0.5) is v


@pytest.mark.parametrize("variable, call", [
    ([1.0, 2.0], lambda v: v.assign(3.0)),
    ([1.0, 2.0], lambda v: v.assign([1.0, 2.0, 3.0])),
    ([1.0, 2.0], lambda v: v.assign_add(1.0)),
    ([1, 2], lambda v: v.assign([1.5, 2.0])),
    ("a", lambda v: v.assign_add("b")),
], ids=["scalar", "longer", "broadcast-add", "lossy", "string-add"])
def test_bad_assignments_fail_in_both(tf, variable, call):
    assert _raises(lambda: call(tf.Variable(variable))) is not None
    ours = sm.Variable(variable)
    before = ours.numpy()
    with pytest.raises((ValueError, TypeError)) as err:
        call(ours)
    assert ours.name in str(err.value)
    _same_value(ours.numpy(), before)


def test_shape_mismatch_message_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        sm.Variable([1.0, 2.0], name="v").assign([1.0, 2.0, 3.0])


def test_declared_shape_allows_assigning_other_lengths(tf):
    ours = sm.Variable([1.0], shape=(None,))
    theirs = tf.Variable([1.0], shape=tf.TensorShape([None]))
    ours.assign([1.0, 2.0, 3.0])
    theirs.assign([1.0, 2.0, 3.0])
    assert ours.shape == tuple(theirs.shape)
    _same_value(ours.numpy(), theirs.numpy())
    assert _raises(lambda: tf.Variable([1.0, 2.0], shape=(3,))) is ValueError
    with pytest.raises(ValueError):
        sm.Variable([1.0, 2.0], shape=(3,))


def test_copies_do_not_alias_the_value():
    source = np.array([1.0, 2.0], np.float32)
    variable = sm.Variable(source)
    source[0] = 9.0
    variable.numpy()[1] = 9.0
    np.asarray(variable)[1] = 9.0
    np.testing.assert_array_equal(variable.numpy(), np.array([1.0, 2.0], np.float32))


def test_operators_compute_what_tensorflow_computes(tf):
    a = np.array([[1.5, -2.0], [3.0, 4.0]], np.float32)
    b = np.array([[2.0, 1.0], [0.5, -1.0]], np.float32)
    ops = [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
           lambda x, y: x // y, lambda x, y: x % y, lambda x, y: x ** 2, lambda x, y: x @ y,
           lambda x, y: 2.0 - x, lambda x, y: 1.0 / x, lambda x, y: -x, lambda x, y: abs(x),
           lambda x, y: x < y, lambda x, y: x >= y, lambda x, y: x == y, lambda x, y: x != y,
           lambda x, y: x[1], lambda x, y: x[0, 1]]
    for op in ops:
        theirs = op(tf.Variable(a), tf.Variable(b)).numpy()
        _same_value(op(sm.Variable(a), sm.Variable(b)), theirs)
    assert float(sm.Variable(2.5)) == float(tf.Variable(2.5))
    assert bool(sm.Variable(0.0)) == bool(tf.Variable(0.0))
    _same_value(np.asarray(sm.Variable(a)), np.asarray(tf.Variable(a)))


def test_variables_are_unhashable_as_in_tensorflow(tf):
    with pytest.raises(TypeError):
        hash(tf.Variable(1.0))
    with pytest.raises(TypeError):
        hash(sm.Variable(1.0))


# ----------------------------------------------------------------------------- modules

def _classes(lib):
    class Dense(lib.Module):
        def __init__(self, n_in, n_out, name=None):
            super().__init__(name=name)
            self.w = lib.Variable(np.ones((n_in, n_out), np.float32), name="w")
            self.b = lib.Variable(np.zeros(n_out, np.float32), name="b")

    class MyHTTPModel2(lib.Module):
        def __init__(self):
            super().__init__()
            self.zeta = lib.Variable(1.5, name="zeta")
            self.dense = Dense(2, 3)
            self.layers = [Dense(3, 3, name="l0"), [lib.Variable(5, name="nested")], 7]
            self.table = {"b": lib.Variable(2.5, name="tb"), "a": Dense(1, 1, name="ta"),
                          "c": {"z": lib.Variable(1, name="deep")}}
            self.pair = Pair(lib.Variable(1, name="first"), Dense(1, 2, name="second"))
            self.frozen = lib.Variable(2.0, trainable=False, name="frozen")
            self.shared = self.zeta
            self.again = self.dense
            self.myself = self
            self._private = lib.Variable(0.0, name="private")
            with self.name_scope:
                self.scoped = lib.Variable(0.0, name="scoped")

    return Dense, MyHTTPModel2


def test_module_lists_variables_and_submodules_in_tensorflows_order(tf):
    theirs, ours = _classes(tf)[1](), _classes(sm)[1]()
    for prop in ("variables", "trainable_variables", "non_trainable_variables"):
        names = [[v.name for v in getattr(module, prop)] for module in (ours, theirs)]
        assert names[0] == names[1], prop
    assert [m.name for m in ours.submodules] == [m.name for m in theirs.submodules]
    assert ours.name == theirs.name and ours.name_scope.name == theirs.name_scope.name


def test_module_sees_later_changes_to_its_containers(tf):
    names = []
    for lib in (tf, sm):
        Dense, _ = _classes(lib)
        module = lib.Module(name="m")
        module.items = []
        module.items.append(Dense(1, 1, name="late"))
        module.table = {}
        module.table["k"] = lib.Variable(1.0, name="k")
        module.temporary = lib.Variable(1.0, name="gone")
        del module.temporary
        names.append(([v.name for v in module.variables], [m.name for m in module.submodules]))
    assert names[0] == names[1]


@pytest.mark.parametrize("class_name", ["MyFancyModule2", "HTTPServer", "ABCNet", "Net", "net",
                                        "A2B", "_Private", "already_snake"])
def test_default_module_name_is_tensorflows(tf, class_name):
    ours = type(class_name, (sm.Module,), {})()
    theirs = type(class_name, (tf.Module,), {})()
    assert (ours.name, ours.name_scope.name) == (theirs.name, theirs.name_scope.name)


@pytest.mark.parametrize("name", ["bad name", "1abc", "a-b", ""])
def test_invalid_module_names_raise_in_both(tf, name):
    assert _raises(lambda: tf.Module(name=name)) is ValueError
    with pytest.raises(ValueError, match="valid module name"):
        sm.Module(name=name)


def test_name_scope_of_a_module_prefixes_variables_as_in_tensorflow(tf):
    names = []
    for lib in (tf, sm):
        scope = lib.name_scope if lib is tf else name_scope

        class Scoped(lib.Module):
            @lib.Module.with_name_scope
            def make(self):
                return lib.Variable(1.0, name="made")

        with scope("outer"):
            module = Scoped()
        with module.name_scope as entered:
            inside = lib.Variable(1.0, name="q")
        names.append((module.name_scope.name, entered, inside.name, module.make().name))
    assert names[0] == names[1]


def test_authoring_modules_are_imported_lazily():
    code = ("import sys, savedmodel\n"
            "before = [m for m in sys.modules if m.startswith('savedmodel.')]\n"
            "savedmodel.Variable\n"
            "print(before == [], 'savedmodel.variables' in sys.modules,"
            " 'Module' in dir(savedmodel))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]
    with pytest.raises(AttributeError, match="no_such_thing"):
        sm.no_such_thing
