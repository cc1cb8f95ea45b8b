"""Shell completion of signature keys and tag-sets, through click's completion API (what the
shell's `_SAVEDMODEL_COMPLETE=bash_complete` call runs)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.shell_completion import BashComplete

from savedmodel.cli import main
from savedmodel.describe import describe_model
from savedmodel.protos import saved_model_pb2

DATA = Path(__file__).parent / "data"
SEEDS = DATA / "reference" / "savedmodels" / "seeds"
FROZEN = DATA / "frozen" / "keras_mlp.pb"


def _complete(args: list, incomplete: str = "") -> list[str]:
    completion = BashComplete(main, {}, "savedmodel", "_SAVEDMODEL_COMPLETE")
    return [item.value for item in completion.get_completions([str(a) for a in args], incomplete)]


def _signatures(path: Path, tags: str = "serve") -> list[str]:
    """What `show --json` lists (its own reading of the SignatureDefs)."""
    meta_graphs = describe_model(path)["meta_graphs"]
    return sorted(s["name"] for m in meta_graphs if ",".join(m["tags"]) == tags for s in m["signatures"])


@pytest.mark.parametrize("command, option", [
    ("show", "--signature-def"), ("show", "--signature_def"), ("graph", "--signature-def"),
    ("run", "--signature_def"), ("compare", "--signature-def"), ("summary", "--signature"),
    ("summary", "--signature-def"), ("view", "--signature"), ("view", "--signature_def"),
    ("bench", "--signature"), ("batch", "--signature")])
def test_signature_options_complete_the_models_signatures(command, option):
    expected = _signatures(SEEDS)
    assert len(expected) > 3
    assert _complete([command, SEEDS, option]) == expected
    prefix = expected[1][:2]
    assert _complete([command, SEEDS, option], prefix) == [s for s in expected if s.startswith(prefix)]


@pytest.mark.parametrize("command, option", [
    ("show", "--tag-set"), ("show", "--tag_set"), ("graph", "--tag-set"), ("run", "--tag_set"),
    ("compare", "--tag-set"), ("summary", "--tag-set"), ("view", "--tag-set"), ("bench", "--tag_set")])
def test_tag_set_options_complete_the_models_tag_sets(command, option):
    assert _complete([command, SEEDS, option]) == [
        ",".join(m["tags"]) for m in describe_model(SEEDS)["meta_graphs"]]


@pytest.fixture
def two_tag_sets(tmp_path):
    """seeds with a second MetaGraphDef, tagged `serve,gpu`, holding one signature."""
    copy = tmp_path / "two"
    shutil.copytree(SEEDS, copy)
    model = saved_model_pb2.SavedModel.FromString((copy / "saved_model.pb").read_bytes())
    extra = model.meta_graphs.add()
    extra.CopyFrom(model.meta_graphs[0])
    extra.meta_info_def.tags.append("gpu")
    for key in list(extra.signature_def)[1:]:
        del extra.signature_def[key]
    (copy / "saved_model.pb").write_bytes(model.SerializeToString())
    return copy


def test_signatures_follow_the_tag_set_given_before(two_tag_sets):
    assert sorted(_complete(["show", two_tag_sets, "--tag-set"])) == ["serve", "gpu,serve"][::-1]
    gpu = _complete(["show", two_tag_sets, "--tag-set", "serve,gpu", "--signature-def"])
    assert gpu == _signatures(two_tag_sets, "gpu,serve") and len(gpu) == 1
    assert _complete(["show", two_tag_sets, "--tag-set", "serve", "--signature-def"]) == \
        _signatures(two_tag_sets, "serve")


def test_graph_files_complete_their_one_signature_and_tag_set():
    assert _complete(["summary", FROZEN, "--signature"]) == ["serving_default"]
    assert _complete(["run", FROZEN, "--tag-set"]) == ["serve"]


def test_a_missing_or_damaged_model_completes_to_nothing(tmp_path):
    assert _complete(["show", tmp_path / "absent", "--signature-def"]) == []
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "saved_model.pb").write_bytes(b"\xff\x00 not a protobuf")
    assert _complete(["graph", damaged, "--tag-set"]) == []
    assert _complete(["summary", "--signature"]) == []
