"""Kernels: logging (being written)."""
