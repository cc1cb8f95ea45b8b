"""Kernels: strings (being written)."""
