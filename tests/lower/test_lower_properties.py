"""Hypothesis: random tensor graphs keep their semantics through the whole compile pipeline
(canonicalize → decompose → layout → lower → deallocs → verify): the NKI interpreter's
outputs equal the tensor interpreter's within the tolerance of the least precise float dtype
the graph computes in (fused instructions skip intermediate roundings, so an f32 output of an
f16 computation may differ by f16 ulps), scaled x4."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.testing.strategies import graph_inputs, tensor_graphs
from nkigen_lite.testing.tolerance import assert_close, tolerance_for


def _loosest_float_tolerance(graph) -> tuple[float, float]:
    values = list(graph.inputs) + [r for op in graph.walk() for r in op.results]
    tols = [tolerance_for(v.type.dtype) for v in values if v.type.dtype.is_float]
    return max(tols) if tols else (0.0, 0.0)


def _check(graph, inputs, *, against_lowering_input: bool = False) -> None:
    """Compare the kernel with ``graph`` — or, with ``against_lowering_input``, with the graph
    the lowering received (after canonicalize / decompose), isolating the lowering from the
    documented accuracy limits of decompositions such as sin range reduction."""
    k = nk.compile(graph)
    got = k.run(inputs)
    ref = nk.run(nk.parse(k.ir("cleanup")) if against_lowering_input else graph, inputs)
    loose = _loosest_float_tolerance(graph)
    for name, r in ref.items():
        dt = graph.outputs[name].dtype
        rtol, atol = loose if dt.is_float else tolerance_for(dt)
        mag = max(1.0, float(np.max(np.abs(r.astype(np.float64))))) if r.size and dt.is_float else 1.0
        r64 = r.astype(np.float64) if dt.is_float else r
        assert_close(got[name], r64, dt, what=f"output {name}", rtol=4 * rtol, atol=4 * atol * mag)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_float32_graphs_lower_correctly(data):
    g = data.draw(tensor_graphs(max_ops=6, dtypes=(nk.float32,), smooth=True, max_rank=3, max_dim=9))
    _check(g, data.draw(graph_inputs(g)))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_low_precision_graphs_lower_correctly(data):
    g = data.draw(
        tensor_graphs(max_ops=5, dtypes=(nk.bfloat16, nk.float16), smooth=True, max_rank=3, max_dim=9)
    )
    _check(g, data.draw(graph_inputs(g)))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_graphs_with_every_op_lower_correctly(data):
    g = data.draw(tensor_graphs(max_ops=5, dtypes=(nk.float32, nk.int32), max_rank=3, max_dim=7))
    _check(g, data.draw(graph_inputs(g)), against_lowering_input=True)
