"""Kernels: checkpoint_ops (being written)."""
