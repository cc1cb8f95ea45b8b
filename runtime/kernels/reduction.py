"""Kernels: reduction (being written)."""
