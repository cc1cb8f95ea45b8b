"""`savedmodel run` and `savedmodel compare`: run signatures on our engines, and check them against
TensorFlow or each other (output by output, or node by node)."""
from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from savedmodel.cli.completion import complete_signatures, complete_tag_sets
from savedmodel.cli.errors import reports_errors
from savedmodel.cli.node_report import print_node_reports
from savedmodel.cli.progress import progress_option
from savedmodel.compare import (differences, import_tensorflow, random_feeds, run_ours, run_tensorflow,
                                saved_inputs)
from savedmodel.compare import save_inputs as save_input_file
from savedmodel.input_specs import InputSpecError, load_npz, parse_input_exprs, parse_inputs
from savedmodel.node_compare import compare_nodes, engine_run, tensorflow_run
from savedmodel.progress import bar, note
from savedmodel.runtime import Limits, load, time_limit
from savedmodel.runtime.engines import ENGINES
from savedmodel.runtime.atomic_files import write_file

_DIR = click.Path(path_type=Path)
"""A SavedModel directory or a GraphDef file (.pb, .pbtxt)."""


def _tags(text: str) -> set[str]:
    return {t.strip() for t in text.split(",") if t.strip()}


def _limits(command):
    """The options that bound what a model may do: --allow-file-access, --timeout and --limit."""
    command = click.option("--limit", "limits", multiple=True, metavar="NAME=N",
                           help="Raise (or lower) a bound on what the model's files may claim: "
                                "max_file_bytes, max_const_bytes or max_function_depth "
                                "(repeatable; see savedmodel.runtime.Limits).")(command)
    command = click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
                           help="Stop with an error when loading and running a signature on our "
                                "runtime takes longer than SECONDS (an endless While loop, say).")(command)
    return click.option("--allow-file-access", is_flag=True,
                        help="Let the model's file-system ops (ReadFile, SaveV2, WriteFile, ...) and "
                             "assets use files outside its directory; by default they may only "
                             "read inside it.")(command)


def _engine(command):
    """--engine: which engine runs the model (runtime.load's `engine`)."""
    return click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True,
                        help="native (Rust kernels), numpy (the reference engine), or auto: native "
                             "when it has a kernel for every op the signatures need.")(command)


def _given_feeds(inputs: str | None, input_exprs: str | None) -> dict:
    files, literals = parse_inputs(inputs), parse_input_exprs(input_exprs)
    both = sorted(files.keys() & literals.keys())
    if both:
        raise InputSpecError(f"inputs given by both --inputs and --input-exprs: {both}")
    return {**files, **literals}


@click.command()
@click.argument("export_dir", type=_DIR)
@click.option("--signature-def", "--signature_def", "signature",
              shell_complete=complete_signatures, default="serving_default",
              show_default=True, help="The SignatureDef to run.")
@click.option("--tag-set", "--tag_set", "tags",
              shell_complete=complete_tag_sets, default="serve", show_default=True,
              help="Comma-separated tag-set of the MetaGraphDef.")
@click.option("--inputs", metavar="SPEC", help="NAME=file.npy or NAME=file.npz[key], separated by ';'.")
@click.option("--input-exprs", "--input_exprs", "input_exprs", metavar="SPEC",
              help="NAME=<Python literal>, separated by ';' (parsed as a literal, never evaluated).")
@click.option("--outdir", type=click.Path(file_okay=False, path_type=Path),
              help="Write each output to OUTDIR/<key>.npy instead of printing it.")
@click.option("--overwrite", is_flag=True, help="Replace existing .npy files in --outdir.")
@_engine
@_limits
@reports_errors
def run(export_dir: Path, signature: str, tags: str, inputs: str | None, input_exprs: str | None,
        outdir: Path | None, overwrite: bool, engine: str, allow_file_access: bool, timeout: float | None,
        limits: tuple[str, ...]) -> None:
    """Run one signature of the SavedModel in EXPORT_DIR (or of a GraphDef file, .pb or .pbtxt,
    whose serving_default signature takes its placeholders) on our runtime (--engine picks the
    native or the numpy engine)."""
    feeds = _given_feeds(inputs, input_exprs)
    with time_limit(timeout):
        model = load(export_dir, _tags(tags), allow_file_access=allow_file_access,
                     limits=Limits().raised(limits), engine=engine)
        outputs = model.signatures[signature](**feeds)
    if outdir is None:
        with np.printoptions(threshold=1000):
            for key, value in outputs.items():
                click.echo(f"Result for output key {key}:\n{value!r}")
        return
    _write_outputs(outputs, outdir, overwrite)


def _write_outputs(outputs: dict, outdir: Path, overwrite: bool) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    targets = {key: outdir / f"{key.replace('/', '_')}.npy" for key in outputs}
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing and not overwrite:
        raise click.ClickException(f"output files exist (use --overwrite): {', '.join(existing)}")
    for key, path in targets.items():
        value = outputs[key]
        if value.dtype == object:
            value = value.astype(bytes)
        write_file(path, lambda out, value=value: np.save(out, value, allow_pickle=False))
        click.echo(f"{key}: {path}")


@click.command()
@click.argument("export_dir", type=_DIR)
@click.option("--signature-def", "--signature_def", "signatures",
              shell_complete=complete_signatures, multiple=True,
              help="Signatures to compare (repeatable; default: all).")
@click.option("--tag-set", "--tag_set", "tags",
              shell_complete=complete_tag_sets, default="serve", show_default=True)
@click.option("--inputs", metavar="SPEC", help="As for `run`; inputs not given are random.")
@click.option("--input-exprs", "--input_exprs", "input_exprs", metavar="SPEC", help="As for `run`.")
@click.option("--load-inputs", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.npz",
              help="Inputs from an .npz file that --save-inputs wrote (keys SIGNATURE/INPUT, or "
                   "INPUT for every signature with that input); --inputs and --input-exprs win.")
@click.option("--save-inputs", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.npz",
              help="Write the inputs each signature is fed (given or random) to FILE.npz, to "
                   "replay them with --load-inputs.")
@click.option("--batch", default=2, show_default=True, help="Size of unknown dimensions in random inputs.")
@click.option("--seed", default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--atol", default=1e-6, show_default=True)
@click.option("--rtol", default=1e-5, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
@click.option("--against", type=click.Choice(("tensorflow", "native", "numpy")), default="tensorflow",
              show_default=True, help="What to compare with: TensorFlow, or one of our engines "
                                      "(to compare the native engine with the numpy engine).")
@click.option("--per-node", is_flag=True,
              help="Compare every intermediate tensor, not just the outputs: the signature's "
                   "function calls are inlined and both sides (any engine, or TensorFlow) run a "
                   "copy of the model that returns every node's outputs; prints the first "
                   "tensors, in execution order, beyond --atol/--rtol (`<- starts here` where "
                   "the node's inputs still agree) and the first node with NaN or Inf that the "
                   "other side does not have. Loop and branch bodies are compared through the "
                   "node that runs them. Against TensorFlow it needs TensorFlow (exit status 2 "
                   "without it).")
@click.option("--other-model", type=_DIR, metavar="DIR",
              help="With --per-node: run the --against side on this copy of the model (re-exported, "
                   "converted, with changed weights) instead of EXPORT_DIR; nodes are matched by name.")
@click.option("--max-nodes", default=10, show_default=True, type=click.IntRange(min=1),
              help="With --per-node: how many diverging tensors to print per signature.")
@_engine
@_limits
@progress_option
@reports_errors
def compare(export_dir: Path, signatures: tuple[str, ...], tags: str, inputs: str | None,
            input_exprs: str | None, load_inputs: Path | None, save_inputs: Path | None, batch: int,
            seed: int, atol: float, rtol: float, as_json: bool, against: str, per_node: bool,
            other_model: Path | None, max_nodes: int, engine: str, allow_file_access: bool,
            timeout: float | None, limits: tuple[str, ...]) -> None:
    """Run signatures on our runtime (--engine) and on TensorFlow (when installed) or another
    engine of ours (--against) and report the largest absolute and relative differences; exit 1
    when any output is beyond --atol/--rtol, and 2 when TensorFlow is not installed (our outputs
    are still listed, not compared). --timeout bounds each signature's run on our runtime
    (TensorFlow's runs are not bounded). --per-node compares every intermediate tensor."""
    if other_model is not None and not per_node:
        raise click.UsageError("--other-model applies to --per-node comparisons only")
    given = _given_feeds(inputs, input_exprs)
    bounds = Limits().raised(limits)
    theirs = _per_node_side(against, _tags(tags), allow_file_access, bounds) if per_node else None
    with time_limit(timeout):
        model = load(export_dir, _tags(tags), allow_file_access=allow_file_access, limits=bounds,
                     engine=engine)
    names = list(signatures) or list(model.signatures)
    saved = load_npz(load_inputs) if load_inputs is not None else {}
    feeds = {name: _feeds(model.signatures[name], name, batch, seed, saved, given) for name in names}
    if save_inputs is not None:
        save_input_file(save_inputs, feeds, model.signatures)
    if per_node:
        _compare_per_node(export_dir, feeds, _tags(tags), theirs, against, engine, other_model, atol,
                          rtol, as_json, max_nodes, allow_file_access, bounds, timeout)
        return
    other = _other_side(against, export_dir, _tags(tags), allow_file_access, bounds, timeout)
    if other is None:
        click.echo("TensorFlow is not installed: running on our runtime only, nothing is compared "
                   "(exit status 2)", err=True)
    report, failed = [], False
    with bar("signatures", len(names), "signatures") as shown:
        for name in names:
            note(f"running {name}...")
            with time_limit(timeout):
                ours = run_ours(export_dir, name, feeds[name], _tags(tags), allow_file_access, bounds, engine)
            theirs = other(name, feeds[name]) if other is not None else None
            rows = differences(ours, theirs, atol, rtol) if theirs is not None else []
            failed |= any(not r.within for r in rows)
            report.append({"signature": name, "outputs": [r.__dict__ | {"shape": list(r.shape)} for r in rows]
                           if theirs is not None else [{"key": k, "dtype": str(v.dtype), "shape": list(v.shape)}
                                                       for k, v in ours.items()]})
            shown.update(1)
    _print_report(report, as_json, other is not None, against)
    if failed:
        raise SystemExit(1)
    if other is None:
        raise SystemExit(2)  # a comparison that compared nothing must not read as a pass


def _feeds(signature, name: str, batch: int, seed: int, saved: dict, given: dict) -> dict:
    """What a signature is fed: given inputs, else saved ones, else random ones."""
    feeds = {**random_feeds(signature, batch, seed), **saved_inputs(saved, name, signature.inputs), **given}
    return {k: v for k, v in feeds.items() if k in signature.inputs}


def _per_node_side(against: str, tags: set[str], allow_file_access: bool, bounds: Limits):
    """What runs the other side of a --per-node comparison; a usage error, before any work,
    when that is TensorFlow and it is not installed."""
    if against != "tensorflow":
        return engine_run(against, tags, allow_file_access, bounds)
    click.echo("importing TensorFlow...", err=True)
    tf = import_tensorflow()
    if tf is None:
        raise click.UsageError("--per-node --against tensorflow needs TensorFlow, which is not "
                               "installed (pip install 'savedmodel[interop]'); or compare two of "
                               "our engines with --against numpy|native")
    return tensorflow_run(tf, tags)


def _compare_per_node(export_dir: Path, feeds: dict, tags: set[str], theirs, against: str, engine: str,
                      other_model: Path | None, atol: float, rtol: float, as_json: bool, max_nodes: int,
                      allow_file_access: bool, bounds: Limits, timeout: float | None) -> None:
    used: list[str] = []
    ours = engine_run(engine, tags, allow_file_access, bounds, used)
    reports = []
    with bar("signatures", len(feeds), "signatures") as shown:
        for name, values in feeds.items():
            note(f"running {name} node by node...")
            with time_limit(timeout):
                reports.append(compare_nodes(export_dir, name, tags, values, ours, theirs, atol, rtol,
                                             other_model))
            shown.update(1)
    print_node_reports(reports, used[0] if used else engine, against, as_json, max_nodes)
    if any(r.diverging or r.non_finite for r in reports):
        raise SystemExit(1)


def _other_side(against: str, export_dir: Path, tags: set[str], allow_file_access: bool, bounds: Limits,
                timeout: float | None):
    """What `compare` runs each signature on besides our model: a function of (signature,
    feeds) -> outputs, or None when TensorFlow is asked for and not installed."""
    if against != "tensorflow":
        def run_engine(name: str, feeds: dict) -> dict:
            with time_limit(timeout):
                return run_ours(export_dir, name, feeds, tags, allow_file_access, bounds, against)
        return run_engine
    click.echo("importing TensorFlow...", err=True)
    tf = import_tensorflow()
    return None if tf is None else (lambda name, feeds: run_tensorflow(tf, export_dir, name, feeds))


def _print_report(report: list[dict], as_json: bool, compared: bool, against: str) -> None:
    if as_json:
        click.echo(json.dumps({"schema": "savedmodel.compare/1",
                               "compared_with_tensorflow": compared and against == "tensorflow",
                               "compared_with": against if compared else None,
                               "signatures": report}, indent=1))
        return
    for entry in report:
        for row in entry["outputs"]:
            if not compared:
                click.echo(f"{entry['signature']}/{row['key']}: {row['dtype']} {row['shape']} (not compared)")
                continue
            verdict = "ok" if row["within"] else "DIFFERENT"
            click.echo(f"{entry['signature']}/{row['key']}: max abs {row['max_abs']:.3g}, "
                       f"max rel {row['max_rel']:.3g}  {verdict}")
