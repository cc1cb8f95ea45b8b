"""Kernels: variables (being written)."""
