"""Tensor dialect: whole-tensor ops with NumPy semantics, builder, interpreter."""
