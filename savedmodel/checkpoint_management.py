"""The `checkpoint` state file and CheckpointManager, as TensorFlow keeps them.

A directory of numbered checkpoints has a text-format `CheckpointState` file named `checkpoint`:
the latest prefix, every prefix still kept, their timestamps and the last preserved timestamp.
Paths inside are relative to the directory (absolute ones are kept as they are). We write it
as TensorFlow's text format does (one field per line, C-escaped UTF-8 strings, shortest
round-trip floats), atomically, so `tf.train.latest_checkpoint` and `tf.train.get_checkpoint_state` read
ours and we read theirs.

Crash safety: checkpoints and the state file are written atomically (see
`savedmodel.runtime.atomic_files`). As TensorFlow's does, the manager records the new
checkpoint as the latest before it deletes old ones (index first) and again after: a kill leaves
the latest checkpoint complete, and a checkpoint being deleted still listed, so that the next
manager of the directory finishes deleting it instead of leaving it behind.
"""
from __future__ import annotations

import glob
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from savedmodel.runtime.atomic_files import write_file
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.tensor_bundle import index_path

if TYPE_CHECKING:
    from savedmodel.checkpoint import Checkpoint, CheckpointOptions

STATE_FILENAME = "checkpoint"
_STRING_FIELDS = ("model_checkpoint_path", "all_model_checkpoint_paths")
_FLOAT_FIELDS = ("all_model_checkpoint_timestamps", "last_preserved_timestamp")
_REPEATED = ("all_model_checkpoint_paths", "all_model_checkpoint_timestamps")
_LINE = re.compile(r"\s*([A-Za-z_]\w*)\s*:\s*(.*?)\s*")
_ESCAPE = re.compile(rb"\\([0-7]{1,3}|x[0-9A-Fa-f]{1,2}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b'"': b'"', b"'": b"'",
                   b"\\": b"\\", b"?": b"?", b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v"}


@dataclass
class CheckpointState:
    """The fields of TensorFlow's CheckpointState message."""

    model_checkpoint_path: str = ""
    all_model_checkpoint_paths: list[str] = field(default_factory=list)
    all_model_checkpoint_timestamps: list[float] = field(default_factory=list)
    last_preserved_timestamp: float = 0.0


def get_checkpoint_state(checkpoint_dir: str | os.PathLike,
                         latest_filename: str | None = None) -> CheckpointState | None:
    """The state file of `checkpoint_dir` with relative paths joined to the directory, or None
    when there is none. A malformed file is an error naming it (TensorFlow logs and ignores)."""
    directory = os.fspath(checkpoint_dir)
    path = os.path.join(directory, latest_filename or STATE_FILENAME)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    state = parse_state(data, path)
    if not state.model_checkpoint_path:
        raise FileFormatError(f"{path}: invalid checkpoint state: no model_checkpoint_path")
    state.model_checkpoint_path = _under(directory, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [_under(directory, p)
                                        for p in state.all_model_checkpoint_paths]
    return state


def latest_checkpoint(checkpoint_dir: str | os.PathLike,
                      latest_filename: str | None = None) -> str | None:
    """The newest checkpoint prefix recorded in `checkpoint_dir`, if its index file exists."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not index_path(state.model_checkpoint_path).exists():
        return None
    return state.model_checkpoint_path


def update_checkpoint_state(save_dir: str | os.PathLike, model_checkpoint_path: str,
                            all_model_checkpoint_paths: Sequence[str] | None = None,
                            all_model_checkpoint_timestamps: Sequence[float] | None = None,
                            last_preserved_timestamp: float | None = None,
                            latest_filename: str | None = None) -> None:
    """Replace the state file of `save_dir` atomically; paths are stored relative to it."""
    directory = os.fspath(save_dir)
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    lines = [_string_line("model_checkpoint_path", _relative(directory, model_checkpoint_path))]
    lines += [_string_line("all_model_checkpoint_paths", _relative(directory, p)) for p in paths]
    lines += [f"all_model_checkpoint_timestamps: {float(t)!r}"
              for t in all_model_checkpoint_timestamps or ()]
    if last_preserved_timestamp is not None:
        lines.append(f"last_preserved_timestamp: {float(last_preserved_timestamp)!r}")
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    os.makedirs(directory or ".", exist_ok=True)
    write_file(os.path.join(directory, latest_filename or STATE_FILENAME),
               lambda out: out.write(data))


def parse_state(data: bytes, where: str) -> CheckpointState:
    """Parse the text format of a CheckpointState (one `field: value` per line).

    Lines are decoded as Latin-1 so that each byte stays one character: quoted paths are
    unescaped back to bytes and only then decoded as UTF-8."""
    state = CheckpointState()
    for number, line in enumerate(data.decode("latin-1").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None or match[1] not in _STRING_FIELDS + _FLOAT_FIELDS:
            raise FileFormatError(f"{where}:{number}: not a CheckpointState field: {line!r}")
        name, text = match.groups()
        value = (_unquote(text, f"{where}:{number}") if name in _STRING_FIELDS
                 else _float(text, f"{where}:{number}"))
        if name in _REPEATED:
            getattr(state, name).append(value)
        else:
            setattr(state, name, value)
    return state


def _unquote(token: str, where: str) -> str:
    if len(token) < 2 or token[0] not in "\"'" or token[-1] != token[0]:
        raise FileFormatError(f"{where}: expected a quoted string, got {token!r}")
    try:
        return _ESCAPE.sub(_unescape_one, token[1:-1].encode("latin-1")).decode("utf-8")
    except UnicodeDecodeError as err:
        raise FileFormatError(f"{where}: path is not UTF-8 ({err})") from None


def _unescape_one(match: re.Match) -> bytes:
    code = match[1]
    if code[:1] in b"01234567":
        return bytes([int(code, 8) & 0xFF])
    if code[:1] == b"x" and len(code) > 1:
        return bytes([int(code[1:], 16)])
    return _SIMPLE_ESCAPES.get(code, b"\\" + code)


def _float(text: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise FileFormatError(f"{where}: expected a number, got {text!r}") from None


def _string_line(name: str, value: str) -> str:
    return f'{name}: "{_c_escape(value)}"'


def _c_escape(text: str) -> str:
    """Escape as TensorFlow's text format does: quotes, backslash and control characters;
    other characters stay as they are (the file is UTF-8)."""
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'", "\\": "\\\\"}
    return "".join(named.get(c) or (f"\\{ord(c):03o}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
                   for c in text)


def _under(directory: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(directory, path)


def _relative(directory: str, path: str) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(directory))


def delete_checkpoint(prefix: str) -> None:
    """Remove a checkpoint's index, then its data shards (whatever of them exists): a kill
    part-way leaves only shards, never an index naming missing ones."""
    pattern = glob.escape(prefix) + ".data-?????-of-?????"
    for path in [str(index_path(prefix)), *glob.glob(pattern)]:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


class CheckpointManager:
    """Numbered checkpoints of one Checkpoint in one directory, keeping the newest
    `max_to_keep` (all when None) and recording them in the state file.

    On construction it takes over the checkpoints the state file lists (those newer than its
    last preserved timestamp), so a restarted program keeps deleting the old ones. With
    `keep_checkpoint_every_n_hours`, a checkpoint at least that much newer than the last
    preserved one is kept for good instead of being deleted (and no longer listed)."""

    def __init__(self, checkpoint: Checkpoint, directory: str | os.PathLike,
                 max_to_keep: int | None, keep_checkpoint_every_n_hours: float | None = None,
                 checkpoint_name: str = "ckpt"):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, "
                             f"got {max_to_keep}.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_hours = keep_checkpoint_every_n_hours
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._kept: dict[str, float] = {}
        self._take_over(get_checkpoint_state(self._directory), time.time())

    def _take_over(self, state: CheckpointState | None, now: float) -> None:
        if state is None:
            self._latest = None
            self._last_preserved = now - 1.0
            return
        self._latest = state.model_checkpoint_path
        self._last_preserved = state.last_preserved_timestamp
        paths = state.all_model_checkpoint_paths
        stamps = state.all_model_checkpoint_timestamps or [self._last_preserved] * len(paths)
        for path, stamp in zip(paths, stamps):
            stamp = min(stamp, now)
            if stamp > self._last_preserved:
                self._kept[path] = stamp

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def latest_checkpoint(self) -> str | None:
        return self._latest

    @property
    def checkpoints(self) -> list[str]:
        """The prefixes being managed, oldest first."""
        return list(self._kept)

    def save(self, checkpoint_number: int | None = None,
             options: CheckpointOptions | None = None) -> str:
        """Write `prefix-N` (N the incremented save counter, or `checkpoint_number`), record
        it, delete checkpoints beyond `max_to_keep`, and return the new prefix."""
        counter = self._checkpoint.save_counter
        counter.assign_add(1)
        number = counter.numpy() if checkpoint_number is None else checkpoint_number
        path = self._checkpoint.write(f"{self._prefix}-{int(number)}", options=options)
        self._kept.pop(path, None)
        self._kept[path] = time.time()
        self._latest = path
        self._record_state()
        self._sweep()
        self._record_state()
        return path

    def restore_or_initialize(self) -> str | None:
        """Restore the latest checkpoint if there is one and return its prefix, else None."""
        if self._latest is None:
            return None
        self._checkpoint.restore(self._latest)
        return self._latest

    def _sweep(self) -> None:
        if self._max_to_keep is None:
            return
        while len(self._kept) > self._max_to_keep:
            path = next(iter(self._kept))
            stamp = self._kept.pop(path)
            if self._keep_hours and stamp - self._keep_hours * 3600 >= self._last_preserved:
                self._last_preserved = stamp
                continue
            delete_checkpoint(path)

    def _record_state(self) -> None:
        update_checkpoint_state(self._directory, self._latest, list(self._kept),
                                list(self._kept.values()), self._last_preserved)
