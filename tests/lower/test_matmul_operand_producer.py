"""An elementwise producer of a matmul operand (``(a * 2.0) @ b``, ``np.exp(x) @ w``,
``x.astype(bf16) @ w``, ``(x * g) @ w``) keeps its natural layout: rows on the partitions, the
contiguous dim free, so its inputs load as whole rows; the matmul transposes the row tile on the
Tensor engine. Before, the layout solver pushed the matmul's "K on the partitions" requirement
back into the producer: its input was loaded, and its result stored to HBM scratch, with
element-wise (one element per descriptor) transposing DMAs (~75x the roofline for the first).
The same for a right operand that is a transposed view (``a @ (k * 2.0).T``) and for a
product reshaped, sliced or concatenated before the matmul; and a product
computed with its last dim on the partitions (``(a.T * 2.0) @ b``, ``a @ (k.T * 2.0)``: the
input's rows, loaded whole) is stored to a scratch buffer in the order of its tiles
(lower/scratch_order.py) instead of row-major with one element per descriptor.

Every graph is compared with a float64 NumPy reference (the function itself run on float64
copies of the inputs) through nk.run, Kernel.run and nk.simulate, with the output dtype's
tolerance (f32 1e-5, bf16 1e-2, relative to the largest reference value); DMA descriptor
sizes, HBM traffic and HBM buffers are asserted as counts."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllocOp, DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.nki.types import HbmType
from nkigen_lite.perf.dma_cost import dma_cost

from .scale_helpers import check_three_ways

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(1212)


def _r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _scaled(a, b):
    return (a * 2.0) @ b


def _exp_chain(a, b):
    return np.exp(a * 0.5) @ b


def _cast(a, b):
    return a.astype(BF16) @ b


def _gain(x, g, w):
    return (x * g) @ w


def _where(a, b):
    return np.where(a > 0, a, 0.1 * a) @ b


CASES = {
    "scaled-f32": (_scaled, lambda: (_r(256, 512), _r(512, 256))),
    "exp-chain-f32": (_exp_chain, lambda: (_r(256, 512), _r(512, 256))),
    "cast-bf16": (_cast, lambda: (_r(256, 512), _r(512, 256, dtype=BF16))),
    "gain-f32": (_gain, lambda: (_r(256, 1024), _r(1024), _r(1024, 512))),
    "where-f32": (_where, lambda: (_r(256, 512), _r(512, 256))),
    "m200-k128-f32": (_scaled, lambda: (_r(200, 128), _r(128, 256))),
    "m130-k4096-bf16": (_scaled, lambda: (_r(130, 4096, dtype=BF16), _r(4096, 128, dtype=BF16))),
    "one-row-f32": (_scaled, lambda: (_r(1, 1024), _r(1024, 512))),
    "batched-f32": (_scaled, lambda: (_r(2, 200, 128), _r(2, 128, 256))),
    "rank3-by-matrix-f32": (_scaled, lambda: (_r(2, 256, 256), _r(256, 512))),
}


def _compile(fn, arrays):
    g = nk.trace(fn).trace(*arrays)
    return g, nk.compile(g)


def _check(fn, arrays, scale=1.0):
    g, k = _compile(fn, arrays)
    ref = fn(*[x.astype(np.float64) for x in arrays])
    ref = ref if isinstance(ref, tuple) else (ref,)
    check_three_ways(g, dict(zip(g.input_names, arrays)), dict(zip(g.outputs, ref)), kernel=k, scale=scale)
    return k


def _row_bytes(k) -> int:
    """The shortest contiguous row (bytes) of the kernel's inputs and outputs, at most 512."""
    g = k.nki
    tensors = list(g.inputs) + list(g.outputs.values())
    return min([512] + [t.type.shape[-1] * t.type.dtype.itemsize for t in tensors])


def _hbm_buffers(k) -> int:
    """HBM buffers the kernel allocates (its outputs and any scratch)."""
    return sum(1 for op in k.nki.walk() if isinstance(op, AllocOp) and isinstance(op.result.type, HbmType))


def assert_rows_and_no_scratch(k) -> None:
    """Every DMA moves whole rows (or >= 512 contiguous bytes), nothing goes through HBM
    scratch, and HBM traffic is within 1.05x the minimum."""
    chunks = [dma_cost(op, TRN2).chunk_bytes for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    assert min(chunks) >= _row_bytes(k), sorted(set(chunks))
    assert _hbm_buffers(k) == len(k.nki.outputs)
    s = k.stats()
    assert s.dma_bytes <= 1.05 * s.min_hbm_bytes, s.summary()


@pytest.mark.parametrize("case", list(CASES))
def test_producer_keeps_rows_on_partitions(case):
    fn, make = CASES[case]
    k = _check(fn, make())
    assert_rows_and_no_scratch(k)


def test_lead_case_estimate():
    """The lead's case, 256x512 @ 512x256 f32: 75.2x the roofline before (273.6 us scheduled,
    1.8x the minimum traffic); now within 5x (a small kernel: fixed DMA costs dominate; the
    plain a @ b is 3.1x)."""
    _, k = _compile(_scaled, (_r(256, 512), _r(512, 256)))
    assert k.estimate().ratio <= 5.0, k.estimate().summary()
    assert not k.warnings() or all("element-wise" not in str(w) for w in k.warnings())


def test_shared_producer_is_transposed_once_per_row_tile():
    """One elementwise value feeding two matmuls (q / k projections of a normalised x): the
    product is computed once per row tile and both matmuls read one conversion."""
    arrays = (_r(256, 512), _r(512, 256), _r(512, 128))

    def two(a, b, c):
        h = a * 2.0
        return h @ b, h @ c

    k = _check(two, arrays)
    assert_rows_and_no_scratch(k)
    text = k.ir("layout")
    assert text.count("tensor.layout_convert") == 1, text


# (function, inputs, which inputs the product is the size of): the product still goes through
# HBM scratch once (a right operand is read from HBM by the matmul; a product with K on the
# partitions, or reshaped / sliced / concatenated, is not a row tile the matmul reads), with
# whole-row descriptors; "rhs-scaled" did so before too (a guard)
THROUGH_SCRATCH = {
    "rhs-scaled": (lambda a, b: a @ (b * 2.0), lambda: (_r(256, 512), _r(512, 256)), (1,)),
    "rhs-transposed-after": (lambda a, k: a @ (k * 2.0).T, lambda: (_r(256, 512), _r(256, 512)), (1,)),
    "rhs-transposed-before": (lambda a, k: a @ (k.T * 2.0), lambda: (_r(256, 512), _r(256, 512)), (1,)),
    "lhs-transposed-before": (lambda a, b: (a.T * 2.0) @ b, lambda: (_r(512, 256), _r(512, 256)), (0,)),
    "batched-rhs-transposed": (
        lambda q, k: q @ (k.transpose(0, 2, 1) * 2.0),
        lambda: (_r(4, 256, 128), _r(4, 512, 128)),
        (1,),
    ),
    "lhs-reshaped": (
        lambda x, w: (x * 2.0).reshape(512, 256) @ w,
        lambda: (_r(2, 256, 256), _r(256, 512)),
        (0,),
    ),
    "lhs-sliced": (lambda x, w: (x * 2.0)[:, :256] @ w, lambda: (_r(256, 512), _r(256, 512)), (0,)),
    "lhs-concat": (
        lambda a, b, w: np.concatenate([a * 2.0, b * 3.0], 1) @ w,
        lambda: (_r(256, 256), _r(256, 256), _r(512, 256)),
        (0, 1),
    ),
}


@pytest.mark.parametrize("case", list(THROUGH_SCRATCH))
def test_scratch_round_trip_moves_whole_rows(case):
    """Every DMA moves whole rows (was one element per descriptor, 40-76x the roofline) and
    the traffic is at most the minimum plus one store and one load of the product."""
    fn, make, parts = THROUGH_SCRATCH[case]
    arrays = make()
    k = _check(fn, arrays)
    chunks = [dma_cost(op, TRN2).chunk_bytes for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    assert min(chunks) >= _row_bytes(k), sorted(set(chunks))
    product = sum(arrays[i].nbytes for i in parts)
    s = k.stats()
    assert s.dma_bytes <= s.min_hbm_bytes + 2 * product, s.summary()
