"""A decoder layer of one row tile (seq <= 128): the front's pipeline has no row loop, and still
hands q, k and v to the causal attention on chip (lower/front_keep.py), whose O stays on chip
for the O projection (lower/attention_out.py: one query tile, whatever the number of units).
Bounds are HBM byte counts per tensor (perf/traffic.py); numerics on the NKI interpreter
against float64 NumPy, bf16 tolerance ``TOL`` of tests/lower/test_attention_out.py (q, k, v, P,
O, the residual, the MLP input and its product are bf16 in the program)."""

from __future__ import annotations

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.testing import assert_close

from .qwen3_kernels import qwen3_layer_kernel
from .test_attention_out import NAMES, TOL, D, _inputs, _reference, _run, _scratch, layer


def test_one_tile_layer_keeps_q_k_v_and_o_on_chip_and_matches_float64():
    """128 rows, 4 query / 2 KV heads: nothing goes through HBM scratch (q, k and v were
    stored by the front and loaded by the attention, O stored by the attention and loaded by
    the O projection); every input is read once (cos, sin and h twice), the output written
    once; results match float64."""
    seq = 128
    args = _inputs(seq, seed=5)
    kern = nk.compile(layer, *args)
    by = bytes_by_tensor(kern.nki)
    assert _scratch(kern) == {}, by
    for name, a in zip(NAMES, args):
        times = 2 if name in ("cos", "sin", "h") else 1
        assert by[name]["read"] == times * a.nbytes, (name, by[name])
    assert [d["write"] for d in by.values() if d["write"]] == [seq * D * 2], by
    assert_close(_run(kern, args), _reference(args), nk.bfloat16, what="one-tile layer, kept", **TOL)


def _src_root(op):
    v = op.access("src").tensor
    d = v.defining_op
    return d.operand(0) if d is not None and d.name == "nki.hbm_view" else v


def test_qwen3_layer_at_seq_128_moves_only_its_inputs_and_output():
    """The Qwen3-0.6B layer at seq 128 (benchmarks/model_targets.py): no scratch tensor
    (was 3 MiB of q, k, v and O written and read back), traffic within 1.02x the minimum, and
    the front's weights Wq, Wk, Wv prefetched whole by top-level DMAs (not streamed through a
    K loop whose loads wait for its matmuls)."""
    kern = qwen3_layer_kernel(128)
    assert _scratch(kern) == {}, _scratch(kern)
    assert kern.stats().hbm_traffic_ratio <= 1.02
    front = {kern.nki.body.args[kern.input_names.index(n)] for n in ("w_q", "w_k", "w_v")}
    loads = [op for op in kern.nki.body.walk() if isinstance(op, DmaCopyOp) and _src_root(op) in front]
    assert loads and all(op.parent is kern.nki.body for op in loads)
