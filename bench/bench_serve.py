"""Load test of `savedmodel serve`'s REST and gRPC APIs on this machine, over loopback only.

Starts the server (a subprocess, as deployed: `savedmodel serve` with a model config file
naming keras_mlp and keras_cnn from tests/data/reference) once without and once with
--enable_batching, and drives it from this process with a small asyncio HTTP/1.1 client (one
keep-alive connection per concurrent client, requests prepared once, so the client costs little
next to the server), and with grpcio's asyncio client (one channel, the calls multiplexed on
it, requests serialized once). For each API, model and concurrency 1, 8 and 64: throughput and
p50/p99 latency of one-row predict requests (REST :predict, gRPC PredictionService/Predict),
beside the in-process call time of the same signature on the same engine
(`runtime.load(dir, engine="auto")`, median of repeated calls). The server's own overhead per
request is the round trip at concurrency 1 minus the in-process call time (target < 300 us for
keras_mlp's small REST payload; the client's own cost and the loopback are included, so the
server's part is smaller), and, from the server's own latency histogram, the mean time in its
request handler (parsing, checks, the worker-thread hop, the call) minus the in-process call
time; the liveness (REST) and GetModelStatus (gRPC) round trips show the transport and client
floor. Then memory: the server's RSS after a warm-up and after --memory-requests more requests
(default 100,000) at concurrency 8.

Every run is bounded: --requests per cell (default 2000), each cell also stops after
--seconds (default 20). Prints a table; asserts nothing.

Usage: python bench/bench_serve.py [--requests N] [--seconds S] [--memory-requests N]
       [--models keras_mlp,keras_cnn] [--concurrency 1,8,64] [--apis rest,grpc]
       (needs the `serve` extra)
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "data" / "reference" / "savedmodels"
BATCHING = "max_batch_size { value: 64 }\nbatch_timeout_micros { value: 0 }\nnum_batch_threads { value: 2 }\n" \
           "max_enqueued_batches { value: 64 }\n"
"""TensorFlow Serving's advice for CPU: no batch timeout (requests that queue while the threads
are busy form the next batch), as many batch threads as cores."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class Server:
    """`savedmodel serve` in a subprocess, on free loopback ports (REST `port`, gRPC `grpc_port`)."""

    def __init__(self, models: list[str], workdir: Path, batching: bool):
        config = workdir / "models.config"
        entries = []
        for name in models:
            base = workdir / name
            base.mkdir(exist_ok=True)
            if not (base / "1").exists():
                (base / "1").symlink_to(MODELS / name)
            entries.append(f"config {{ name: '{name}' base_path: '{base}' model_platform: 'tensorflow' }}")
        config.write_text("model_config_list { " + " ".join(entries) + " }\n")
        self.port, self.grpc_port = free_port(), free_port()
        command = [sys.executable, "-c", "from savedmodel.cli import main; main()", "serve",
                   "--model_config_file", str(config), "--rest_api_port", str(self.port),
                   "--port", str(self.grpc_port),
                   "--host", "127.0.0.1", "--file_system_poll_wait_seconds", "0"]
        if batching:
            params = workdir / "batching.txt"
            params.write_text(BATCHING)
            command += ["--enable_batching", "--batching_parameters_file", str(params)]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start: {self.process.stderr.read()}")
                time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


def http_request(path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    return status, await reader.readexactly(length)


async def drive(port: int, request: bytes, concurrency: int, count: int, seconds: float) -> tuple[list[float], float, int]:
    """(latencies in seconds, wall time, errors) of `count` requests over `concurrency` connections."""
    latencies: list[float] = []
    errors = 0
    remaining = count
    stop_at = time.monotonic() + seconds

    async def client():
        nonlocal remaining, errors
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while remaining > 0 and time.monotonic() < stop_at:
                remaining -= 1
                started = time.perf_counter()
                writer.write(request)
                status, _ = await read_response(reader)
                latencies.append(time.perf_counter() - started)
                errors += status != 200
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started, errors


def handler_totals(port: int, model: str) -> tuple[float, float]:
    """(seconds, requests) the server's own latency histogram has recorded for `model`'s
    predict calls: from the request reaching the handler to its answer being ready."""
    import urllib.request
    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/monitoring/prometheus/metrics").read().decode()
    labels = f'{{api="predict",model_name="{model}",signature_name="serving_default"}}'
    values = {}
    for line in page.splitlines():
        for part in ("sum", "count"):
            if line.startswith(f"savedmodel_serve_request_latency_seconds_{part}{labels}"):
                values[part] = float(line.rsplit(" ", 1)[1])
    return values.get("sum", 0.0), values.get("count", 0.0)


def grpc_request(name: str, row: np.ndarray) -> bytes:
    """A serialized PredictRequest for `name`'s serving_default with the row."""
    from savedmodel.protos import predict_pb2
    from savedmodel.runtime.tensor_proto import from_numpy
    io = np.load(MODELS / f"{name}.io.npz")
    key = next(k for k in io if k.startswith("sig/serving_default/in/"))
    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    request.inputs[key.rsplit("/", 1)[1]].CopyFrom(from_numpy(row))
    return request.SerializeToString()


def model_status_request(name: str) -> bytes:
    from savedmodel.protos import get_model_status_pb2
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = name
    return request.SerializeToString()


async def drive_grpc(port: int, request: bytes, concurrency: int, count: int, seconds: float,
                     method: str = "/tensorflow.serving.PredictionService/Predict") -> tuple[list[float], float, int]:
    """As `drive`, with `concurrency` callers of `method` (Predict) on one channel."""
    import grpc
    latencies: list[float] = []
    errors = 0
    remaining = count
    stop_at = time.monotonic() + seconds
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        predict = channel.unary_unary(method)

        async def client():
            nonlocal remaining, errors
            while remaining > 0 and time.monotonic() < stop_at:
                remaining -= 1
                started = time.perf_counter()
                try:
                    await predict(request, timeout=60)
                except grpc.aio.AioRpcError:
                    errors += 1
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return latencies, time.perf_counter() - started, errors


def in_process_seconds(name: str, batch: np.ndarray, repeats: int = 300) -> tuple[float, str]:
    from savedmodel.runtime import load
    model = load(MODELS / name, engine="auto")
    signature = model.signatures["serving_default"]
    key = next(iter(signature.inputs))
    for _ in range(20):
        signature(**{key: batch})
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        signature(**{key: batch})
        times.append(time.perf_counter() - started)
    return statistics.median(times), model.engine


def payload(name: str) -> tuple[np.ndarray, bytes]:
    io = np.load(MODELS / f"{name}.io.npz")
    key = next(k for k in io if k.startswith("sig/serving_default/in/"))
    row = io[key][:1]
    return row, json.dumps({"instances": row.tolist()}).encode()


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--memory-requests", type=int, default=100_000)
    parser.add_argument("--models", default="keras_mlp,keras_cnn")
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument("--apis", default="rest,grpc")
    args = parser.parse_args()
    models = args.models.split(",")
    apis = args.apis.split(",")
    levels = [int(c) for c in args.concurrency.split(",")]
    print(f"load average at start: {' '.join(f'{v:.1f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs; "
          "other jobs on the machine show in the figures)")
    inputs = {name: payload(name) for name in models}
    in_process = {name: in_process_seconds(name, inputs[name][0]) for name in models}
    print(f"{'api':<4} {'model':<10} {'batching':<8} {'conc':>4} {'req/s':>8} {'p50 us':>8} {'p99 us':>9} "
          f"{'in-proc us':>10} {'errors':>6}")
    overhead = {}
    with tempfile.TemporaryDirectory() as tmp:
        for batching in (False, True):
            server = Server(models, Path(tmp), batching)
            try:
                for api, name in [(api, name) for api in apis for name in models]:
                    if api == "rest":
                        port, request = server.port, http_request(f"/v1/models/{name}:predict", inputs[name][1])
                        run = drive
                    else:
                        port, request, run = server.grpc_port, grpc_request(name, inputs[name][0]), drive_grpc
                    asyncio.run(run(port, request, 4, 200, args.seconds))  # warm-up
                    for concurrency in levels:
                        before = handler_totals(server.port, name)
                        latencies, wall, errors = asyncio.run(
                            run(port, request, concurrency, args.requests, args.seconds))
                        after = handler_totals(server.port, name)
                        p50 = percentile(latencies, 50)
                        if concurrency == 1:
                            count = after[1] - before[1]
                            handler = (after[0] - before[0]) / count if count else None
                            overhead[(api, name, batching)] = (p50 - in_process[name][0],
                                                               None if handler is None else handler - in_process[name][0])
                        print(f"{api:<4} {name:<10} {'on' if batching else 'off':<8} {concurrency:>4} "
                              f"{len(latencies) / wall:>8.0f} {p50 * 1e6:>8.0f} {percentile(latencies, 99) * 1e6:>9.0f} "
                              f"{in_process[name][0] * 1e6:>10.0f} {errors:>6}")
                if not batching and "rest" in apis:
                    health = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                    floor = percentile(asyncio.run(drive(server.port, health, 1, 2000, args.seconds))[0], 50)
                if not batching and "grpc" in apis:
                    grpc_floor = percentile(asyncio.run(drive_grpc(
                        server.grpc_port, model_status_request(models[0]), 1, 2000, args.seconds,
                        "/tensorflow.serving.ModelService/GetModelStatus"))[0], 50)
            finally:
                server.stop()
        print(f"\nengine: {', '.join(f'{n}: {e}' for n, (_, e) in in_process.items())}")
        if "rest" in apis:
            print(f"liveness round trip (HTTP + client floor, no model) at concurrency 1: p50 {floor * 1e6:.0f} us")
        if "grpc" in apis:
            print(f"GetModelStatus round trip (gRPC + client floor, no model run) at concurrency 1: "
                  f"p50 {grpc_floor * 1e6:.0f} us")
        for (api, name, batching), (round_trip, handler) in overhead.items():
            in_handler = "" if handler is None else (f"; in the handler {handler * 1e6:.0f} us "
                                                     "(mean handler time - in-process call)")
            print(f"server overhead per request, {api}, {name}, batching {'on' if batching else 'off'}, "
                  f"concurrency 1: {round_trip * 1e6:.0f} us ({api} p50 - in-process call){in_handler}")
        memory(models[0], inputs[models[0]][1], Path(tmp), args.memory_requests)
    print(f"load average at end: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


def memory(name: str, body: bytes, workdir: Path, count: int) -> None:
    """The server's RSS after a warm-up and after `count` more requests."""
    server = Server([name], workdir, batching=False)
    try:
        request = http_request(f"/v1/models/{name}:predict", body)
        asyncio.run(drive(server.port, request, 8, 2000, 60))
        start = rss(server.process.pid)
        started = time.perf_counter()
        latencies, _, errors = asyncio.run(drive(server.port, request, 8, count, 3600))
        end = rss(server.process.pid)
        print(f"memory over {len(latencies)} requests ({name}, concurrency 8, {errors} errors, "
              f"{time.perf_counter() - started:.0f} s): RSS start {start / 2**20:.1f} MiB, "
              f"end {end / 2**20:.1f} MiB ({(end - start) / 2**20:+.1f} MiB)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
