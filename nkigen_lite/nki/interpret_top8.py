"""Interpreter rules of the top-8 instructions (ops/top8.py).

Values are compared as fp32 (the documented conversion); -0.0 equals +0.0. What the pages do
not specify is refused instead of guessed (stricter than the chip):

- a NaN in max8's ``src`` or in find_index8 / match_replace8's ``data`` or ``vals`` (the order
  of NaN is undocumented);
- match_replace8 with a value of ``vals`` that ``data`` does not hold often enough (undefined
  behaviour on the chip).

max8 picks, among equal values, the element at the lower position first (its value is that
element's, so a -0.0 keeps its sign); the documented behaviours are modelled as stated:
find_index8 gives repeated values successive matches in ascending order and the all-ones
sentinel for a missing value; match_replace8 replaces the first k occurrences of a value that
``vals`` holds k times.
"""

from __future__ import annotations

import numpy as np

from . import ops
from .interpret import NkiInterpreter as I


def _rows(it, op, name, args) -> np.ndarray:
    x = np.asarray(it.read_access(op, name, args))
    x = x.reshape(x.shape[0], -1).astype(np.float32)
    if np.isnan(x).any():
        p = int(np.argwhere(np.isnan(x))[0][0])
        raise it.fail(
            op,
            f"{name} holds NaN (partition {p}); the order of NaN in {op.name} is undocumented, so "
            "the simulated chip refuses it",
        )
    return x


def _matches(x: np.ndarray, vals: np.ndarray):
    """Per partition, for each of the 8 values the position of its next unused match (ascending
    over repeated values), or -1."""
    out = np.full(vals.shape, -1, dtype=np.int64)
    for j in range(vals.shape[1]):
        v = vals[:, j : j + 1]
        rank = np.sum(vals[:, :j] == v, axis=1, keepdims=True)  # earlier copies of this value
        eq = x == v
        hit = eq & (np.cumsum(eq, axis=1) == rank + 1)
        found = hit.any(axis=1)
        out[found, j] = np.argmax(hit[found], axis=1)
    return out


@I.impl(ops.Max8Op)
def _max8(it, op, args):
    x = _rows(it, op, "src", args)
    order = np.argsort(-x, axis=1, kind="stable")[:, : it.target.top8_width]
    it.write_access(op, "dst", args, np.take_along_axis(x, order, axis=1))


@I.impl(ops.FindIndex8Op)
def _find_index8(it, op, args):
    x = _rows(it, op, "data", args)
    vals = _rows(it, op, "vals", args)
    pos = _matches(x, vals)
    sentinel = np.iinfo(op.access("dst").dtype.np_dtype).max  # all ones
    it.write_access(op, "dst", args, np.where(pos < 0, sentinel, pos).astype(np.int64))


@I.impl(ops.MatchReplace8Op)
def _match_replace8(it, op, args):
    raw = np.asarray(it.read_access(op, "data", args))
    x = _rows(it, op, "data", args)
    vals = _rows(it, op, "vals", args)
    pos = _matches(x, vals)
    if (pos < 0).any():
        p, j = (int(i) for i in np.argwhere(pos < 0)[0])
        raise it.fail(
            op,
            f"vals[{p}, {j}] = {vals[p, j]!r} is not in data often enough (partition {p}); "
            "replacing a value data does not hold is undefined on the chip",
        )
    out = raw.reshape(raw.shape[0], -1).astype(np.float32)
    rows = np.repeat(np.arange(x.shape[0]), vals.shape[1])
    out[rows, pos.reshape(-1)] = np.float32(op.attrs["imm"])
    same = op.access("dst").dtype is op.access("data").dtype
    if same:  # untouched elements move bit for bit
        keep = raw.reshape(raw.shape[0], -1).copy()
        keep[rows, pos.reshape(-1)] = np.asarray(np.float32(op.attrs["imm"])).astype(keep.dtype)
        out = keep
    it.write_access(op, "dst", args, out)
