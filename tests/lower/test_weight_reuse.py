"""Layer-scale weight reuse (transforms/lower/resident.py): in a row pipeline over sequence
tiles, a weight that fits SBUF beside the pipeline's tiles is loaded once for all row tiles;
one that does not is streamed per row tile as before. Bounds are DMA byte counts per input."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp, HbmViewOp
from nkigen_lite.workloads import get_workload

BF16 = ml_dtypes.bfloat16


def _bytes_read(kern) -> dict[str, int]:
    """HBM bytes each kernel input is read by DMAs, trip counts included."""
    g = kern.nki
    names = {v: n for n, v in zip(g.input_names, g.inputs)}
    out = dict.fromkeys(names.values(), 0)

    def root(v):
        op = v.defining_op
        return op.operand(0) if isinstance(op, HbmViewOp) else v

    def walk(block, mult):
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.body, mult * op.trip_count)
            elif isinstance(op, DmaCopyOp):
                src = op.access("src")
                r = root(src.tensor)
                if r in names:
                    n = int(np.prod([d.size for d in src.dims]))
                    out[names[r]] += mult * n * r.type.dtype.itemsize

    walk(g.body, 1)
    return out


def _mlp(x, w_in, w1, w2):
    h = x / np.sqrt((x.astype(np.float32) ** 2).mean(-1, keepdims=True) + 1e-6) * w_in
    a = h.astype(BF16) @ w1
    return (a * (1 / (1 + np.exp(-a.astype(np.float32))))).astype(BF16) @ w2


def _inputs(seq, d, inter, seed=0):
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((seq, d)).astype(BF16),
        (1 + 0.1 * rng.standard_normal(d)).astype(BF16),
        (rng.standard_normal((d, inter)) / np.sqrt(d)).astype(BF16),
        (rng.standard_normal((inter, d)) / np.sqrt(inter)).astype(BF16),
    ]


def test_weights_that_fit_are_read_once_for_all_row_tiles():
    args = _inputs(384, 256, 512)  # 3 row tiles
    kern = nk.compile(_mlp, *args)
    read = _bytes_read(kern)
    assert read["w1"] == args[2].nbytes
    assert read["w2"] == args[3].nbytes
    # float64 reference of the same bf16 program; bf16 roundings of h, a, act and y dominate
    x, w_in, w1, w2 = (a.astype(np.float64) for a in args)
    h = (x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6) * w_in).astype(BF16).astype(np.float64)
    a = (h @ w1).astype(BF16).astype(np.float64)
    ref = (a / (1 + np.exp(-a))).astype(BF16).astype(np.float64) @ w2
    got = kern(*args).astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=0, atol=0.03 * np.abs(ref).max())


def test_weights_too_big_for_sbuf_stream_per_row_tile():
    z = [np.zeros(a.shape, a.dtype) for a in _inputs(384, 1024, 16384)]
    read = _bytes_read(nk.compile(_mlp, *z))
    # w1 is 1024 x 16384 bf16: 256 KiB per partition with K on the partitions, more than SBUF
    assert read["w1"] == 3 * z[2].nbytes


@pytest.mark.parametrize("seq", [128, 512, 2048])
def test_every_weight_of_a_qwen3_0_6b_layer_is_read_once(seq):
    w = get_workload("qwen3_layer")
    kern = nk.compile(w.graph(seq=seq, hidden=1024, heads=16, kv_heads=8, head_dim=128, inter=3072))
    g = kern.nki
    read = _bytes_read(kern)
    for name, v in zip(g.input_names, g.inputs):
        if name.startswith("w"):
            assert read[name] == v.type.dtype.itemsize * int(np.prod(v.type.shape)), name
    assert kern.stats().peak_sbuf_bytes <= nk.TRN2.sbuf_bytes_per_partition
