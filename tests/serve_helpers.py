"""Running a real server for tests: uvicorn on a loopback port in a background thread."""
from __future__ import annotations

import contextlib
import shutil
import socket
import threading
import time
from pathlib import Path

from conftest import DATA, REFERENCE

HALF_PLUS_THREE = DATA / "serving" / "half_plus_three"
HALF_PLUS_THREE_IO = DATA / "serving" / "half_plus_three.io.npz"
KERAS_MLP = REFERENCE / "savedmodels" / "keras_mlp"


def model_base(root: Path, name: str, versions: dict[int, Path]) -> Path:
    """`root/name/<version>/` copies of SavedModels: a model base path."""
    base = root / name
    for version, source in versions.items():
        shutil.copytree(source, base / str(version))
    return base


@contextlib.contextmanager
def running(options):
    """Serve `options` (a ServerOptions) on 127.0.0.1; yields (base URL, manager)."""
    import uvicorn

    from savedmodel.serve.server import build, uvicorn_config
    app, manager = build(options)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn_config(app, options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", manager
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def wait_for(condition, seconds: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
