"""Kernels: activation (being written)."""
