"""Loads of elementwise loops issued two iterations ahead (transforms/lower/load_ahead.py).

Small shapes (a ``tile_size`` knob of 32 rows gives 20 row tiles) run on the NKI interpreter
against float64 NumPy: comparisons exactly, f32 results within 1e-6 relative (one f32 rounding
per op), and bit for bit against the kernel compiled without the pass. Big shapes are checked
by counts on the IR and by the cost model's scheduled estimate (deterministic)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp
from nkigen_lite.nki.types import MemorySpace
from nkigen_lite.transforms.lower import deallocs

F32, BF16 = nk.float32, nk.bfloat16

CASES = {
    "less": (lambda x, y: x < y, [((640, 256), F32), ((640, 256), F32)]),
    "bf16 + f32": (lambda x, y: x + y, [((640, 256), BF16), ((640, 256), F32)]),
    "x * c + 1": (lambda x, c: x * c + 1.0, [((640, 256), F32), ((640, 1), F32)]),
}


def _compile(fn, specs, knobs=None) -> nk.Kernel:
    return nk.compile(nk.trace(fn).trace(*[nk.TensorType(s, d) for s, d in specs]), knobs=knobs)


def _without(monkeypatch, fn, specs, knobs=None) -> nk.Kernel:
    with monkeypatch.context() as m:
        m.setattr(deallocs, "load_ahead", lambda g, t: 0)
        return _compile(fn, specs, knobs)


def _args(specs, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(ml_dtypes.bfloat16 if d is BF16 else np.float32) for s, d in specs]


def _top_loads(k: nk.Kernel) -> int:
    """Loads issued before the kernel's first loop (the prologue of the pipelined loop)."""
    n = 0
    for op in k.nki.body:
        if isinstance(op, ForiLoopOp):
            break
        if isinstance(op, DmaCopyOp) and op.access("src").tensor.type.space is MemorySpace.HBM:
            n += 1
    return n


@pytest.mark.parametrize("name", list(CASES))
def test_small_loop_results(monkeypatch, name):
    fn, specs = CASES[name]
    knobs = {"x": {"tile_size": 32}}
    k = _compile(fn, specs, knobs)
    base = _without(monkeypatch, fn, specs, knobs)
    loads = sum(1 for s, _ in specs)
    assert _top_loads(k) == 2 * loads  # tiles 0 and 1 before the loop
    assert _top_loads(base) == 0
    assert k.estimate().scheduled_ns < base.estimate().scheduled_ns
    args = _args(specs)
    out = np.asarray(k(*args))
    np.testing.assert_array_equal(out, np.asarray(base(*args)))
    ref = fn(*[a.astype(np.float64) for a in args])
    if ref.dtype == bool:
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-6, atol=1e-6)


def test_big_compare_is_dma_bound():
    """x < y at 2048x4096 f32: 16 row tiles, loads two tiles ahead; before the pass the second
    load of every other tile queued behind the previous store (298 us, 1.42x the roofline)."""
    fn, specs = lambda x, y: x < y, [((2048, 4096), F32), ((2048, 4096), F32)]
    k = _compile(fn, specs)
    assert _top_loads(k) == 4
    loops = [op for op in k.nki.body if isinstance(op, ForiLoopOp)]
    assert len(loops) == 1 and loops[0].trip_count == 4  # 3 tiles a body: tiles 0..11
    assert k.stats().hbm_traffic_ratio == 1.0
    assert k.estimate().ratio < 1.1
