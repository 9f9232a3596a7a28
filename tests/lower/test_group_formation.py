"""Fusion-group formation (transforms/lower/groups.py): the legality rules on small graphs
(checked against NumPy through the compiled kernel) and counts that witness linear work."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.transforms.lower.groups import FusionGroup, form_groups


def _chain(n: int):
    b = nk.Builder("chain")
    x = b.add_input("x", (64, 32), nk.float32)
    y = x
    for i in range(n):
        y = b.tanh(y) if i % 3 == 0 else (y + x if i % 3 == 1 else y * 0.5)
    b.set_outputs({"y": y})
    return b.graph


def _merging_chain(n: int):
    """y_i = y_(i-1) + tanh(x_i): every add merges the running group with a new one."""
    b = nk.Builder("merging")
    y = b.add_input("x0", (16, 8), nk.float32)
    for i in range(1, n + 1):
        y = y + b.tanh(b.add_input(f"x{i}", (16, 8), nk.float32))
    b.set_outputs({"y": y})
    return b.graph


def _work(graph) -> tuple[int, int]:
    part = form_groups(graph)
    s = part.stats
    n_ops = sum(1 for _ in graph.body) - 1
    return s.joins + s.visits + s.scanned, n_ops


def test_chain_grouping_work_is_linear():
    for n in (100, 400, 1600):
        work, n_ops = _work(_chain(n))
        assert work <= 2 * n_ops, (n, work, n_ops)
    groups = [i for i in form_groups(_chain(400)).items if isinstance(i, FusionGroup)]
    assert len(groups) == 1 and len(groups[0].ops) == 400


def test_merging_chain_is_one_group_with_linear_work():
    for n in (50, 400):
        g = _merging_chain(n)
        work, n_ops = _work(g)
        assert work <= 3 * n_ops, (n, work, n_ops)
        groups = [i for i in form_groups(g).items if isinstance(i, FusionGroup)]
        assert len(groups) == 1 and len(groups[0].ops) == 2 * n


def test_a_join_that_would_cycle_through_a_matmul_starts_a_new_group():
    b = nk.Builder("t")
    x = b.add_input("x", (32, 32), nk.float32)
    w = b.add_input("w", (32, 32), nk.float32)
    a = b.exp(x)
    m = a @ w
    b.set_outputs({"y": a * m})
    part = form_groups(b.graph)
    groups = [i for i in part.items if isinstance(i, FusionGroup)]
    assert [len(g.ops) for g in groups] == [1, 1]
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((32, 32)).astype(np.float32) * 0.1
    wa = rng.standard_normal((32, 32)).astype(np.float32)
    e = np.exp(xa.astype(np.float64))
    got = nk.compile(b.graph).run({"x": xa, "w": wa})["y"]
    np.testing.assert_allclose(got, e * (e @ wa.astype(np.float64)), rtol=1e-4, atol=1e-4)


def test_merging_two_groups_through_an_outside_op_is_refused():
    # g1 = exp(x); t = transpose(g1) (a view, outside any group); g2 = tanh(t): the add of g1
    # and g2 would put the transpose between two members of one group.
    b = nk.Builder("t")
    x = b.add_input("x", (16, 16), nk.float32)
    g1 = b.exp(x)
    g2 = b.tanh(b.transpose(g1)) * 2.0
    b.set_outputs({"y": g1 + g2})
    part = form_groups(b.graph)
    for g in part.items:
        if isinstance(g, FusionGroup):
            names = {op.name for op in g.ops}
            assert not ({"tensor.exp", "tensor.tanh"} <= names)
    xa = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32)
    e = np.exp(xa.astype(np.float64))
    got = nk.compile(b.graph).run({"x": xa})["y"]
    np.testing.assert_allclose(got, e + np.tanh(e.T) * 2.0, rtol=1e-5)


def test_siblings_reading_one_input_merge_without_pairwise_search():
    b = nk.Builder("t")
    outs = {}
    xs = [b.add_input(f"x{i}", (8, 16), nk.float32) for i in range(64)]
    for i, x in enumerate(xs):
        outs[f"y{i}"] = b.exp(x) * 2.0
    b.set_outputs(outs)
    part = form_groups(b.graph)
    assert len([i for i in part.items if isinstance(i, FusionGroup)]) == 64
    assert part.stats.scanned == 0 and part.stats.joins <= 64
