"""`sm.saved_model.load`: a SavedModel (ours or TensorFlow's) as an object tree.

The numpy runtime (`savedmodel.runtime.loader`) reads the files, restores the variables and
runs the functions; `savedmodel.saved_model.restore` rebuilds the saved objects on top of it,
so that the restored methods and the restored variables share one state. Loading reads data
only: no code that the SavedModel names is imported or run. The model's file-system ops and
assets stay inside its directory unless the caller allows more (runtime.file_access).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.loader import Model
from savedmodel.runtime.saved_model_file import (
    find_meta_graph,
    format_tags,
    read_saved_model,
    tag_set,
)
from savedmodel.saved_model.restore import restore


def load(export_dir: str | Path, tags: str | Iterable[str] | None = None, options: Any = None, *,
         allow_file_access: bool = False, output_dir: str | Path | None = None) -> Any:
    """`tf.saved_model.load`: the root object of the SavedModel in `export_dir`.

    Its attributes are the saved children (sub-objects, variables as `sm.Variable`, methods
    as callable restored functions, lists and dicts of them) and `signatures`. `tags` selects
    the MetaGraphDef; without it the SavedModel must hold exactly one. `options`
    (`tf.saved_model.LoadOptions`) is accepted for TensorFlow's code and has no effect.
    As with `savedmodel.runtime.load`, the model's file-system ops may read inside `export_dir`
    and `output_dir` and write inside `output_dir` only, unless `allow_file_access=True`."""
    export_dir = Path(export_dir)
    saved_model = read_saved_model(export_dir)
    if tags is None:
        if len(saved_model.meta_graphs) != 1:
            present = "; ".join(format_tags(tag_set(m)) for m in saved_model.meta_graphs) or "none"
            raise FileFormatError(f"{export_dir}: the SavedModel has {len(saved_model.meta_graphs)} "
                                  f"MetaGraphDefs (tag-sets: {present}); pass `tags` to choose one")
        meta_graph = saved_model.meta_graphs[0]
    else:
        wanted = {tags} if isinstance(tags, str) else set(tags)
        meta_graph = find_meta_graph(saved_model, wanted, str(export_dir))
    return restore(Model(export_dir, meta_graph, allow_file_access=allow_file_access, output_dir=output_dir))
