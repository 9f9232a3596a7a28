"""One role policy (transforms/layout/policy.py) for the layout solver and the group planner:
default roles and partition tiles, checked against hand-derived answers, and the two users
agreeing on the same shapes."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.transforms.layout import solve_layout
from nkigen_lite.transforms.layout.policy import default_roles, partition_tile, tile_rows
from nkigen_lite.transforms.lower.plan import default_roles as plan_default_roles


@pytest.mark.parametrize(
    "shape,fixed,want",
    [
        ((64, 32), (None, None), ["P", "F"]),
        ((4, 64, 32), (None, None, None), ["P", "P", "F"]),  # 64 rows whole, 2 of the 4 per tile
        ((4, 128, 32), (None, None, None), ["I", "P", "F"]),  # 128 rows: no room for another
        ((8, 16, 32), (None, None, None), ["P", "P", "F"]),  # 8*16 = 128 rows fit
        ((3, 100, 32), (None, None, None), ["I", "P", "F"]),  # 3*100 > 128, and 128 // 100 = 1
        ((4, 300, 32), (None, None, None), ["I", "P", "F"]),  # 300 rows: chunked
        ((2, 40, 32), (None, None, None), ["P", "P", "F"]),  # 2*40 = 80 rows fit
        ((5, 40, 32), (None, None, None), ["P", "P", "F"]),  # 5*40 > 128: chunked (128 // 40 = 3)
        ((7, 64, 32), ("F", None, None), ["F", "P", "P"]),  # an F dim already: 32 whole, 64 chunked
        ((7, 64, 32), (None, "P", None), ["I", "P", "F"]),  # a P dim already: no more P
        ((256, 129, 1), (None, None, None), ["P", "F", "F"]),  # a unit last dim is not the F dim
        ((4, 64, 1, 1), (None, None, None, None), ["P", "F", "F", "F"]),
        ((300, 1), (None, None), ["P", "F"]),  # one dim > 1 left: a column stays a column
        ((1,), (None,), ["F"]),
        ((), (), []),
    ],
)
def test_default_roles(shape, fixed, want):
    assert default_roles(shape, list(fixed), 128) == want


@pytest.mark.parametrize(
    "p_extents,whole,chunk,rows",
    [
        ((), 0, 0, 1),
        ((64,), 1, 0, 64),
        ((300,), 0, 128, 128),
        ((8, 16), 2, 0, 128),
        ((5, 40), 1, 3, 120),  # 40 rows whole, 3 of the 5 outer per tile
        ((1000, 2, 64), 2, 1, 128),
    ],
)
def test_partition_tiles(p_extents, whole, chunk, rows):
    assert partition_tile(p_extents, 128) == (whole, chunk)
    assert tile_rows(p_extents, 128) == rows


@pytest.mark.parametrize(
    "shape", [(64, 32), (4, 64, 32), (8, 16, 32), (3, 100, 7), (5, 40, 9), (300, 5), (256, 129, 1), (300, 1)]
)
def test_the_solver_and_the_planner_give_unconstrained_values_the_same_roles(shape):
    b = nk.Builder("g")
    x = b.add_input("x", shape, nk.float32)
    b.set_outputs({"y": b.exp(x)})
    analysis = solve_layout(b.graph, 128)
    assert list(analysis.roles_of(b.graph.outputs["y"])) == list(plan_default_roles(shape, set(), 128))


def test_the_planner_keeps_reduced_dims_free():
    assert plan_default_roles((4, 64, 32), {1}, 128) == ("P", "F", "P")  # 4 * 32 rows
    assert plan_default_roles((4, 64, 64), {1}, 128) == ("P", "F", "P")  # 64 whole, 2 of 4
    assert plan_default_roles((4, 64, 128), {1}, 128) == ("I", "F", "P")


def test_a_trailing_unit_dim_costs_no_loop():
    """(256, 129, 1) elementwise takes the instructions of (256, 129) (before: the unit dim was
    the free dim, 129 rows on the partitions and a loop of 256: 1,280 instead of 5 executed)."""

    def counts(shape):
        k = nk.compile(lambda a: a + a, np.ones(shape, np.int16))
        return k.stats().instructions_dynamic

    assert counts((256, 129, 1)) == counts((256, 129))
