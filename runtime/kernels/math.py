"""Kernels: math (being written)."""
