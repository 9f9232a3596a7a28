"""``Kernel.custom_call()``: the framework-neutral call description.

Checked against facts known here independently of the describer (the shapes and dtypes the
test builds, XLA's row-major minor-to-major order written out by hand), for stability (byte-
identical JSON from two compiles, from a printed-and-parsed copy, and from a fresh interpreter
with another hash seed), and by running the described ``source`` on the NumPy NKI simulator
with the operands in the described order against a float64 NumPy reference (f32: 1e-5).
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki_sim import simulate as sim_run


def rmsnorm_graph(rows=256, cols=1024, dtype=nk.float32):
    b = nk.Builder("rmsnorm")
    x = b.add_input("x", (rows, cols), dtype)
    w = b.add_input("w", (cols,), dtype)
    ms = b.mean(x * x, axis=-1, keepdims=True)
    b.set_outputs({"y": x / b.sqrt(ms + 1e-6) * w})
    return b.graph


def odd_graph():
    """A 0-d input and output, a zero-size output and a dense constant."""
    b = nk.Builder("odd")
    x = b.add_input("x", (), nk.float32)
    c = b.add_input("c", (3, 5), nk.float32)
    const = b.constant(np.arange(5, dtype=np.float32) * 0.25)
    b.set_outputs({"s": x * 2.0, "e": b.full((0, 3), 1.0, nk.float32), "m": b.sum(c, axis=0) + const})
    return b.graph


def test_rmsnorm_description_fields():
    d = nk.compile(rmsnorm_graph()).custom_call()
    assert d["schema"] == "nkigen_lite.custom_call/1"
    assert d["target"] == "AwsNeuronCustomNativeKernel"
    assert d["kernel"] == "rmsnorm" and d["name"] == "rmsnorm" and d["platform"] == "trn2"
    assert d["operands"] == [
        {
            "name": "x",
            "parameter": "x",
            "shape": [256, 1024],
            "kernel_shape": [256, 1024],
            "dtype": "float32",
            "layout": [1, 0],
            "constant": False,
        },
        {
            "name": "w",
            "parameter": "w",
            "shape": [1024],
            "kernel_shape": [1024],
            "dtype": "float32",
            "layout": [0],
            "constant": False,
        },
    ]
    assert d["results"] == [
        {
            "name": "y",
            "parameter": "y",
            "shape": [256, 1024],
            "kernel_shape": [256, 1024],
            "dtype": "float32",
            "layout": [1, 0],
        },
    ]
    assert d["outputs"] == ["y"] and d["empty_results"] == []
    assert d["aliases"] == [] and d["grid"] == [] and d["has_collectives"] is False
    assert "@nki.jit\ndef rmsnorm(x, w):" in d["source"]
    assert d["source_sha256"] == hashlib.sha256(d["source"].encode()).hexdigest()


def test_bf16_three_d_layout_and_dtype():
    b = nk.Builder("scale3")
    x = b.add_input("x", (2, 128, 64), nk.bfloat16)
    b.set_outputs({"out": x * 3.0})
    d = nk.compile(b.graph).custom_call()
    assert d["operands"][0]["layout"] == [2, 1, 0]
    assert d["operands"][0]["dtype"] == "bfloat16"
    assert d["results"][0]["dtype"] == "bfloat16" and d["results"][0]["shape"] == [2, 128, 64]


def test_json_is_the_description_and_is_plain_data():
    k = nk.compile(rmsnorm_graph())
    d = k.custom_call()
    text = k.custom_call_json()
    assert json.loads(text) == d
    assert text.isascii()


def test_byte_identical_across_compiles_and_parse():
    g = rmsnorm_graph()
    a = nk.compile(g).custom_call_json()
    b = nk.compile(rmsnorm_graph()).custom_call_json()
    c = nk.compile(nk.parse(str(g))).custom_call_json()
    assert a == b == c


_CHILD = """
import sys
sys.path.insert(0, {root!r})
from tests.emit.test_custom_call import odd_graph, rmsnorm_graph
import nkigen_lite as nk
sys.stdout.write(nk.compile(rmsnorm_graph()).custom_call_json())
sys.stdout.write(nk.compile(odd_graph()).custom_call_json())
"""


def test_byte_identical_across_processes():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    expected = nk.compile(rmsnorm_graph()).custom_call_json() + nk.compile(odd_graph()).custom_call_json()
    for seed in ("1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run(
            [sys.executable, "-c", _CHILD.format(root=root)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out == expected, f"PYTHONHASHSEED={seed}"


def test_zero_d_constants_and_empty_outputs():
    d = nk.compile(odd_graph()).custom_call()
    ops = {o["name"]: o for o in d["operands"]}
    assert [o["name"] for o in d["operands"]][:2] == ["x", "c"]
    assert ops["x"]["shape"] == [] and ops["x"]["kernel_shape"] == [1] and ops["x"]["layout"] == [0]
    assert not ops["x"]["constant"] and not ops["c"]["constant"]
    consts = [o for o in d["operands"] if o["constant"]]
    assert len(consts) == 1 and consts[0]["shape"] == [5] and consts[0]["dtype"] == "float32"
    assert [r["name"] for r in d["results"]] == ["s", "m"]
    assert d["results"][0]["shape"] == [] and d["results"][0]["kernel_shape"] == [1]
    assert d["empty_results"] == [{"name": "e", "shape": [0, 3], "dtype": "float32"}]
    assert d["outputs"] == ["s", "e", "m"]


def test_source_runs_with_described_operands():
    """Call the described kernel as a framework would: positional operands in the described
    order (constants from the module), results matched to the described names and shapes."""
    d = nk.compile(odd_graph()).custom_call()
    rng = np.random.default_rng(0)
    x = np.float32(rng.standard_normal())
    c = rng.standard_normal((3, 5)).astype(np.float32)
    ns: dict = {}
    from nkigen_lite.nki_sim import installed

    with installed():
        exec(compile(d["source"], "<custom_call>", "exec"), ns)
    by_param = {}
    for o in d["operands"]:
        if o["constant"]:
            by_param[o["parameter"]] = ns["CONSTANTS"][o["parameter"]]
        else:
            a = {"x": np.asarray(x), "c": c}[o["name"]]
            by_param[o["parameter"]] = a.reshape(o["kernel_shape"]).astype(o["dtype"])
    outs = sim_run(d["source"], by_param)
    ref = {"s": np.float64(x) * 2.0, "m": c.astype(np.float64).sum(axis=0) + np.arange(5) * 0.25}
    for r in d["results"]:
        got = outs[r["name"]]
        assert list(got.shape) == r["kernel_shape"] and str(got.dtype) == r["dtype"]
        np.testing.assert_allclose(got.reshape(r["shape"]), ref[r["name"]], rtol=1e-5, atol=1e-5)
