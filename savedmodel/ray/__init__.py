"""Batch inference on Ray Data (the optional `ray` extra): `SavedModelPredictor`, the callable
class for `Dataset.map_batches(..., compute=ray.data.ActorPoolStrategy(...))`, and `run_batch`,
the whole pipeline behind `savedmodel batch` (read, map, write in order)."""
from savedmodel.ray.pipeline import BatchError, BatchResult, parse_columns, run_batch
from savedmodel.ray.predictor import ERROR_COLUMN, BatchColumnsError, RowError, SavedModelPredictor

__all__ = ["ERROR_COLUMN", "BatchColumnsError", "BatchError", "BatchResult", "RowError",
           "SavedModelPredictor", "parse_columns", "run_batch"]
