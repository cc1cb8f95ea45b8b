"""Crash-safe writing of files and directories: the one place every writer gets it from.

A file is written under a temporary name beside its final one, fsynced, and renamed into place,
so a reader (or a process killed part-way, or a full disk) never leaves a half-written file at
the final name: either the old file or the new one is there, complete. Temporary names are
`.<final name>.tmp-<pid>-<random>`, and a directory moved aside is `.<final name>.old-<pid>-<random>`:
a leftover of a killed writer is thus provably ours (named for that exact target) and provably
stale (its process is gone), and the next write to the same target removes it. Nothing else is
ever deleted.

A directory is replaced by swapping the new one with the old in one step where the system can
(Linux's `renameat2(RENAME_EXCHANGE)`), so the path always holds a complete directory. Where it
cannot, the old directory is renamed aside first; a kill between the two renames leaves the
path missing and the old directory beside it, and `recover_directory` (run by the next write)
moves it back.

A full disk (ENOSPC, EDQUOT, EFBIG) is a DiskFullError naming the final path.
"""
from __future__ import annotations

import ctypes
import errno
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from savedmodel.runtime.errors import SavedModelError

EAGER_SYNC_BYTES = 32 << 20
"""Bytes written between background syncs of a large file (see _DurableWriter)."""
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_LEFTOVER = re.compile(r"\.(?P<target>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-[0-9a-f]{12}")


class DiskFullError(SavedModelError, OSError):
    """A write failed for lack of space (or quota, or the file size limit); nothing was left
    at the path."""

    def __init__(self, path: str | os.PathLike, cause: OSError):
        super().__init__(f"cannot write {os.fspath(path)}: {cause.strerror or cause} "
                         "(nothing was written there; free some space and retry)")
        self.errno, self.strerror, self.filename = cause.errno, cause.strerror, os.fspath(path)

    def __str__(self) -> str:
        return self.args[0]


def leftover_name(final: Path, kind: str) -> Path:
    """A fresh name beside `final` for a file or directory on its way in (`tmp`) or out (`old`)."""
    return final.with_name(f".{final.name}.{kind}-{os.getpid()}-{secrets.token_hex(6)}")


def stale_leftovers(final: Path, kinds: tuple[str, ...] = ("tmp", "old"),
                    targets: str | None = None) -> list[Path]:
    """Leftovers of killed writes to `final`, or with `targets` to any name in its directory
    that this regular expression matches: names `leftover_name` gives (of these `kinds`) whose
    process is gone."""
    targets = re.compile(targets or re.escape(final.name))
    try:
        names = os.listdir(final.parent)
    except OSError:
        return []
    found = []
    for name in names:
        match = _LEFTOVER.fullmatch(name)
        if (match and match["kind"] in kinds and targets.fullmatch(match["target"])
                and not _alive(int(match["pid"]))):
            found.append(final.with_name(name))
    return found


def remove_stale_leftovers(final: Path, targets: str | None = None) -> None:
    """Remove the stale leftovers (files or directories) of `final` or `targets`
    (see `stale_leftovers`)."""
    for path in stale_leftovers(final, targets=targets):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    """Whether process `pid` may still be writing (this one, or any that exists: a reused pid
    only delays the removal)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        pass
    return True


class AtomicFiles:
    """Files created under temporary names and renamed into place together on `commit`.

    Used as a context manager: leaving the block without committing (an exception) removes
    every temporary file, so a failed write leaves nothing behind under a final name."""

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []

    def __enter__(self) -> AtomicFiles:
        return self

    def __exit__(self, *exc) -> None:
        for temp, _ in self._pending:
            temp.unlink(missing_ok=True)
        self._pending.clear()

    def temp_for(self, final: str | Path) -> Path:
        """Reserve a fresh temporary name beside `final` that `commit` will rename to it
        (clearing the stale temporary files of earlier, killed writes to `final`)."""
        final = Path(final)
        remove_stale_leftovers(final)
        temp = leftover_name(final, "tmp")
        self._pending.append((temp, final))
        return temp

    def write(self, final: str | Path, fill: Callable[[BinaryIO], object]) -> None:
        """Create the temporary file for `final`, let `fill(file)` write it, then fsync it."""
        with naming_full_disk(final):
            with open(self.temp_for(final), "xb") as out:
                durable = _DurableWriter(out)
                try:
                    fill(durable)
                finally:
                    durable.wait()
                durable.sync()

    def link_or_copy(self, source: Path, final: Path) -> None:
        """Give `final`'s temporary name the contents of `source` (a hard link when possible).

        Nothing is needed when `final` already is `source` or a link to it (and a rename
        between two links of one file would do nothing, leaving the temporary name behind)."""
        if os.path.exists(final) and os.path.samefile(source, final):
            return
        with naming_full_disk(final):
            temp = self.temp_for(final)
            try:
                os.link(source, temp)
            except OSError:
                shutil.copyfile(source, temp)
            with open(temp, "rb+") as out:
                os.fsync(out.fileno())

    def commit(self) -> None:
        """Rename every file into place in creation order, then make the renames durable.

        The directories are synced before the last rename too, so that even after a power
        loss the last file (a bundle's index) is never in place without the others."""
        directories = {final.parent for _, final in self._pending}
        last = len(self._pending) - 1
        for number in range(last + 1):
            if number == last > 0:
                for directory in directories:
                    fsync_directory(directory)
            temp, final = self._pending[0]
            with naming_full_disk(final):
                os.replace(temp, final)
            self._pending.pop(0)
        for directory in directories:
            fsync_directory(directory)


@contextmanager
def naming_full_disk(path: str | Path) -> Iterator[None]:
    """Turn a full disk's OSError (a DiskFullError too) into a DiskFullError naming `path`."""
    try:
        yield
    except OSError as err:
        if err.errno in DISK_FULL:
            raise DiskFullError(path, err) from err
        raise


def write_file(path: str | Path, fill: Callable[[BinaryIO], object]) -> None:
    """Write one file atomically: `fill(file)` writes its bytes (see the module docstring)."""
    with AtomicFiles() as files:
        files.write(path, fill)
        files.commit()


class _DurableWriter:
    """A file whose bytes start going to disk while later ones are still being written.

    After every EAGER_SYNC_BYTES written, an fdatasync is started in a background thread
    (unless one is still running), so the fsync that ends the file has little left to wait
    for instead of the whole disk write of a large checkpoint."""

    def __init__(self, out: BinaryIO):
        self._out = out
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future | None = None
        self._unsynced = 0

    def write(self, data) -> None:
        view = memoryview(data).cast("B")
        for start in range(0, len(view), EAGER_SYNC_BYTES):
            piece = view[start:start + EAGER_SYNC_BYTES]
            self._out.write(piece)
            self._unsynced += len(piece)
            if self._unsynced >= EAGER_SYNC_BYTES and not self._syncing():
                self._start_sync()

    def _syncing(self) -> bool:
        return self._pending is not None and not self._pending.done()

    def _start_sync(self) -> None:
        if self._pending is not None:
            self._pending.result()
        self._out.flush()
        self._pool = self._pool or ThreadPoolExecutor(1, thread_name_prefix="bundle-sync")
        self._pending = self._pool.submit(_datasync, self._out.fileno())
        self._unsynced = 0

    def wait(self) -> None:
        """Let the background sync finish (re-raising its error); needed before closing."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        if self._pending is not None:
            self._pending.result()

    def sync(self) -> None:
        self._out.flush()
        os.fsync(self._out.fileno())


_datasync = getattr(os, "fdatasync", os.fsync)


def fsync_directory(directory: Path) -> None:
    """Make renames in `directory` durable (where the system can sync a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------- directories

def replace_directory(new: Path, destination: Path) -> None:
    """Put the complete directory `new` at `destination` (missing, empty or an old directory,
    which is deleted), so that a kill at any point leaves a complete directory there (or,
    without an atomic exchange, the old one recoverable: see the module docstring)."""
    if not (destination.is_dir() and any(destination.iterdir())):
        os.replace(new, destination)
        fsync_directory(destination.parent)
        return
    if _exchange(new, destination):
        old = new
    else:
        old = leftover_name(destination, "old")
        os.rename(destination, old)
        try:
            os.rename(new, destination)
        except BaseException:
            os.rename(old, destination)
            raise
    fsync_directory(destination.parent)
    shutil.rmtree(old, ignore_errors=True)


def recover_directory(destination: Path) -> None:
    """Undo a killed `replace_directory` that had moved the old directory aside (the path is
    missing: move it back), then remove the stale leftovers of writes to `destination`."""
    if not os.path.lexists(destination):
        for old in stale_leftovers(destination, ("old",)):
            os.rename(old, destination)
            fsync_directory(destination.parent)
            break
    remove_stale_leftovers(destination)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP})


def _exchange(a: Path, b: Path) -> bool:
    """Swap the two paths in one step; False where the system or file system cannot."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), os.fspath(b))


def _renameat2():
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint]
    function.restype = ctypes.c_int
    return function
