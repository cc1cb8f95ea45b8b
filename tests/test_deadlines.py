"""Time limits: a While loop whose trip count comes from the input is stopped by `time_limit`
(and `--timeout`), the error names the signature and the loop, and the model stays usable.

The fixture is nested_control_flow (TensorFlow-written): `run(x, n)` loops n times, with an
inner loop, adding 1 to the variable `steps` per outer iteration; its expected outputs for n=5
are in nested_control_flow.io.npz.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

import savedmodel as sm
from conftest import DATA
from savedmodel.cli import main
from savedmodel.runtime import DeadlineExceededError, time_limit
from savedmodel.runtime import load as load_any_engine

MODEL = DATA / "models" / "nested_control_flow"
EXPECTED = dict(np.load(DATA / "models" / "nested_control_flow.io.npz"))
ENDLESS = np.int32(2**31 - 1)
X = np.array([1.0, 2.0], np.float32)


def load(*args, **kwargs):
    """These tests pin the numpy engine's message texts; test_native_engine checks the native
    engine's errors (same classes, its own wording)."""
    return load_any_engine(*args, engine="numpy", **kwargs)


def test_a_long_loop_stops_at_the_time_limit_naming_the_signature_and_loop():
    model = load(MODEL)
    with pytest.raises(DeadlineExceededError, match=r"^signature 'run': .*\(op While\).*: "
                                                    r"the time limit of 0.2 s ran out$"):
        with time_limit(0.2):
            model.signatures["run"](x=X, n=ENDLESS)


def test_the_model_stays_usable_and_keeps_the_state_changes_made_before():
    """As when TensorFlow cancels a step: the iterations that ran have added to `steps`. One
    short call first compiles the loop's plans, so that on a loaded machine the time limit is
    spent iterating rather than compiling."""
    model = load(MODEL)
    model.signatures["run"](x=X, n=np.int32(1))
    warmed = int(model.variables["steps"])
    with pytest.raises(DeadlineExceededError), time_limit(0.2):
        model.signatures["run"](x=X, n=ENDLESS)
    interrupted = int(model.variables["steps"])
    assert interrupted > warmed
    inputs = {k.split("/")[-1]: v for k, v in EXPECTED.items() if k.startswith("sig/run/in/")}
    got = model.signatures["run"](**inputs)
    np.testing.assert_array_equal(got["total"], EXPECTED["sig/run/out/total"])
    assert got["max"] == EXPECTED["sig/run/out/max"]
    assert got["steps"] == interrupted + EXPECTED["sig/run/out/steps"]


def test_restored_functions_and_the_authoring_load_are_bounded_too():
    model = load(MODEL)
    with pytest.raises(DeadlineExceededError, match="the time limit of 0.2 s ran out"), time_limit(0.2):
        model.functions["run"](X, ENDLESS)
    loaded = sm.saved_model.load(MODEL)
    with pytest.raises(DeadlineExceededError, match="the time limit of 0.2 s ran out"), time_limit(0.2):
        loaded.run(X, ENDLESS)


def test_a_function_call_after_the_deadline_is_stopped():
    model = load(MODEL)
    with pytest.raises(DeadlineExceededError, match=r"call of function '__inference_branch_\d+': the time limit"):
        with time_limit(0.01):
            time.sleep(0.02)
            model.functions["branch"](np.int32(1))


def test_nested_limits_keep_the_earliest_deadline_and_the_limit_ends_with_its_block():
    model = load(MODEL)
    with pytest.raises(DeadlineExceededError, match="0.2 s"), time_limit(0.2), time_limit(3600):
        model.signatures["run"](x=X, n=ENDLESS)
    assert model.signatures["branch"](k=np.int32(1))["y"] == EXPECTED["sig/branch/out/y"]


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf")])
def test_a_time_limit_must_be_a_positive_number(seconds):
    with pytest.raises(ValueError, match="seconds must be a positive number"), time_limit(seconds):
        pass


@pytest.mark.parametrize("command", ["run", "compare"])
def test_cli_timeout_is_one_error_line_and_exit_status_1(command):
    result = CliRunner().invoke(main, [command, str(MODEL), "--signature-def", "run", "--timeout", "0.2",
                                       "--input-exprs", f"x=[1.0, 2.0];n={ENDLESS}"])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "signature 'run'" in errors[0] and "time limit of 0.2 s ran out" in errors[0]
    assert "Traceback" not in result.output


def test_cli_timeout_must_be_positive():
    result = CliRunner().invoke(main, ["run", str(MODEL), "--timeout", "0"])
    assert result.exit_code == 2
    assert "--timeout" in result.output


def test_ctrl_c_stops_a_long_loop():
    command = [sys.executable, "-c", "from savedmodel.cli import main; main()", "run", str(MODEL), "--signature-def", "run",
               "--input-exprs", f"x=[1.0];n={ENDLESS}"]
    # SIGINT's default action in the child: a shell without job control starts background
    # commands (a CI run launched with `&`) with SIGINT ignored, which the child would inherit.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(3)
        assert process.poll() is None, process.stderr.read()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode != 0
    assert "Traceback" not in stderr


def test_traced_functions_are_bounded_too():
    @sm.function(input_signature=[sm.TensorSpec([], sm.int32)])
    def count(n):
        i = sm.constant(0)
        while i < n:
            i += 1
        return i

    assert int(count(np.int32(5)).numpy()) == 5
    with pytest.raises(DeadlineExceededError, match="the time limit of 0.2 s ran out"), time_limit(0.2):
        count(ENDLESS)
