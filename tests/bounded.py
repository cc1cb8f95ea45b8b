"""Running a call that hostile input could make allocate or hang, in a forked child process
with an address-space limit and a time limit, so that a regression fails a test instead of
exhausting the machine."""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import time
import traceback

from savedmodel.runtime.errors import SavedModelError

EXTRA_MEMORY = 1 << 30
"""Address space the child may add to what the test process already maps."""


def bounded_call(fn, *args, seconds: float = 60) -> tuple[str, str]:
    """(outcome, message) of `fn(*args)` in a child: outcome is "returned", "SavedModelError",
    "timeout", "died", or the name of any other exception (message: its traceback)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's cleanup
        os.close(read_end)
        try:
            limit = _mapped_bytes() + EXTRA_MEMORY
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            os.write(write_end, json.dumps(_outcome(fn, args)).encode()[:60000])
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        data = _read_until(read_end, time.monotonic() + seconds)
    finally:
        os.close(read_end)
        if data is None:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if data is None:
        return "timeout", f"{getattr(fn, '__name__', fn)} did not finish within {seconds} s"
    return tuple(json.loads(data)) if data else ("died", "the child exited without a report")


def _outcome(fn, args) -> tuple[str, str]:
    try:
        fn(*args)
    except SavedModelError as err:
        return "SavedModelError", str(err)
    except BaseException as err:  # noqa: BLE001  (what the test reports as a defect)
        return type(err).__name__, "".join(traceback.format_exception(err))[-4000:]
    return "returned", ""


def _read_until(fd: int, deadline: float) -> bytes | None:
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _mapped_bytes() -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmSize:"))
    return int(line.split()[1]) * 1024
