"""The first row tile's load issued ahead of the weight rows (transforms/lower/lead_load.py):
LayerNorm 512x1024's first DMA brings x's first 128x1024 tile, the one-partition loads of ``w``
and ``b`` follow; the scheduled estimate drops (the first tile arrives 600 ns earlier); results
are close to float64 NumPy on the NKI interpreter and the simulator (fp32: 1e-5 absolute for
|y| ≲ 5) and the emitted IR is deterministic."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.types import HbmType
from nkigen_lite.transforms.lower import lead_load
from nkigen_lite.workloads import get_workload

LN = get_workload("layernorm")


def _loads(k) -> list:
    return [
        op
        for op in k.nki.walk()
        if isinstance(op, DmaCopyOp) and isinstance(op.access("src").tensor.type, HbmType)
    ]


def test_layernorm_loads_its_first_row_tile_first(monkeypatch):
    g = LN.graph(shape=(512, 1024))
    k = nk.compile(g)
    with monkeypatch.context() as m:
        m.setattr(lead_load, "lead_row_tile", lambda *a: False)
        plain = nk.compile(g)
    first = [op.access("dst").dims[0].size for op in _loads(k)[:3]]
    assert first == [128, 1, 1]
    assert [op.access("dst").dims[0].size for op in _loads(plain)[:3]] == [1, 1, 128]
    assert k.stats().dma_count == plain.stats().dma_count
    assert k.estimate().scheduled_ns < plain.estimate().scheduled_ns
    assert str(nk.compile(g).nki) == str(k.nki)
    rng = np.random.default_rng(3)
    ins = {
        "x": (3.0 + 2.0 * rng.standard_normal((512, 1024))).astype(np.float32),
        "w": rng.standard_normal(1024).astype(np.float32),
        "b": rng.standard_normal(1024).astype(np.float32),
    }
    want = LN.reference(**{n: a.astype(np.float64) for n, a in ins.items()})["y"]
    for where, got in (("interpreter", k.run(ins)["y"]), ("simulator", nk.simulate(k, ins)["y"])):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5, err_msg=where)


def test_a_kernel_without_weight_rows_is_left_alone():
    """softmax has no one-partition loads: nothing moves."""
    k = nk.compile(get_workload("softmax").graph(shape=(256, 512)))
    assert lead_load.lead_row_tile(k.nki.clone().body, nk.nki.target.TRN2) is False
