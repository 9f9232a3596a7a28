"""Causal / grouped-query attention over few keys (canonical/grouped_attention.py ->
tensor.grouped_attention, lowered by lower/grouped_attention.py): K and V are read once per KV
head and never copied in HBM, DMAs move several heads each, fully masked key chunks are skipped,
and results match float64 NumPy (computed here, independently) on the NKI interpreter and the
simulator within the output dtype's tolerance (bf16: nkigen_lite.testing.tolerance)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, DmaTransposeOp, ForiLoopOp, HbmViewOp, TransposeOp
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower import grouped_attention as kernel

BF16 = ml_dtypes.bfloat16


def _reference(q, k, v, scale, causal, mask):
    """float64 softmax(scale q kᵀ + mask) v with each KV head repeated for its query heads."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    rep = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        n = s.shape[-1]
        s = s + np.triu(np.full((n, n), mask), 1)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def _gqa(mask=-1e4, causal=True):
    """Causal GQA as a model writes it: np.repeat of the KV heads and f32 casts before the
    matmuls, the mask an np.triu constant, the result cast back."""

    def gqa(q, k, v):
        rep = q.shape[-3] // k.shape[-3]
        kf = np.repeat(k, rep, axis=-3).astype(np.float32)
        vf = np.repeat(v, rep, axis=-3).astype(np.float32)
        s = q.astype(np.float32) @ np.swapaxes(kf, -1, -2) * np.float32(0.125)
        if causal:
            n = s.shape[-1]
            s = s + np.triu(np.full((n, n), mask, np.float32), 1)
        e = np.exp(s - s.max(-1, keepdims=True))
        return ((e / e.sum(-1, keepdims=True)) @ vf).astype(q.dtype)

    return gqa


def _inputs(hq, hk, s, d, dtype=BF16, seed=0, batch=()):
    rng = np.random.default_rng(seed)
    shapes = (batch + (hq, s, d), batch + (hk, s, d), batch + (hk, s, d))
    return [rng.standard_normal(sh).astype(dtype) for sh in shapes]


def _check(kern, arrays, ref, dtype, what):
    feeds = dict(zip("qkv", arrays))
    assert_close(kern.run(feeds)["y"], ref, dtype, what=f"{what}, NKI interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, dtype, what=f"{what}, simulator")


def _executed(kern, cls):
    """Executed NKI instructions of ``cls`` (loops multiplied out)."""
    n = 0

    def walk(block, mult):
        nonlocal n
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.body, mult * op.trip_count)
            elif isinstance(op, cls):
                n += mult

    walk(kern.nki.body, 1)
    return n


def _bytes_read(kern) -> dict[str, int]:
    g = kern.nki
    names = {v: n for n, v in zip(g.input_names, g.inputs)}
    out = dict.fromkeys(names.values(), 0)
    for op in g.body:
        if isinstance(op, DmaCopyOp):
            src = op.access("src")
            t = src.tensor
            root = t.defining_op.operand(0) if isinstance(t.defining_op, HbmViewOp) else t
            if root in names:
                out[names[root]] += int(np.prod([d.size for d in src.dims])) * t.type.dtype.itemsize
    return out


def test_causal_gqa_bf16_matches_float64():
    """4 query heads over 2 KV heads, 128 rows, head dim 64, bf16, written with np.repeat."""
    arrays = _inputs(4, 2, 128, 64)
    kern = nk.compile(_gqa(), *arrays)
    assert "tensor.grouped_attention" in kern.ir("cleanup")
    _check(kern, arrays, _reference(*arrays, 0.125, True, -1e4), nk.bfloat16, "causal GQA")


def test_model_target_shape_moves_each_byte_once_in_few_dmas():
    """The issue's causal GQA target (16 query / 8 KV heads, s128 d128 bf16): every input byte is
    read once (K and V once per KV head, never repeated in HBM), the output written once, and Q
    and K arrive transposed by DMA: 8 Q transposes (4 heads, one row-pair slot each), 4 K
    transposes (2 heads), 4 V loads (2 heads), 8 stores (one head pair each) (the row pipeline it
    replaced issued 48 DMAs, one per head and tile, and widened V by a casting DMA)."""
    arrays = _inputs(16, 8, 128, 128)
    kern = nk.compile(_gqa(), *arrays)
    stats = kern.stats()
    assert stats.dma_bytes == stats.min_hbm_bytes
    assert _bytes_read(kern) == {n: a.nbytes for n, a in zip("qkv", arrays)}
    assert stats.dma_count == 24
    ops = list(kern.nki.walk())
    assert sum(isinstance(op, DmaTransposeOp) for op in ops) == 12
    # TensorE transposes only Pᵀ (one per unit of 128 queries and 128 keys: 16); none reads Q or K
    transposes = [op for op in ops if isinstance(op, TransposeOp)]
    assert len(transposes) == 16 and all(op.access("data").dtype is nk.float32 for op in transposes)
    assert "nisa.dma_transpose(" in kern.nki_source()
    views = [op for op in kern.nki.body if isinstance(op, HbmViewOp)]
    assert all(0 not in op.attrs["strides"] for op in views)  # no stride-0 (repeated) view


def test_grouped_not_causal_f32_with_partial_tiles():
    """Plain GQA over f32 inputs (no casts), batch dim, 96 queries and 200 keys (a partial
    query tile and two key chunks, the second partial), value dim 48."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 4, 96, 32)).astype(np.float32)
    k = rng.standard_normal((2, 2, 200, 32)).astype(np.float32)
    v = rng.standard_normal((2, 2, 200, 48)).astype(np.float32)
    kern = nk.compile(_gqa(causal=False), q, k, v)
    assert "tensor.grouped_attention" in kern.ir("cleanup")
    _check(kern, [q, k, v], _reference(q, k, v, 0.125, False, 0.0), nk.float32, "GQA f32")


def test_causal_skips_fully_masked_key_chunks():
    """256 rows: the first query tile sees only the first 128 keys, so per head 3 of the 4
    (query tile, key chunk) Pᵀ transposes run; results still match float64."""
    arrays = _inputs(2, 1, 256, 32, seed=2)
    kern = nk.compile(_gqa(), *arrays)
    f32_transposes = [
        op for op in kern.nki.body if isinstance(op, TransposeOp) and op.access("data").dtype.name == "f32"
    ]
    assert len(f32_transposes) == 2 * 3
    _check(kern, arrays, _reference(*arrays, 0.125, True, -1e4), nk.bfloat16, "causal 256")


def test_mild_mask_is_added_not_skipped():
    """A mask of -1 (masked keys keep weight e⁻¹): no key chunk is skipped and the masked
    scores enter the softmax as the program adds them."""
    arrays = _inputs(2, 1, 256, 32, seed=3)
    kern = nk.compile(_gqa(mask=-1.0), *arrays)
    assert "mask_value = -1.0" in kern.ir("cleanup")
    f32_transposes = [
        op for op in kern.nki.body if isinstance(op, TransposeOp) and op.access("data").dtype.name == "f32"
    ]
    assert len(f32_transposes) == 2 * 4
    _check(kern, arrays, _reference(*arrays, 0.125, True, -1.0), nk.bfloat16, "mask -1")


def test_too_many_keys_stays_a_row_pipeline(monkeypatch):
    """Keys beyond MAX_KEYS (one PSUM bank of scores): the op is not formed."""
    monkeypatch.setattr(kernel, "MAX_KEYS", 64)
    arrays = _inputs(2, 1, 128, 32)
    kern = nk.compile(_gqa(), *arrays)
    assert "tensor.grouped_attention" not in kern.ir("cleanup")
    assert_close(
        kern.run(dict(zip("qkv", arrays)))["y"],
        _reference(*arrays, 0.125, True, -1e4),
        nk.bfloat16,
        what="row pipeline",
    )


def test_unsupported_shape_built_directly_is_one_clear_error():
    """Head dim 256 (more than the 128 partitions Q Kᵀ contracts over): one BuildError naming the
    op and the rule; mismatched heads fail already when the op is built."""
    b = nk.Builder("bad")
    q = b.add_input("q", (2, 128, 256), nk.bfloat16)
    k = b.add_input("k", (1, 128, 256), nk.bfloat16)
    v = b.add_input("v", (1, 128, 64), nk.bfloat16)
    b.set_outputs({"y": b.grouped_attention(q, k, v, scale=0.1)})
    with pytest.raises(nk.BuildError, match=r"tensor.grouped_attention .*D <= 128"):
        nk.compile(b.graph)
    b2 = nk.Builder("bad_heads")
    q = b2.add_input("q", (3, 128, 64), nk.bfloat16)
    k = b2.add_input("k", (2, 128, 64), nk.bfloat16)
    with pytest.raises(nk.BuildError, match=r"tensor.grouped_attention"):
        b2.grouped_attention(q, k, k, scale=0.1)


def test_one_dma_group_of_heads():
    """Two query heads over one KV head, 64 rows: one Q load, one K / V load, one store."""
    arrays = _inputs(2, 1, 64, 32, seed=5)
    kern = nk.compile(_gqa(), *arrays)
    assert kern.stats().dma_count == 4
    _check(kern, arrays, _reference(*arrays, 0.125, True, -1e4), nk.bfloat16, "one group")


def _chunks(kern, name: str) -> list[int]:
    """Contiguous bytes per descriptor (the cost model's DMA chunk) of every DMA touching the
    kernel tensor ``name`` (an input read or the output written)."""
    from nkigen_lite.nki.target import TRN2
    from nkigen_lite.nki.types import HbmType
    from nkigen_lite.perf.dma_cost import dma_cost

    g = kern.nki
    ids = {n: id(v) for n, v in zip(g.input_names, g.inputs)}
    out = []
    for op in g.body:
        if not isinstance(op, DmaCopyOp):
            continue
        for side in ("src", "dst"):
            t = op.access(side).tensor
            if not isinstance(t.type, HbmType):
                continue
            root = id(t.defining_op.operand(0) if isinstance(t.defining_op, HbmViewOp) else t)
            if root == ids.get(name) or (name == "o" and root not in ids.values()):
                out.append(dma_cost(op, TRN2).chunk_bytes)
    return out


def test_model_target_shape_moves_row_pairs():
    """Two query heads of one KV group share a unit (row pairs, lower/grouped_pairs.py): O
    stores move two 256-byte rows per partition, 512 contiguous bytes per descriptor (was 256);
    Q and K arrive transposed by DMA (each partition receives 512 bytes: 4 heads x 64 columns of
    one row-pair slot, 2 KV heads x 128 keys); V keeps its 256-byte rows (its keys must fill the
    128 partitions of the Pᵀ V contraction), in the natural key order of the DMA-transposed Kᵀ."""
    arrays = _inputs(16, 8, 128, 128)
    kern = nk.compile(_gqa(), *arrays)
    assert _chunks(kern, "q") == [512] * 8
    assert _chunks(kern, "k") == [512] * 4
    assert _chunks(kern, "v") == [256] * 4
    assert _chunks(kern, "o") == [512] * 8
    # V (needed only by Pᵀ V) is issued after every Q and K load
    ids = {id(v): n for n, v in zip(kern.nki.input_names, kern.nki.inputs)}
    order = []
    for op in kern.nki.body:
        if isinstance(op, DmaCopyOp):
            t = op.access("src").tensor
            root = t.defining_op.operand(0) if isinstance(t.defining_op, HbmViewOp) else t
            order.append(ids.get(id(root), "o"))
    loads = [n for n in order if n != "o"]
    last_qk = max(i for i, n in enumerate(loads) if n in ("q", "k"))
    assert loads.count("v") == 4 and loads.index("v") > last_qk
    # the same units as before: one S = Q Kᵀ matmul and one fp32 Pᵀ transpose per 128 queries
    f32_t = [
        op for op in kern.nki.body if isinstance(op, TransposeOp) and op.access("data").dtype.name == "f32"
    ]
    assert len(f32_t) == 16


def test_row_pairs_over_tiles_batch_and_skipped_chunks():
    """Row pairs with a batch dim, two query tiles and two key chunks (the second tile's units
    see both chunks, the first one only the first: 3 fp32 Pᵀ transposes per unit pair), 4 query
    heads per KV head, bf16: matches float64 on the interpreter and the simulator."""
    arrays = _inputs(8, 2, 256, 64, seed=7, batch=(2,))
    kern = nk.compile(_gqa(), *arrays)
    assert "tensor.grouped_attention" in kern.ir("cleanup")
    assert set(_chunks(kern, "q")) == {256}  # two rows of 64 bf16 (one row: 128 B)
    f32_t = [
        op for op in kern.nki.body if isinstance(op, TransposeOp) and op.access("data").dtype.name == "f32"
    ]
    assert len(f32_t) == 2 * 8 * 3  # batch x heads x (1 + 2) chunks over the two query tiles
    _check(kern, arrays, _reference(*arrays, 0.125, True, -1e4), nk.bfloat16, "row pairs 256")


def test_row_pairs_not_causal_f32():
    """Row pairs without a mask, f32 (V needs no widening), head dim 32, value dim 48."""
    rng = np.random.default_rng(8)
    q = rng.standard_normal((4, 128, 32)).astype(np.float32)
    k = rng.standard_normal((2, 128, 32)).astype(np.float32)
    v = rng.standard_normal((2, 128, 48)).astype(np.float32)
    kern = nk.compile(_gqa(causal=False), q, k, v)
    assert "tensor.grouped_attention" in kern.ir("cleanup")
    assert set(_chunks(kern, "q")) == {256}  # 2 rows x 32 f32
    _check(kern, [q, k, v], _reference(q, k, v, 0.125, False, 0.0), nk.float32, "row pairs f32")


def test_scale_that_is_not_an_fp32_number_built_directly():
    """``scale=1/np.sqrt(64)``-like Python floats that are not exactly fp32 (here 1/√96) are
    rounded to fp32 once (they failed verification: "operand0 must be an fp32 number")."""
    b = nk.Builder("scale")
    q = b.add_input("q", (2, 128, 96), nk.bfloat16)
    k = b.add_input("k", (1, 128, 96), nk.bfloat16)
    v = b.add_input("v", (1, 128, 96), nk.bfloat16)
    scale = 1 / np.sqrt(96)
    b.set_outputs({"y": b.grouped_attention(q, k, v, scale=scale, causal=True, mask_value=-1e4)})
    kern = nk.compile(b.graph)
    arrays = _inputs(2, 1, 128, 96, seed=9)
    _check(kern, arrays, _reference(*arrays, scale, True, -1e4), nk.bfloat16, "scale 1/sqrt(96)")
