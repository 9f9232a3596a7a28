"""Random graphs: print -> parse -> print is exact, and the parsed graph computes the same
outputs (bit for bit, both interpreter modes) with the declared shapes and dtypes."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.testing.strategies import graph_inputs, tensor_graphs


@settings(max_examples=settings.default.max_examples * 8)
@given(st.data())
def test_random_graphs_round_trip_and_compute_the_same(data):
    g = data.draw(tensor_graphs(max_ops=8, dtypes=nk.ALL_DTYPES), label="graph")
    g.verify()
    text = str(g)
    parsed = nk.parse(text)
    assert str(parsed) == text
    assert str(nk.parse(str(parsed))) == text
    inputs = data.draw(graph_inputs(g), label="inputs")
    for mode in ("faithful", "float64"):
        with np.errstate(all="ignore"):
            got, again = nk.run(g, inputs, mode=mode), nk.run(parsed, inputs, mode=mode)
        assert set(got) == set(g.outputs)
        for name, v in g.outputs.items():
            want = np.float64 if (mode == "float64" and v.dtype.is_float) else v.dtype.np_dtype
            assert got[name].shape == v.shape and got[name].dtype == want, (name, mode)
            assert got[name].tobytes() == again[name].tobytes(), (name, mode)


@settings(max_examples=settings.default.max_examples * 8)
@given(st.data())
def test_random_f32_graphs_are_deterministic_text(data):
    g = data.draw(tensor_graphs(max_ops=6))
    assert str(g) == str(g) == nk.print_graph(nk.parse(str(g)))
