"""The README's Ray Serve deployment runs as written: the snippet, with the committed example
model's path for /models/half_plus_three, serves TensorFlow Serving's REST API from Ray Serve
replicas, and the documentation's requests get TensorFlow's answers.

It runs in a fresh interpreter (Ray Serve's controller, proxy and replicas are processes of a
local Ray cluster that the script starts and shuts down), on a free loopback port instead of
Ray Serve's default 8000.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from conftest import import_ray

import_ray("ray.serve")

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "tests" / "data" / "serving" / "half_plus_three"
IO = np.load(f"{MODEL}.io.npz")
SNIPPET = next(block for block in re.findall(r"^```py\n(.*?)^```$", (ROOT / "README.md").read_text(), re.S | re.M)
               if "from ray import serve" in block)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _script(port: int, instances: list) -> str:
    """Ray started small, Ray Serve on `port`, then the README's snippet, then the requests."""
    before = textwrap.dedent(f"""
        import logging
        import ray
        from ray import serve
        ray.init(num_cpus=8, include_dashboard=False, logging_level=logging.WARNING)
        serve.start(http_options={{"host": "127.0.0.1", "port": {port}}})
    """)
    after = textwrap.dedent(f"""
        import json, urllib.request
        base = "http://127.0.0.1:{port}/v1/models/half_plus_three"
        def call(url, body=None):
            data = None if body is None else json.dumps(body).encode()
            with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=60) as answer:
                return json.loads(answer.read())
        print("ANSWERS", json.dumps({{"status": call(base),
                           "predict": call(base + ":predict", {{"instances": {instances!r}}})}}))
        serve.shutdown()
        ray.shutdown()
    """)
    return before + SNIPPET.replace('"/models/half_plus_three"', repr(str(MODEL))) + after


def test_readme_ray_serve_deployment_answers_tensorflow_servings_requests(tmp_path):
    assert '"/models/half_plus_three"' in SNIPPET
    script = tmp_path / "deployment.py"
    script.write_text(_script(_free_port(), IO["sig/serving_default/in/x"].tolist()))
    # Ray Serve gives its HTTP proxy 5 s to report ready, too little on a busy 2-core machine.
    patience = {"RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "60", "RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S": "60"}
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **patience}, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    # Ray's processes print to the same stdout: our line is the one marked.
    answers = json.loads(next(line.removeprefix("ANSWERS ") for line in done.stdout.splitlines()
                              if line.startswith("ANSWERS ")))
    (status,) = answers["status"]["model_version_status"]
    assert (status["version"], status["state"]) == ("123", "AVAILABLE")
    np.testing.assert_allclose(np.array(answers["predict"]["predictions"], np.float32),
                               IO["sig/serving_default/out/y"], rtol=1e-6)
