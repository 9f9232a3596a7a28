"""A fusion group holding one row spreads its outer free dim over the partitions
(transforms/lower/row_partitions.py): a decode step's per-head norm of ``(x @ W).reshape(H, D)``
runs with the H heads on H partitions instead of one partition holding H·D elements. Counts are
read off the NKI IR; results against float64 NumPy on the NKI interpreter and the simulator
(bf16 inputs, f32 outputs: f32 tolerance after the bf16 matmul, rtol 1e-2 · max|ref|)."""

import ml_dtypes
import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllocOp, DeallocOp
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower.row_partitions import spread_single_row

BF16 = ml_dtypes.bfloat16


def _head_norm(x, w, g):
    q = (x @ w).reshape(16, 128).astype(np.float32)
    r = q / np.sqrt((q * q).mean(-1, keepdims=True) + np.float32(1e-6))
    return r * g.astype(np.float32)


def _reference(x, w, g):
    q = (np.asarray(x, np.float64) @ np.asarray(w, np.float64)).reshape(16, 128)
    return q / np.sqrt((q * q).mean(-1, keepdims=True) + 1e-6) * np.asarray(g, np.float64)


def test_per_head_norm_of_a_projected_row_runs_on_one_partition_per_head():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 256)).astype(BF16)
    w = (rng.standard_normal((256, 2048)) / 16).astype(BF16)
    g = (1 + 0.1 * rng.standard_normal(128)).astype(BF16)
    kern = nk.compile(_head_norm, x, w, g)
    norm = [
        op
        for op in kern.nki.walk()
        if not isinstance(op, (AllocOp, DeallocOp))
        and (op.loc or "").startswith(("tensor.square", "tensor.rsqrt", "tensor.mul"))
    ]
    assert len(norm) == 4  # square with its row sum, rsqrt, the two multiplies
    assert all(op.access("dst").partitions == 16 and op.access("dst").free_size <= 128 for op in norm)
    ref = _reference(x, w, g)
    scale = float(np.abs(ref).max())
    feeds = dict(zip(kern.input_names, (x, w, g)))
    for how, got in (("NKI interpreter", kern.run(feeds)), ("simulator", nk.simulate(kern, feeds))):
        assert_close(got["y"], ref, nk.float32, what=how, rtol=1e-2, atol=1e-2 * scale)


def test_roles_of_one_row_groups():
    # (1, 16, 128) with the last dim reduced: the 16 go to the partitions
    roles = ["P", "F", "F"]
    spread_single_row(roles, (1, 16, 128), {2}, set(), 128, ())
    assert roles == ["F", "P", "F"]
    # several rows already: unchanged
    roles = ["P", "F"]
    spread_single_row(roles, (4, 128), {1}, set(), 128, ())
    assert roles == ["P", "F"]
    # the only other free dim is the one reduced: a (1, 1024) row stays a row
    roles = ["P", "F"]
    spread_single_row(roles, (1, 1024), {1}, set(), 128, ())
    assert roles == ["P", "F"]
    # a dim wider than the partitions is not chunked here
    roles = ["P", "F", "F"]
    spread_single_row(roles, (1, 200, 64), set(), set(), 128, ())
    assert roles == ["P", "F", "F"]
    # a value stored without the dim (extent 1 along it) keeps the row layout
    roles = ["P", "F", "F"]
    spread_single_row(roles, (1, 16, 128), set(), set(), 128, [(1, 1, 128)])
    assert roles == ["P", "F", "F"]
