"""Fuzzing the command line's inputs: whatever a user types, the answer is a result, or one
`Error:` line with exit status 1, or click's usage error with exit status 2; never a traceback,
a hang or a crash.

Derandomized and bounded so the suite stays fast (25 examples per test); a longer campaign:
`SAVEDMODEL_FUZZ_EXAMPLES=2000 SAVEDMODEL_FUZZ_SEED=1 bash tools/run-tests tests/test_fuzz_cli.py`.
"""
from __future__ import annotations

import numpy as np
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from conftest import CHECKPOINT_PREFIXES, SAVEDMODELS, fuzz_settings
from savedmodel.cli import main

SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")
SIGNATURES = ["dense", "next_collatz", "power", "serving_default", "simple_relu", "sum_even",
              "unused_gather"]
FUZZ = fuzz_settings(25)
LITERAL_ALPHABET = "0123456789[](),.-+eE'\"jnaNifb x_=;:{}"


def _invoke(args: list[str], statuses=(0, 1)):
    """Run the CLI in process and check the contract every answer keeps; the fuzzed values are
    well-formed options, so a usage error (2) is a failure unless `statuses` allows it."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    where = f"savedmodel {' '.join(map(str, args))[:300]}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{where}: {type(result.exception).__name__}: {result.exception}")
    assert "Traceback" not in result.output + result.stderr, where
    assert result.exit_code in statuses, f"{where}: exit status {result.exit_code}: {result.output[-500:]}"
    if result.exit_code == 1:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), f"{where}: {result.stderr[:500]}"
    return result


def _literal() -> st.SearchStrategy[str]:
    """Texts that look like literals: nested lists, numbers, strings, and near misses."""
    atoms = st.one_of(st.integers(-2**70, 2**70).map(str), st.floats().map(repr),
                      st.text(LITERAL_ALPHABET, max_size=12), st.sampled_from(["nan", "inf", "True", "b'x'"]))
    nested = st.recursive(atoms, lambda inner: st.lists(inner, max_size=4).map(
        lambda items: "[" + ",".join(items) + "]"), max_leaves=20)
    deep = st.tuples(st.sampled_from(["-", "[", "(", "+", "~"]), st.integers(1, 200_000)).map(
        lambda pair: pair[0] * pair[1] + "1")
    return st.one_of(nested, deep)


@FUZZ
@given(signature=st.sampled_from(SIGNATURES), name=st.sampled_from(["x", "n", "items", "y", ""]),
       value=_literal())
def test_run_input_exprs(signature, name, value):
    _invoke(["run", SEEDS, "--signature-def", signature, "--timeout", "5",
             "--input-exprs", f"{name}={value}"])


@FUZZ
@given(spec=st.text(LITERAL_ALPHABET + "/.npyz", max_size=40))
def test_run_input_spec_syntax(spec):
    _invoke(["run", SEEDS, "--signature-def", "dense", "--timeout", "5", "--inputs", spec,
             "--input-exprs", spec])


@FUZZ
@given(header=st.binary(max_size=120), body=st.binary(max_size=64),
       kind=st.sampled_from(["npy", "npz"]))
def test_run_damaged_numpy_files(tmp_path_factory, header, body, kind):
    folder = tmp_path_factory.mktemp("inputs")
    path = folder / f"x.{kind}"
    if kind == "npy":
        path.write_bytes(b"\x93NUMPY\x01\x00" + header + body)
    else:
        np.savez(path, x=np.ones((1, 2), np.float32))
        data = bytearray(path.read_bytes())
        for i, byte in enumerate(header[:len(data)]):
            data[(i * 37) % len(data)] ^= byte
        path.write_bytes(bytes(data))
    _invoke(["run", SEEDS, "--signature-def", "dense", "--timeout", "5", "--inputs", f"x={path}"])


@FUZZ
@given(command=st.sampled_from(["show", "graph", "ops", "summary"]),
       option=st.sampled_from(["--signature-def", "--tag-set", "--function"]),
       value=st.text(max_size=30))
def test_inspection_options(command, option, value):
    if command != "graph" and option == "--function":
        option = "--tag-set"
    _invoke([command, SEEDS, option, value], statuses=(0, 1, 2))


@FUZZ
@given(prefix=st.sampled_from(CHECKPOINT_PREFIXES), tensor=st.text(max_size=60))
def test_ckpt_tensor_names(prefix, tensor):
    _invoke(["ckpt", prefix, "--tensor", tensor], statuses=(0, 1, 2))


def test_contract_holds_for_a_good_run():
    """The harness itself: a valid call succeeds, so the fuzz tests' calls reach the model."""
    result = _invoke(["run", SEEDS, "--signature-def", "next_collatz", "--timeout", "5",
                      "--input-exprs", "x=[1,2,3]"], statuses=(0,))
    assert "array([ 4,  1, 10], dtype=int32)" in result.output
