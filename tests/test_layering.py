"""Importing the runtime must not import the authoring side or the command line."""
from __future__ import annotations

import subprocess
import sys


def test_runtime_import_stays_in_its_layer():
    code = ("import sys, savedmodel.runtime.tensor_bundle, savedmodel.runtime.saved_model_file\n"
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('savedmodel'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    outside = [m for m in loaded if m != "savedmodel"
               and not m.startswith(("savedmodel.runtime", "savedmodel.protos"))]
    assert "savedmodel.runtime.tensor_bundle" in loaded
    assert outside == []


def test_runtime_does_not_import_tensorflow():
    code = "import sys, savedmodel.runtime.tensor_bundle; print('tensorflow' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_codec_library_is_imported_only_when_a_codec_op_runs():
    """Pillow is an optional extra (`savedmodel[image]`): loading every kernel must not need it."""
    code = "import sys, savedmodel.runtime.kernels; print('PIL' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_server_deploys_only_the_runtime():
    """`savedmodel.serve` runs models through the runtime: importing all of it (REST, batching,
    the command's server) must not import the authoring side."""
    code = ("import sys, savedmodel.serve, savedmodel.serve.rest, savedmodel.serve.server, "
            "savedmodel.serve.config\n"
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('savedmodel'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    outside = [m for m in loaded if m != "savedmodel"
               and not m.startswith(("savedmodel.runtime", "savedmodel.protos", "savedmodel.serve"))]
    assert "savedmodel.serve.rest" in loaded
    assert outside == []
