"""File readers and the numpy runtime; imports only numpy, protobuf and `savedmodel.protos`.

`load(export_dir)` returns a Model whose `signatures[name](**feeds)` run on numpy;
`load(export_dir, limits=Limits(...))` raises the bounds on what a model's files may claim.
"""
from savedmodel.runtime.limits import Limits
from savedmodel.runtime.loader import Model, load

__all__ = ["Limits", "Model", "load"]
