"""File readers and the numpy runtime; imports only numpy, protobuf and `savedmodel.protos`.

`load(export_dir)` returns a Model whose `signatures[name](**feeds)` run on numpy.
"""
from savedmodel.runtime.loader import Model, load

__all__ = ["Model", "load"]
