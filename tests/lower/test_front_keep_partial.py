"""A k or v root of the layer's front that does not fit on chip whole keeps its first KV heads'
parts (lower/front_keep.py, ``_partial_heads``): those heads never reach HBM, the others are
stored by the front and loaded by the attention. The room for kept buffers is set by patching
``front_keep.keep_room`` so that a 4 / 2-head layer at 256 rows takes the path the Qwen3-0.6B
layer takes at seq 2048. Bounds are HBM byte counts per tensor; numerics on the NKI interpreter
and the simulator against float64 NumPy (bf16 tolerance of test_attention_out.py)."""

from __future__ import annotations

import pytest

import nkigen_lite as nk
import nkigen_lite.transforms.lower.causal_attention as causal_attention
import nkigen_lite.transforms.lower.front_keep as front_keep
from nkigen_lite.testing import assert_close

from .qwen3_kernels import model_targets, qwen3_layer_kernel
from .test_attention_out import HD, HEADS, KV, NAMES, TOL, _inputs, _reference, _run, _scratch, layer

SEQ = 256
TILES = SEQ // 128
Q_BYTES = TILES * HEADS * HD * 2  # per partition: q kept as one tile per KV head
KV_BYTES = TILES * KV * HD * 2  # k or v whole
PART = KV_BYTES // KV  # one KV head of k or v
HEAD_BYTES = SEQ * HD * 2  # one KV head of k or v in HBM


@pytest.mark.parametrize(
    "room, stored",
    [
        # q and k whole, v's first KV head: v's second head through HBM
        (Q_BYTES + KV_BYTES + PART + 100, {"v": 1}),
        # q whole, k's first KV head, nothing of v (the room left is less than one part)
        (Q_BYTES + PART + 100, {"k": 1, "v": KV}),
    ],
)
def test_first_kv_heads_kept_when_sbuf_is_short(monkeypatch, room, stored):
    """Scratch traffic is exactly the stored heads (written once, read once); results match
    float64 on the interpreter and the simulator."""
    monkeypatch.setattr(causal_attention, "MAX_UNROLLED_UNITS", 4)  # one block per KV head
    monkeypatch.setattr(front_keep, "keep_room", lambda sbuf, peak, weights: room)
    monkeypatch.setattr(front_keep, "MARGIN_BYTES", 0)  # partly kept heads: the room as set
    monkeypatch.setattr(front_keep, "EXTRA_HEADS", 0)  # no head tried beyond it
    args = _inputs(SEQ, seed=11)
    kern = nk.compile(layer, *args)
    moved = sorted((d["read"], d["write"]) for d in _scratch(kern).values())
    assert moved == sorted((n * HEAD_BYTES,) * 2 for n in stored.values()), moved
    ref = _reference(args)
    assert_close(_run(kern, args), ref, nk.bfloat16, what=f"{stored} KV heads stored", **TOL)
    out = next(iter(nk.simulate(kern, dict(zip(NAMES, args))).values()))
    assert_close(out, ref, nk.bfloat16, what=f"{stored} KV heads stored, simulator", **TOL)


def test_partial_keep_is_deterministic(monkeypatch):
    """Two compiles of the partly kept layer emit byte-identical NKI code."""
    monkeypatch.setattr(causal_attention, "MAX_UNROLLED_UNITS", 4)
    monkeypatch.setattr(front_keep, "keep_room", lambda sbuf, peak, weights: Q_BYTES + KV_BYTES + PART + 100)
    monkeypatch.setattr(front_keep, "MARGIN_BYTES", 0)
    args = _inputs(SEQ, seed=12)
    assert nk.compile(layer, *args).nki_source() == nk.compile(layer, *args).nki_source()


def test_qwen3_layer_seq_2048_keeps_five_heads_of_v():
    """Qwen3-0.6B at seq 2048: beside the front's 64 KiB of resident weights, q (64 KiB per
    partition) and k (32 KiB) fit whole and 5 of v's 8 KV heads (4 KiB each; their fit measured
    with every weight resident, not estimated with resident.MARGIN_BYTES, which left 2): v's
    other 3 heads (1.5 MiB) go through HBM, O not at all (attention_out.KEEP_SHARE). Traffic
    1.53 -> 1.48 x minimum with 2 heads, 1.27 with all of O kept, at most 1.2 now (the issue's
    target): 48,239,104 B of 40,374,784."""
    kern = qwen3_layer_kernel(2048)
    moved = sorted((d["read"], d["write"]) for d in _scratch(kern).values())
    assert moved == [(3 << 19, 3 << 19)], moved
    stats = kern.stats()
    assert stats.hbm_bytes == 48_239_104
    assert stats.hbm_bytes <= 1.2 * stats.min_hbm_bytes


def test_partly_kept_heads_dropped_when_the_measured_fit_fails(monkeypatch):
    """When the pipeline with every weight resident would not fit beside the partly kept heads
    (measured: ``_resident_fits``), heads are dropped one at a time until the estimate with
    ``MARGIN_BYTES`` admits them: 2 of v's 8 at seq 2048 (3 MiB of v through HBM)."""
    monkeypatch.setattr(front_keep, "_resident_fits", lambda *a: False)
    kern = nk.compile(model_targets._qwen(2048))
    moved = sorted((d["read"], d["write"]) for d in _scratch(kern).values())
    assert moved == [(3 << 20, 3 << 20)], moved
