"""Kernels: array (being written)."""
