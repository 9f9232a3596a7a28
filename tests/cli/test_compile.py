"""`nkigen-lite compile`: a user's Python function, IR text, -p, --emit, -o, stderr/stdout."""

from __future__ import annotations

import ast
import subprocess
import sys

import ml_dtypes
import numpy as np

from nkigen_lite.cli import main
from nkigen_lite.emit.simulate import simulate
from nkigen_lite.testing.tolerance import assert_close


def test_compile_user_function_to_a_file_that_runs(user_py, tmp_path, capsys):
    out = tmp_path / "softmax_kernel.py"
    rc = main(["compile", f"{user_py}:softmax", "--input", "x=256x512:bf16", "-o", str(out)])
    assert rc == 0
    cap = capsys.readouterr()
    assert cap.out == ""  # the artifact went to the file
    assert f"wrote {out}" in cap.err
    src = out.read_text()
    assert "@nki.jit" in src and "def softmax(x):" in src
    # run the emitted module on the simulator against float64 NumPy
    x = np.random.default_rng(0).standard_normal((256, 512)).astype(ml_dtypes.bfloat16)
    got = simulate(src, {"x": x})["y"]
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(axis=-1, keepdims=True))
    assert_close(got, e / e.sum(axis=-1, keepdims=True), "bfloat16")
    # the emitted comments name the user's line
    assert "kernels.py:5" in src


def test_emit_with_stats_and_timing_keeps_stdout_a_valid_module(user_py, capsys):
    rc = main(
        [
            "compile",
            f"{user_py}:scaled",
            "-i",
            "x=128x64:f32",
            "-i",
            "w=64x32:f32",
            "--emit",
            "--stats",
            "--timing",
        ]
    )
    assert rc == 0
    cap = capsys.readouterr()
    ast.parse(cap.out)
    assert "instructions:" in cap.err and "ms" in cap.err
    assert "instructions:" not in cap.out


def test_emit_ir_stage_and_stats(user_py, tensor_ir, capsys):
    assert main(["compile", str(tensor_ir), "--emit", "ir", "--stage", "decompose"]) == 0
    assert "tensor.exp" in capsys.readouterr().out
    assert main(["compile", str(tensor_ir), "--emit", "stats"]) == 0
    out = capsys.readouterr().out
    assert "1.000 x minimum" in out and "instructions:" in out


def test_passes_flag_runs_named_passes_on_a_traced_function(user_py, capsys):
    rc = main(["compile", f"{user_py}:softmax", "-i", "x=128x64", "-p", "canonicalize,decompose"])
    assert rc == 0
    out = capsys.readouterr().out
    assert out.startswith("graph @softmax(%x: tensor<128x64xf32>)")
    assert "tensor.exp" in out and "nki." not in out
    assert main(["compile", f"{user_py}:softmax", "-i", "x=128x64", "-p", "canonicalize,bogus"]) == 1
    assert "unknown pass 'bogus'" in capsys.readouterr().err


def test_knobs_reach_the_layout_solver(tensor_ir, capsys):
    assert (
        main(
            [
                "compile",
                str(tensor_ir),
                "--knobs",
                '{"x": {"partition_dim": 1}}',
                "--emit",
                "ir",
                "--stage",
                "layout",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out
    assert main(["compile", str(tensor_ir), "--knobs", "[1]"]) == 1
    assert "--knobs must be a JSON object" in capsys.readouterr().err


def test_console_script_and_python_dash_m(user_py, tmp_path):
    out = tmp_path / "k.py"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "nkigen_lite",
            "compile",
            f"{user_py}:softmax",
            "--input",
            "x=128x256:f32",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and "@nki.jit" in out.read_text()
    r = subprocess.run(
        [sys.executable, "-m", "nkigen_lite", "--version"], capture_output=True, text=True, timeout=120
    )
    import nkigen_lite

    assert r.returncode == 0 and r.stdout.strip() == f"nkigen-lite {nkigen_lite.__version__}"
