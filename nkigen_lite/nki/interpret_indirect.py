"""Interpreter rules of the indirect DMAs (ops/indirect.py). An index outside the HBM tensor's
rows is an IndexOutOfRange, an InterpretError (the hardware DMA raises in its default ``oob_mode.error``); a
scatter whose repeated indices carry differing rows is one too (the write order of one
indirect DMA is unspecified on the hardware)."""

from __future__ import annotations

import numpy as np

from ..ir.errors import IndexOutOfRange
from . import ops
from .interpret import NkiInterpreter as I


def _rows(it, op, args):
    """(HBM buffer, index tuple selecting the indexed rows' windows, ids)."""
    ids = np.asarray(it.read_access(op, "index", args)).reshape(-1).astype(np.int64)
    name = op.indirect
    buf, sl, _shape, _ = it.window(op, name, op.attrs[name], args)
    n = buf.data.shape[0] if buf.data.ndim else 1
    bad = (ids < 0) | (ids >= n)
    if bad.any():
        p = int(np.argmax(bad))
        err = it.fail(
            op,
            f"index {int(ids[p])} (partition {p}) is out of range [0, {n}) for {buf.label}: the "
            "DMA's run-time bounds check raises (oob_mode.error)",
        )
        raise IndexOutOfRange(str(err))
    if not buf.alive:
        raise it.fail(op, f"{name} uses {buf.label} after its dealloc")
    return buf, (ids,) + tuple(sl[1:]), ids


@I.impl(ops.DmaGatherOp)
def _gather(it, op, args):
    buf, key, _ = _rows(it, op, args)
    w = buf.written[key]
    if not w.all():
        bad = [int(i) for i in np.argwhere(~w)[0]]
        raise it.fail(op, f"src reads unwritten (poisoned) memory of {buf.label} at gathered element {bad}")
    it.write_access(op, "dst", args, buf.data[key].reshape(-1))


@I.impl(ops.DmaScatterOp)
def _scatter(it, op, args):
    buf, key, ids = _rows(it, op, args)
    if buf.read_only:
        raise it.fail(op, f"dst writes kernel input {buf.label}")
    vals = np.asarray(it.read_access(op, "src", args))
    rows = vals.reshape(buf.data[key].shape)
    order = np.argsort(ids, kind="stable")
    s_ids, s_rows = ids[order], rows[order]
    same = s_ids[1:] == s_ids[:-1]
    if same.any():
        a, b = s_rows[1:][same], s_rows[:-1][same]
        differ = ~((a == b) | ((a != a) & (b != b)))
        if differ.any():
            k = int(np.argwhere(same)[int(np.argwhere(differ.reshape(differ.shape[0], -1).any(1))[0][0])][0])
            raise it.fail(
                op,
                f"index {int(s_ids[k + 1])} appears more than once with differing rows; the write order "
                "of one indirect DMA is unspecified (decompose makes repeated ids write identical rows)",
            )
    buf.data[key] = rows
    buf.written[key] = True
