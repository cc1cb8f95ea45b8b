"""File readers and the numpy runtime; imports only numpy, protobuf and `savedmodel.protos`.

`load(export_dir)` returns a Model whose `signatures[name](**feeds)` run on numpy;
`with time_limit(seconds):` bounds the runs inside the block (runtime.deadline);
`load(export_dir, limits=Limits(...))` raises the bounds on what a model's files may claim.
Ragged and sparse signature outputs and function arguments are `RaggedTensor` and
`SparseTensor` values (their numpy components).
"""
from savedmodel.runtime.deadline import DeadlineExceededError, time_limit
from savedmodel.runtime.file_access import FileAccessError
from savedmodel.runtime.limits import Limits
from savedmodel.runtime.loader import Model, load
from savedmodel.runtime.structure import RaggedTensor, SparseTensor

__all__ = ["DeadlineExceededError", "FileAccessError", "Limits", "Model", "RaggedTensor", "SparseTensor", "load",
           "time_limit"]
