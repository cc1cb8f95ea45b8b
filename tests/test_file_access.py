"""A loaded model reads and writes files only where the caller lets it.

Hostile models are committed TensorFlow-written fixtures with their protos edited here: assets
whose names or symbolic links lead outside the model directory (TensorFlow 2's asset_file_def
and TensorFlow 1's `saved_model_assets` collection), and TensorFlow 1 exports whose init op or
signature runs SaveV2, WriteFile or ReadFile on paths outside it.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import savedmodel as sm
from savedmodel.cli import main
from savedmodel.protos import meta_graph_pb2, node_def_pb2, saved_model_pb2, types_pb2
from savedmodel.runtime import FileAccessError, load
from savedmodel.runtime.tensor_proto import from_numpy
from conftest import DATA

MODELS = DATA / "models"
VOCAB = "alpha\nbeta\ngamma\n"


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(MODELS / name, tmp_path / "model"))


def _edit(model: Path, change) -> None:
    """Apply `change` to the model's (only) MetaGraphDef and write saved_model.pb back."""
    saved = saved_model_pb2.SavedModel.FromString((model / "saved_model.pb").read_bytes())
    change(saved.meta_graphs[0])
    (model / "saved_model.pb").write_bytes(saved.SerializeToString())


def _outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(VOCAB)
    return secret


# ------------------------------------------------------------------------------------ assets

def _tf2_filename(filename: str):
    def change(meta_graph):
        meta_graph.asset_file_def[0].filename = filename
    return change


def _tf1_filename(filename: str):
    def change(meta_graph):
        packed = meta_graph.collection_def["saved_model_assets"].any_list.value[0]
        asset = meta_graph_pb2.AssetFileDef.FromString(packed.value)
        asset.filename = filename
        packed.value = asset.SerializeToString()
    return change


def _hostile_assets(tmp_path: Path, name: str, form: str) -> tuple[Path, str]:
    """A copy of fixture `name` whose first asset leads outside the model in the way `form`
    says; returns it with the asset's file name as the model records it."""
    model, secret = _copy(name, tmp_path), _outside(tmp_path)
    assets = model / "assets"
    filename = next(assets.iterdir()).name
    rename = _tf2_filename if name == "asset_vocab" else _tf1_filename
    if form == "dotdot":
        filename = "../../outside/secret.txt"
        _edit(model, rename(filename))
    elif form == "absolute":
        filename = str(secret)
        _edit(model, rename(filename))
    elif form == "file symlink":
        (assets / filename).unlink()
        (assets / filename).symlink_to(secret)
    else:
        (secret.parent / filename).write_text(VOCAB)
        shutil.rmtree(assets)
        assets.symlink_to(secret.parent, target_is_directory=True)
    return model, filename


FORMS = ["dotdot", "absolute", "file symlink", "assets symlink"]
ORIGINS = {"asset_vocab": "asset_file_def 0, asset object vocab",
           "tf1_tables": "collection 'saved_model_assets', item 0"}


@pytest.mark.parametrize("name", sorted(ORIGINS))
@pytest.mark.parametrize("form", FORMS)
def test_assets_leading_outside_the_model_are_refused_at_load(tmp_path, name, form):
    model, filename = _hostile_assets(tmp_path, name, form)
    message = rf"asset '{filename}' \({ORIGINS[name]}\) leads outside the model directory"
    with pytest.raises(FileAccessError, match=message):
        load(model)
    if name == "asset_vocab":
        with pytest.raises(FileAccessError, match=message):
            sm.saved_model.load(model)


def test_an_asset_link_that_cannot_be_resolved_is_refused_at_load(tmp_path):
    model = _copy("asset_vocab", tmp_path)
    (model / "assets" / "asset_vocab.txt").unlink()
    (model / "assets" / "asset_vocab.txt").symlink_to(model / "assets" / "asset_vocab.txt")
    with pytest.raises(FileAccessError, match=r"asset 'asset_vocab.txt' \(asset_file_def 0, asset object "
                                              r"vocab\): cannot resolve the path"):
        load(model)


@pytest.mark.parametrize("form", FORMS)
def test_the_caller_can_allow_assets_outside_the_model(tmp_path, form):
    model, _ = _hostile_assets(tmp_path, "tf1_tables", form)
    ids = load(model, allow_file_access=True).signatures["serving_default"](words=np.array([b"beta"], object))["ids"]
    assert ids.tolist() == [1]


# ------------------------------------------------------------------------- variable files

SHARD = "variables.data-00000-of-00001"
VARIABLE_FORMS = ["variables symlink", "index symlink", "shard symlink"]
REFUSED = {"tf2": r"checkpoint {kind} {path} leads outside the model directory, to {resolved}; .*"
                  r"allow_file_access=True",
           "tf1": r"RestoreV2 tried to read {path} \(which is {resolved}\).*allow_file_access=True"}
FIXTURES = {"tf2": "gru", "tf1": "tf1_ref"}


def _moved_out(path: Path, outside: Path) -> Path:
    """Move `path` (a file or folder of the model) to `outside` and leave a link to it."""
    target = outside / path.name
    shutil.move(path, target)
    path.symlink_to(target, target_is_directory=target.is_dir())
    return target


def _hostile_variables(tmp_path: Path, saver: str, form: str) -> tuple[Path, str]:
    """A copy of a fixture whose variable files lead outside it as `form` says, and the
    pattern of the error that refuses it."""
    model = _copy(FIXTURES[saver], tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    variables = model / "variables"
    if form == "variables symlink":
        resolved = _moved_out(variables, outside)
        path = variables / ("variables.index" if saver == "tf2" else "variables")
        resolved = resolved / path.name
    else:
        path = variables / ("variables.index" if form == "index symlink" else SHARD)
        resolved = _moved_out(path, outside)
    kind = "data shard" if form == "shard symlink" else "index"
    return model, REFUSED[saver].format(kind=kind, path=re.escape(str(path)), resolved=re.escape(str(resolved)))


@pytest.mark.parametrize("saver", sorted(FIXTURES))
@pytest.mark.parametrize("form", VARIABLE_FORMS)
def test_variable_files_leading_outside_the_model_are_refused_at_load(tmp_path, saver, form):
    model, message = _hostile_variables(tmp_path, saver, form)
    with pytest.raises(FileAccessError, match=message):
        load(model)


@pytest.mark.parametrize("saver", sorted(FIXTURES))
@pytest.mark.parametrize("form", VARIABLE_FORMS)
def test_the_caller_can_allow_variable_files_outside_the_model(tmp_path, saver, form):
    model, _ = _hostile_variables(tmp_path, saver, form)
    _assert_serves_as_recorded(load(model, allow_file_access=True), FIXTURES[saver])


def test_the_authoring_load_confines_variable_files_too(tmp_path):
    model, message = _hostile_variables(tmp_path, "tf2", "shard symlink")
    with pytest.raises(FileAccessError, match=message):
        sm.saved_model.load(model)
    sm.saved_model.load(model, allow_file_access=True)


@pytest.mark.parametrize("saver", sorted(FIXTURES))
def test_relative_links_inside_the_model_directory_load(tmp_path, saver):
    """`variables/` a relative link to a folder of the model, whose shard is a relative link
    to a file of the model: every file stays inside, so nothing needs allowing."""
    model = _copy(FIXTURES[saver], tmp_path)
    (model / "variables").rename(model / "store")
    (model / "variables").symlink_to("store", target_is_directory=True)
    (model / "blobs").mkdir()
    (model / "store" / SHARD).rename(model / "blobs" / SHARD)
    (model / "store" / SHARD).symlink_to(Path("..") / "blobs" / SHARD)
    _assert_serves_as_recorded(load(model), FIXTURES[saver])


def _assert_serves_as_recorded(model, fixture: str) -> None:
    """The model's serving_default signature gives the outputs TensorFlow recorded for it."""
    io = np.load(MODELS / f"{fixture}.io.npz")
    feeds = {k.rsplit("/", 1)[1]: io[k] for k in io if k.startswith("sig/serving_default/in/")}
    outputs = model.signatures["serving_default"](**feeds)
    for key in io:
        if key.startswith("sig/serving_default/out/"):
            np.testing.assert_allclose(outputs[key.rsplit("/", 1)[1]], io[key], rtol=1e-5, atol=1e-6)


# -------------------------------------------------------------------------- file-system ops

def _const(name: str, text: str) -> node_def_pb2.NodeDef:
    """A Const node holding a scalar string."""
    tensor = from_numpy(np.array(text.encode(), object))
    node = node_def_pb2.NodeDef(name=name, op="Const")
    node.attr["dtype"].type = tensor.dtype
    node.attr["value"].tensor.CopyFrom(tensor)
    return node


def _op(name: str, op: str, inputs: list[str]) -> node_def_pb2.NodeDef:
    return node_def_pb2.NodeDef(name=name, op=op, input=inputs)


def _with_nodes(tmp_path: Path, nodes: list, init: str | None = None, collection: str = "saved_model_main_op",
                name: str = "tf1_ref") -> Path:
    """A copy of a TensorFlow 1 fixture with `nodes` added and `init` as its init op."""
    model = _copy(name, tmp_path)

    def change(meta_graph):
        meta_graph.graph_def.node.extend(nodes)
        if init is not None:
            meta_graph.collection_def[collection].node_list.value.append(init)
    _edit(model, change)
    return model


def _saving_elsewhere(tmp_path: Path) -> tuple[Path, Path]:
    """tf1_ref whose main_op runs its own saver (SaveV2, MergeV2Checkpoints) to a prefix
    outside the model."""
    prefix = tmp_path / "elsewhere" / "ckpt"
    model = _copy("tf1_ref", tmp_path)

    def change(meta_graph):
        default = next(n for n in meta_graph.graph_def.node if n.name == "save/filename/input")
        default.attr["value"].tensor.CopyFrom(from_numpy(np.array(str(prefix).encode(), object)))
        meta_graph.collection_def["saved_model_main_op"].node_list.value.append("save/Identity")
    _edit(model, change)
    return model, prefix


def _writing_a_file(tmp_path: Path, target: Path) -> Path:
    return _with_nodes(tmp_path, [_const("hostile/name", str(target)), _const("hostile/data", "owned"),
                                  _op("hostile/WriteFile", "WriteFile", ["hostile/name", "hostile/data"])],
                       "hostile/WriteFile", "legacy_init_op")


def _reading_a_file(tmp_path: Path, target: Path) -> Path:
    """tf1_ref with a signature `read` that returns the contents of `target`."""
    model = _with_nodes(tmp_path, [_const("hostile/name", str(target)),
                                   _op("hostile/ReadFile", "ReadFile", ["hostile/name"])])

    def change(meta_graph):
        output = meta_graph.signature_def["read"].outputs["contents"]
        output.name, output.dtype = "hostile/ReadFile:0", types_pb2.DT_STRING
    _edit(model, change)
    return model


def test_an_init_op_saving_a_checkpoint_outside_is_refused(tmp_path):
    model, prefix = _saving_elsewhere(tmp_path)
    with pytest.raises(FileAccessError, match=rf"node 'save/SaveV2' \(op SaveV2\): SaveV2 tried to write "
                                              rf"{prefix}_temp/part-00000-of-00001, outside .*allow_file_access=True"):
        load(model)
    assert not prefix.parent.exists()


def test_an_init_op_may_save_where_the_caller_allows(tmp_path):
    model, prefix = _saving_elsewhere(tmp_path)
    load(model, output_dir=prefix.parent)
    saved = load(model, allow_file_access=True).variables
    assert prefix.with_name("ckpt.index").is_file()
    assert set(saved) == {"w", "b"}


def test_an_init_op_writing_a_file_outside_is_refused(tmp_path):
    target = tmp_path / "elsewhere" / "owned.txt"
    model = _writing_a_file(tmp_path, target)
    with pytest.raises(FileAccessError, match=rf"node 'hostile/WriteFile' \(op WriteFile\): WriteFile tried "
                                              rf"to write {target}, outside .*none: pass output_dir="):
        load(model)
    assert not target.parent.exists()
    load(model, allow_file_access=True)
    assert target.read_text() == "owned"


def test_write_file_writes_what_tensorflow_writes_when_allowed(tf, tmp_path):
    """TensorFlow's loader runs the hostile init op unconfined; ours does the same when allowed."""
    theirs, ours = tmp_path / "tf" / "new" / "owned.txt", tmp_path / "ours" / "new" / "owned.txt"
    with tf.compat.v1.Session(graph=tf.Graph()) as session:
        tf.compat.v1.saved_model.load(session, ["serve"], str(_writing_a_file(tmp_path / "tf", theirs)))
    load(_writing_a_file(tmp_path / "ours", ours), allow_file_access=True)
    assert ours.read_bytes() == theirs.read_bytes() == b"owned"


def test_writing_inside_the_model_directory_is_refused_too(tmp_path):
    """The model's directory is for reading: its own files stay as they were."""
    model = _writing_a_file(tmp_path, tmp_path / "model" / "variables" / "variables.index")
    with pytest.raises(FileAccessError, match="WriteFile tried to write"):
        load(model)


def test_a_signature_reading_a_file_outside_is_refused(tmp_path):
    secret = _outside(tmp_path)
    model = load(_reading_a_file(tmp_path, secret), engine="numpy")  # its wording; both refuse
    with pytest.raises(FileAccessError, match=rf"node 'hostile/ReadFile' \(op ReadFile\): ReadFile tried to "
                                              rf"read {secret}, outside the folders it may read: "
                                              rf"{tmp_path.resolve() / 'model'}; .*allow_file_access=True"):
        model.signatures["read"]()
    allowed = load(_reading_a_file(tmp_path / "again", secret), allow_file_access=True)
    assert allowed.signatures["read"]()["contents"].item() == VOCAB.encode()


def test_reading_through_a_link_inside_the_model_is_refused(tmp_path):
    secret = _outside(tmp_path)
    model = _reading_a_file(tmp_path, tmp_path / "model" / "link.txt")
    (model / "link.txt").symlink_to(secret)
    with pytest.raises(FileAccessError, match=rf"link.txt \(which is {secret}\)"):
        load(model, engine="numpy").signatures["read"]()


def test_dotdot_after_a_link_is_resolved_as_the_system_resolves_it(tmp_path):
    """`model/link/../secret.txt` with `link` -> `outside/sub` opens `outside/secret.txt`."""
    secret = _outside(tmp_path)
    (secret.parent / "sub").mkdir()
    model = _reading_a_file(tmp_path, tmp_path / "model" / "link" / ".." / "secret.txt")
    (model / "link").symlink_to(secret.parent / "sub", target_is_directory=True)
    with pytest.raises(FileAccessError, match=rf"\(which is {secret}\)"):
        load(model, engine="numpy").signatures["read"]()


@pytest.mark.parametrize("name, match", [("loop", "cannot resolve the path .*loop"),
                                          ("nul\0byte", "cannot resolve the path .*embedded null byte")])
def test_paths_that_cannot_be_resolved_are_refused(tmp_path, name, match):
    model = _reading_a_file(tmp_path, tmp_path / "model" / name)
    (model / "loop").symlink_to(model / "loop")
    with pytest.raises(FileAccessError, match=rf"^signature 'read': graph: node 'hostile/ReadFile' \(op ReadFile\): ReadFile: {match}"):
        load(model, engine="numpy").signatures["read"]()


def test_reading_the_models_own_files_is_allowed(tmp_path):
    model = _reading_a_file(tmp_path, tmp_path / "model" / "variables" / "variables.index")
    contents = load(model).signatures["read"]()["contents"].item()
    assert contents == (model / "variables" / "variables.index").read_bytes()


def test_a_text_file_table_initializer_reading_outside_is_refused(tmp_path):
    """tf1_tables without its asset: the initializer reads the path in its Const."""
    secret = _outside(tmp_path)
    model = _copy("tf1_tables", tmp_path)

    def change(meta_graph):
        del meta_graph.collection_def["saved_model_assets"]
        vocab = next(n for n in meta_graph.graph_def.node if n.name == "vocab_path")
        vocab.attr["value"].tensor.CopyFrom(from_numpy(np.array(str(secret).encode(), object)))
    _edit(model, change)
    with pytest.raises(FileAccessError, match=r"InitializeTableFromTextFileV2 tried to read"):
        load(model)
    ids = load(model, allow_file_access=True).signatures["serving_default"](words=np.array([b"gamma"], object))
    assert ids["ids"].tolist() == [2]


def test_the_authoring_load_confines_file_access_too(tmp_path):
    target = tmp_path / "elsewhere" / "owned.txt"
    model = _writing_a_file(tmp_path, target)
    with pytest.raises(FileAccessError, match="WriteFile tried to write"):
        sm.saved_model.load(model)
    sm.saved_model.load(model, allow_file_access=True)
    assert target.is_file()


def test_cli_run_refuses_file_access_unless_allowed(tmp_path):
    secret = _outside(tmp_path)
    model = _reading_a_file(tmp_path, secret)
    refused = CliRunner().invoke(main, ["run", str(model), "--signature-def", "read"])
    assert refused.exit_code == 1
    assert refused.output.startswith("Error: ") and len(refused.output.splitlines()) == 1
    assert "ReadFile tried to read" in refused.output and "--allow-file-access" in refused.output
    allowed = CliRunner().invoke(main, ["run", str(model), "--signature-def", "read", "--allow-file-access"])
    assert allowed.exit_code == 0, allowed.output
    assert "alpha" in allowed.output


# ----------------------------------------------------------------------------------- show

def test_show_all_lists_file_system_ops(tmp_path):
    model = _writing_a_file(tmp_path, tmp_path / "owned.txt")
    shown = CliRunner().invoke(main, ["show", str(model), "--all"])
    assert shown.exit_code == 0, shown.output
    assert ("MetaGraph with tag set ['serve'] contains the following file-system ops: "
            "{'MergeV2Checkpoints', 'RestoreV2', 'SaveV2', 'WriteFile'}\n"
            "  MergeV2Checkpoints 'save/MergeV2Checkpoints' in the graph (the model's saver)\n"
            "  RestoreV2 'save/RestoreV2' in the graph (the model's saver)\n"
            "  SaveV2 'save/SaveV2' in the graph (the model's saver)\n"
            "  WriteFile 'hostile/WriteFile' in the graph\n") in shown.output


def test_show_all_says_when_a_model_has_no_file_system_ops(tmp_path):
    model = _copy("tf1_tables", tmp_path)

    def change(meta_graph):
        nodes = [n for n in meta_graph.graph_def.node if n.op != "InitializeTableFromTextFileV2"]
        del meta_graph.graph_def.node[:]
        meta_graph.graph_def.node.extend(nodes)
    _edit(model, change)
    shown = CliRunner().invoke(main, ["show", str(model), "--all"])
    assert shown.exit_code == 0, shown.output
    assert "MetaGraph with tag set ['serve'] does not contain file-system ops" in shown.output


def test_show_json_lists_file_system_ops_with_their_functions():
    shown = CliRunner().invoke(main, ["show", str(MODELS / "asset_vocab"), "--json"])
    found = json.loads(shown.output)["meta_graphs"][0]["file_system_ops"]
    assert {(f["op"], f["saver"]) for f in found} == {("SaveV2", True), ("MergeV2Checkpoints", True),
                                                      ("RestoreV2", True)}
    assert all(f["function"].startswith("__inference__traced_") for f in found)
