"""Shared fixtures: the committed reference corpus and TensorFlow as an optional oracle.

Tests that compare against live TensorFlow take the `tf` fixture. Without TensorFlow installed
they are skipped, unless SAVEDMODEL_REQUIRE_TF=1 (set by .ci/run), which turns the skip into a
failure so CI cannot pass without having run them.
"""
from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, seed, settings

DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "reference"
SAVEDMODELS = sorted(p for p in (REFERENCE / "savedmodels").iterdir() if p.is_dir())
EXTRA_MODELS = sorted(p for p in (DATA / "models").iterdir() if p.is_dir())
"""TensorFlow-written SavedModels beyond the reference corpus (tests/data/models/make_models.py)."""


def _numpy_only(listing: Path) -> dict[str, list[str]]:
    entries = {}
    for line in listing.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, ops = line.split(":", 1)
            entries[name.strip()] = sorted(op.strip() for op in ops.split(","))
    return entries


NUMPY_ONLY = _numpy_only(DATA / "models" / "numpy_only.txt")
"""Models the native engine cannot run yet -> the op types it lacks (tests/data/models/numpy_only.txt)."""
FROZEN_NUMPY_ONLY = _numpy_only(DATA / "frozen" / "numpy_only.txt")
"""The same for the GraphDef files of tests/data/frozen (by file stem)."""
GRAPHS = sorted((REFERENCE / "graphs").glob("*.pbtxt"))
CHECKPOINTS = REFERENCE / "checkpoints"
CHECKPOINT_PREFIXES = [CHECKPOINTS / "single" / "ckpt", CHECKPOINTS / "sharded" / "ckpt",
                       CHECKPOINTS / "managed" / "ckpt-3", CHECKPOINTS / "managed" / "ckpt-4"]
REQUIRE_TF = os.environ.get("SAVEDMODEL_REQUIRE_TF") == "1"
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
"""TensorFlow, the oracle, runs its own (Eigen) kernels on every CPU: where it picks oneDNN's
instead (on CPUs with AVX-512, say), their error messages and float summation orders differ,
and the expected values of the tests would depend on the machine. Set before any import of
TensorFlow, here or in a subprocess."""


REQUIRE_RAY = os.environ.get("SAVEDMODEL_REQUIRE_RAY") == "1"
"""Set by .ci/run: the Ray tests (tests/test_ray_batch.py, tests/test_ray_serve.py) fail instead
of skipping when Ray is not installed."""


def import_ray(*modules: str):
    """Ray with Ray Data (or with `modules`, e.g. "ray.serve"), at a test module's top: the
    module is skipped when Ray is not installed (the optional `ray` and `ray-serve` extras),
    unless SAVEDMODEL_REQUIRE_RAY=1."""
    try:
        for module in modules or ("ray.data", "pyarrow"):
            importlib.import_module(module)
    except ImportError as err:
        if REQUIRE_RAY:
            pytest.fail(f"SAVEDMODEL_REQUIRE_RAY=1 but Ray cannot be imported: {err}",
                        pytrace=False)
        pytest.skip(f"Ray is not installed (the `ray` extra): {err}", allow_module_level=True)
    return importlib.import_module("ray")


def _import_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        return importlib.import_module("tensorflow")
    except ImportError as err:
        if REQUIRE_TF:
            pytest.fail(f"SAVEDMODEL_REQUIRE_TF=1 but TensorFlow cannot be imported: {err}")
        pytest.skip("TensorFlow is not installed (live round-trip test)")


@pytest.fixture(scope="session")
def tf():
    """The TensorFlow module, for live comparisons against the reference implementation."""
    return _import_tensorflow()


@pytest.fixture(scope="session")
def tf_serving(tf):
    """TensorFlow Serving's Python API (tensorflow-serving-api, in the interop extra beside
    TensorFlow): its protos and gRPC stubs, the official client our server must answer."""
    try:
        return importlib.import_module("tensorflow_serving.apis")
    except ImportError as err:
        if REQUIRE_TF:
            pytest.fail(f"SAVEDMODEL_REQUIRE_TF=1 but tensorflow-serving-api cannot be imported: {err}")
        pytest.skip("tensorflow-serving-api is not installed (live interop test)")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tf" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.tensorflow)



def fuzz_settings(examples: int):
    """The decorator that makes a hypothesis test a fuzz test (tests/test_fuzz_*.py): `examples`
    derandomized cases, so CI sees the same ones every run; SAVEDMODEL_FUZZ_EXAMPLES=N runs N
    instead and SAVEDMODEL_FUZZ_SEED=S draws other cases from seed S (a longer campaign, see the
    README). No per-example deadline (the tests bound time themselves) and no example database
    written into the checkout."""
    examples = int(os.environ.get("SAVEDMODEL_FUZZ_EXAMPLES", examples))
    chosen_seed = os.environ.get("SAVEDMODEL_FUZZ_SEED")
    configured = settings(max_examples=examples, derandomize=chosen_seed is None, deadline=None,
                          database=None, suppress_health_check=list(HealthCheck))

    def decorate(test):
        test = configured(test)
        return seed(int(chosen_seed))(test) if chosen_seed is not None else test
    return decorate


def special_file(path: Path, kind: str) -> str:
    """Put a FIFO (`kind` "fifo") or a link to /dev/zero (any other kind) at `path`, replacing
    the file there; return how the readers' errors name it ("a FIFO", "a character device")."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
        return "a FIFO"
    path.symlink_to("/dev/zero")
    return "a character device"


def sqrt_model(path: Path) -> Path:
    """Save at `path` a model whose serving_default signature is sqrt(x), x float32 [None]."""
    import savedmodel as sm

    class M(sm.Module):
        @sm.function(input_signature=[sm.TensorSpec([None], sm.float32)])
        def f(self, x):
            return sm.math.sqrt(x)

    module = M()
    sm.saved_model.save(module, str(path), signatures={"serving_default": module.f})
    return path


def with_op_renamed(src_dir: Path, dst_dir: Path, old: str, new: str) -> Path:
    """Copy the SavedModel `src_dir` to `dst_dir` with every `old` node of its function library
    renamed to op `new` (same inputs and attrs): e.g. to make a model call an op that one engine
    has and the other lacks. Returns `dst_dir`."""
    from savedmodel.protos import saved_model_pb2

    shutil.copytree(src_dir, dst_dir)
    pb = dst_dir / "saved_model.pb"
    saved = saved_model_pb2.SavedModel.FromString(pb.read_bytes())
    renamed = 0
    for meta_graph in saved.meta_graphs:
        for function in meta_graph.graph_def.library.function:
            for node in function.node_def:
                if node.op == old:
                    node.op = new
                    renamed += 1
    assert renamed, f"no {old} node in {src_dir}"
    pb.write_bytes(saved.SerializeToString())
    return dst_dir
