"""nk.run: input validation, modes, output dtypes, determinism, inputs left untouched."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk

from .numpy_ref import f64, round_tf32


def _graph():
    b = nk.Builder("g")
    x = b.add_input("x", (2, 3), nk.bfloat16)
    n = b.add_input("n", (3,), nk.int32)
    f = b.add_input("f", (), nk.tfloat32)
    b.set_outputs({"y": b.exp(x) * f, "m": n * 2, "c": b.cast(x, nk.float32)})
    return b.graph


def _inputs():
    return {
        "x": np.ones((2, 3), ml_dtypes.bfloat16),
        "n": np.arange(3, dtype=np.int32),
        "f": np.array(1.0009765625 + 2**-12, np.float32),
    }


@pytest.mark.parametrize(
    "bad,match",
    [
        ({"x": None}, r"missing \['n', 'f'\]"),
        ({"z": 1}, r"graph @g inputs: unexpected \['z'\] \(expects \['x', 'n', 'f'\]\)"),
        ({"x": np.ones((3, 2), ml_dtypes.bfloat16)}, r"input 'x' has shape \(3, 2\), expected \(2, 3\)"),
        ({"x": np.ones((2, 3), np.float32)}, r"input 'x' has dtype float32, expected bfloat16"),
        ({"n": np.arange(3)}, r"input 'n' has dtype int64, expected int32"),
        ({"n": [0, 1, 2]}, r"input 'n' must be a NumPy array, got list"),
        ({"f": np.array(1.0)}, r"input 'f' has dtype float64, expected tfloat32"),
        ({"f": np.ones(1, np.float32)}, r"input 'f' has shape \(1,\), expected \(\)"),
    ],
)
def test_bad_inputs_are_interpret_errors(bad, match):
    inputs = _inputs()
    for k, v in bad.items():
        if v is None:
            inputs = {k: inputs[k]}
        else:
            inputs[k] = v
    with pytest.raises(nk.InterpretError, match=match):
        nk.run(_graph(), inputs)


def test_inputs_must_be_a_mapping_and_mode_known():
    with pytest.raises(nk.InterpretError, match="inputs must be a dict"):
        nk.run(_graph(), [np.ones(1)])
    with pytest.raises(nk.InterpretError, match="unknown interpreter mode 'fast'"):
        nk.run(_graph(), _inputs(), mode="fast")


def test_graph_without_outputs_is_an_interpret_error():
    g = nk.Graph("empty")
    with pytest.raises(nk.InterpretError, match="has no outputs"):
        nk.run(g, {})


def test_output_dtypes_per_mode_and_tf32_inputs_are_rounded():
    g = _graph()
    ins = _inputs()
    r = nk.run(g, ins)
    assert r["y"].dtype == np.float32  # bf16 * tf32 -> tf32, stored as float32
    assert r["m"].dtype == np.int32 and r["c"].dtype == np.float32 and r["y"].shape == (2, 3)
    f = round_tf32(ins["f"])  # the tf32 input is rounded to 11 significant bits on entry
    assert f != ins["f"]
    e = np.exp(np.float32(1)).astype(ml_dtypes.bfloat16)  # exp rounded to bf16 on write
    want = round_tf32(np.float32(f64(e)) * np.float32(f))  # product in fp32, rounded to tf32
    np.testing.assert_array_equal(r["y"], np.full((2, 3), want))
    o = nk.run(g, ins, mode="float64")
    assert o["y"].dtype == np.float64 and o["m"].dtype == np.int32 and o["c"].dtype == np.float64
    np.testing.assert_allclose(o["y"], np.e * f64(f), rtol=1e-12)


def test_run_is_deterministic_and_leaves_inputs_untouched():
    g = _graph()
    ins = _inputs()
    copies = {k: v.copy() for k, v in ins.items()}
    r1, r2 = nk.run(g, ins), nk.run(g, ins)
    for k in r1:
        assert r1[k].tobytes() == r2[k].tobytes()
    for k in ins:
        assert ins[k].tobytes() == copies[k].tobytes()
    r1["m"][0] = 99  # outputs are fresh arrays, not views of interpreter state
    assert nk.run(g, ins)["m"][0] == 0


def test_outputs_may_alias_inputs_and_each_other():
    b = nk.Builder("alias")
    x = b.add_input("x", (2,), nk.float32)
    e = b.exp(x)
    b.set_outputs({"same": x, "e1": e, "e2": e})
    a = np.array([0.0, 1.0], np.float32)
    r = nk.run(b.graph, {"x": a})
    np.testing.assert_array_equal(r["same"], a)
    np.testing.assert_array_equal(r["e1"], r["e2"])
    r["same"][0] = 5
    assert a[0] == 0.0


def test_parsed_graph_runs_like_the_built_one():
    g = _graph()
    g2 = nk.parse(str(g))
    ins = _inputs()
    for mode in ("faithful", "float64"):
        r1, r2 = nk.run(g, ins, mode=mode), nk.run(g2, ins, mode=mode)
        for k in r1:
            assert r1[k].tobytes() == r2[k].tobytes()
