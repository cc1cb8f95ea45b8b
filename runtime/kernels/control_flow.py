"""Kernels: control_flow (being written)."""
