"""Saving a loaded SavedModel again: `sm.saved_model.save(sm.saved_model.load(d), d2)`.

Live tests run the same program on both libraries (save a module, load it, change a variable,
save the loaded object, load that) and compare what TensorFlow loads from our second save with
what it loads from its own. Corpus tests take every TensorFlow-written SavedModel in tests/data
through `sm.saved_model.load` and `sm.saved_model.save` and replay the inputs TensorFlow recorded
(`*.io.npz`) on our runtime (no TensorFlow needed) and, live, on TensorFlow's loader.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import EXTRA_MODELS, SAVEDMODELS
from savedmodel.protos import saved_model_pb2
from savedmodel.runtime.errors import FileFormatError
from test_saved_model_load import recorded
from test_saved_model_save import with_asset

import savedmodel as sm
from savedmodel import runtime

MODELS = {p.name: p for p in SAVEDMODELS + EXTRA_MODELS}
NOT_RESAVABLE = {"keras_string_lookup", "keras_integer_lookup", "keras_text_vectorization", "static_tables",
                 "text_file_tables", "mutable_table", "tf1_tables", "keras_text_ngrams_chars",
                 "tf_keras_text_vectorization"}
"""Models whose functions use lookup tables, which cannot be saved again (test_lookup_tables
checks the error)."""
REFERENCE_VARIABLES = {"tf1_ref", "tf1_dynamic_rnn"}
"""TensorFlow 1 exports with reference variables, which neither TensorFlow nor we can save in a
function (test_a_tensorflow1_export_with_reference_variables_is_refused)."""
RESAVABLE = sorted(set(MODELS) - REFERENCE_VARIABLES - NOT_RESAVABLE)
COMPOSITE_ARGUMENTS = {"ragged_map", "ragged_rows", "sparse_matmul"}
"""Models whose functions take ragged or sparse arguments: the authoring side's load still
binds their components as plain tensors, so saved again without signatures their functions
take different arguments from TensorFlow's (left for later; their signatures resave fine)."""
X = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)


def build(lib):
    """A module with a submodule, a list, a counter, a captured constant too large to inline,
    a polymorphic method traced twice, and two signatures."""
    table = lib.constant(np.arange(200, dtype=np.float32) / 4)

    class Inner(lib.Module):
        def __init__(self):
            super().__init__()
            self.v = lib.Variable([1.0, -1.0], name="v")

        @lib.function(input_signature=[lib.TensorSpec([None, 2], lib.float32, name="x")])
        def __call__(self, x):
            return x * self.v

    class Outer(lib.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.layers = [lib.Variable(0.5, name="l0")]
            self.count = lib.Variable(0, dtype=lib.int64, name="count")

        @lib.function(input_signature=[lib.TensorSpec([None, 2], lib.float32, name="x")])
        def serve(self, x):
            self.count.assign_add(1)
            return {"y": self.inner(x) + self.layers[0] + lib.gather(table, [3, 7]),
                    "count": self.count.read_value()}

        @lib.function
        def scale(self, x, factor=2):
            return x * factor * self.layers[0]

    module = Outer()
    module.scale(lib.constant([1.0, 2.0]))
    module.scale(lib.constant(3.0), factor=3)
    return module, {"serving_default": module.serve, "inner": module.inner.__call__}


def save_load_save(lib, directory: Path, change=None, **save_arguments) -> Path:
    """Save the module with `lib`, load it, `change` it, save the loaded object; returns the
    second SavedModel (saved with the loaded signatures unless `save_arguments` say)."""
    module, signatures = build(lib)
    lib.saved_model.save(module, str(directory / "first"), signatures=signatures)
    loaded = lib.saved_model.load(str(directory / "first"))
    if change is not None:
        change(loaded)
    save_arguments.setdefault("signatures", loaded.signatures)
    lib.saved_model.save(loaded, str(directory / "second"), **save_arguments)
    return directory / "second"


def results(tf, directory: Path) -> dict:
    """Signature results, method results and variable values of TensorFlow's load of
    `directory` (each signature on a fresh load, then the methods on one more)."""
    found = {}
    for key in sorted(tf.saved_model.load(str(directory)).signatures):
        found[f"sig {key}"] = tf.saved_model.load(str(directory)).signatures[key](x=tf.constant(X))
    loaded = tf.saved_model.load(str(directory))
    found["serve"] = loaded.serve(tf.constant(X))
    found["inner"] = loaded.inner(tf.constant(X))
    found["scale vector"] = loaded.scale(tf.constant([4.0, 5.0]))
    found["scale scalar"] = loaded.scale(tf.constant(6.0), factor=3)
    found["variables"] = [loaded.inner.v, loaded.layers[0], loaded.count]
    return _arrays(found)


def _arrays(value):
    if isinstance(value, dict):
        return {key: _arrays(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_arrays(item) for item in value]
    return np.asarray(value.numpy())


def assert_same(ours, theirs, where: str = "") -> None:
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs), where
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}/{key}")
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs), where
        for index, (mine, reference) in enumerate(zip(ours, theirs)):
            assert_same(mine, reference, f"{where}[{index}]")
    else:
        assert ours.dtype == theirs.dtype, where
        np.testing.assert_array_equal(ours, theirs, err_msg=where)


def _bump(loaded) -> None:
    loaded.layers[0].assign(1.5)
    loaded.inner.v.assign([2.0, 3.0])


# ----------------------------------------------------------------------------- our own saves

def test_a_second_save_loads_in_tensorflow_as_tensorflows_second_save(tf, tmp_path):
    ours = save_load_save(sm, tmp_path / "ours", _bump)
    theirs = save_load_save(tf, tmp_path / "theirs", _bump)
    expected = results(tf, theirs)
    assert sorted(k for k in expected if k.startswith("sig ")) == ["sig inner", "sig serving_default"]
    assert_same(results(tf, ours), expected)
    np.testing.assert_array_equal(expected["variables"][1], 1.5)


def test_unchanged_values_survive_the_second_save(tf, tmp_path):
    ours = save_load_save(sm, tmp_path / "ours")
    module, signatures = build(tf)
    tf.saved_model.save(module, str(tmp_path / "original"), signatures=signatures)
    assert_same(results(tf, ours), results(tf, tmp_path / "original"))


def test_our_runtime_and_loader_run_the_second_save(tf, tmp_path):
    ours = save_load_save(sm, tmp_path / "ours", _bump)
    expected = results(tf, save_load_save(tf, tmp_path / "theirs", _bump))
    for key in ("inner", "serving_default"):
        got = runtime.load(ours).signatures[key](x=X)
        assert_same(got, expected[f"sig {key}"], key)
    loaded = sm.saved_model.load(ours)
    assert_same(_arrays(loaded.serve(X)), expected["serve"])
    assert_same(_arrays(loaded.scale(sm.constant(6.0), factor=3)), expected["scale scalar"])
    functions = runtime.load(ours).functions
    np.testing.assert_array_equal(functions["scale"](np.array([4.0, 5.0], np.float32), 2),
                                  expected["scale vector"])


def test_saving_again_and_again_keeps_everything(tf, tmp_path):
    """save -> load -> save -> load -> save: each load renames the functions afresh."""
    ours = save_load_save(sm, tmp_path / "ours", _bump)
    loaded = sm.saved_model.load(ours)
    sm.saved_model.save(loaded, tmp_path / "third", signatures=loaded.signatures)
    expected = results(tf, save_load_save(tf, tmp_path / "theirs", _bump))
    assert_same(results(tf, tmp_path / "third"), expected)


def test_without_signatures_the_loaded_ones_give_way_to_tensorflows_default(tf, tmp_path, caplog):
    """As in TensorFlow: the loaded `signatures` are replaced; the root's only method with an
    input signature (`serve`) becomes serving_default again, and `inner` is left out."""
    with caplog.at_level(logging.WARNING, logger="savedmodel.saved_model"):
        ours = save_load_save(sm, tmp_path / "ours", signatures=None)
    assert "The loaded signatures inner are not saved again" in caplog.text
    theirs = save_load_save(tf, tmp_path / "theirs", signatures=None)
    ours, theirs = tf.saved_model.load(str(ours)), tf.saved_model.load(str(theirs))
    assert list(ours.signatures) == list(theirs.signatures) == ["serving_default"]
    assert_same(_arrays(ours.signatures["serving_default"](x=tf.constant(X))),
                _arrays(theirs.signatures["serving_default"](x=tf.constant(X))))


def test_a_single_restored_method_with_an_input_signature_becomes_serving_default(tf, tmp_path):
    def only_inner(lib, directory):
        module, signatures = build(lib)
        lib.saved_model.save(module.inner, str(directory / "first"),
                             signatures={"serving_default": module.inner.__call__})
        loaded = lib.saved_model.load(str(directory / "first"))
        lib.saved_model.save(loaded, str(directory / "second"))
        return tf.saved_model.load(str(directory / "second"))

    ours, theirs = only_inner(sm, tmp_path / "ours"), only_inner(tf, tmp_path / "theirs")
    assert list(ours.signatures) == list(theirs.signatures) == ["serving_default"]
    assert_same(_arrays(ours.signatures["serving_default"](x=tf.constant(X))),
                _arrays(theirs.signatures["serving_default"](x=tf.constant(X))))


def test_two_loads_of_one_model_keep_their_own_variables(tf, tmp_path):
    """Both loads have the same function names in the file: saving them together works only
    because loading renames them (as TensorFlow does)."""
    def two_copies(lib, directory):
        module, signatures = build(lib)
        lib.saved_model.save(module, str(directory / "first"), signatures=signatures)
        both = lib.Module()
        both.a = lib.saved_model.load(str(directory / "first"))
        both.b = lib.saved_model.load(str(directory / "first"))
        both.b.layers[0].assign(10.0)
        lib.saved_model.save(both, str(directory / "both"))
        loaded = tf.saved_model.load(str(directory / "both"))
        return [loaded.a.scale(tf.constant(6.0), factor=3).numpy(),
                loaded.b.scale(tf.constant(6.0), factor=3).numpy()]

    ours = two_copies(sm, tmp_path / "ours")
    assert ours == two_copies(tf, tmp_path / "theirs")
    assert ours[0] != ours[1]


def test_a_model_saved_over_the_directory_it_was_loaded_from(tmp_path):
    module, signatures = build(sm)
    sm.saved_model.save(module, tmp_path / "m", signatures=signatures)
    expected = runtime.load(tmp_path / "m").signatures["serving_default"](x=X)
    loaded = sm.saved_model.load(tmp_path / "m")
    loaded.count.assign(41)
    sm.saved_model.save(loaded, tmp_path / "m", signatures=loaded.signatures)
    got = runtime.load(tmp_path / "m").signatures["serving_default"](x=X)
    np.testing.assert_array_equal(got["y"], expected["y"])
    assert got["count"] == 42 and expected["count"] == 1


def test_traces_the_object_graph_lists_only_by_name_are_saved_as_nodes(tf, tmp_path):
    """Older SavedModels name a method's concrete functions without making each a node of its
    own: saving one again describes them from their input structure."""
    module, signatures = build(sm)
    sm.saved_model.save(module, tmp_path / "m", signatures=signatures)
    expected = results(tf, tmp_path / "m")
    path = tmp_path / "m" / "saved_model.pb"
    model = saved_model_pb2.SavedModel.FromString(path.read_bytes())
    for node in model.meta_graphs[0].object_graph_def.nodes:
        if node.bare_concrete_function.concrete_function_name.startswith("__inference_scale"):
            node.user_object.identifier = "_generic_user_object"
    path.write_bytes(model.SerializeToString())
    loaded = sm.saved_model.load(tmp_path / "m")
    sm.saved_model.save(loaded, tmp_path / "again", signatures=loaded.signatures)
    assert_same(results(tf, tmp_path / "again"), expected)


# ----------------------------------------------------------------------------- TensorFlow's models

def _assert_recorded(outputs: dict, expected: dict, where: str) -> None:
    assert sorted(outputs) == sorted(expected), where
    for key, want in expected.items():
        got = np.asarray(outputs[key])
        assert got.dtype == want.dtype, f"{where}/{key}"
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{where}/{key}")


def _resave(name: str, directory: Path) -> Path:
    """A copy of the model (so nothing can read the committed one afterwards) loaded by us
    and saved again with its signatures."""
    source = shutil.copytree(MODELS[name], directory / "source")
    loaded = sm.saved_model.load(source)
    sm.saved_model.save(loaded, directory / "again", signatures=loaded.signatures)
    shutil.rmtree(source)
    return directory / "again"


@pytest.mark.parametrize("name", RESAVABLE)
def test_tensorflows_models_saved_again_give_the_recorded_outputs_on_our_runtime(name, tmp_path):
    again = _resave(name, tmp_path)
    for signature, (inputs, expected) in recorded(MODELS[name]).items():
        outputs = runtime.load(again).signatures[signature](**inputs)
        _assert_recorded(outputs, expected, f"{name}:{signature}")


@pytest.mark.parametrize("name", RESAVABLE)
def test_tensorflows_models_saved_again_give_the_recorded_outputs_in_tensorflow(tf, name, tmp_path):
    again = _resave(name, tmp_path)
    for signature, (inputs, expected) in recorded(MODELS[name]).items():
        loaded = tf.saved_model.load(str(again))
        outputs = loaded.signatures[signature](**{k: tf.constant(v) for k, v in inputs.items()})
        _assert_recorded({k: v.numpy() for k, v in outputs.items()}, expected, f"{name}:{signature}")


@pytest.mark.parametrize("name", sorted(set(RESAVABLE) - COMPOSITE_ARGUMENTS))
def test_without_signatures_tensorflows_models_keep_what_tensorflow_keeps(tf, name, tmp_path):
    sm.saved_model.save(sm.saved_model.load(MODELS[name]), tmp_path / "ours")
    tf.saved_model.save(tf.saved_model.load(str(MODELS[name])), str(tmp_path / "theirs"))
    ours, theirs = (tf.saved_model.load(str(tmp_path / d)) for d in ("ours", "theirs"))
    assert list(ours.signatures) == list(theirs.signatures)
    for key in theirs.signatures:
        inputs = next(iter(recorded(MODELS[name]).values()))[0]
        feeds = {k: tf.constant(v) for k, v in inputs.items()}
        assert_same(_arrays(ours.signatures[key](**feeds)), _arrays(theirs.signatures[key](**feeds)))


def test_a_tensorflow1_export_with_reference_variables_is_refused(tmp_path):
    loaded = sm.saved_model.load(MODELS["tf1_ref"])
    with pytest.raises(ValueError, match=r"signature 'serving_default' as a function: it needs "
                                         r"node '[wb]', a reference variable \(VariableV2\)"):
        sm.saved_model.save(loaded, tmp_path / "again", signatures=loaded.signatures)
    assert not (tmp_path / "again").exists()


def test_tensorflow_cannot_run_its_own_second_save_of_reference_variables(tf, tmp_path):
    """Why the export above is refused: TensorFlow saves it, but the result does not run."""
    loaded = tf.saved_model.load(str(MODELS["tf1_ref"]))
    tf.saved_model.save(loaded, str(tmp_path / "again"), signatures=loaded.signatures)
    inputs, _ = recorded(MODELS["tf1_ref"])["serving_default"]
    with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
        tf.saved_model.load(str(tmp_path / "again")).signatures["serving_default"](
            x=tf.constant(inputs["x"]))


def test_a_tensorflow1_export_inside_another_object_is_refused(tmp_path):
    holder = sm.Module()
    holder.old = sm.saved_model.load(MODELS["tf1_resource"])
    with pytest.raises(ValueError, match="Cannot save old.signatures.serving_default: signature "
                                         "'serving_default' of a SavedModel without an object "
                                         "graph .* delete `old.signatures`"):
        sm.saved_model.save(holder, tmp_path / "again")
    del holder.old
    holder.serve = sm.saved_model.load(MODELS["tf1_resource"]).signatures["serving_default"]
    with pytest.raises(ValueError, match="Cannot save serve: signature 'serving_default'"):
        sm.saved_model.save(holder, tmp_path / "again")
    assert not (tmp_path / "again").exists()


def test_a_restored_function_capturing_an_unsavable_object_is_refused(tmp_path):
    module, signatures = build(sm)
    sm.saved_model.save(module, tmp_path / "m", signatures=signatures)
    path = tmp_path / "m" / "saved_model.pb"
    model = saved_model_pb2.SavedModel.FromString(path.read_bytes())
    functions = model.meta_graphs[0].object_graph_def.concrete_functions
    name = next(n for n, f in functions.items() if n.startswith("__inference_scale") and f.bound_inputs)
    functions[name].bound_inputs[0] = 0  # the root, a user object
    path.write_bytes(model.SerializeToString())
    loaded = sm.saved_model.load(tmp_path / "m")
    with pytest.raises(ValueError, match=r"Cannot save function '__inference_scale_\d+': its capture "
                                         r"0 is RestoredObject .* which cannot be saved again"):
        sm.saved_model.save(loaded, tmp_path / "again")


# ----------------------------------------------------------------------------- assets

def _our_runtime_paths(directory: Path) -> list[bytes]:
    model = runtime.load(directory)
    return [model.signatures["serving_default"](x=np.float32(1))["path"].item(),
            model.functions["f"](np.float32(1))["path"].item()]


def test_our_runtime_feeds_our_assets_their_copy(tmp_path):
    source = tmp_path / "vocab.txt"
    source.write_text("alpha\n")
    sm.saved_model.save(with_asset(sm, source), tmp_path / "m")
    source.unlink()
    copy = str(tmp_path / "m" / "assets" / "vocab.txt").encode()
    assert _our_runtime_paths(tmp_path / "m") == [copy, copy]


def test_our_runtime_feeds_tensorflows_assets_their_copy(tf, tmp_path):
    source = tmp_path / "vocab.txt"
    source.write_text("alpha\n")
    tf.saved_model.save(with_asset(tf, source), str(tmp_path / "m"))
    source.unlink()
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    expected = [loaded.signatures["serving_default"](x=tf.constant(1.0))["path"].numpy(),
                loaded.f(tf.constant(1.0))["path"].numpy()]
    assert _our_runtime_paths(tmp_path / "m") == expected


def test_assets_saved_again_point_at_the_new_copy(tf, tmp_path):
    source = tmp_path / "vocab.txt"
    source.write_text("alpha\n")
    tf.saved_model.save(with_asset(tf, source), str(tmp_path / "m"))
    loaded = sm.saved_model.load(tmp_path / "m")
    loaded.scale.assign(5.0)
    sm.saved_model.save(loaded, tmp_path / "again", signatures=loaded.signatures)
    shutil.rmtree(tmp_path / "m")
    assert (tmp_path / "again" / "assets" / "vocab.txt").read_text() == "alpha\n"
    copy = str(tmp_path / "again" / "assets" / "vocab.txt").encode()
    assert _our_runtime_paths(tmp_path / "again") == [copy, copy]
    again = tf.saved_model.load(str(tmp_path / "again"))
    result = again.signatures["serving_default"](x=tf.constant(2.0))
    assert result["path"].numpy() == again.f(tf.constant(2.0))["path"].numpy() == copy
    assert result["y"].numpy() == 10.0


def test_our_runtime_runs_a_tensorflow1_main_op_with_its_assets(tf, tmp_path):
    """A TensorFlow 1 export lists its assets in the `saved_model_assets` collection and its
    init op in `saved_model_main_op`: the main op assigns the asset's path to a variable."""
    source = tmp_path / "vocab.txt"
    source.write_text("alpha\n")
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        asset = tf.constant(str(source), name="asset_path")
        holder = tf.compat.v1.get_variable("holder", initializer="", dtype=tf.string,
                                           use_resource=True)
        main_op = tf.group(holder.assign(asset), name="main_op")
        outputs = {"path": tf.strings.join([holder.read_value(), "#"]), "y": x * 2.0}
        session.run(tf.compat.v1.global_variables_initializer())
        builder = tf.compat.v1.saved_model.Builder(str(tmp_path / "m"))
        builder.add_meta_graph_and_variables(
            session, ["serve"], signature_def_map={"serving_default": tf.compat.v1.saved_model.
                                                   predict_signature_def({"x": x}, outputs)},
            assets_collection=[asset], main_op=main_op)
        builder.save()
    source.unlink()
    with tf.compat.v1.Session(graph=tf.Graph()) as session:
        signature = tf.compat.v1.saved_model.load(session, ["serve"], str(tmp_path / "m")).signature_def
        outputs = signature["serving_default"].outputs
        expected = session.run({k: v.name for k, v in outputs.items()}, {"x:0": [1.5]})
    assert expected["path"] == f"{tmp_path / 'm' / 'assets' / 'vocab.txt'}#".encode()
    got = runtime.load(tmp_path / "m").signatures["serving_default"](x=np.array([1.5], np.float32))
    assert got["path"].item() == expected["path"]
    np.testing.assert_array_equal(got["y"], expected["y"])


def _damaged_copy(name: str, directory: Path, damage) -> Path:
    copy = shutil.copytree(MODELS[name], directory / name)
    path = copy / "saved_model.pb"
    model = saved_model_pb2.SavedModel.FromString(path.read_bytes())
    damage(model.meta_graphs[0])
    path.write_bytes(model.SerializeToString())
    return copy


def test_an_asset_naming_a_missing_tensor_is_a_clear_error(tmp_path):
    def damage(meta_graph):
        meta_graph.asset_file_def[0].tensor_info.name = "nowhere:0"
    copy = _damaged_copy("asset_vocab", tmp_path, damage)
    with pytest.raises(FileFormatError, match="asset 'asset_vocab.txt' names tensor 'nowhere:0', which the graph "
                             "does not have"):
        runtime.load(copy)


def test_an_init_op_naming_a_missing_node_is_a_clear_error(tmp_path):
    def damage(meta_graph):
        meta_graph.signature_def["__saved_model_init_op"].outputs[
            "__saved_model_init_op"].name = "missing_init"
    with pytest.raises(FileFormatError, match="the init op 'missing_init' is not a node of the graph"):
        runtime.load(_damaged_copy("asset_vocab", tmp_path, damage))
