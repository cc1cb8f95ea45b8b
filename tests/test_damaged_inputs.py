"""Damaged SavedModels and checkpoints on the authoring side (describe, sm.train, loaded
functions): each is a project error naming the file and the object, function or key, never an
IndexError, TypeError or StopIteration from deep inside."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import savedmodel as sm
from conftest import CHECKPOINTS, SAVEDMODELS
from savedmodel.describe import describe_model
from savedmodel.protos import saved_model_pb2, tensor_bundle_pb2
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.table import read_table
from savedmodel.runtime.table_writer import write_table
from savedmodel.runtime.tensor_bundle import index_path

SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")


def damaged_seeds(tmp_path: Path, edit) -> Path:
    """A copy of the seeds SavedModel whose first MetaGraphDef `edit` changed."""
    export_dir = tmp_path / "model"
    shutil.copytree(SEEDS, export_dir)
    model = saved_model_pb2.SavedModel()
    model.ParseFromString((export_dir / "saved_model.pb").read_bytes())
    edit(model.meta_graphs[0])
    (export_dir / "saved_model.pb").write_bytes(model.SerializeToString())
    return export_dir


@pytest.mark.parametrize("node_id", [10**6, 24, -1])
def test_describe_names_a_root_child_outside_the_object_graph(tmp_path, node_id):
    def edit(meta_graph):
        meta_graph.object_graph_def.nodes[0].children[0].node_id = node_id
    export_dir = damaged_seeds(tmp_path, edit)
    with pytest.raises(FileFormatError, match=rf"saved_model.pb: the root object's child 'w' is node {node_id} "
                                              r"of an object graph of 24 nodes"):
        describe_model(export_dir)


def test_loading_names_a_concrete_function_whose_output_signature_does_not_fit(tmp_path):
    def edit(meta_graph):
        name = next(n for n in meta_graph.object_graph_def.concrete_functions if "inference_dense" in n)
        signature = meta_graph.object_graph_def.concrete_functions[name].output_signature
        extra = signature.dict_value.fields["extra"].tensor_spec_value
        extra.dtype = 1
        extra.shape.unknown_rank = True
    export_dir = damaged_seeds(tmp_path, edit)
    with pytest.raises(FileFormatError, match=r"concrete function '__inference_dense_\d+': the object "
                                              r"graph's output signature holds 3 tensors, the function returns 2"):
        sm.saved_model.load(str(export_dir))


def test_shape_map_names_an_entry_of_unknown_rank(tmp_path):
    prefix = tmp_path / "ckpt"
    for source in (CHECKPOINTS / "single").iterdir():
        shutil.copy(source, tmp_path / source.name.replace("ckpt", prefix.name))
    records = read_table(index_path(prefix))
    key = b"model/big/.ATTRIBUTES/VARIABLE_VALUE"
    for i, (name, value) in enumerate(records):
        if name == key:
            entry = tensor_bundle_pb2.BundleEntryProto.FromString(value)
            entry.shape.Clear()
            entry.shape.unknown_rank = True
            records[i] = (name, entry.SerializeToString())
    with open(index_path(prefix), "wb") as out:
        write_table(out, records)
    with pytest.raises(FileFormatError, match=r"ckpt.index: tensor 'model/big/.ATTRIBUTES/VARIABLE_VALUE': "
                                              r"stored shape of unknown rank is not fully defined"):
        sm.train.list_variables(str(prefix))
