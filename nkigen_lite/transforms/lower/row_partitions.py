"""A fusion group holding one row spreads its outer free dim over the partitions.

The layout solver follows values through reshapes: a decode step's ``q = (x @ Wq).reshape(16,
128)`` keeps the matmul's one row on the partitions and the 16 heads in the free dims, so the
per-head norm and RoPE ran on ``[1, 16·128]`` tiles — every instruction on one partition, 16
times the elements per partition it needs (a GpSimd multiply of 2,048 elements: 3.5 µs instead
of 0.2). When a group's partition dims hold a single row and its outermost dim of more than one
element is a free dim that is neither reduced nor accumulated, fits the partitions and has
another free dim inside it (so loads keep contiguous runs), that dim becomes the partition dim:
the group's values are loaded and stored with it on the partitions (a view of the same HBM
home) and row reductions stay over the trailing free dims. A group storing a value without
that dim (extent 1 along it) is left alone.
"""

from __future__ import annotations


def spread_single_row(roles: list, dom, red, acc, partitions: int, store_exts) -> None:
    """Rewrite ``roles`` in place (see the module docstring)."""
    rows = 1
    for d, r in enumerate(roles):
        if r == "P":
            rows *= dom[d]
    if rows != 1:
        return
    for d, r in enumerate(roles):
        if dom[d] == 1:
            continue
        # the outermost dim of more than one element: it must be free, neither reduced nor
        # accumulated, fit the partitions, and leave a free dim after it (loads keep runs)
        if r != "F" or d in red or d in acc or dom[d] > partitions:
            return
        if not any(roles[e] == "F" and dom[e] > 1 for e in range(d + 1, len(dom))):
            return
        if any(ext[d] == 1 for ext in store_exts):
            return  # a stored value broadcast along d: its rows would not be partitions
        for e in range(len(dom)):
            if roles[e] == "P":
                roles[e] = "F"  # extent 1
        roles[d] = "P"
        return
