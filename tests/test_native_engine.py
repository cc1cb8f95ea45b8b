"""The native engine (Rust, savedmodel._native) through `load(dir, engine="native")` and the
Python-free `savedmodel-run` binary: every recorded signature gives TensorFlow's outputs, both
engines agree on random inputs, errors read as the numpy engine's, and "auto" says which engine
it chose and why."""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import DATA, EXTRA_MODELS, FROZEN_NUMPY_ONLY, NUMPY_ONLY, SAVEDMODELS, sqrt_model, with_op_renamed
from savedmodel.compare import random_feeds
from savedmodel.runtime import load, native
from savedmodel.runtime.errors import UnknownSignatureError
from savedmodel.runtime.feeds import FeedError
from test_runtime_corpus import _feeds_and_expected, _signature_cases, assert_matches

REQUIRED = os.environ.get("SAVEDMODEL_REQUIRE_NATIVE") == "1"
needs_native = pytest.mark.skipif(not native.available() and not REQUIRED,
                                  reason="the native engine is not built in this installation")
pytestmark = needs_native

FROZEN = sorted(p for p in (DATA / "frozen").glob("*.pb") if p.stem not in FROZEN_NUMPY_ONLY)
ALL_MODELS = [p for p in SAVEDMODELS + EXTRA_MODELS if p.name not in NUMPY_ONLY]
"""The models the native engine runs (all but those tests/data/models/numpy_only.txt lists)."""
NATIVE_CASES = [case for case in _signature_cases() if case.values[0].name not in NUMPY_ONLY]


def test_the_native_engine_is_built():
    """CI sets SAVEDMODEL_REQUIRE_NATIVE=1: an install that silently fell back to numpy fails."""
    assert native.available()
    assert {"Conv2D", "MatMul", "While", "VarHandleOp"} <= set(native.ops())


NUMPY_ENGINE_MODULES = ("savedmodel.runtime.loader", "savedmodel.runtime.executor", "savedmodel.runtime.plan",
                        "savedmodel.runtime.kernels", "savedmodel.runtime.graph_file",
                        "savedmodel.protos", "google.protobuf")


@needs_native
def test_a_model_on_the_native_engine_imports_none_of_the_numpy_engine():
    """A fresh process that loads and calls a model natively imports neither the numpy engine,
    nor the SavedModel file reader, nor protobuf (the extension reads the files and checks the
    object graph): what keeps Python's start to first result short."""
    model = DATA / "reference" / "savedmodels" / "keras_cnn"
    code = ("import sys, numpy as np\nfrom savedmodel.runtime import load\n"
            f"m = load({str(model)!r})\nassert m.engine == 'native', m.engine_reason\n"
            "m.signatures['serving_default'](image=np.zeros((1, 28, 28, 1), np.float32))\n"
            f"print(sorted(n for n in sys.modules if n.startswith({NUMPY_ENGINE_MODULES!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("model_dir, signature", NATIVE_CASES)
def test_signature_gives_tensorflows_outputs(model_dir, signature):
    feeds, expected = _feeds_and_expected(model_dir, signature)
    model = load(model_dir, engine="native")
    assert model.engine == "native"
    outputs = model.signatures[signature](**feeds)
    assert_matches(outputs, expected, f"{model_dir.name}:{signature}")


@pytest.mark.parametrize("name", sorted(NUMPY_ONLY))
def test_models_with_ops_the_native_engine_lacks_name_them_and_run_on_numpy(name):
    model_dir = DATA / "models" / name
    with pytest.raises(native.NativeUnsupportedError) as caught:
        load(model_dir, engine="native")
    assert caught.value.ops == NUMPY_ONLY[name], "update tests/data/models/numpy_only.txt"
    model = load(model_dir, engine="auto")
    assert model.engine == "numpy" and all(op in model.engine_reason for op in NUMPY_ONLY[name])


def _frozen_io(path: Path):
    io = dict(np.load(path.with_suffix(".io.npz")))
    feeds = {k[3:]: v for k, v in io.items() if k.startswith("in/")}
    expected = {k[4:]: v for k, v in io.items() if k.startswith("out/")}
    return feeds, expected


@pytest.mark.parametrize("path", FROZEN, ids=lambda p: p.name)
def test_frozen_graph_gives_tensorflows_outputs(path):
    feeds, expected = _frozen_io(path)
    outputs = load(path, engine="native").signatures["serving_default"](**feeds)
    assert_matches(outputs, expected, path.name)


@pytest.mark.parametrize("name", sorted(FROZEN_NUMPY_ONLY))
def test_frozen_graphs_with_ops_the_native_engine_lacks_name_them_and_run_on_numpy(name):
    path = DATA / "frozen" / f"{name}.pb"
    with pytest.raises(native.NativeUnsupportedError) as caught:
        load(path, engine="native")
    assert caught.value.ops == FROZEN_NUMPY_ONLY[name], "update tests/data/frozen/numpy_only.txt"
    model = load(path, engine="auto")
    assert model.engine == "numpy" and all(op in model.engine_reason for op in FROZEN_NUMPY_ONLY[name])
    feeds, expected = _frozen_io(path)
    assert_matches(model.signatures["serving_default"](**feeds), expected, path.name)


def _assert_close(a: dict, b: dict, where: str, rtol=1e-4, atol=1e-5) -> None:
    assert sorted(a) == sorted(b), where
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, f"{where}: {key}"
        if a[key].dtype.kind in "fc":
            np.testing.assert_allclose(a[key], b[key], rtol=rtol, atol=atol, err_msg=f"{where}: {key}")
        else:
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{where}: {key}")


@pytest.mark.parametrize("model_dir", ALL_MODELS, ids=lambda p: p.name)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31 - 1), batch=st.integers(1, 3))
def test_both_engines_agree_on_random_inputs(model_dir, seed, batch):
    """Each model freshly loaded on each engine (signatures that change state then see the same
    state), fed the same random inputs."""
    names = list(load(model_dir, engine="numpy").signatures)
    for name in names:
        reference, fast = load(model_dir, engine="numpy"), load(model_dir, engine="native")
        feeds = random_feeds(reference.signatures[name], batch, seed)
        try:
            want = reference.signatures[name](**feeds)
        except Exception as err:  # inputs the model rejects: the native engine must reject them too
            with pytest.raises(type(err)):
                fast.signatures[name](**feeds)
            continue
        _assert_close(fast.signatures[name](**feeds), want, f"{model_dir.name}:{name}")


def test_reshapes_relabel_in_place_only_what_no_one_else_sees(tmp_path):
    """Reshape, ExpandDims and Squeeze reuse an intermediate's buffer when they read it last;
    a feed, a fetched output and a value read again later keep their shapes."""
    import savedmodel as sm

    class M(sm.Module):
        @sm.function(input_signature=[sm.TensorSpec([None, 3], sm.float32)])
        def f(self, x):
            y = x * 2.0
            flat = sm.reshape(y, [-1])
            z = x + 1.0
            wide = sm.expand_dims(z, 0)
            back = sm.squeeze(sm.reshape(x - 1.0, [1, -1, 1]), [0, 2])
            return {"fed": sm.reshape(x, [3, -1]), "y": y, "flat": flat, "wide": wide,
                    "z_again": z * 3.0, "back": back}

    module = M()
    sm.saved_model.save(module, str(tmp_path / "m"), signatures={"serving_default": module.f})
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = load(tmp_path / "m", engine="numpy").signatures["serving_default"](x=x)
    fast = load(tmp_path / "m", engine="native").signatures["serving_default"]
    for _ in range(2):
        got = fast(x=x)
        assert set(got) == set(want)
        for key in want:
            assert got[key].shape == want[key].shape, key
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3))


def test_models_load_and_run_on_threads_that_come_and_go():
    # A server loads each new version on a fresh thread after the last one exited; the
    # module's allocator once crashed the process there (so: in a child process).
    code = """if True:
        import threading
        import numpy as np
        from savedmodel.runtime import load
        models = []
        for _ in range(4):
            thread = threading.Thread(target=lambda: models.append(load(PATH, engine="native")))
            thread.start()
            thread.join()
        for model in models:
            threading.Thread(target=model.signatures["serving_default"],
                             kwargs={"image": np.zeros((2, 28, 28, 1), np.float32)}).start()
        print(len(models))
    """.replace("PATH", repr(str(DATA / "reference" / "savedmodels" / "keras_cnn")))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4"]


def test_object_graph_functions_run_natively_and_share_variables():
    seeds = DATA / "reference" / "savedmodels" / "seeds"
    fast, reference = load(seeds, engine="native"), load(seeds, engine="numpy")
    assert sorted(fast.functions) == sorted(reference.functions)
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    got, want = fast.functions["dense"](x), reference.functions["dense"](x)
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6)
    assert sorted(fast.variables) == sorted(reference.variables)
    for name, value in reference.variables.items():
        np.testing.assert_array_equal(fast.variables[name], value)


def test_unknown_signature_lists_the_available_ones():
    model = load(SAVEDMODELS[0], engine="native")
    with pytest.raises(UnknownSignatureError, match="no signature 'nope'; available: "):
        model.signatures["nope"]


@pytest.mark.parametrize("feeds, pattern", [
    ({}, r"takes inputs .*missing"),
    ({"x": "text"}, r"expects float32, got a non-numeric value"),
    ({"x": np.zeros((1, 5), np.float32)}, r"expects shape \(None, 8\) of float32, got shape \(1, 5\)"),
])
def test_bad_feeds_are_named_as_the_numpy_engine_names_them(feeds, pattern):
    mlp = DATA / "reference" / "savedmodels" / "keras_mlp"
    messages = []
    for engine in ("native", "numpy"):
        signature = load(mlp, engine=engine).signatures["serving_default"]
        key = next(iter(signature.inputs))
        renamed = {key: v for v in feeds.values()}
        with pytest.raises(FeedError, match=pattern) as caught:
            signature(**renamed)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


class _Subclass(np.ndarray):
    pass


def _as_given(x):
    return x


@pytest.mark.parametrize("make", [
    _as_given,                                          # the short way: passed as it is
    lambda x: np.asfortranarray(np.repeat(x, 3, 0)),    # not C-contiguous
    lambda x: np.repeat(x, 2, 0)[::2],                  # a strided view
    lambda x: x.astype(np.float64),                     # cast to the input's dtype
    lambda x: x.astype(">f4"),                          # equal dtype, other byte order
    lambda x: x.view(_Subclass),                        # a subclass of ndarray
    lambda x: x.tolist(),                               # Python lists
], ids=["array", "fortran", "strided", "float64", "big-endian", "subclass", "list"])
def test_every_kind_of_feed_gives_the_numpy_engines_outputs(make):
    """Arrays that already fit an input skip runtime.feeds on the native engine; everything
    else goes through it, and both ways give what the numpy engine gives."""
    mlp = DATA / "reference" / "savedmodels" / "keras_mlp"
    signatures = [load(mlp, engine=e).signatures["serving_default"] for e in ("native", "numpy")]
    key = next(iter(signatures[0].inputs))
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    got, want = (s(**{key: make(x)}) for s in signatures)
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("value, pattern", [
    (np.zeros((1, 8, 1), np.float32), r"expects shape \(None, 8\) of float32, got shape \(1, 8, 1\)"),
    (np.zeros(8, np.float32), r"expects shape \(None, 8\) of float32, got shape \(8,\)"),
    (np.zeros((1, 8), np.complex64), r"expects float32; cannot convert"),
])
def test_arrays_that_do_not_fit_an_input_are_refused_alike(value, pattern):
    mlp = DATA / "reference" / "savedmodels" / "keras_mlp"
    messages = []
    for engine in ("native", "numpy"):
        signature = load(mlp, engine=engine).signatures["serving_default"]
        with pytest.raises(FeedError, match=pattern) as caught:
            signature(**{next(iter(signature.inputs)): value})
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_auto_says_which_engine_and_why(caplog):
    mlp = DATA / "reference" / "savedmodels" / "keras_mlp"
    with caplog.at_level(logging.INFO, logger="savedmodel.runtime"):
        model = load(mlp)
    assert model.engine == "native"
    assert "native engine" in caplog.text
    assert load(mlp, engine="numpy").engine == "numpy"
    with pytest.raises(ValueError, match="engine must be one of auto, native, numpy"):
        load(mlp, engine="fast")


def test_an_op_without_a_native_kernel_names_op_node_and_function(tmp_path):
    # Sqrt becomes Dawsn (the same inputs and attrs): an op the numpy engine has and the native
    # engine lacks (asserted below, so that this test fails rather than passing vacuously the
    # day the native engine gains it).
    model = with_op_renamed(sqrt_model(tmp_path / "sqrt"), tmp_path / "dawsn", "Sqrt", "Dawsn")
    missing = {"Dawsn"} - set(native.ops())
    assert missing, "the native engine has Dawsn now: pick another op it lacks for this test"
    with pytest.raises(native.NativeUnsupportedError, match=r"no kernel for op Dawsn \(node \"[\w/]+\" in function \"\w+\"\)") as caught:
        load(model, engine="native")
    assert caught.value.ops and set(caught.value.ops) <= missing
    loaded = load(model)
    assert loaded.engine == "numpy" and "no kernel for" in loaded.engine_reason


@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_a_damaged_saved_model_pb_is_a_file_error_naming_the_file(tmp_path, damage):
    copy = tmp_path / "m"
    shutil.copytree(DATA / "reference" / "savedmodels" / "keras_mlp", copy)
    pb = copy / "saved_model.pb"
    data = pb.read_bytes()
    pb.write_bytes(data[: len(data) // 3] if damage == "truncate" else bytes(b ^ 0x5A for b in data[:4000]) + data[4000:])
    with pytest.raises(Exception) as caught:
        load(copy, engine="native")
    assert "saved_model.pb" in str(caught.value)
    assert type(caught.value).__module__.startswith(("savedmodel", "builtins"))


def test_a_corrupt_checkpoint_shard_is_an_error_naming_the_file(tmp_path):
    copy = tmp_path / "m"
    shutil.copytree(DATA / "reference" / "savedmodels" / "keras_mlp", copy)
    shard = next((copy / "variables").glob("variables.data-*"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(Exception, match="variables") as caught:
        load(copy, engine="native")
    assert "checksum" in str(caught.value) or "corrupt" in str(caught.value)


def _binary() -> Path:
    found = shutil.which("savedmodel-run", path=str(Path(sys.executable).parent)) or shutil.which("savedmodel-run")
    if found is None:
        pytest.fail("savedmodel-run is not installed beside the Python package")
    return Path(found)


@pytest.mark.parametrize("model_dir, signature", NATIVE_CASES)
def test_the_binary_gives_tensorflows_outputs_with_no_python_on_path(model_dir, signature, tmp_path):
    feeds, expected = _feeds_and_expected(model_dir, signature)
    spec = []
    for key, value in feeds.items():
        np.save(tmp_path / f"in_{key}.npy", value.astype(bytes) if value.dtype == object else value)
        spec.append(f"{key}={tmp_path / f'in_{key}.npy'}")
    out = tmp_path / "out"
    done = subprocess.run([str(_binary()), str(model_dir), "--signature-def", signature,
                           "--inputs", ";".join(spec), "--outdir", str(out)],
                          env={"PATH": str(tmp_path / "empty")}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outputs = {}
    for key, want in expected.items():
        got = np.load(out / f"{key.replace('/', '_')}.npy")
        outputs[key] = got.astype(object) if want.dtype == object else got
    assert_matches(outputs, expected, f"savedmodel-run {model_dir.name}:{signature}")


def test_the_binary_reports_errors_on_one_line(tmp_path):
    mlp = DATA / "reference" / "savedmodels" / "keras_mlp"
    done = subprocess.run([str(_binary()), str(mlp), "--signature-def", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: no signature \"nope\"; available: ")
    done = subprocess.run([str(_binary()), str(mlp), "--bogus"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2


def test_the_binary_benchmarks_and_prints_like_savedmodel_run(tmp_path):
    mlp = DATA / "frozen" / "keras_mlp.pb"
    feeds, _ = _frozen_io(mlp)
    key, value = next(iter(feeds.items()))
    np.save(tmp_path / "x.npy", value)
    done = subprocess.run([str(_binary()), str(mlp), "--inputs", f"{key}={tmp_path / 'x.npy'}", "--bench", "5"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "latency over 5 calls (ms): min" in done.stderr
    assert done.stdout.startswith("Result for output key ")


def test_the_binary_profiles_where_the_time_goes(tmp_path):
    """--profile charges each step of the calls after the first to its op and node: the fused
    convolution keras_cnn compiles to is listed, each op type once per profiled call."""
    model = DATA / "reference" / "savedmodels" / "keras_cnn"
    feeds, _ = _feeds_and_expected(model, "serving_default")
    key, value = next(iter(feeds.items()))
    np.save(tmp_path / "x.npy", value)
    done = subprocess.run([str(_binary()), str(model), "--inputs", f"{key}={tmp_path / 'x.npy'}",
                           "--bench", "3", "--profile", "--outdir", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ops_part, nodes_part = done.stderr.split("slowest nodes:")
    assert "time per op type (own time, over the profiled calls; total " in ops_part
    lines = ops_part.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["ms", "%", "runs"])
    rows = [line.split() for line in lines[header + 1:] if line.strip()]
    by_op = {row[3]: int(row[2]) for row in rows}
    assert by_op["_FusedConv2D"] % 3 == 0 and by_op["_FusedConv2D"] >= 3, by_op
    assert all(runs % 3 == 0 for runs in by_op.values()), by_op
    assert "(_FusedConv2D)" in nodes_part
    assert nodes_part.splitlines()[1].split()[:5] == ["ms", "%", "runs", "median", "us"]
    listed = lambda text: [line for line in text.split("slowest nodes:")[1].splitlines()[2:]
                           if line.strip()]
    assert len(listed(done.stderr)) == min(20, sum(by_op.values()) // 3)
    for count, want in (("1", 1), ("0", len(listed(done.stderr)))):
        again = subprocess.run([str(_binary()), str(model), "--inputs",
                                f"{key}={tmp_path / 'x.npy'}", "--bench", "3", "--profile",
                                "--profile-nodes", count],
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 0, again.stderr
        assert len(listed(again.stderr)) == want
    for row in listed(done.stderr):
        total_ms, runs, median_us = float(row.split()[0]), int(row.split()[2]), float(row.split()[3])
        # Both as printed: the total to 1 us (0.0005 ms either way), the median to 0.1 us.
        assert 0 <= median_us <= total_ms * 1e3 + 0.55, row


def test_the_native_engine_confines_file_access_too(tmp_path):
    """test_file_access pins the numpy engine's wording; the native engine refuses the same
    reads with the same exception class."""
    from savedmodel.runtime import FileAccessError
    from test_file_access import _outside, _reading_a_file

    secret = _outside(tmp_path)
    model = load(_reading_a_file(tmp_path, secret), engine="native")
    with pytest.raises(FileAccessError, match="ReadFile .*outside"):
        model.signatures["read"]()
    linked = _reading_a_file(tmp_path / "link", tmp_path / "link" / "model" / "link.txt")
    (linked / "link.txt").symlink_to(secret)
    with pytest.raises(FileAccessError):
        load(linked, engine="native").signatures["read"]()
    looping = _reading_a_file(tmp_path / "loop", tmp_path / "loop" / "model" / "loop")
    (looping / "loop").symlink_to(looping / "loop")
    with pytest.raises(FileAccessError, match="cannot resolve the path"):
        load(looping, engine="native").signatures["read"]()
    allowed = load(_reading_a_file(tmp_path / "again", secret), allow_file_access=True, engine="native")
    assert allowed.signatures["read"]()["contents"].item() == secret.read_bytes()


def test_a_native_deadline_names_the_signature_and_stops_an_endless_loop():
    from savedmodel.runtime import DeadlineExceededError, time_limit

    model = load(DATA / "models" / "nested_control_flow", engine="native")
    with pytest.raises(DeadlineExceededError, match=r"signature \"run\": .*While.*the time limit of 0.2 s ran out"):
        with time_limit(0.2):
            model.signatures["run"](x=np.ones(2, np.float32), n=np.int32(2**31 - 1))
    out = model.signatures["run"](x=np.ones(2, np.float32), n=np.int32(2))
    assert out
