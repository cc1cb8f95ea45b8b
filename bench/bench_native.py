"""The native engine against the numpy engine, TensorFlow and onnxruntime, in one run.

Prints, for every SavedModel in tests/data (its serving_default signature) and for Keras
applications and small keras-hub backbones this script exports (random weights, nothing
downloaded), the per-call latency at batch 1 and 32 of each engine with default threading (the
least of three medians, the native engine, TensorFlow and onnxruntime taking turns; the numpy
engine's one median), and the ratios the issue sets targets for (TensorFlow/native > 1,
onnxruntime/native >= 1 at batch 1 and >= 0.8 at batch 32); then the time from a fresh
process to the first result (the `savedmodel-run` binary, and Python import + load + first
call against TensorFlow's), and the peak memory of loading and running ResNet50 against its
weights' size. Nothing is asserted.

Usage: python bench/bench_native.py [--repeats N] [--quick]   (needs the `bench` extra;
keras-hub for the transformer backbones). --quick: only the tests/data models.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
BATCHES = (1, 32)


def fixture_models() -> list[Path]:
    found = []
    for parent in (DATA / "reference" / "savedmodels", DATA / "models"):
        found += sorted(p for p in parent.iterdir() if (p / "saved_model.pb").is_file())
    return found


def export_applications(workdir: Path) -> list[Path]:
    """Keras applications and keras-hub backbones, exported as SavedModels (random weights)."""
    import keras

    exported = []
    builders = {
        "MobileNetV2": lambda: keras.applications.MobileNetV2(weights=None),
        "EfficientNetB0": lambda: keras.applications.EfficientNetB0(weights=None),
        "ResNet50": lambda: keras.applications.ResNet50(weights=None),
        "DenseNet121": lambda: keras.applications.DenseNet121(weights=None),
    }
    try:
        import keras_hub

        builders["BERT-tiny"] = lambda: keras_hub.models.BertBackbone(
            vocabulary_size=1000, num_layers=2, num_heads=2, hidden_dim=128, intermediate_dim=512,
            max_sequence_length=128)
        builders["GPT2-tiny"] = lambda: keras_hub.models.GPT2Backbone(
            vocabulary_size=1000, num_layers=2, num_heads=2, hidden_dim=128, intermediate_dim=512,
            max_sequence_length=128)
    except ImportError:
        print("keras-hub is not installed: no transformer backbones", file=sys.stderr)
    for name, build in builders.items():
        target = workdir / name
        build().export(str(target), verbose=False)
        exported.append(target)
    return exported


def feeds_for(signature, batch: int, rng) -> dict:
    feeds = {}
    for key, spec in signature.inputs.items():
        dims = [d if d is not None and d >= 0 else 16 for d in spec.shape[1:]] if spec.shape else []
        shape = (batch, *dims)
        if "INT" in spec.dtype.upper():  # ids in [0, 2): valid for any vocabulary, segments too
            feeds[key] = rng.integers(0, 2, shape).astype(np.dtype(spec.dtype.lower().removeprefix("dt_")))
        elif "padding_mask" in key:
            feeds[key] = np.ones(shape, np.int32)
        else:
            feeds[key] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def median_seconds(call, repeats: int, budget: float = 20.0, warm_up: float = 0.25,
                   least: float = 0.25) -> float:
    """Median of `repeats` timed calls, or of as many as fill `least` seconds when that is more
    (fewer once `budget` seconds have passed), after calls for `warm_up` seconds (at least one):
    every engine gets the same warm-up, so none is timed while the previous engine's threads and
    cache contents still disturb the machine. The time floor is for the models that take
    microseconds: the median of 20 such calls moved by half between runs of the same hour."""
    started = time.perf_counter()
    call()
    while time.perf_counter() - started < warm_up:
        call()
    times = []
    started = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - started < least:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
        if time.perf_counter() - started > budget:
            break
    return float(np.median(times))


def least_of_rounds(calls: dict, repeats: int, rounds: int = 3) -> dict:
    """Each engine's time as the least of `rounds` medians, the engines taking turns (native,
    TensorFlow, onnxruntime, native again, ...), each median over a share of `repeats` calls.
    On a shared machine a few seconds of someone else's work slow whichever engine is timed
    then; taking turns gives each engine a share of the quiet spells, and the least median is
    the one the machine disturbed least."""
    share = max(5, repeats // rounds)
    best = {name: float("inf") for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            best[name] = min(best[name], median_seconds(call, share))
    return best


def onnx_session(model_dir: Path, workdir: Path):
    try:
        import onnxruntime
    except ImportError:
        return None
    target = workdir / f"{model_dir.name}.onnx"
    done = subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", str(model_dir),
                           "--signature_def", "serving_default", "--output", str(target)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    try:
        return onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    except Exception:  # a conversion onnxruntime rejects (ops it lacks): no onnxruntime column
        return None


def latency_table(models: list[Path], repeats: int, workdir: Path) -> None:
    import tensorflow as tf

    from savedmodel.runtime import load

    rng = np.random.default_rng(0)
    print(f"{'model':<26}{'batch':>6}{'native ms':>11}{'numpy ms':>11}{'tf ms':>10}{'ort ms':>10}"
          f"{'tf/nat':>8}{'ort/nat':>8}{'np/nat':>8}")
    for model_dir in models:
        try:
            native = load(model_dir, engine="native")
        except Exception as err:  # a model the native engine cannot run yet: say why, go on
            print(f"{model_dir.name:<26} native engine: {str(err).splitlines()[0][:100]}")
            continue
        if "serving_default" not in native.signatures:
            continue
        ours = native.signatures["serving_default"]
        reference = load(model_dir, engine="numpy").signatures["serving_default"]
        theirs = tf.saved_model.load(str(model_dir)).signatures["serving_default"]
        session = onnx_session(model_dir, workdir)
        for batch in BATCHES:
            try:
                feeds = feeds_for(ours, batch, rng)
                ours(**feeds)
            except Exception as err:
                print(f"{model_dir.name:<26}{batch:>6} cannot feed random inputs: {str(err)[:80]}")
                continue
            t_numpy = median_seconds(lambda: reference(**feeds), max(3, repeats // 10))
            tf_feeds = {k: tf.constant(v) for k, v in feeds.items()}
            calls = {"native": lambda: ours(**feeds), "tf": lambda: theirs(**tf_feeds)}
            if session is not None:
                by_name = {i.name.split(":")[0]: i.name for i in session.get_inputs()}
                ort_feeds = {by_name.get(k, k): v for k, v in feeds.items()}
                try:
                    session.run(None, ort_feeds)
                    calls["ort"] = lambda: session.run(None, ort_feeds)
                except Exception:  # inputs onnxruntime's conversion does not take: no column
                    pass
            times = least_of_rounds(calls, repeats)
            t_native, t_tf = times["native"], times["tf"]
            t_ort = times.get("ort", float("nan"))
            print(f"{model_dir.name:<26}{batch:>6}{t_native * 1e3:>11.3f}{t_numpy * 1e3:>11.3f}"
                  f"{t_tf * 1e3:>10.3f}{t_ort * 1e3:>10.3f}{t_tf / t_native:>8.2f}"
                  f"{t_ort / t_native:>8.2f}{t_numpy / t_native:>8.2f}", flush=True)


def first_result(workdir: Path, runs: int = 5) -> None:
    """Fresh process to first result on keras_cnn: the binary (no Python), then Python import +
    load + first call on the native engine against TensorFlow's. Each command runs once untimed
    first (files cached, bytecode written), then the best of `runs`."""
    model = DATA / "reference" / "savedmodels" / "keras_cnn"
    stored = np.load(f"{model}.io.npz")
    key = next(k for k in stored.files if k.startswith("sig/serving_default/in/"))
    name = key.rsplit("/", 1)[1]
    np.save(workdir / "x.npy", stored[key])
    commands = {
        "python": [sys.executable, "-c", "import numpy as np\nfrom savedmodel.runtime import load\n"
                   f"load({str(model)!r}, engine='native').signatures['serving_default']"
                   f"({name}=np.load({str(workdir / 'x.npy')!r}))"],
        "tensorflow": [sys.executable, "-c", "import numpy as np, tensorflow as tf\n"
                       f"tf.saved_model.load({str(model)!r}).signatures['serving_default']"
                       f"({name}=tf.constant(np.load({str(workdir / 'x.npy')!r})))"],
    }
    binary = shutil.which("savedmodel-run", path=str(Path(sys.executable).parent)) or shutil.which("savedmodel-run")
    if binary:
        commands["savedmodel-run"] = [binary, str(model), "--signature-def", "serving_default",
                                      "--inputs", f"{name}={workdir / 'x.npy'}", "--outdir",
                                      str(workdir / "out"), "--overwrite"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    seconds = {}
    for label, command in commands.items():
        subprocess.run(command, check=True, capture_output=True, env=env)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=env)
            times.append(time.perf_counter() - start)
        seconds[label] = min(times)
    if "savedmodel-run" in seconds:
        print(f"fresh process to first result, keras_cnn: savedmodel-run "
              f"{seconds['savedmodel-run'] * 1e3:.1f} ms (target < 20 ms)")
    print(f"Python import + load + first call, keras_cnn: native {seconds['python']:.3f} s, "
          f"TensorFlow {seconds['tensorflow']:.2f} s, ratio "
          f"{seconds['tensorflow'] / seconds['python']:.1f}x (target >= 20x)")


# The process's own high-water mark (VmHWM, in KiB). Not getrusage's ru_maxrss: Linux carries
# that across fork and exec, so a child of this large process would report the parent's peak.
_PRINT_PEAK = ("import re\nstatus = open('/proc/self/status').read()\n"
               "print(int(re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1)) * 1024)")


def peak_memory(model_dir: Path) -> None:
    """Peak resident memory of a fresh process that loads `model_dir` natively and runs it once
    at batch 1, beside the bytes of its weights (the checkpoint's data shards)."""
    code = ("import numpy as np\nfrom savedmodel.runtime import load\n"
            f"m = load({str(model_dir)!r}, engine='native')\n"
            "s = m.signatures['serving_default']\n"
            "k, spec = next(iter(s.inputs.items()))\n"
            "s(**{k: np.zeros((1, *spec.shape[1:]), np.float32)})\n" + _PRINT_PEAK)
    base = "import numpy\nimport savedmodel.runtime\n" + _PRINT_PEAK
    peak = int(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                              text=True).stdout.split()[-1])
    floor = int(subprocess.run([sys.executable, "-c", base], check=True, capture_output=True,
                               text=True).stdout.split()[-1])
    weights = sum(p.stat().st_size for p in (model_dir / "variables").glob("variables.data-*"))
    print(f"peak memory, {model_dir.name}: {(peak - floor) / 2**20:.0f} MiB above the interpreter's "
          f"{floor / 2**20:.0f} MiB, weights {weights / 2**20:.0f} MiB, ratio "
          f"{(peak - floor) / weights:.2f} (target < 1.5)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="only the models in tests/data")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        first_result(workdir)
        models = fixture_models()
        applications = [] if args.quick else export_applications(workdir)
        latency_table(models + applications, args.repeats, workdir)
        resnet = [m for m in applications if m.name == "ResNet50"]
        if resnet:
            peak_memory(resnet[0])


if __name__ == "__main__":
    main()
