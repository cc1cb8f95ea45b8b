"""The server under hostile or unlucky clients and changing model folders: each bad request gets
a clear error, and the server keeps serving; versions switch under load without a failed request."""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("uvicorn")
import httpx  # noqa: E402

from serve_helpers import HALF_PLUS_THREE, HALF_PLUS_THREE_IO, KERAS_MLP, model_base, running, wait_for  # noqa: E402

from savedmodel.serve.batching import Batcher, BatchingParameters  # noqa: E402
from savedmodel.serve.errors import ServingError  # noqa: E402
from savedmodel.serve.manager import ModelConfig  # noqa: E402
from savedmodel.serve.server import ServerOptions  # noqa: E402

IO = np.load(HALF_PLUS_THREE_IO)
PREDICT = "/v1/models/half_plus_three:predict"
ONE = '{"instances": [1.0]}'


def _serves(client: httpx.Client) -> bool:
    return client.post(PREDICT, content=ONE).json() == {"predictions": IO["sig/serving_default/out/y"][:1].tolist()}


@pytest.fixture(scope="module")
def server():
    options = ServerOptions([ModelConfig("half_plus_three", HALF_PLUS_THREE)], port=0, poll_seconds=0,
                            max_body_bytes=10_000, body_timeout=0.5, header_timeout=0.5)
    with running(options) as (url, _), httpx.Client(base_url=url) as client:
        yield client, url


def _raw(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _answer(sock: socket.socket) -> str:
    """Everything the server sends until it closes the connection: a 408's headers and body may
    arrive in separate packets."""
    chunks = []
    while chunk := sock.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_body_over_the_size_limit(server):
    client, url = server
    response = client.post(PREDICT, content='{"instances": [' + "1.0," * 5000 + "1.0]}")
    assert response.status_code == 413
    assert "larger than the limit of 10000 bytes" in response.json()["error"]
    chunks = (b"1.0," * 1000 for _ in range(5))  # no Content-Length: counted as it arrives
    response = client.post(PREDICT, content=chunks)
    assert response.status_code == 413
    assert _serves(client)


def test_client_that_stalls_mid_body_times_out(server):
    client, url = server
    with _raw(url) as sock:
        sock.sendall(b"POST " + PREDICT.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"instances\": [")
        started = time.monotonic()
        answer = _answer(sock)
    assert answer.startswith("HTTP/1.1 408"), answer
    assert "sent no part of the request body for 0.5 s" in answer
    assert time.monotonic() - started < 5
    assert _serves(client)


def test_client_that_stalls_mid_headers_times_out(server):
    client, url = server
    with _raw(url) as sock:
        sock.sendall(b"POST " + PREDICT.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Le")
        answer = _answer(sock)
    assert answer.startswith("HTTP/1.1 408"), answer
    assert "did not send the request headers within 0.5 s" in answer
    with _raw(url) as idle:  # a connection that never sends a byte is closed too
        assert idle.recv(4096).startswith(b"HTTP/1.1 408")
    assert _serves(client)


def test_connection_dropped_mid_request_and_mid_response(server):
    client, url = server
    for cut in (b"POST " + PREDICT.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Le",
                b"POST " + PREDICT.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n" + ONE.encode()):
        for _ in range(20):
            sock = _raw(url)
            sock.sendall(cut)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.close()  # a reset, before or while the answer is written
    assert _serves(client)


def test_request_over_the_time_limit_is_504():
    """A request waiting longer than --rest_api_timeout_in_ms (here: in a batch that closes only
    after a long batch timeout) is answered 504, and the next one is served."""
    batching = BatchingParameters(max_batch_size=8, batch_timeout_micros=3_000_000)
    options = ServerOptions([ModelConfig("half_plus_three", HALF_PLUS_THREE)], port=0, poll_seconds=0,
                            timeout=0.2, batching=batching)
    with running(options) as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        response = client.post(PREDICT, content=ONE)
        assert response.status_code == 504
        assert "timed out after 0.2 s" in response.json()["error"]


def test_full_batch_queue_is_resource_exhausted():
    release = threading.Event()

    def run(inputs):
        release.wait(10)
        return {"y": inputs["x"] * 2}

    async def scenario():
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(2) as pool:
            batcher = Batcher(run, pool, BatchingParameters(max_batch_size=2, max_enqueued_batches=1,
                                                            num_batch_threads=1), "test")
            x = np.ones((1, 3), np.float32)
            first = asyncio.ensure_future(batcher.submit({"x": x}))
            await asyncio.sleep(0.05)  # running: the queue is empty again
            second = asyncio.ensure_future(batcher.submit({"x": x}))
            await asyncio.sleep(0)
            with pytest.raises(ServingError) as refused:
                await batcher.submit({"x": np.ones((2, 3), np.float32)})  # needs a second waiting batch
            release.set()
            results = await asyncio.gather(first, second)
            return refused.value, results

    refused, results = asyncio.run(scenario())
    assert refused.code == "RESOURCE_EXHAUSTED" and refused.http_status == 429
    assert [r["y"].tolist() for r in results] == [[[2.0, 2.0, 2.0]]] * 2


def test_batched_requests_get_their_own_rows():
    """Concurrent requests merged into batches get back exactly their rows."""
    batching = BatchingParameters(max_batch_size=16, batch_timeout_micros=20_000, num_batch_threads=2)
    options = ServerOptions([ModelConfig("half_plus_three", HALF_PLUS_THREE)], port=0, poll_seconds=0,
                            batching=batching)
    x, y = IO["sig/serving_default/in/x"], IO["sig/serving_default/out/y"]
    with running(options) as (url, _):
        async def many():
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                bodies = [{"instances": [float(x[i % 3])] * (1 + i % 3)} for i in range(24)]
                answers = await asyncio.gather(*(client.post(PREDICT, json=b) for b in bodies))
                return [a.json()["predictions"] for a in answers]
        answers = asyncio.run(many())
    assert answers == [[float(y[i % 3])] * (1 + i % 3) for i in range(24)]


def test_version_hot_swap_under_load(tmp_path):
    """A client loop keeps succeeding while version 2 is added and version 1 removed; a corrupt
    version 3 leaves version 2 serving and shows in the status, and loads once its files are
    fixed."""
    base = model_base(tmp_path, "mlp", {1: KERAS_MLP})
    features = np.load(KERAS_MLP.parent / "keras_mlp.io.npz")["sig/serving_default/in/features"]
    expected = np.load(KERAS_MLP.parent / "keras_mlp.io.npz")["sig/serving_default/out/output_0"]
    options = ServerOptions([ModelConfig("mlp", base)], port=0, poll_seconds=0.05)
    failures, successes, stop = [], [], threading.Event()

    def load(url):
        with httpx.Client(base_url=url) as client:
            while not stop.is_set():
                response = client.post("/v1/models/mlp:predict", json={"inputs": {"features": features.tolist()}})
                if response.status_code != 200 or not np.allclose(response.json()["outputs"], expected, rtol=1e-5,
                                                                  atol=1e-6):
                    failures.append(response.text)
                else:
                    successes.append(1)

    def state(client, version: str) -> str | None:
        found = {s["version"]: s for s in client.get("/v1/models/mlp").json()["model_version_status"]}
        return found.get(version, {}).get("state")

    def status(client):
        return {s["version"]: s for s in client.get("/v1/models/mlp").json()["model_version_status"]}

    with running(options) as (url, _), httpx.Client(base_url=url) as client:
        worker = threading.Thread(target=load, args=(url,))
        worker.start()
        try:
            staging = tmp_path / "staging"
            shutil.copytree(KERAS_MLP, staging)
            os.rename(staging, base / "2")  # appears complete, as a version should
            milestones = [wait_for(lambda: len(successes), what="a first answer")]
            wait_for(lambda: state(client, "2") == "AVAILABLE", what="version 2")
            wait_for(lambda: state(client, "1") == "END", what="version 1 unloaded")
            milestones.append(len(successes))
            shutil.rmtree(base / "1")
            corrupt = tmp_path / "corrupt"
            corrupt.mkdir()
            (corrupt / "saved_model.pb").write_bytes(b"\x0a\xff\xff not a SavedModel")
            os.rename(corrupt, base / "3")
            wait_for(lambda: state(client, "3") == "END", what="version 3 failing")
            milestones.append(len(successes))
            time.sleep(0.3)  # a few more polls: version 3 is not retried, version 2 keeps serving
            milestones.append(len(successes))
            final = status(client)
            for item in KERAS_MLP.iterdir():  # version 3's files are fixed: it loads now
                (shutil.copytree if item.is_dir() else shutil.copy)(item, base / "3" / item.name)
            wait_for(lambda: state(client, "3") == "AVAILABLE", what="version 3 loading once fixed")
            wait_for(lambda: state(client, "2") == "END", what="version 2 unloaded")
        finally:
            stop.set()
            worker.join(30)
        served = client.post("/v1/models/mlp:predict", json={"inputs": {"features": features.tolist()}})
    assert failures == []
    assert final["2"] == {"version": "2", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
    assert final["3"]["status"]["error_code"] == "INVALID_ARGUMENT"
    assert "saved_model.pb" in final["3"]["status"]["error_message"]
    assert served.status_code == 200
    assert milestones == sorted(milestones) and milestones[-1] > milestones[-2]


def test_sigterm_lets_requests_in_flight_finish(tmp_path):
    """`savedmodel serve` stops on SIGTERM after answering a request it is working on (held
    here in a batch that waits 3 s for more requests)."""
    params = tmp_path / "batching.txt"
    params.write_text("max_batch_size { value: 8 }\nbatch_timeout_micros { value: 3000000 }\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(Path(sys.executable).parent / "savedmodel"), "serve", "--model_name", "half_plus_three",
               "--model_base_path", str(HALF_PLUS_THREE), "--rest_api_port", str(port), "--port", "0",
               "--host", "127.0.0.1", "--enable_batching", "--batching_parameters_file", str(params)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _up(url), what="the server to start")
        answer = {}
        request = threading.Thread(target=lambda: answer.update(r=httpx.post(url + PREDICT, content=ONE, timeout=30)))
        request.start()
        time.sleep(1.0)  # the request is in its batch (on a busy machine too)
        process.send_signal(signal.SIGTERM)
        request.join(30)
        # uvicorn raises the signal again once it has shut down: the exit status says SIGTERM.
        assert process.wait(30) in (0, -signal.SIGTERM), process.stderr.read()
    finally:
        process.kill()
    assert answer["r"].status_code == 200
    assert answer["r"].json() == {"predictions": IO["sig/serving_default/out/y"][:1].tolist()}


def _up(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
