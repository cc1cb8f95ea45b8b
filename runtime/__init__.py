"""File readers and the numpy runtime; imports only numpy, protobuf and `savedmodel.protos`.

`load(export_dir)` returns a Model whose `signatures[name](**feeds)` run on numpy;
`with time_limit(seconds):` bounds the runs inside the block (runtime.deadline).
"""
from savedmodel.runtime.deadline import DeadlineExceededError, time_limit
from savedmodel.runtime.file_access import FileAccessError
from savedmodel.runtime.loader import Model, load

__all__ = ["DeadlineExceededError", "FileAccessError", "Model", "load", "time_limit"]
