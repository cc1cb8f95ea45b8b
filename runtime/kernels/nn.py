"""Kernels: nn (being written)."""
