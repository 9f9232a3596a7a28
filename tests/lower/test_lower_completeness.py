"""The lowering's completeness: every tensor op that reaches the lowering (an instance of every
op class, alone in a graph, after canonicalize and decompose) compiles to verified NKI IR; a miss
names the op and where its lowering rule goes. The collectives, which need several ranks to run,
are compiled and run across ranks in tests/parallel/test_collective_lowering.py."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T
from tests.tensor.test_registry import _one_of_each

_b = nk.Builder("probe")
CASES = sorted(_one_of_each(_b))
WHERE = (
    "nkigen_lite/transforms/lower/ (elementwise ops: the ACT_FUNC / ALU tables in tile_common.py; "
    "other ops: an @tile_rule or @item_rule from rules.py)"
)


def _graph(case: str):
    b = nk.Builder(f"one_{case}")
    b.set_outputs({case: _one_of_each(b)[case]})
    return b.graph


@pytest.mark.parametrize("case", CASES)
def test_every_op_instance_compiles(case):
    g = _graph(case)
    ops = sorted({op.name for op in g.walk() if isinstance(op, T.TensorOp)})
    try:
        k = nk.compile(g)
    except Exception as e:  # noqa: BLE001  (any failure to lower is reported the same way)
        pytest.fail(f"{ops} did not lower ({e}); add a lowering rule in {WHERE}")
    arrays = {
        "x": np.linspace(0.5, 2, 6, dtype=np.float32).reshape(2, 3),
        "i": np.arange(1, 7, dtype=np.int32).reshape(2, 3),
    }
    used = {v.name_hint for v in g.inputs}
    ins = {n: a for n, a in arrays.items() if n in used}
    want = nk.run(g, ins, mode="float64")  # the tensor interpreter (checked against NumPy elsewhere)
    got = k.run(ins)
    for name, ref in want.items():
        tol = 1e-2 if ref.dtype.name in ("bfloat16", "float16", "uint8") else 1e-5
        np.testing.assert_allclose(
            np.asarray(got[name], np.float64), np.asarray(ref, np.float64), rtol=tol, atol=tol, err_msg=case
        )


def test_every_op_class_is_covered_by_a_case():
    b = nk.Builder("all")
    b.set_outputs(_one_of_each(b))
    present = {type(op) for op in b.graph.walk()}
    assert set(T.ALL_TENSOR_OPS) <= present
