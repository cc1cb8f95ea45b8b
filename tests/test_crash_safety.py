"""Crash safety of every writer: killed at any point, a write leaves the old files or the new
ones, complete; the next write to the same path clears what a killed one left behind; a full
disk is an error naming the path, with nothing left half-written.

Each writer runs in a forked child that SIGKILLs itself just before its k-th file-system step
(rename, replace, link, unlink, fsync, directory exchange), for every k, plus a few kills at
random times; the parent then checks what is at the path and writes again.
"""
from __future__ import annotations

import errno
import os
import random
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import savedmodel as sm
from conftest import SAVEDMODELS
from savedmodel import runtime
from savedmodel.cli import main
from savedmodel.runtime import atomic_files
from savedmodel.runtime.atomic_files import DiskFullError, recover_directory
from savedmodel.runtime.tensor_bundle import BundleReader, index_path

SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")
RANDOM_KILLS = 4
_STEPS = ("replace", "rename", "link", "unlink", "fsync")


# ----------------------------------------------------------------------------- harness

def _run_child(write: Callable[[], object], kill_at: int | None = None) -> int | None:
    """Run `write()` in a forked child that kills itself before its `kill_at`-th file-system
    step; return the number of steps it made when it was not killed."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read_end)
        status = 1
        try:
            counter = _count_steps(kill_at)
            write()
            os.write(write_end, str(counter[0]).encode())
            status = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(status)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read()
    if kill_at is not None and os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return None
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the writer failed"
    return int(report)


def _count_steps(kill_at: int | None) -> list[int]:
    counter = [0]

    def step(function):
        def counted(*args, **kwargs):
            counter[0] += 1
            if counter[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return function(*args, **kwargs)
        return counted

    for name in _STEPS:
        setattr(os, name, step(getattr(os, name)))
    atomic_files._exchange = step(atomic_files._exchange)
    return counter


def _kill_at_random(write: Callable[[], object], seconds: float, rng: random.Random) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            write()
        finally:
            os._exit(0)
    time.sleep(rng.uniform(0, seconds))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


@dataclass
class Writer:
    """One write over existing files: `write` the new ones, `state` says which complete
    version is at the path ("old" or "new", asserting it is one of them), `clean` lists what
    the directory holds after a completed write."""

    write: Callable[[], object]
    state: Callable[[], str]
    clean: Callable[[], set[str]]
    again: Callable[[], object] | None = None
    """The write after a kill, when not `write` (e.g. by a restarted program)."""


def _every_kill(make: Callable[[Path], Writer], tmp_path: Path) -> None:
    """Kill `make(...)`'s write at every step and at random times; after each kill the old or
    the new files are there, and a write in this process completes and leaves nothing else."""
    writer = make(tmp_path / "probe")
    started = time.monotonic()
    steps = _run_child(writer.write)
    seconds = time.monotonic() - started
    assert writer.state() == "new" and _listing(tmp_path / "probe") == writer.clean()
    seen = set()
    rng = random.Random(12)
    for trial in range(steps + RANDOM_KILLS):
        writer = make(tmp_path / f"trial{trial}")
        assert writer.state() == "old"
        if trial < steps:
            _run_child(writer.write, kill_at=trial + 1)
        else:
            _kill_at_random(writer.write, seconds, rng)
        seen.add(writer.state())
        (writer.again or writer.write)()
        assert writer.state() == "new"
        assert _listing(tmp_path / f"trial{trial}") == writer.clean(), f"kill {trial + 1}"
    assert {"old", "new"} <= seen


def _listing(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


def _tensors(prefix: Path) -> dict[str, np.ndarray]:
    reader = BundleReader(prefix)
    return {key: reader.read(key) for key in reader.keys()}


def _which(found: dict, versions: dict[str, dict]) -> str:
    for name, expected in versions.items():
        if found.keys() == expected.keys() and all(
                np.array_equal(found[k], expected[k]) for k in found):
            return name
    raise AssertionError(f"neither version: {sorted(found)}")


# ----------------------------------------------------------------------------- checkpoints

OLD, NEW = np.arange(600, dtype=np.float32), -np.arange(600, dtype=np.float32)


def _checkpoint(value, shards: int | None = None) -> tuple[sm.train.Checkpoint, sm.train.CheckpointOptions]:
    checkpoint = sm.train.Checkpoint(a=sm.Variable(value), b=sm.Variable(value[:10] * 2))
    return checkpoint, sm.train.CheckpointOptions(max_shard_bytes=shards and 1000)


def _written_versions(directory: Path, shards: tuple) -> dict[str, dict]:
    versions = {}
    for name, value, limit in (("old", OLD, shards[0]), ("new", NEW, shards[1])):
        checkpoint, options = _checkpoint(value, limit)
        versions[name] = _tensors(Path(checkpoint.write(directory / f"reference-{name}", options)))
    return versions


@pytest.mark.parametrize("shards", [(None, None), (True, True), (None, True)],
                         ids=["1-over-1-shard", "2-over-2-shards", "2-over-1-shard"])
def test_checkpoint_write_over_a_checkpoint_survives_any_kill(tmp_path, shards):
    _every_kill(_overwrite(tmp_path, shards, _tensors), tmp_path)


def test_tensorflow_reads_what_any_kill_leaves_of_an_overwritten_checkpoint(tf, tmp_path):
    def read(prefix: Path) -> dict[str, np.ndarray]:
        reader = tf.train.load_checkpoint(str(prefix))
        return {key: reader.get_tensor(key) for key in reader.get_variable_to_shape_map()}
    _every_kill(_overwrite(tmp_path, (None, None), read), tmp_path)


def _overwrite(tmp_path: Path, shards: tuple, read: Callable[[Path], dict]) -> Callable[[Path], Writer]:
    """A Writer factory: Checkpoint.write over a checkpoint, the versions told apart by `read`."""
    versions = _written_versions(tmp_path, shards)
    new_files = {p.name.replace("reference-new", "ckpt") for p in tmp_path.glob("reference-new*")}

    def make(directory: Path) -> Writer:
        old, old_options = _checkpoint(OLD, shards[0])
        old.write(directory / "ckpt", old_options)
        new, new_options = _checkpoint(NEW, shards[1])
        return Writer(lambda: new.write(directory / "ckpt", new_options),
                      lambda: _which(read(directory / "ckpt"), versions), lambda: new_files)
    return make


def test_checkpoint_save_survives_any_kill(tmp_path):
    versions = {"old": {"a": OLD}, "new": {"a": NEW}}

    def make(directory: Path) -> Writer:
        checkpoint = sm.train.Checkpoint(a=sm.Variable(OLD))
        checkpoint.save(directory / "ckpt")
        checkpoint.a.assign(NEW)
        return Writer(lambda: checkpoint.save(directory / "ckpt"),
                      lambda: _latest(directory, versions),
                      lambda: {"checkpoint", *_bundle_names("ckpt-1"), *_bundle_names("ckpt-2")})

    _every_kill(make, tmp_path)


def test_checkpoint_manager_save_and_deletion_survive_any_kill(tmp_path):
    """After a kill, the program restarts: a new manager restores the latest checkpoint and
    saves; then the directory holds the state file and the checkpoints it lists, nothing else
    (what the kill left of a checkpoint being deleted is gone too)."""
    versions = {"old": {"a": OLD}, "new": {"a": NEW}}

    def make(directory: Path) -> Writer:
        manager = _manager(directory)
        manager.save()
        manager.save()
        manager.checkpoint.a.assign(NEW)
        return Writer(manager.save, lambda: _latest(directory, versions),
                      lambda: _listed_files(directory), lambda: _restart(directory))

    _every_kill(make, tmp_path)


def _manager(directory: Path) -> sm.train.CheckpointManager:
    return sm.train.CheckpointManager(sm.train.Checkpoint(a=sm.Variable(OLD)), directory,
                                      max_to_keep=2)


def _restart(directory: Path) -> None:
    manager = _manager(directory)
    manager.restore_or_initialize()
    manager.checkpoint.a.assign(NEW)
    manager.save()


def _listed_files(directory: Path) -> set[str]:
    state = sm.train.get_checkpoint_state(directory)
    return {"checkpoint"} | {name for path in state.all_model_checkpoint_paths
                             for name in _bundle_names(Path(path).name)}


def _latest(directory: Path, versions: dict) -> str:
    """Which version the state file's latest checkpoint holds; the others it lists are
    complete too, but for one being deleted (its index goes first)."""
    state = sm.train.get_checkpoint_state(directory)
    for path in state.all_model_checkpoint_paths:
        if index_path(path).exists():
            _tensors(Path(path))
    found = _tensors(Path(state.model_checkpoint_path))
    return _which({"a": found["a/.ATTRIBUTES/VARIABLE_VALUE"]}, versions)


def _bundle_names(prefix: str) -> set[str]:
    return {f"{prefix}.index", f"{prefix}.data-00000-of-00001"}


def test_overwriting_a_checkpoint_gives_the_bytes_of_a_fresh_write(tmp_path):
    checkpoint, _ = _checkpoint(NEW)
    checkpoint.write(tmp_path / "fresh" / "ckpt")
    _checkpoint(OLD)[0].write(tmp_path / "over" / "ckpt")
    checkpoint.write(tmp_path / "over" / "ckpt")
    for name in _bundle_names("ckpt"):
        assert (tmp_path / "over" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes()
    assert _listing(tmp_path / "over") == _bundle_names("ckpt")


def test_without_hard_links_the_old_shards_are_copied(tmp_path, monkeypatch):
    _checkpoint(OLD)[0].write(tmp_path / "ckpt")

    def no_links(*args):
        raise OSError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(os, "link", no_links)
    _checkpoint(NEW)[0].write(tmp_path / "ckpt")
    np.testing.assert_array_equal(_tensors(tmp_path / "ckpt")["a/.ATTRIBUTES/VARIABLE_VALUE"], NEW)
    assert _listing(tmp_path) == _bundle_names("ckpt")


# ----------------------------------------------------------------------------- saved models

def _module(value: np.ndarray) -> sm.Module:
    module = sm.Module()
    module.w = sm.Variable(value, name="w")
    module.scaled = sm.function(lambda x: {"y": x * module.w},
                                input_signature=[sm.TensorSpec([600], sm.float32, name="x")])
    return module


def _model_state(path: Path) -> str:
    model = runtime.load(path)
    found = model.signatures["serving_default"](x=np.ones(600, np.float32))
    return _which({"w": model.variables["w"], "y": found["y"]},
                  {"old": {"w": OLD, "y": OLD}, "new": {"w": NEW, "y": NEW}})


def _saved_model_writer(directory: Path) -> Writer:
    module = _module(OLD)
    sm.saved_model.save(module, directory / "model")
    files = {f"model/{name}" for name in _listing(directory / "model")}
    module.w.assign(NEW)
    return Writer(lambda: sm.saved_model.save(module, directory / "model"),
                  lambda: _model_state(directory / "model"), lambda: {"model", *files})


def test_saved_model_save_over_a_model_survives_any_kill(tmp_path):
    _every_kill(_saved_model_writer, tmp_path)


def test_without_an_atomic_exchange_the_next_save_recovers_the_old_model(tmp_path, monkeypatch):
    """Where the directories cannot be swapped, a kill between the two renames leaves the path
    missing; the old model is beside it, and the next save (or recover_directory) puts it back."""
    monkeypatch.setattr(atomic_files, "_exchange", lambda a, b: False)

    def make(directory: Path) -> Writer:
        writer = _saved_model_writer(directory)
        return Writer(writer.write, lambda: _recovered_state(directory / "model"), writer.clean)

    _every_kill(make, tmp_path)


def _recovered_state(path: Path) -> str:
    if not path.exists():
        recover_directory(path)
        assert _model_state(path) == "old"
        return "old"
    return _model_state(path)


def test_the_directory_exchange_swaps_two_directories(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one").write_text("a")
    (tmp_path / "b").mkdir()
    if not atomic_files._exchange(tmp_path / "a", tmp_path / "b"):
        pytest.skip("this system or file system cannot exchange directories")
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["one"]
    assert list((tmp_path / "a").iterdir()) == []


# ----------------------------------------------------------------------------- run --outdir

def _run_outputs(x: list[float], outdir: Path, *extra: str) -> None:
    result = CliRunner().invoke(main, ["run", str(SEEDS), "--signature-def", "dense",
                                       "--input-exprs", f"x=[{x}]", "--outdir", str(outdir),
                                       *extra])
    assert result.exit_code == 0, result.output


def test_run_outdir_overwrite_survives_any_kill(tmp_path):
    _run_outputs([1.0, 2.0], tmp_path / "old")
    _run_outputs([5.0, -3.0], tmp_path / "new")
    versions = {name: {f.name: np.load(f) for f in (tmp_path / name).iterdir()}
                for name in ("old", "new")}

    def make(directory: Path) -> Writer:
        _run_outputs([1.0, 2.0], directory)
        return Writer(lambda: _run_outputs([5.0, -3.0], directory, "--overwrite"),
                      lambda: _files_state(directory, versions), lambda: set(versions["new"]))

    _every_kill(make, tmp_path)


def _files_state(directory: Path, versions: dict) -> str:
    """Each output file is complete, old or new: "new" or "old" when all are, else "mixed"."""
    found = {name: np.load(directory / name) for name in versions["new"]}
    for name, value in found.items():
        assert any(np.array_equal(value, v[name]) for v in versions.values()), name
    for state in ("new", "old"):
        if all(np.array_equal(found[n], versions[state][n]) for n in found):
            return state
    return "mixed"


# ----------------------------------------------------------------------------- full disk

def _no_space(self, data):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def full_disk(monkeypatch):
    monkeypatch.setattr(atomic_files._DurableWriter, "write", _no_space)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG])
def test_a_full_disk_names_the_checkpoint_and_keeps_the_old_one(tmp_path, monkeypatch, code):
    _checkpoint(OLD)[0].write(tmp_path / "ckpt")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def failing(self, data):
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(atomic_files._DurableWriter, "write", failing)
    with pytest.raises(DiskFullError, match=f"cannot write {tmp_path}/ckpt.*: {os.strerror(code)}"):
        _checkpoint(NEW)[0].write(tmp_path / "ckpt")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    with pytest.raises(DiskFullError, match=f"{tmp_path}/fresh"):
        _checkpoint(NEW)[0].write(tmp_path / "fresh")
    assert {p.name for p in tmp_path.iterdir()} == set(before)


def test_a_full_disk_names_the_saved_model_and_leaves_nothing(tmp_path, full_disk):
    with pytest.raises(DiskFullError, match=f"cannot write {tmp_path}/model: No space left"):
        sm.saved_model.save(_module(OLD), tmp_path / "model")
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_names_the_state_file(tmp_path, full_disk):
    with pytest.raises(DiskFullError, match=f"cannot write {tmp_path}/checkpoint: No space"):
        sm.train.update_checkpoint_state(tmp_path, str(tmp_path / "ckpt-1"))
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_in_run_outdir_is_one_error_line_naming_the_file(tmp_path, full_disk):
    result = CliRunner().invoke(main, ["run", str(SEEDS), "--signature-def", "dense",
                                       "--input-exprs", "x=[[1.0, 2.0]]", "--outdir",
                                       str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot write {tmp_path}/")
    assert "No space left on device" in result.output and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- leftovers

def test_only_stale_leftovers_of_the_same_target_are_removed(tmp_path):
    target = tmp_path / "file.npy"
    dead = _dead_pid()
    stale = [tmp_path / f".file.npy.tmp-{dead}-0123456789ab", tmp_path / f".file.npy.old-{dead}-0123456789ab"]
    kept = [tmp_path / f".file.npy.tmp-{os.getppid()}-0123456789ab",  # a live writer's
            tmp_path / f".other.npy.tmp-{dead}-0123456789ab",  # another target's
            tmp_path / f".file.npy.tmp-{dead}-xyz", tmp_path / "file.npy.tmp"]  # not our names
    for path in stale + kept:
        path.write_text("")
    atomic_files.write_file(target, lambda out: out.write(b"data"))
    assert _listing(tmp_path) == {"file.npy", *(p.name for p in kept)}


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_graph_output_is_written_atomically(tmp_path, monkeypatch):
    from savedmodel.views.body import ViewError
    from savedmodel.views.render import write_file
    write_file(tmp_path / "g.txt", "old")
    monkeypatch.setattr(atomic_files._DurableWriter, "write", _no_space)
    with pytest.raises(ViewError, match=f"{tmp_path}/g.txt: cannot write .*No space left"):
        write_file(tmp_path / "g.txt", "new")
    assert _listing(tmp_path) == {"g.txt"} and (tmp_path / "g.txt").read_text() == "old"

