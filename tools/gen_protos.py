"""Regenerate the committed protobuf modules in protos/ from the .proto files beside them.

protoc names generated imports after the path a .proto has under its include root, so the
sources are staged as savedmodel/protos/*.proto in a scratch root; that makes the generated
modules import each other as `savedmodel.protos.x_pb2`, the package path users import.

Usage: python tools/gen_protos.py [OUT_DIR]   (default: protos/, in place)
Needs grpcio-tools (the `test` extra), pinned so that output is reproducible.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent.parent / "protos"
IMPORT_PREFIX = Path("savedmodel") / "protos"


def proto_sources() -> list[Path]:
    """The .proto files of the package, sorted so generation order is stable."""
    return sorted(PROTO_DIR.glob("*.proto"))


def generate(out_dir: Path) -> list[Path]:
    """Write `*_pb2.py` and `*_pb2.pyi` for every source into out_dir; return the written files."""
    from grpc_tools import protoc
    import grpc_tools

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        staged = root / "src" / IMPORT_PREFIX
        staged.mkdir(parents=True)
        for src in proto_sources():
            shutil.copyfile(src, staged / src.name)
        gen = root / "gen"
        gen.mkdir()
        args = ["protoc", f"-I{root / 'src'}", f"-I{well_known}",
                f"--python_out={gen}", f"--pyi_out={gen}"]
        args += [str(IMPORT_PREFIX / src.name) for src in proto_sources()]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed; see the messages above")
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for produced in sorted((gen / IMPORT_PREFIX).iterdir()):
            target = out_dir / produced.name
            shutil.copyfile(produced, target)
            written.append(target)
        return written


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="gen_protos.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=PROTO_DIR,
                        help="where to write the *_pb2.py and *_pb2.pyi modules (default: protos/, in place)")
    for path in generate(parser.parse_args(argv[1:]).out_dir):
        print(path)


if __name__ == "__main__":
    main(sys.argv)
