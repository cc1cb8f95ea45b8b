"""Kernels: gather (being written)."""
