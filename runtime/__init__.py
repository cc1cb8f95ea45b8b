"""File readers and the numpy runtime; imports only numpy, protobuf and `savedmodel.protos`.

`load(export_dir)` returns a Model whose `signatures[name](**feeds)` run on numpy;
`load_graph(path)` does the same for a GraphDef file (`.pb`, `.pbtxt`), signature "serving_default";
`with time_limit(seconds):` bounds the runs inside the block (runtime.deadline);
`load(export_dir, limits=Limits(...))` raises the bounds on what a model's files may claim.
Ragged and sparse signature outputs and function arguments are `RaggedTensor` and
`SparseTensor` values (their numpy components).
"""
from savedmodel.runtime.deadline import DeadlineExceededError, time_limit
from savedmodel.runtime.file_access import FileAccessError
from savedmodel.runtime.graph_file import load_graph
from savedmodel.runtime.limits import Limits
from savedmodel.runtime.loader import Model, load
from savedmodel.runtime.structure import RaggedTensor, SparseTensor

__all__ = ["DeadlineExceededError", "FileAccessError", "Limits", "Model", "RaggedTensor", "SparseTensor", "load",
           "load_graph", "time_limit"]
