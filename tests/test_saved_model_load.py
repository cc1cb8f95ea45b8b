"""`sm.saved_model.load`: the object tree of a SavedModel, compared with TensorFlow's loader.

Corpus tests replay the inputs TensorFlow recorded next to each committed SavedModel and
compare with the outputs it recorded. Live tests save tf.Modules with TensorFlow into a temporary
folder, load the folder with both `tf.saved_model.load` and `sm.saved_model.load`, and make the
same calls on both objects.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import EXTRA_MODELS, SAVEDMODELS
from savedmodel.protos import saved_model_pb2
from savedmodel.runtime.errors import FileFormatError

import savedmodel as sm
from savedmodel.errors import InvalidArgumentError

MODELS = SAVEDMODELS + EXTRA_MODELS
BY_NAME = {p.name: p for p in MODELS}


def recorded(model) -> dict[str, tuple[dict, dict]]:
    """{signature: (inputs, expected outputs)} from the model's .io.npz."""
    data = np.load(f"{model}.io.npz")
    found: dict[str, tuple[dict, dict]] = {}
    for key in data.files:
        _, signature, side, name = key.split("/", 3)
        found.setdefault(signature, ({}, {}))[side == "out"][name] = data[key]
    return found


def _assert_same(ours, theirs) -> None:
    """Equal structures; tensors (sm vs tf) with equal dtypes and values."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and sorted(ours) == sorted(theirs)
        for key in theirs:
            _assert_same(ours[key], theirs[key])
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for mine, reference in zip(ours, theirs):
            _assert_same(mine, reference)
    elif hasattr(theirs, "numpy"):
        assert isinstance(ours, (sm.Tensor, sm.Variable)), ours
        assert ours.dtype.name == theirs.dtype.name
        mine, reference = np.asarray(ours.numpy()), np.asarray(theirs.numpy())
        if reference.dtype.kind in "OSU":
            assert mine.tolist() == reference.tolist()
        else:
            np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-6)
    else:
        assert ours == theirs


def _save_and_load(tf, module, path, **save_arguments):
    tf.saved_model.save(module, str(path), **save_arguments)
    return tf.saved_model.load(str(path)), sm.saved_model.load(path)


# ----------------------------------------------------------------------------- the corpus

@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_signatures_reproduce_what_tensorflow_recorded(model):
    for signature, (inputs, expected) in recorded(model).items():
        loaded = sm.saved_model.load(model)  # fresh: the recording is each signature's first call
        outputs = loaded.signatures[signature](**inputs)
        assert sorted(outputs) == sorted(expected)
        for key, value in expected.items():
            assert isinstance(outputs[key], sm.Tensor)
            assert outputs[key].numpy().dtype == value.dtype
            np.testing.assert_allclose(outputs[key].numpy(), value, rtol=1e-5, atol=1e-6)


def test_load_is_also_sm_load():
    assert sm.load is sm.saved_model.load


def test_save_and_load_stay_functions_after_their_modules_are_imported():
    """A submodule named like the function would replace the package's attribute on import."""
    code = ("import inspect, savedmodel as sm, savedmodel.saved_model.loading, "
            "savedmodel.saved_model.saving; "
            "print(all(inspect.isfunction(f) for f in "
            "(sm.save, sm.load, sm.saved_model.save, sm.saved_model.load)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "True", done.stderr


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_attributes_signatures_and_variables_match_tensorflow(tf, model):
    theirs, ours = tf.saved_model.load(str(model)), sm.saved_model.load(model)
    assert list(ours.signatures) == list(theirs.signatures)
    public = {name for name in dir(theirs) if not name.startswith("_")} - {
        "graph", "graph_debug_info", "initializer", "prune", "restore", "asset_paths"}
    assert public <= set(dir(ours))
    for name in ("variables", "trainable_variables", "non_trainable_variables"):
        if hasattr(theirs, name):
            # tf-keras lists a None where a layer tracked a lookup table as a weight: nothing
            # a loaded model could read or restore, so ours leaves it out.
            mine, reference = getattr(ours, name), [v for v in getattr(theirs, name) if v is not None]
            assert [v.name for v in mine] == [v.name for v in reference]
            assert [v.trainable for v in mine] == [v.trainable for v in reference]
            for variable, expected in zip(mine, reference):
                _assert_same(variable, expected)
    assert ours.tensorflow_version == theirs.tensorflow_version


@pytest.mark.parametrize("name", ["keras_mlp", "keras_cnn"])
def test_keras_export_serve_endpoint_matches_tensorflow(tf, name):
    theirs, ours = tf.saved_model.load(str(BY_NAME[name])), sm.saved_model.load(BY_NAME[name])
    inputs, _ = recorded(BY_NAME[name])["serving_default"]
    x = next(iter(inputs.values()))
    _assert_same(ours.serve(x), theirs.serve(x))
    _assert_same(ours.serve(sm.constant(x[:1])), theirs.serve(tf.constant(x[:1])))
    _assert_same(ours.signatures["serving_default"](**inputs),
                 theirs.signatures["serving_default"](**inputs))
    _assert_same(ours.signatures["serving_default"](sm.constant(x)),
                 theirs.signatures["serving_default"](tf.constant(x)))


def test_seeds_methods_share_the_counter_with_the_variable(tf):
    model = BY_NAME["seeds"]
    theirs, ours = tf.saved_model.load(str(model)), sm.saved_model.load(model)
    x = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
    for _ in range(2):
        _assert_same(ours.dense(x), theirs.dense(x))
    _assert_same(ours.signatures["dense"](x=x), theirs.signatures["dense"](x=x))
    _assert_same(ours.calls, theirs.calls)
    assert ours.calls.numpy() == 3
    ours.w.assign(ours.w * 2.0)
    theirs.w.assign(theirs.w * 2.0)
    _assert_same(ours.dense(x), theirs.dense(x))
    for name in ("simple_relu", "next_collatz", "power", "sum_even", "unused_gather"):
        inputs, _ = recorded(model)[name]
        _assert_same(getattr(ours, name)(**inputs), getattr(theirs, name)(**inputs))


@pytest.mark.parametrize("name", ["tf1_ref", "tf1_resource"])
def test_tensorflow1_exports_have_signatures_and_resource_variables(tf, name):
    theirs, ours = tf.saved_model.load(str(BY_NAME[name])), sm.saved_model.load(BY_NAME[name])
    x = np.ones((2, 3), np.float32)
    assert [v.name for v in ours.variables] == [v.name for v in theirs.variables]
    for variable in theirs.variables:
        variable.assign(variable * 0.5)
    for variable in ours.variables:
        variable.assign(variable * 0.5)
    _assert_same(ours.signatures["serving_default"](x=x), theirs.signatures["serving_default"](x=x))
    _assert_same(ours.signatures["serving_default"](x=tf.constant(x).numpy()),
                 theirs.signatures["serving_default"](x=x))


# ----------------------------------------------------------------------------- live tf.Modules

def test_variables_and_counters_persist_across_calls(tf, tmp_path):
    class Counter(tf.Module):
        def __init__(self):
            super().__init__()
            self.scale = tf.Variable(1.5, name="scale")
            self.count = tf.Variable(0, dtype=tf.int64, name="count")

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            self.count.assign_add(1)
            return x * self.scale

        @tf.function(input_signature=[])
        def reset(self):
            self.count.assign(0)
            return self.count.read_value()

    module = Counter()
    module(tf.constant([1.0]))
    theirs, ours = _save_and_load(tf, module, tmp_path / "m")
    assert isinstance(ours.scale, sm.Variable) and ours.scale.name == "scale:0"
    x = np.array([1.0, -2.0], np.float32)
    for _ in range(3):
        _assert_same(ours(x), theirs(x))
    _assert_same(ours.count, theirs.count)
    assert ours.count.numpy() == 4
    ours.scale.assign(3.0)
    theirs.scale.assign(3.0)
    ours.count.assign_add(10)
    theirs.count.assign_add(10)
    _assert_same(ours(x), theirs(x))
    _assert_same(ours.count, theirs.count)
    _assert_same(ours.reset(), theirs.reset())
    assert ours.count.numpy() == 0


def test_nested_modules_lists_and_dicts_are_attributes(tf, tmp_path):
    class Leaf(tf.Module):
        def __init__(self, value):
            super().__init__()
            self.v = tf.Variable(value)

    class Tree(tf.Module):
        def __init__(self):
            super().__init__()
            self.inner = Leaf([1.0, 2.0])
            self.items = [Leaf(3.0), Leaf(4), tf.Variable("text")]
            self.table = {"a": Leaf(5.0), "b": tf.Variable([True, False])}
            self.pair = (Leaf(6.0), tf.Variable(7.0))

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def total(self, x):
            return x + self.inner.v[0] + self.items[0].v + self.table["a"].v + self.pair[1]

    theirs, ours = _save_and_load(tf, Tree(), tmp_path / "m")
    _assert_same(ours.inner.v, theirs.inner.v)
    assert isinstance(ours.items, list) and len(ours.items) == 3
    _assert_same([ours.items[0].v, ours.items[1].v, ours.items[2]],
                 [theirs.items[0].v, theirs.items[1].v, theirs.items[2]])
    assert isinstance(ours.table, dict) and sorted(ours.table) == ["a", "b"]
    _assert_same([ours.table["a"].v, ours.table["b"]], [theirs.table["a"].v, theirs.table["b"]])
    assert isinstance(ours.pair, tuple)
    _assert_same([ours.pair[0].v, ours.pair[1]], [theirs.pair[0].v, theirs.pair[1]])
    ours.items[0].v.assign(30.0)
    theirs.items[0].v.assign(30.0)
    _assert_same(ours.total(1.0), theirs.total(1.0))


class _Polymorphic:
    """A method traced several times: tensors of two shapes, a Python float, an int."""

    @staticmethod
    def module(tf):
        class Poly(tf.Module):
            def __init__(self):
                super().__init__()
                self.v = tf.Variable(2.0)

            @tf.function
            def f(self, x, k=2):
                x = tf.convert_to_tensor(x)
                if x.dtype == tf.float32:
                    return x * self.v + tf.cast(k, tf.float32)
                return x * k

        module = Poly()
        module.f(tf.constant(1.0))
        module.f(tf.constant([1.0, 2.0]), k=3)
        module.f(2.0)
        module.f(tf.constant([1, 2]), 4)
        return module


POLYMORPHIC_CALLS = {
    "scalar tensor": lambda t: ((t.constant(4.0),), {}),
    "numpy float32 scalar": lambda t: ((np.float32(4.0),), {}),
    "python float": lambda t: ((4.0,), {}),
    "python int to float": lambda t: ((3,), {}),
    "saved literal": lambda t: ((2.0,), {}),
    "vector with keyword": lambda t: ((t.constant([1.0, 5.0]),), {"k": 3}),
    "all keywords": lambda t: ((), {"x": t.constant([1.0, 5.0]), "k": 3}),
    "python list": lambda t: (([1.0, 2.0], 3), {}),
    "int vector": lambda t: ((t.constant([3, 4]), 4), {}),
    "numpy float64 never converts": lambda t: ((np.array([1.0, 2.0]), 3), {}),
    "int tensor for float": lambda t: ((t.constant(1),), {}),
    "unsaved literal": lambda t: ((t.constant([1.0, 2.0]), 5), {}),
    "unsaved shape": lambda t: ((t.constant([1.0, 2.0, 3.0]), 3), {}),
}


@pytest.mark.parametrize("call", sorted(POLYMORPHIC_CALLS))
def test_restored_function_dispatches_like_tensorflow(tf, tmp_path, call):
    theirs, ours = _save_and_load(tf, _Polymorphic.module(tf), tmp_path / "m")
    their_args, their_kwargs = POLYMORPHIC_CALLS[call](tf)
    our_args, our_kwargs = POLYMORPHIC_CALLS[call](sm)
    try:
        expected = theirs.f(*their_args, **their_kwargs)
    except ValueError as err:
        assert "Could not find matching concrete function" in str(err)
        with pytest.raises(ValueError) as caught:
            ours.f(*our_args, **our_kwargs)
        message = str(caught.value)
        assert message.startswith("Could not find matching concrete function to call loaded "
                                  "from the SavedModel. Got:\n  Positional arguments (2 total):")
        assert "Expected these arguments to match one of the following 4 option(s):" in message
        assert "Option 4:" in message and "Literal" not in message
        return
    _assert_same(ours.f(*our_args, **our_kwargs), expected)


def test_binding_errors_name_the_signature(tf, tmp_path):
    theirs, ours = _save_and_load(tf, _Polymorphic.module(tf), tmp_path / "m")
    for module in (theirs, ours):
        with pytest.raises(TypeError, match="too many positional arguments"):
            module.f(1.0, 2, 3)
        with pytest.raises(TypeError, match="missing a required argument: 'x'"):
            module.f(k=2)


def test_pretty_printed_signatures_list_each_trace(tf, tmp_path):
    theirs, ours = _save_and_load(tf, _Polymorphic.module(tf), tmp_path / "m")
    text = ours.f.pretty_printed_concrete_signatures()
    assert text.count("Input Parameters:") == len(theirs.f.concrete_functions) == 4
    assert "  k (POSITIONAL_OR_KEYWORD): Literal[3]" in text
    assert "  x (POSITIONAL_OR_KEYWORD): Literal[2.0]" in text
    assert "TensorSpec(shape=(2,), dtype=savedmodel.float32, name='x')" in text


def test_get_concrete_function_selects_a_saved_trace(tf, tmp_path):
    theirs, ours = _save_and_load(tf, _Polymorphic.module(tf), tmp_path / "m")
    concrete = ours.f.get_concrete_function(sm.TensorSpec([2], sm.float32), 3)
    reference = theirs.f.get_concrete_function(tf.TensorSpec([2], tf.float32), 3)
    x = np.array([1.0, 2.0], np.float32)
    _assert_same(concrete(x), reference(tf.constant(x)))
    _assert_same(concrete(x, 3), reference(tf.constant(x), 3))
    with pytest.raises(InvalidArgumentError, match="expected to be a float32 tensor"):
        concrete(sm.constant([1, 2]))
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        ours.f.get_concrete_function(sm.TensorSpec([5], sm.float32), 3)


def test_input_signature_with_unknown_dimensions(tf, tmp_path):
    class Batch(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="rows")])
        def project(self, rows):
            return tf.matmul(rows, self.w)

    theirs, ours = _save_and_load(tf, Batch(), tmp_path / "m")
    for rows in (np.ones((1, 3), np.float32), np.arange(12, dtype=np.float32).reshape(4, 3),
                 [[1.0, 2.0, 3.0]], [[1, 2, 3]], np.zeros((0, 3), np.float32), np.ones((2, 3))):
        _assert_same(ours.project(rows), theirs.project(rows))
    _assert_same(ours.project(sm.constant([[1.0, 2.0, 3.0]])), theirs.project(tf.constant([[1.0, 2.0, 3.0]])))
    assert ours.project.input_signature == (sm.TensorSpec([None, 3], sm.float32, "rows"),)
    for bad in (lambda t: np.ones((2, 4), np.float32), lambda t: t.constant([[1, 2, 3]]),
                lambda t: t.constant(np.ones((2, 3)))):
        with pytest.raises(TypeError, match="Can not cast TensorSpec"):
            theirs.project(bad(tf))
        with pytest.raises(TypeError, match=r"Can not cast TensorSpec\(shape=\(\d, \d\), dtype=savedmodel"):
            ours.project(bad(sm))


def test_several_signatures_take_keywords_and_return_dicts(tf, tmp_path):
    class Two(tf.Module):
        def __init__(self):
            super().__init__()
            self.bias = tf.Variable([1.0, -1.0])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="a"),
                                      tf.TensorSpec([], tf.int32, name="n")])
        def combine(self, a, n):
            return {"sum": a + self.bias, "n2": n * 2}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words")])
        def lengths(self, words):
            return tf.strings.length(words)

    module = Two()
    theirs, ours = _save_and_load(tf, module, tmp_path / "m", signatures={
        "combine": module.combine, "serving_default": module.lengths})
    assert sorted(ours.signatures) == sorted(theirs.signatures) == ["combine", "serving_default"]
    feeds = {"a": np.array([[1.0, 2.0]], np.float32), "n": np.int32(3)}
    _assert_same(ours.signatures["combine"](**feeds), theirs.signatures["combine"](**feeds))
    words = np.array([b"a", b"abc", b""], dtype=object)
    _assert_same(ours.signatures["serving_default"](words=words),
                 theirs.signatures["serving_default"](words=words))
    _assert_same(ours.lengths(words), theirs.lengths(words))
    _assert_same(ours.signatures["serving_default"](sm.constant(words)),
                 theirs.signatures["serving_default"](tf.constant(words)))
    signature = ours.signatures["combine"]
    assert signature.structured_input_signature == ((), {
        "a": sm.TensorSpec([None, 2], sm.float32, "a"), "n": sm.TensorSpec([], sm.int32, "n")})
    with pytest.raises(TypeError):
        signature(feeds["a"], feeds["n"])
    with pytest.raises(TypeError, match="missing keyword arguments"):
        signature(a=feeds["a"])
    with pytest.raises(KeyError, match="predict"):
        ours.signatures["predict"]


def test_python_literal_and_nested_arguments(tf, tmp_path):
    class Literals(tf.Module):
        @tf.function
        def apply(self, inputs, training, mode="sum"):
            total = inputs["a"] + inputs["b"][0] * inputs["b"][1]
            if mode == "sum":
                total = tf.reduce_sum(total)
            return (total * 2.0 if training else total), [inputs["b"][1]]

    module = Literals()
    spec = {"a": tf.TensorSpec([None], tf.float32), "b": (tf.TensorSpec([], tf.float32),
                                                          tf.TensorSpec([None], tf.float32))}
    module.apply.get_concrete_function(spec, True)
    module.apply.get_concrete_function(spec, False, mode="keep")
    theirs, ours = _save_and_load(tf, module, tmp_path / "m")
    value = {"a": np.array([1.0, 2.0], np.float32), "b": (np.float32(3.0), np.array([0.5, 1.0], np.float32))}
    their_value = tf.nest.map_structure(tf.constant, value)
    our_value = {"a": sm.constant(value["a"]), "b": (sm.constant(value["b"][0]), sm.constant(value["b"][1]))}
    _assert_same(ours.apply(our_value, True), theirs.apply(their_value, True))
    _assert_same(ours.apply(our_value, training=False, mode="keep"),
                 theirs.apply(their_value, training=False, mode="keep"))
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        ours.apply(our_value, False)
    with pytest.raises(ValueError):
        theirs.apply(their_value, False)


def test_checkpoint_of_a_loaded_object_is_read_by_tensorflow(tf, tmp_path):
    theirs, ours = _save_and_load(tf, _Polymorphic.module(tf), tmp_path / "m")
    ours.v.assign(5.0)
    theirs.v.assign(5.0)
    ours_prefix = sm.train.Checkpoint(model=ours).write(str(tmp_path / "ours" / "ckpt"))
    theirs_prefix = tf.train.Checkpoint(model=theirs).write(str(tmp_path / "theirs" / "ckpt"))
    keys = [k for k, _ in tf.train.list_variables(theirs_prefix) if k.endswith("VARIABLE_VALUE")]
    assert [k for k, _ in tf.train.list_variables(ours_prefix) if k.endswith("VARIABLE_VALUE")] == keys
    for key in keys:
        assert tf.train.load_variable(ours_prefix, key) == tf.train.load_variable(theirs_prefix, key)
    ours.v.assign(-1.0)
    sm.train.Checkpoint(model=ours).read(ours_prefix)
    assert ours.v.numpy() == 5.0
    _assert_same(ours.f(1.0), theirs.f(1.0))


def test_restored_functions_can_be_called_inside_sm_function(tf, tmp_path):
    theirs, ours = _save_and_load(tf, _Polymorphic.module(tf), tmp_path / "m")

    def wrapper(lib, module):
        @lib.function(input_signature=[lib.TensorSpec([2], lib.float32)])
        def doubled(x):
            return module.f(x, k=3) * 2.0 + module.f(lib.constant(1.0))
        return doubled

    x = np.array([1.0, -1.0], np.float32)
    _assert_same(wrapper(sm, ours)(x), wrapper(tf, theirs)(x))
    ours.v.assign(10.0)
    theirs.v.assign(10.0)
    _assert_same(wrapper(sm, ours)(x), wrapper(tf, theirs)(x))


def test_assets_point_at_the_saved_copy(tf, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("alpha\nbeta\n")

    class WithAsset(tf.Module):
        def __init__(self):
            super().__init__()
            self.vocab = tf.saved_model.Asset(str(vocab))

        @tf.function(input_signature=[])
        def marked_path(self):
            return tf.strings.join([self.vocab.asset_path, "!"])

    theirs, ours = _save_and_load(tf, WithAsset(), tmp_path / "m")
    vocab.unlink()
    assert isinstance(ours.vocab, sm.saved_model.Asset)
    assert ours.vocab.asset_path.numpy() == theirs.vocab.asset_path.numpy()
    assert (tmp_path / "m" / "assets" / "vocab.txt").read_text() == "alpha\nbeta\n"
    _assert_same(ours.marked_path(), theirs.marked_path())


# ----------------------------------------------------------------------------- our own saves

class _Ours(sm.Module):
    """Saved with sm.saved_model.save, then loaded by both loaders."""

    def __init__(self):
        super().__init__()
        self.scale = sm.Variable(2.0, name="scale")
        self.count = sm.Variable(0, dtype=sm.int64, name="count")
        self.layers = [sm.Variable([1.0, -1.0], name="bias")]

    @sm.function(input_signature=[sm.TensorSpec([None, 2], sm.float32, name="x")])
    def serve(self, x):
        self.count.assign_add(1)
        return {"y": x * self.scale + self.layers[0], "count": self.count.read_value()}

    @sm.function
    def shift(self, x, by=1):
        return x + float(by)


def test_our_saves_load_as_tensorflow_loads_them(tf, tmp_path):
    module = _Ours()
    module.shift(sm.constant(1.0))
    module.shift(sm.constant([1.0, 2.0]), by=3)
    sm.saved_model.save(module, tmp_path / "m", signatures={"serving_default": module.serve})
    theirs, ours = tf.saved_model.load(str(tmp_path / "m")), sm.saved_model.load(tmp_path / "m")
    assert list(ours.signatures) == list(theirs.signatures) == ["serving_default"]
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    for _ in range(2):
        _assert_same(ours.serve(x), theirs.serve(x))
    _assert_same(ours.signatures["serving_default"](x=x), theirs.signatures["serving_default"](x=x))
    _assert_same([ours.scale, ours.count, ours.layers[0]], [theirs.scale, theirs.count, theirs.layers[0]])
    for args, kwargs in [((1.0,), {}), ((sm.constant([0.5, 1.5]),), {"by": 3})]:
        their_args = tuple(tf.constant(a.numpy()) if isinstance(a, sm.Tensor) else a for a in args)
        _assert_same(ours.shift(*args, **kwargs), theirs.shift(*their_args, **kwargs))


def test_the_saved_model_guide_custom_module(tf, tmp_path, capsys):
    """TensorFlow's SavedModel guide with `import savedmodel as tf`: a module whose `mutate`
    method changes the variable that the restored `__call__` reads."""
    class CustomModule(sm.Module):
        def __init__(self):
            super().__init__()
            self.v = sm.Variable(1.0)

        @sm.function
        def __call__(self, x):
            print("Tracing with", x)
            return x * self.v

        @sm.function(input_signature=[sm.TensorSpec([], sm.float32)])
        def mutate(self, new_v):
            self.v.assign(new_v)

    module = CustomModule()
    module(sm.constant(0.0))
    sm.saved_model.save(module, tmp_path / "module_no_signatures")
    capsys.readouterr()
    imported = sm.saved_model.load(tmp_path / "module_no_signatures")
    reference = tf.saved_model.load(str(tmp_path / "module_no_signatures"))
    assert imported(sm.constant(3.0)).numpy() == reference(tf.constant(3.0)).numpy() == 3
    assert imported.mutate(sm.constant(2.0)) is None and reference.mutate(tf.constant(2.0)) is None
    assert imported(sm.constant(3.0)).numpy() == reference(tf.constant(3.0)).numpy() == 6
    _assert_same(imported.__call__(x=sm.constant(1.5)), reference.__call__(x=tf.constant(1.5)))
    assert list(imported.signatures) == list(reference.signatures)
    assert "Tracing with" not in capsys.readouterr().out


def test_a_wrapped_loaded_model_saves_again_and_tensorflow_loads_it(tf, tmp_path):
    """TensorFlow save -> our load -> a new module calling the restored methods -> our save
    -> TensorFlow load: same results and variable values as the same steps in TensorFlow."""
    theirs, ours = _save_and_load(tf, _Polymorphic.module(tf), tmp_path / "m")

    def wrapper(lib, inner):
        class Wrapper(lib.Module):
            def __init__(self):
                super().__init__()
                self.inner = inner

            @lib.function(input_signature=[lib.TensorSpec([2], lib.float32, name="x")])
            def serve(self, x):
                return {"out": self.inner.f(x, 3) * 2.0 + self.inner.f(lib.constant(1.0))}
        return Wrapper()

    ours.v.assign(4.0)
    theirs.v.assign(4.0)
    sm.saved_model.save(wrapper(sm, ours), tmp_path / "again", signatures=None)
    tf.saved_model.save(wrapper(tf, theirs), str(tmp_path / "reference"))
    again, reference = tf.saved_model.load(str(tmp_path / "again")), tf.saved_model.load(str(tmp_path / "reference"))
    x = np.array([1.0, -2.0], np.float32)
    expected = reference.serve(x)["out"].numpy()
    np.testing.assert_array_equal(again.serve(x)["out"].numpy(), expected)
    np.testing.assert_array_equal(again.signatures["serving_default"](x=x)["out"].numpy(), expected)
    assert again.inner.v.numpy() == reference.inner.v.numpy() == 4.0
    _assert_same(sm.saved_model.load(tmp_path / "again").serve(x), reference.serve(x))


# ----------------------------------------------------------------------------- errors

def test_missing_and_damaged_files_are_clear_errors(tmp_path):
    with pytest.raises(FileFormatError, match="not a directory"):
        sm.saved_model.load(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileFormatError, match="not a SavedModel directory"):
        sm.saved_model.load(tmp_path / "empty")
    damaged = tmp_path / "damaged"
    shutil.copytree(BY_NAME["seeds"], damaged)
    (damaged / "saved_model.pb").write_bytes(b"\x0a\xff\xff\xff")
    with pytest.raises(FileFormatError, match="saved_model.pb"):
        sm.saved_model.load(damaged)
    without_variables = tmp_path / "without_variables"
    shutil.copytree(BY_NAME["seeds"], without_variables)
    shutil.rmtree(without_variables / "variables")
    with pytest.raises(FileFormatError, match="variables.index"):
        sm.saved_model.load(without_variables)


def _edited_seeds(tmp_path, edit):
    """A copy of the seeds SavedModel whose saved_model.pb went through `edit`."""
    copy = tmp_path / "edited"
    shutil.copytree(BY_NAME["seeds"], copy)
    model = saved_model_pb2.SavedModel()
    model.ParseFromString((copy / "saved_model.pb").read_bytes())
    edit(model.meta_graphs[0].object_graph_def)
    (copy / "saved_model.pb").write_bytes(model.SerializeToString())
    return copy


def test_a_damaged_object_graph_is_a_clear_error(tmp_path):
    def dangling_child(graph):
        graph.nodes[0].children.add(node_id=len(graph.nodes) + 5, local_name="ghost")

    with pytest.raises(FileFormatError, match=r"object graph is damaged: object 0 has child 'ghost'"):
        sm.saved_model.load(_edited_seeds(tmp_path / "a", dangling_child))

    def dangling_capture(graph):
        name = next(n for n in graph.concrete_functions if "dense" in n)
        graph.concrete_functions[name].bound_inputs.append(999)

    with pytest.raises(FileFormatError, match=r"concrete function '.*dense.*' captures object 999"):
        sm.saved_model.load(_edited_seeds(tmp_path / "b", dangling_capture))


def test_child_names_cannot_replace_an_objects_machinery(tmp_path):
    def rename(graph):
        graph.nodes[0].children[0].local_name = "__class__"
        graph.nodes[0].children[1].local_name = "__dict__"

    loaded = sm.saved_model.load(_edited_seeds(tmp_path, rename))
    assert type(loaded).__name__ == "RestoredObject"
    assert loaded.calls.numpy() == 0
    assert sm.train.Checkpoint(model=loaded).write(str(tmp_path / "ckpt" / "c"))


def test_tags_select_the_meta_graph():
    assert sorted(sm.saved_model.load(BY_NAME["seeds"], tags=["serve"]).signatures)
    assert sm.saved_model.load(BY_NAME["seeds"], tags="serve").w.shape == (2, 2)
    with pytest.raises(FileFormatError, match="no MetaGraphDef with tag-set 'train'.*serve"):
        sm.saved_model.load(BY_NAME["seeds"], tags=["train"])


def test_loading_never_imports_the_saving_code(tf, tmp_path):
    """The module that defined the saved class raises when imported without its saver's
    permission; loading with its folder on sys.path must neither import nor run it."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "sm_load_canary.py").write_text(textwrap.dedent("""
        import os
        if os.environ.get("SM_CANARY_SAVING") != "1":
            raise RuntimeError("the SavedModel's Python code was imported")
        import tensorflow as tf

        class Canary(tf.Module):
            def __init__(self):
                super().__init__()
                self.v = tf.Variable(2.0)

            @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
            def __call__(self, x):
                print("the SavedModel's Python code ran")
                return x * self.v
        """))
    export = tmp_path / "canary"
    saver = (f"import sys; sys.path.insert(0, {str(code)!r}); import sm_load_canary, tensorflow as tf; "
             f"tf.saved_model.save(sm_load_canary.Canary(), {str(export)!r})")
    subprocess.run([sys.executable, "-c", saver], check=True, capture_output=True,
                   env={"SM_CANARY_SAVING": "1", "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    sys.path.insert(0, str(code))
    try:
        loaded = sm.saved_model.load(export)
        assert loaded(3.0).numpy() == 6.0
    finally:
        sys.path.remove(str(code))
    assert "sm_load_canary" not in sys.modules
