"""End-to-end properties: random graphs through ``nk.compile``; every pass's output, the
kernel on the NKI interpreter (``Kernel.run``) and the emitted NKI source on the simulator
(``nk.simulate``) are compared with the ORIGINAL graph evaluated on NumPy.

Graphs (``nkigen_lite.testing.strategies.tensor_graphs``): every op (floor, ceil,
floor_divide, mod, comparisons, where, casts included), Python scalars on either side of
binary ops, inputs and sources (``full``, ``iota``) with size-1 dims that their users
broadcast, broadcast-created domains, 0-size dims, ranks 0-4, 1-3 outputs, and dims drawn
from ``BOUNDARY_DIMS`` (127, 128, 129, 300, 513, 4096) with every value <= 16,384 elements.

Rules:

- **Reference.** ``nk.run(graph, mode="float64")`` on the original graph: floats in float64,
  values the program declares in a dtype (constants, casts) rounded to it, as NumPy does.
- **Tolerance** (``assert_close``'s rule): integer and bool outputs exactly; a float output
  within 4x the tolerance of the least precise float dtype any value of the graph has (f32
  1e-5, f16 2e-3, bf16 1e-2), relative to max(|ref|, max |ref| over the output, 1): fused
  instructions skip intermediate roundings, and a narrow intermediate rounds everything
  downstream.
- **Discontinuities.** Float inputs are multiples of 1/8 in [-3, 3] and Python scalars are
  dyadic (2.0, 0.5, -1.5, 3.0, 0.25, small ints), so most floor / compare operands are exact.
  Where an operand still lies within rounding of a jump (a narrow dtype rounded a product, a
  division by 3), the two sides of the jump are the two references: an element also passes
  when it matches, by the same rule, the faithful run of the original graph (the tensor
  interpreter rounding every op to its dtype, as the hardware does). Nothing is skipped.
- **Integer range.** Nothing is rejected: integer matmuls are exact and int32 arithmetic that
  overflows wraps in kernels as in NumPy (docs/tensor_ops.md §4), and both are tested.
- **Index outputs** (topk's indices, argmax, argmin) are tie-aware
  (``nkigen_lite.testing.index_oracle``): over a float operand an index passes when the
  operand's reference value there ties the reference's value at that rank within the float
  tolerance above (NumPy's float64 ``cos(-4) == cos(4)`` while the kernel's f32 values differ
  in the last bit), indices are distinct, and topk values come out sorted descending; over an
  integer or bool operand the index is exact.
- **Values computed from indices** (a topk's indices added to, compared, cast, ...): a third
  reference also passes an element, the float64 run with every near-tie of an index op over a
  float operand broken the other way (``tie_flipped_env``: runs of near-equal values reversed;
  a near-tie of three or more values is covered in those two orders only).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.ir.parser import parse
from nkigen_lite.testing.index_oracle import (
    INDEX_OPS,
    check_index_output,
    check_sorted_values,
    index_source,
    reference_env,
    tie_flipped_env,
    topk_values_axis,
)
from nkigen_lite.testing.strategies import graph_inputs, tensor_graphs
from nkigen_lite.testing.tolerance import assert_close, close_mask, tolerance_for

PASS_STAGES = ("canonicalize", "decompose", "cleanup", "layout")


def _loosest(graph) -> tuple[float, float]:
    values = list(graph.inputs) + [r for op in graph.walk() for r in op.results]
    tols = [tolerance_for(v.type.dtype) for v in values if v.type.dtype.is_float]
    return max(tols) if tols else (0.0, 0.0)


def _tols(dt, r, loose) -> tuple[float, float]:
    """(rtol, atol) for values of ``dt`` whose float64 reference is ``r``."""
    if not dt.is_float:
        return 0.0, 0.0
    finite = np.abs(r[np.isfinite(r)]) if r.size else np.zeros(0)
    mag = max(1.0, float(finite.max())) if finite.size else 1.0
    return 4 * loose[0], 4 * loose[1] * mag


def check_against_original(graph, feed, got: dict, refs: list[dict], what: str) -> None:
    """Each output of ``got`` matches the float64 reference or, element by element, the
    faithful one (or the tie-flipped one); index outputs tie-aware (the rules of the module
    docstring). ``refs``: the float64, the faithful and (with index ops) the tie-flipped
    run's values, each keyed by Value."""
    envs = refs
    oracle, *others = ({n: np.array(e[v]) for n, v in graph.outputs.items()} for e in envs)
    loose = _loosest(graph)
    assert list(got) == list(graph.outputs), f"{what}: outputs {list(got)}"
    for name, v in graph.outputs.items():
        dt, r = v.dtype, oracle[name]
        assert got[name].shape == v.type.shape, f"{what} {name}: shape {got[name].shape}"
        src = index_source(v)
        if src is not None:
            x = src.operand
            rtol, atol = _tols(x.dtype, envs[0][x], loose)
            check_index_output(
                got[name],
                [envs[0][x], envs[1][x]],
                src,
                dtype=x.dtype,
                rtol=rtol,
                atol=atol,
                what=f"{what} {name}",
                context=f"\n{graph}\ninputs {feed}",
            )
            continue
        if topk_values_axis(v) is not None:
            check_sorted_values(got[name], topk_values_axis(v), f"{what} {name}\n{graph}")
        rtol, atol = _tols(dt, r, loose)
        ok = close_mask(got[name], r, dt, rtol, atol)
        for other in others:
            ok |= close_mask(got[name], other[name], dt, rtol, atol)
        if not ok.all():
            assert_close(
                got[name],
                r,
                dt,
                rtol=rtol,
                atol=atol,
                what=f"{what} {name} (faithful run also differs)\n{graph}\ninputs {feed}",
            )


def run_end_to_end(graph, feed) -> None:
    refs = [reference_env(graph, feed, "float64"), reference_env(graph, feed, "faithful")]
    if any(op.name in INDEX_OPS for op in graph.walk()):
        loose = _loosest(graph)
        refs.append(tie_flipped_env(graph, feed, 4 * loose[0], 4 * loose[1]))
    k = nk.compile(graph)
    for stage in PASS_STAGES:
        after = parse(k.ir(stage))
        check_against_original(graph, feed, nk.run(after, feed), refs, f"after {stage}")
    check_against_original(graph, feed, k.run(feed), refs, "Kernel.run")
    check_against_original(graph, feed, nk.simulate(k, feed), refs, "nk.simulate")


def _graphs(dtypes, max_ops=5):
    return tensor_graphs(
        max_ops=max_ops, dtypes=dtypes, max_rank=4, max_dim=6, boundary_dims=True, empty=True, max_outputs=3
    )


def _case(data, dtypes):
    """A random graph and its inputs."""
    g = data.draw(_graphs(dtypes))
    return g, data.draw(graph_inputs(g, grid=True))


@given(st.data())
def test_float_graphs_end_to_end(data):
    run_end_to_end(*_case(data, (nk.float32,)))


@given(st.data())
def test_mixed_precision_graphs_end_to_end(data):
    run_end_to_end(*_case(data, (nk.float32, nk.bfloat16, nk.float16)))


@given(st.data())
def test_integer_and_bool_graphs_end_to_end(data):
    run_end_to_end(*_case(data, (nk.int32, nk.bool_, nk.float32)))
