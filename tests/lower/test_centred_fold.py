"""Centred values ``x - mean`` read only by activations and column multiplies are not
materialised (transforms/lower/centred.py): counts on the NKI IR, results against float64 NumPy
on the NKI interpreter and the simulator (fp32 tolerance 1e-5 relative and absolute, times 4 for
the 1,024-element row sums whose order differs from NumPy's)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ActivationOp, BnStatsOp, ForiLoopOp, TensorScalarOp
from nkigen_lite.testing.tolerance import assert_close, tolerance_for
from nkigen_lite.transforms.lower import deallocs
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.norms import layernorm_reference

F32 = nk.float32


def _executed(block) -> list:
    """Executed instructions, loops unrolled (the 4 row tiles run as straight code once
    software-pipelined, stage_pipeline.py)."""
    out = []
    for op in block:
        if isinstance(op, ForiLoopOp):
            for _ in range(op.trip_count):
                out += _executed(op.body)
        elif op.name not in ("nki.alloc", "nki.dealloc", "nki.hbm_view"):
            out.append(op)
    return out


def _full_width(op, n: int) -> bool:
    return max(op.access(name).free_size for name, _ in op.access_attrs()) >= n


def test_layernorm_row_tile_has_no_subtract_pass(monkeypatch):
    """Per 128-row tile of a 512x1024 layernorm: 4 full-row passes (the statistics: bn_stats
    over two 512-column chunks, moments.py; the centred multiply, × w, + b), not 5 (before
    bn_stats: a row sum and a square with its fused sum) nor 6 (with x - mean materialised); the
    centred multiply reads x once, as the fused VectorE (x - mean) * rstd or as the ScalarE
    activation x * rstd + (-mean * rstd) (elementwise.centred_multiply)."""
    with monkeypatch.context() as m:  # whole row tiles: the last one not split in halves
        m.setattr(deallocs, "split_last_store", lambda *a: False)
        k = nk.compile(get_workload("layernorm").graph(shape=(512, 1024)))
    body = _executed(k.nki.body)
    compute = [op for op in body if op.name.startswith("nki.") and op.name != "nki.dma_copy"]
    compute = [op for op in compute if not op.loc.startswith("load")]  # the w / b broadcasts
    # a pass may be one instruction or one per 512-column chunk or PSUM bank (psum_rows.py)
    cols = sum(
        max(op.access(n).free_size for n, _ in op.access_attrs()) for op in compute if _full_width(op, 512)
    )
    assert cols == 4 * 4 * 1024
    full = [op for op in compute if _full_width(op, 1024)]
    assert not any(op.loc == "tensor.sub %sub" for op in body)
    norms = [op for op in full if op.loc == "tensor.mul %mul_2"]
    stats = [op for op in body if isinstance(op, BnStatsOp)]
    assert len(norms) == 4 and len(stats) == 8
    assert not any(isinstance(op, ActivationOp) and op.attrs["op"] == "square" for op in body)
    for f, st in zip(norms, stats[::2]):
        if isinstance(f, TensorScalarOp):
            assert (f.attrs["op0"], f.attrs["op1"]) == ("subtract", "multiply")
        else:
            assert isinstance(f, ActivationOp) and f.attrs["op"] == "copy"
            assert f.access("bias") is not None and f.access("scale") is not None
        assert f.access("data").tensor.name_hint.startswith("x")
        assert st.access("data").tensor is f.access("data").tensor


@pytest.mark.parametrize("shape", [(512, 1024), (200, 96)])
def test_layernorm_matches_float64(shape):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 3 + 5).astype(np.float32)
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    k = nk.compile(get_workload("layernorm").graph(shape=shape))
    ref = layernorm_reference(x, w, b)["y"]
    rtol, atol = tolerance_for(F32)
    feeds = {"x": x, "w": w, "b": b}
    for what, got in (("interpreter", k.run(feeds)["y"]), ("simulator", nk.simulate(k, feeds)["y"])):
        assert_close(got, ref, F32, what=f"layernorm {shape} {what}", rtol=4 * rtol, atol=4 * atol)


def _centred(store_centred: bool, dtype=F32):
    """y = exp(x - m) * 2 + (x - m) * r with m the row max and r = 1 / (row sum of x²)."""
    b = nk.Builder("centred")
    x = b.add_input("x", (256, 384), dtype)
    m = b.max(x, axis=-1, keepdims=True)
    c = x - m
    r = 1.0 / (b.sum(x * x, axis=-1, keepdims=True) + 1.0)
    out = {"y": b.exp(c) * 2.0 + c * r}
    if store_centred:
        out["c"] = c
    b.set_outputs(out)
    return b.graph


def _reference(x):
    x = x.astype(np.float64)
    c = x - x.max(axis=-1, keepdims=True)
    r = 1.0 / ((x * x).sum(axis=-1, keepdims=True) + 1.0)
    return {"y": np.exp(c) * 2.0 + c * r, "c": c}


@pytest.mark.parametrize("store_centred", [False, True])
def test_centred_value_with_activation_and_multiply(store_centred):
    """Folded when only exp and the multiply read x - max; materialised (and stored) when it is
    also an output. Same results either way."""
    g = _centred(store_centred)
    k = nk.compile(g)
    subs = [op for op in k.nki.walk() if op.loc == "tensor.sub %sub"]
    assert bool(subs) == store_centred
    x = np.random.default_rng(3).standard_normal((256, 384)).astype(np.float32)
    ref = _reference(x)
    rtol, atol = tolerance_for(F32)
    for what, got in (("interpreter", k.run({"x": x})), ("simulator", nk.simulate(k, {"x": x}))):
        for name in got:
            assert_close(got[name], ref[name], F32, what=f"{what} {name}", rtol=4 * rtol, atol=4 * atol)


def test_bf16_centred_value_is_materialised():
    """A bf16 x - m is rounded to bf16 before the multiply: the fused fp32 form would differ."""
    k = nk.compile(_centred(False, nk.bfloat16))
    assert any(op.loc == "tensor.sub %sub" for op in k.nki.walk())


def test_fold_is_deterministic():
    a, b = (nk.compile(get_workload("layernorm").graph(shape=(512, 1024))) for _ in range(2))
    assert str(a.nki) == str(b.nki)
    assert a.nki_source() == b.nki_source()
