"""Batch inference on Ray Data (savedmodel.ray, `savedmodel batch`) on a local Ray with 2 CPUs.

Every output is compared with a single-process loop over the same rows, one row per call, on the
numpy reference engine (the actors run engine="auto", the native engine for these models), and
the rows that TensorFlow recorded (tests/data/reference/*.io.npz) with TensorFlow's outputs.
Skipped when Ray is not installed, mandatory with SAVEDMODEL_REQUIRE_RAY=1 (CI). One Ray instance
serves the whole module: starting one takes seconds.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import REFERENCE, import_ray

ray = import_ray()

import pyarrow as pa  # noqa: E402 - installed with Ray's extra, checked by import_ray
import pyarrow.csv as pa_csv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from savedmodel.cli import main  # noqa: E402
from savedmodel.ray import BatchError, RowError, SavedModelPredictor, run_batch  # noqa: E402
from savedmodel.runtime import load  # noqa: E402

pytestmark = pytest.mark.ray
MODELS = REFERENCE / "savedmodels"
CNN, MLP, SEEDS = MODELS / "keras_cnn", MODELS / "keras_mlp", MODELS / "seeds"
RUN = {"actors": 2, "cpus_per_actor": 0.5}
"""Two actors on the 2-CPU Ray, leaving a CPU for the read tasks (see run_batch's cpus_per_actor)."""


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield
    ray.shutdown()


def _cnn_rows(count: int) -> tuple[np.ndarray, np.ndarray]:
    """The images TensorFlow recorded first, then seeded random ones; TensorFlow's outputs for
    the recorded ones."""
    recorded = np.load(str(CNN) + ".io.npz")
    images = recorded["sig/serving_default/in/image"]
    extra = np.random.default_rng(7).random((count - len(images), 28, 28, 1), dtype=np.float32)
    return np.concatenate([images, extra]), recorded["sig/serving_default/out/output_0"]


def _loop(model_dir: Path, signature: str, rows: list[dict], batched: bool) -> list[dict]:
    """The single-process reference: one call per row on the numpy engine; a signature whose
    inputs have a batch dimension gets each row as a batch of one."""
    sig = load(model_dir, engine="numpy").signatures[signature]
    results = []
    for row in rows:
        if batched:
            out = sig(**{k: np.asarray(v)[None] for k, v in row.items()})
            results.append({k: v[0] for k, v in out.items() if np.ndim(v) and len(v) == 1})
        else:
            results.append(sig(**{k: np.asarray(v) for k, v in row.items()}))
    return results


def _write_input(kind: str, folder: Path, ids: np.ndarray, images: np.ndarray) -> tuple[Path, list[str]]:
    """The rows (an id column and 28x28x1 images) in format `kind`; the --column options that
    feed the image input from them."""
    if kind == "parquet":
        path = folder / "in.parquet"
        pq.write_table(pa.table({"id": ids, "image": pa.FixedShapeTensorArray.from_numpy_ndarray(images)}),
                       path, row_group_size=16)
        return path, []
    if kind == "csv":
        path = folder / "in.csv"
        flat = images.reshape(len(images), -1)
        columns = {"id": ids, **{f"p{i}": flat[:, i] for i in range(flat.shape[1])}}
        pa_csv.write_csv(pa.table(columns), path)
        return path, ["--column", "image=" + ",".join(f"p{i}" for i in range(flat.shape[1]))]
    if kind == "jsonl":
        path = folder / "in.jsonl"
        path.write_text("".join(json.dumps({"id": int(i), "image": img.tolist()}) + "\n"
                                for i, img in zip(ids, images)))
        return path, []
    if kind == "npz":
        path = folder / "in.npz"
        np.savez(path, id=ids, image=images)
        return path, []
    path = folder / "in.npy"
    np.save(path, images)
    return path, []


def _read_output(path: Path) -> dict[str, np.ndarray]:
    if path.suffix == ".npz":
        with np.load(path) as data:
            return dict(data)
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return {k: np.array([r[k] for r in rows]) for k in rows[0]}
    table = pa_csv.read_csv(path) if path.suffix == ".csv" else pq.read_table(path)
    return {name: _numpy(table[name]) for name in table.column_names}


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    array = column.combine_chunks()
    if isinstance(array, pa.FixedShapeTensorArray):
        return array.to_numpy_ndarray()
    values = array.to_pylist()
    try:
        return np.array(values)
    except ValueError:  # ragged lists
        ragged = np.empty(len(values), dtype=object)
        ragged[:] = values
        return ragged


@pytest.mark.parametrize("kind, output", [("parquet", "out.parquet"), ("csv", "out.npz"),
                                          ("jsonl", "out.jsonl"), ("npz", "out.parquet"),
                                          ("npy", "out.npz")])
def test_every_input_format_gives_the_single_process_outputs(tmp_path, kind, output):
    images, recorded = _cnn_rows(40)
    ids = np.arange(100, 100 + len(images))
    path, columns = _write_input(kind, tmp_path, ids, images)
    result = CliRunner().invoke(main, ["batch", str(CNN), "--input", str(path), "--output",
                                       str(tmp_path / output), "--signature", "serving_default",
                                       "--batch-size", "8", "--actors", "2", "--cpus-per-actor",
                                       "0.5", *columns])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{len(images)} rows in ") and " rows/s) -> " in result.stdout
    written = _read_output(tmp_path / output)
    if kind != "npy":
        np.testing.assert_array_equal(written["id"], ids)  # every row once, in input order
    expected = np.stack([r["output_0"] for r in _loop(CNN, "serving_default",
                                                      [{"image": i} for i in images], batched=True)])
    np.testing.assert_allclose(written["output_0"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(written["output_0"][:len(recorded)], recorded, rtol=1e-5, atol=1e-6)


def _seeds_cases():
    """(signature, format, input rows, whether the loop feeds a row as a batch of one)."""
    rng = np.random.default_rng(3)
    ragged = [rng.integers(-5, 9, size=n).tolist() for n in (3, 1, 6, 2, 5, 4, 0, 7)]
    return [
        ("dense", "parquet", [{"x": v} for v in rng.random((12, 2), dtype=np.float32)], True),
        ("serving_default", "npz", [{"x": v} for v in rng.random((12, 2), dtype=np.float32)], True),
        ("next_collatz", "csv", [{"x": int(v)} for v in rng.integers(1, 50, 12)], True),
        ("power", "npz", [{"x": rng.integers(-3, 4, (10, 10)).astype(np.int32), "n": int(n)}
                          for n in rng.integers(0, 4, 6)], False),
        ("simple_relu", "jsonl", [{"x": int(v)} for v in rng.integers(-9, 9, 12)], False),
        ("sum_even", "jsonl", [{"items": r} for r in ragged], False),
        ("unused_gather", "csv", [{"x": float(v)} for v in rng.random(12, dtype=np.float32)], True),
    ]


def _write_rows(kind: str, path: Path, rows: list[dict]) -> None:
    ids = np.arange(len(rows))
    if kind == "jsonl":
        path.write_text("".join(json.dumps({"id": i, **row}) + "\n" for i, row in enumerate(rows)))
        return
    columns = {"id": ids, **{k: np.stack([np.asarray(r[k]) for r in rows]) for k in rows[0]}}
    if kind == "npz":
        np.savez(path, **columns)
        return
    table = pa.table({k: pa.FixedShapeTensorArray.from_numpy_ndarray(v) if v.ndim > 1 else v
                      for k, v in columns.items()})
    (pq.write_table if kind == "parquet" else pa_csv.write_csv)(table, path)


@pytest.mark.parametrize("signature, kind, rows, batched", _seeds_cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_seeds_signatures_give_the_single_process_outputs(tmp_path, signature, kind, rows, batched):
    source = tmp_path / f"in.{kind}"
    _write_rows(kind, source, rows)
    result = run_batch(SEEDS, str(source), tmp_path / "out.parquet", signature=signature,
                       batch_size=5, **RUN)
    written = _read_output(tmp_path / "out.parquet")
    expected = _loop(SEEDS, signature, rows, batched)
    assert result.rows == len(rows)
    np.testing.assert_array_equal(written["id"], np.arange(len(rows)))
    for key in expected[0]:
        np.testing.assert_allclose(written[key], np.stack([e[key] for e in expected]), rtol=1e-6)
    # `calls` counts the calls of `dense`: one value per batch, not per row, so not a column.
    assert [c for c in result.columns if c not in ("id", *rows[0])] == sorted(expected[0])


def test_a_folder_is_read_in_file_name_order(tmp_path):
    images, _ = _cnn_rows(30)
    folder = tmp_path / "parts"
    folder.mkdir()
    for number, start in reversed(list(enumerate((0, 7, 19)))):  # written last to first
        stop = {0: 7, 7: 19, 19: 30}[start]
        pq.write_table(pa.table({"id": np.arange(start, stop), "image": pa.FixedShapeTensorArray
                                 .from_numpy_ndarray(images[start:stop])}), folder / f"part-{number}.parquet")
    result = run_batch(CNN, str(folder), tmp_path / "out.parquet", batch_size=4, **RUN)
    written = _read_output(tmp_path / "out.parquet")
    assert result.rows == 30
    np.testing.assert_array_equal(written["id"], np.arange(30))


class _DiesOnce(SavedModelPredictor):
    """Kills its own process on its third batch, once in the whole run (the first actor to
    create the `marker` file dies); Ray restarts the actor and retries the batch. Pickled by
    value (the workers cannot import tests/), with `marker` set."""

    marker = ""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._calls = 0

    def __call__(self, batch):
        self._calls += 1
        if self._calls == 3:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os._exit(1)
        return super().__call__(batch)


def test_a_killed_actor_leaves_every_row_exactly_once(tmp_path, monkeypatch):
    marker = tmp_path / "killed"
    monkeypatch.setattr(_DiesOnce, "marker", str(marker))
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    rows = np.random.default_rng(5).random((600, 8), dtype=np.float32)
    for start in range(0, 600, 150):
        pq.write_table(pa.table({"id": np.arange(start, start + 150),
                                 "features": pa.FixedShapeTensorArray.from_numpy_ndarray(rows[start:start + 150])}),
                       tmp_path / f"in-{start:03}.parquet")
    result = run_batch(MLP, str(tmp_path), tmp_path / "out.npz", signature="serve", batch_size=25,
                       predictor=_DiesOnce, **RUN)
    assert marker.exists()  # an actor did die
    written = _read_output(tmp_path / "out.npz")
    assert result.rows == 600
    np.testing.assert_array_equal(written["id"], np.arange(600))
    expected = np.stack([r["output_0"] for r in _loop(MLP, "serve", [{"features": r} for r in rows], True)])
    np.testing.assert_allclose(written["output_0"], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad, message", [
    ([0.5] * 7, "input 'features' of signature 'serve' expects shape (None, 8) of float32, got shape (7,)"),
    ("eight", "input 'features' of signature 'serve' expects float32, got a non-numeric value"),
])
def test_a_bad_row_is_named_by_file_and_row(tmp_path, bad, message):
    lines = [json.dumps({"features": [0.25] * 8}) for _ in range(30)]
    lines[23] = json.dumps({"features": bad})
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    output = tmp_path / "out.parquet"
    result = CliRunner().invoke(main, ["batch", str(MLP), "--input", str(tmp_path / "in.jsonl"),
                                       "--output", str(output), "--signature", "serve",
                                       "--batch-size", "10", "--actors", "2", "--cpus-per-actor", "0.5"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].startswith(f"Error: {tmp_path / 'in.jsonl'}, row 23: {message}")
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "in.jsonl"]  # nothing written, not even a temporary file


def test_existing_output_is_refused_before_ray_runs(tmp_path):
    (tmp_path / "out.parquet").write_bytes(b"keep")
    with pytest.raises(ValueError, match="exists"):
        run_batch(MLP, str(tmp_path), tmp_path / "out.parquet", signature="serve", **RUN)
    assert (tmp_path / "out.parquet").read_bytes() == b"keep"


def test_read_only_batches_are_never_written():
    """Ray hands zero-copy, read-only views of its object store: converting, reshaping and
    running must not write into them (numpy raises if anything tries)."""
    images, recorded = _cnn_rows(5)
    flat = images.reshape(5, -1)
    for column in (images, flat):
        column.flags.writeable = False
    predictor = SavedModelPredictor(CNN, "serving_default", columns={"image": "pixels"})
    out = predictor({"pixels": flat})
    np.testing.assert_allclose(out["output_0"][:len(recorded)], recorded, rtol=1e-5, atol=1e-6)
    assert out["pixels"] is flat


def test_a_bad_row_in_a_batch_raises_with_its_index_or_is_recorded():
    rows = np.empty(4, dtype=object)
    rows[:] = [[1.0] * 8, [2.0] * 8, [3.0] * 5, [4.0] * 8]
    with pytest.raises(RowError, match=r"row 2 of the batch \(from b.jsonl\): .*got shape \(5,\)") as caught:
        SavedModelPredictor(MLP, "serve")({"features": rows, "path": np.array(["b.jsonl"] * 4, dtype=object)})
    assert (caught.value.row, caught.value.path) == (2, "b.jsonl")
    recorded = SavedModelPredictor(MLP, "serve", on_error="record")({"features": rows})
    assert [bool(e) for e in recorded["savedmodel_error"]] == [False, False, True, False]
    expected = _loop(MLP, "serve", [{"features": np.array(r, np.float32)} for r in rows[[0, 1, 3]]], True)
    np.testing.assert_allclose(recorded["output_0"][[0, 1, 3]], np.stack([e["output_0"] for e in expected]),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(recorded["output_0"][2], 0)


def test_a_missing_column_names_the_columns_there_are():
    with pytest.raises(ValueError, match=r"no column 'features' for input 'features' of signature "
                                         r"'serve'; the columns are \['a', 'b'\]"):
        SavedModelPredictor(MLP, "serve")({"a": np.zeros(2), "b": np.zeros(2)})


def test_a_failing_actor_is_one_clear_error(tmp_path):
    """A model actor that dies on every try stops the run after Ray's bounded retries."""
    pq.write_table(pa.table({"features": pa.FixedShapeTensorArray.from_numpy_ndarray(
        np.zeros((4, 8), np.float32))}), tmp_path / "in.parquet")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with pytest.raises(BatchError, match="a model actor died"):
        run_batch(MLP, str(tmp_path / "in.parquet"), tmp_path / "out.parquet", signature="serve",
                  predictor=_AlwaysDies, **RUN)
    assert not (tmp_path / "out.parquet").exists()


class _AlwaysDies(SavedModelPredictor):
    def __call__(self, batch):
        os._exit(1)


def test_a_missing_column_stops_the_command_with_one_line(tmp_path):
    pq.write_table(pa.table({"pixels": np.zeros(3, np.float32)}), tmp_path / "in.parquet")
    result = CliRunner().invoke(main, ["batch", str(MLP), "--input", str(tmp_path / "in.parquet"),
                                       "--output", str(tmp_path / "out.parquet"), "--signature", "serve",
                                       "--column", "features=f0,f1", "--actors", "1", "--cpus-per-actor", "0.5"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        f"Error: {tmp_path / 'in.parquet'}, row 0: no column(s) ['f0', 'f1'] for input 'features' of "
        "signature 'serve'; the columns are ['pixels']")


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_string_columns_give_tensorflows_outputs(tmp_path, kind):
    """keras_string_lookup's `words: string (-1, 3)`: a list of strings per JSON row, or three
    CSV text columns stacked with --column; TensorFlow recorded the first two rows."""
    model = REFERENCE.parent / "models" / "keras_string_lookup"
    recorded = np.load(str(model) + ".io.npz")
    words = [[w.decode() for w in row] for row in recorded["sig/serving_default/in/words"]]
    words += [["dog", "bird", "cat"], ["zebra", "", "owl"], ["cat", "cat", "cat"]]
    source = tmp_path / f"in.{kind}"
    if kind == "jsonl":
        source.write_text("".join(json.dumps({"words": w}) + "\n" for w in words))
        columns = {}
    else:
        pa_csv.write_csv(pa.table({f"w{i}": [w[i] for w in words] for i in range(3)}), source)
        columns = {"words": ["w0", "w1", "w2"]}
    run_batch(model, str(source), tmp_path / "out.parquet", columns=columns, batch_size=2, **RUN)
    written = _read_output(tmp_path / "out.parquet")
    expected = _loop(model, "serving_default", [{"words": np.array(w, dtype=object)} for w in words], True)
    for key in ("hashed", "ids", "ids_two_oov"):
        np.testing.assert_array_equal(written[key], np.stack([e[key] for e in expected]))
        np.testing.assert_array_equal(written[key][:2], recorded[f"sig/serving_default/out/{key}"])


def test_the_command_joins_a_running_cluster(tmp_path):
    """`--address` joins the cluster this test module runs (its GCS address), from another process;
    the actors run there, and the command leaves the cluster running."""
    rows = np.random.default_rng(9).random((50, 8), dtype=np.float32)
    np.save(tmp_path / "in.npy", rows)
    command = [str(Path(sys.executable).parent / "savedmodel"), "batch", str(MLP), "--input",
               str(tmp_path / "in.npy"), "--output", str(tmp_path / "out.jsonl"), "--signature", "serve",
               "--address", ray.get_runtime_context().gcs_address, "--cpus-per-actor", "0.5"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("50 rows in ")
    written = _read_output(tmp_path / "out.jsonl")
    expected = _loop(MLP, "serve", [{"features": r} for r in rows], True)
    np.testing.assert_allclose(written["output_0"], np.stack([e["output_0"] for e in expected]),
                               rtol=1e-5, atol=1e-6)
    assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 2


def test_an_unreachable_cluster_is_one_clear_error(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros((2, 8), np.float32))
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    command = [str(Path(sys.executable).parent / "savedmodel"), "batch", str(MLP), "--input",
               str(tmp_path / "in.npy"), "--output", str(tmp_path / "out.parquet"), "--address",
               f"127.0.0.1:{port}"]  # another process: this one has joined the module's Ray
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(f"Error: cannot reach the Ray cluster at 127.0.0.1:{port}")


def test_an_unreadable_file_is_one_line_without_stack_traces(tmp_path):
    """A file Ray's reader rejects stops the command with one line naming the input; Ray's own
    stack traces of the failed task stay out of stderr (a fresh process: its real stderr)."""
    source = tmp_path / "broken.jsonl"
    source.write_text('{"features": [1, 2, 3, 4, 5, 6, 7, 8]}\n{"features": [1, 2\n')
    command = [str(Path(sys.executable).parent / "savedmodel"), "batch", str(MLP), "--input", str(source),
               "--output", str(tmp_path / "out.parquet"), "--signature", "serve", "--cpus-per-actor", "0.5"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(f"Error: reading or mapping {source}: ValueError: ")
    assert "Traceback" not in done.stderr
    assert sorted(tmp_path.iterdir()) == [source]
