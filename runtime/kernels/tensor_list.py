"""Kernels: tensor_list (being written)."""
