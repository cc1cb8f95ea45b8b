"""Where a loaded model may read and write files.

TensorFlow runs whatever file-system ops a SavedModel's init op or signatures contain: loading
a TensorFlow 1 export whose `main_op` runs `SaveV2` or `WriteFile` writes wherever the file
says, and `ReadFile` reads any file the process can. A model file is input, so the runtime
confines those ops: they may read only inside the model's directory (and the caller's output
folder) and write only inside an output folder the caller names, unless the caller opts out
(`load(..., allow_file_access=True)`, `--allow-file-access`). Every kernel that touches the
file system asks the execution context's `FileAccess` through `check`, which resolves symbolic
links first, so a link cannot lead a path out of its folder.

The files the loader itself reads are checked the same way (`model_file`): an asset, the
variables' index and each data shard are files the model carries, so their paths must stay
inside the model's directory.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from savedmodel.protos import meta_graph_pb2
from savedmodel.runtime.errors import FileAccessError
from savedmodel.runtime.saved_model_file import needed_nodes

OPT_OUT = "load the model with allow_file_access=True (command line: --allow-file-access)"

FILE_SYSTEM_OPS = frozenset({
    "ReadFile", "WriteFile", "MatchingFiles", "ImmutableConst",
    "SaveV2", "Save", "SaveSlices", "RestoreV2", "Restore", "RestoreSlice", "MergeV2Checkpoints",
    "InitializeTableFromTextFile", "InitializeTableFromTextFileV2",
    "TextLineReader", "TextLineReaderV2", "WholeFileReader", "WholeFileReaderV2",
    "TFRecordReader", "TFRecordReaderV2", "FixedLengthRecordReader", "FixedLengthRecordReaderV2",
    "IdentityReader", "IdentityReaderV2", "LMDBReader",
    "TextLineDataset", "TFRecordDataset", "FixedLengthRecordDataset",
    "CreateSummaryFileWriter", "CreateSummaryDbWriter",
    "LoadAndRemapMatrix", "GenerateVocabRemapping",
})
"""TensorFlow ops that read, write or delete files by a path given at run time (what `show
--all` lists): those the runtime has kernels for are confined by `FileAccess`, the others are
refused as unsupported ops."""


@dataclass(frozen=True)
class FileAccess:
    """The folders a model's file-system ops may read (`readable`) and write (`writable`),
    as resolved absolute paths; `unrestricted` lets them touch any file."""

    readable: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    unrestricted: bool = False

    @classmethod
    def confined(cls, model_dir: str | Path, output_dir: str | Path | None = None) -> FileAccess:
        """Read inside `model_dir` and `output_dir`; write only inside `output_dir`."""
        writable = (Path(output_dir).resolve(),) if output_dir is not None else ()
        return cls((Path(model_dir).resolve(), *writable), writable)

    def check(self, path: str | Path, op: str, write: bool = False) -> Path:
        """`path`, if op `op` may read it (or, with `write`, create, replace or delete it);
        otherwise a FileAccessError naming the op, the path and how to allow it."""
        if self.unrestricted:
            return Path(path)
        roots = self.writable if write else self.readable
        resolved = _resolved(path, op)
        if any(resolved.is_relative_to(root) for root in roots):
            return Path(path)
        shown = f"{path} (which is {resolved})" if str(resolved) != str(path) else str(path)
        raise FileAccessError(f"{op} tried to {'write' if write else 'read'} {shown}, outside "
                              f"{_folders(roots, write)}; to let the model touch any file, {OPT_OUT}")


UNRESTRICTED = FileAccess(unrestricted=True)
"""The policy of code the caller runs itself (eager ops, traced functions): no confinement."""


def _folders(roots: tuple[Path, ...], write: bool) -> str:
    if not roots:
        return ("the folders it may write to (none: pass output_dir= to `load` for a folder it "
                "may write in)") if write else "the folders it may read"
    return "the folders it may " + ("write to" if write else "read") + ": " + ", ".join(map(str, roots))


def asset_path(model_dir: Path, filename: str, origin: str, access: FileAccess) -> Path:
    """The path of an asset's copy, `model_dir/assets/<filename>`, checked (unless `access`
    is unrestricted) to stay inside `model_dir` once symbolic links (the file's or
    `assets/`'s) are resolved. `origin` names where the asset is recorded, for the error."""
    return model_file(model_dir, model_dir / "assets" / filename, f"asset {filename!r} ({origin})", access)


def model_file(model_dir: Path, path: Path, what: str, access: FileAccess) -> Path:
    """`path`, a file the loader reads from the model (`what` names it for the error: an
    asset, the variables' index or a data shard), checked (unless `access` is unrestricted)
    to stay inside `model_dir` once symbolic links are resolved: a link, to the file or to a
    folder on its way (`assets/`, `variables/`), may not lead the loader out of the model."""
    if access.unrestricted:
        return path
    resolved = _resolved(path, f"{model_dir}: {what}")
    if resolved.is_relative_to(model_dir.resolve()):
        return path
    raise FileAccessError(f"{model_dir}: {what} leads outside the model directory, to {resolved}; "
                          f"a model's files must be inside it (to allow it anyway, {OPT_OUT})")


def _resolved(path: str | Path, who: str) -> Path:
    """`path` made absolute with every symbolic link resolved, each before the `..` that
    follows it, as the system resolves it when opening the file."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError, ValueError) as err:  # a link loop, a NUL byte in the name
        raise FileAccessError(f"{who}: cannot resolve the path {str(path)!r}: {err}") from None


def file_system_ops(meta_graph: meta_graph_pb2.MetaGraphDef) -> list[dict]:
    """Every node of the graph and of its library functions whose op touches files
    (FILE_SYSTEM_OPS), as {"op", "node", "function", "saver"}: `function` is None for the
    top-level graph; `saver` tells whether the node belongs to the model's saver (the ops that
    `saver_def` names, which save and restore its variables), sorted by function, op and node."""
    graph = meta_graph.graph_def
    saver_nodes, saver_functions = _saver_parts(meta_graph)
    found = [{"op": n.op, "node": n.name, "function": None, "saver": n.name in saver_nodes}
             for n in graph.node if n.op in FILE_SYSTEM_OPS]
    found += [{"op": n.op, "node": n.name, "function": f.signature.name,
               "saver": f.signature.name in saver_functions}
              for f in graph.library.function for n in f.node_def if n.op in FILE_SYSTEM_OPS]
    return sorted(found, key=lambda o: (o["function"] or "", o["op"], o["node"]))


def _saver_parts(meta_graph: meta_graph_pb2.MetaGraphDef) -> tuple[set[str], set[str]]:
    """The top-level nodes the saver's save and restore ops depend on, and the library
    functions those nodes call (TensorFlow 2 savers are functions)."""
    saver = meta_graph.saver_def
    nodes = {n.name: n for n in meta_graph.graph_def.node}
    seen = needed_nodes(nodes, [name.split(":")[0] for name in (saver.save_tensor_name, saver.restore_op_name)
                                if name])
    functions = {attr.func.name for name in seen for attr in nodes[name].attr.values() if attr.func.name}
    return seen, functions
