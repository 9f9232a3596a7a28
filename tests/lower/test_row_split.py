"""Softmax and log_softmax over a few long rows split each row over the partitions
(transforms/lower/row_split.py, issue 12 point 6).

References are float64 NumPy computed here; tolerances are the output dtype's
(testing/tolerance.py) times the stated factor. Counts asserted: HBM traffic (the input read
once, the output written once), the partitions every DMA of the input and output uses, their
contiguous descriptor size, executed instructions."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.dtypes import bfloat16, float32
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost
from nkigen_lite.tensor.builder import Builder
from nkigen_lite.testing.tolerance import assert_close, tolerance_for

from .scale_helpers import check_three_ways

RNG = np.random.default_rng(1206)


def ref_softmax(x, log=False):
    x = np.asarray(x, np.float64)
    m = x.max(-1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(-1, keepdims=True)
    return (x - m) - np.log(s) if log else e / s


def composite(name: str, shape, dtype):
    b = Builder(f"{name}_{'x'.join(map(str, shape))}")
    x = b.add_input("x", shape, dtype)
    b.set_outputs({"y": getattr(nk.ops, name)(x, axis=-1)})
    return b.graph


def primitive_softmax(shape, dtype):
    """exp(x - max) / sum, written with a division (decompose makes it a reciprocal multiply)."""
    b = Builder("softmax_div")
    x = b.add_input("x", shape, dtype)
    e = b.exp(x - b.max(x, axis=-1, keepdims=True))
    b.set_outputs({"y": e / b.sum(e, axis=-1, keepdims=True)})
    return b.graph


def _root(v):
    """The HBM tensor an access's tensor views (itself when it is not an hbm_view)."""
    op = v.defining_op
    return op.operand(0) if op is not None and op.name == "nki.hbm_view" else v


def io_dmas(k: nk.Kernel) -> list[DmaCopyOp]:
    """DMAs reading the input x or writing the output y."""
    x = k.nki.inputs[k.nki.input_names.index("x")]
    y = k.nki.outputs["y"]
    return [
        op
        for op in k.nki.walk()
        if isinstance(op, DmaCopyOp)
        and (_root(op.access("src").tensor) is x or _root(op.access("dst").tensor) is y)
    ]


def assert_uses_the_machine(k: nk.Kernel, partitions: int = 128) -> None:
    s = k.stats()
    assert s.dma_bytes == s.min_hbm_bytes, (s.dma_bytes, s.min_hbm_bytes)  # read once, write once
    dmas = io_dmas(k)
    assert dmas
    for op in dmas:
        cost = dma_cost(op, TRN2)
        assert cost.partitions == partitions, (op, cost.partitions)
        assert cost.chunk_bytes >= 512, (op, cost.chunk_bytes)
    assert "row split" in str(k.nki)


def test_vocab_softmax_model_target():
    """softmax 4x151,936 f32 (issue 12 target, was 4 partitions and 1.5x traffic): 128
    partitions, traffic exactly the minimum, 8 DMAs, under 60 executed instructions."""
    g = composite("softmax", (4, 151936), float32)
    x = (RNG.standard_normal((4, 151936)) * 4).astype(np.float32)
    k, _ = check_three_ways(g, {"x": x}, {"y": ref_softmax(x)})
    assert_uses_the_machine(k)
    assert k.stats().dma_count == 8
    assert k.stats().instructions_dynamic <= 60


@pytest.mark.parametrize(
    "name,shape,dtype,partitions",
    [
        ("log_softmax", (2, 65536), float32, 128),
        ("softmax", (1, 151936), bfloat16, 128),
        ("log_softmax", (1, 32768), bfloat16, 128),
        ("softmax", (3, 5, 8192), float32, 64),  # 64 columns on 128 partitions: 256 B descriptors
    ],
    ids=["log-2x64k-f32", "decode-vocab-bf16", "log-decode-bf16", "3d-rows"],
)
def test_few_long_rows(name, shape, dtype, partitions):
    g = composite(name, shape, dtype)
    x = (RNG.standard_normal(shape) * 3).astype(dtype.np_dtype)
    k, _ = check_three_ways(g, {"x": x}, {"y": ref_softmax(x, log=name == "log_softmax")})
    assert_uses_the_machine(k, partitions)


def test_primitive_softmax_with_division():
    g = primitive_softmax((2, 16375), float32)  # 125 x 131: 128, 127 and 126 do not divide
    x = RNG.standard_normal((2, 16375)).astype(np.float32)
    k, _ = check_three_ways(g, {"x": x}, {"y": ref_softmax(x)})
    assert_uses_the_machine(k, partitions=125)


def test_masked_logits_and_special_values():
    """-inf over whole partition chunks (masked vocabulary) gives zeros there and the right
    values elsewhere; a row holding +inf is NaN as in NumPy and leaves the other rows exact."""
    x = RNG.standard_normal((3, 65536)).astype(np.float32)
    x[0, :20000] = -np.inf  # partitions 0..39 of row 0 see only -inf
    x[1, 100:60000] = -np.inf
    x[2, 777] = np.inf
    g = composite("softmax", (3, 65536), float32)
    k = nk.compile(g)
    assert "row split" in str(k.nki)
    with np.errstate(invalid="ignore"):
        ref = ref_softmax(x)
    rtol, atol = tolerance_for(float32)
    for how, got in (("Kernel.run", k.run({"x": x})["y"]), ("nk.simulate", nk.simulate(k, {"x": x})["y"])):
        assert np.isnan(got[2]).all(), how
        assert_close(got[:2], ref[:2], float32, what=how, rtol=rtol, atol=atol)
        assert (got[0, :20000] == 0).all()


def test_many_rows_keep_the_row_major_lowering():
    """64 rows fill the partitions row by row: not claimed."""
    g = composite("softmax", (64, 65536), float32)
    assert "row split" not in str(nk.compile(g).nki)


def test_other_reader_of_an_intermediate_is_not_claimed():
    """The row max is an output too: the row split would not produce it, so it is not used."""
    b = Builder("softmax_and_max")
    x = b.add_input("x", (2, 65536), float32)
    m = b.max(x, axis=-1, keepdims=True)
    e = b.exp(x - m)
    b.set_outputs({"y": e / b.sum(e, axis=-1, keepdims=True), "m": m})
    xin = RNG.standard_normal((2, 65536)).astype(np.float32)
    k, _ = check_three_ways(
        b.graph, {"x": xin}, {"y": ref_softmax(xin), "m": xin.astype(np.float64).max(-1, keepdims=True)}
    )
    assert "row split" not in str(k.nki)


def test_bf16_input_keeps_bf16_loads():
    """A bf16 input is loaded as bf16 (half the bytes of an f32 staging) and the f32 result of
    the softmax composite is rounded once to bf16."""
    g = composite("softmax", (1, 151936), bfloat16)
    x = RNG.standard_normal((1, 151936)).astype(ml_dtypes.bfloat16)
    k = nk.compile(g)
    assert k.stats().dma_bytes == 2 * 151936 * 2
    got = k.run({"x": x})["y"]
    assert got.dtype == ml_dtypes.bfloat16
    assert_close(got, ref_softmax(x), bfloat16, what="bf16 softmax")
