"""The `sm.config` namespace."""
from __future__ import annotations

from savedmodel.context import functions_run_eagerly, run_functions_eagerly

__all__ = ["functions_run_eagerly", "run_functions_eagerly"]
