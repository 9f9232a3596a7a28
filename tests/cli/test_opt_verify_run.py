"""`opt` (-p, --print-ir-after-all, --split-input-file, --verify-diagnostics, -o), `verify`
(the trn2 hardware verifier on NKI IR) and `run` (arrays in, .npz out)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from nkigen_lite.cli import main

SPLIT = """graph @ok(%x: tensor<4xf32>) {
  %e = tensor.exp %x : tensor<4xf32>
  return y = %e
}
// -----
graph @bad(%x: tensor<4xf32>) {
  // expected-error@+1 {{unknown op 'tensor.nope'}}
  %y = tensor.nope %x : tensor<4xf32>
  return y = %y
}
// -----
graph @badtype(%x: tensor<4xf32>) {
  %y = tensor.exp %x : tensor<5xf32>  // expected-error {{result type is tensor<5xf32>}}
  return y = %y
}
"""


def test_opt_split_and_verify_diagnostics_pass(tmp_path, capsys):
    f = tmp_path / "d.mlir"
    f.write_text(SPLIT)
    assert main(["opt", "--split-input-file", "--verify-diagnostics", str(f)]) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("graph @ok") and cap.err == ""


def test_verify_diagnostics_fails_on_wrong_line_or_text_or_missing_error(tmp_path, capsys):
    f = tmp_path / "d.mlir"
    f.write_text(SPLIT.replace("@+1 {{unknown op", "@+2 {{unknown op"))
    assert main(["opt", "--split-input-file", "--verify-diagnostics", str(f)]) == 1
    err = capsys.readouterr().err
    assert f"{f}:8: unexpected error" in err and "was not produced" in err
    f.write_text(SPLIT.replace("{{result type is tensor<5xf32>}}", "{{something else}}"))
    assert main(["opt", "--split-input-file", "--verify-diagnostics", str(f)]) == 1
    assert f"{f}:13: unexpected error" in capsys.readouterr().err
    f.write_text(SPLIT.split("// -----")[0] + "// expected-error {{never}}\n")
    assert main(["opt", "--verify-diagnostics", str(f)]) == 1
    assert "expected error at line 5 was not produced: {{never}}" in capsys.readouterr().err


def test_split_without_diagnostics_reports_each_failing_chunk(tmp_path, capsys):
    f = tmp_path / "d.mlir"
    f.write_text(SPLIT)
    out = tmp_path / "o.mlir"
    assert main(["opt", "--split-input-file", str(f), "-o", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"nkigen-lite: error: {f}:8:8: unknown op 'tensor.nope'",
        f"nkigen-lite: error: {f}:13:8: tensor.exp: result type is tensor<5xf32> but "
        "the operands give tensor<4xf32> (at: %y = tensor.exp %x : tensor<5xf32>)",
    ]
    assert out.read_text().startswith("graph @ok")


def test_opt_passes_and_print_ir_after_all(tensor_ir, capsys):
    assert main(["opt", str(tensor_ir), "-p", "canonicalize,decompose", "--print-ir-after-all"]) == 0
    cap = capsys.readouterr()
    assert "IR Dump After canonicalize" in cap.err and "IR Dump After decompose" in cap.err
    assert cap.out.startswith("graph @g") and "IR Dump" not in cap.out


def _nki_text(capsys, tensor_ir) -> str:
    assert main(["compile", str(tensor_ir), "--emit", "ir"]) == 0
    return capsys.readouterr().out


def test_verify_runs_the_hardware_verifier(tensor_ir, tmp_path, capsys):
    text = _nki_text(capsys, tensor_ir)
    good = tmp_path / "k.nki"
    good.write_text(text)
    assert main(["verify", str(good)]) == 0
    assert "hardware verifier" in capsys.readouterr().out
    lines = text.splitlines()
    # a 256-partition tile: the hardware verifier names the line of the alloc
    i = next(i for i, ln in enumerate(lines) if "nki.alloc : tile<" in ln and "sbuf" in ln)
    wide = tmp_path / "wide.nki"
    wide.write_text(
        "\n".join(lines[:i] + [re.sub(r"tile<\d+x", "tile<256x", lines[i])] + lines[i + 1 :]) + "\n"
    )
    assert main(["verify", str(wide)]) == 1
    err = capsys.readouterr().err
    assert f"{wide}:{i + 1}:" in err and "256 partitions > 128" in err
    # a leaked tile (its dealloc removed)
    j = next(j for j, ln in enumerate(lines) if "nki.dealloc" in ln)
    leak = tmp_path / "leak.nki"
    leak.write_text("\n".join(lines[:j] + lines[j + 1 :]) + "\n")
    assert main(["verify", str(leak)]) == 1
    assert "deallocated" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["tensor", "nki"])
def test_run_ir_on_arrays_writes_npz(kind, tensor_ir, tmp_path, capsys):
    src = tensor_ir
    if kind == "nki":
        src = tmp_path / "k.nki"
        src.write_text(_nki_text(capsys, tensor_ir))
    x = np.random.default_rng(1).standard_normal((300, 70)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out.npz"
    assert main(["run", str(src), "--input", f"x={tmp_path / 'x.npy'}", "-o", str(out)]) == 0
    got = np.load(out)["y"]
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)), rtol=2e-6)  # f32 exp


@pytest.mark.parametrize("backend", ["nki", "sim", "tensor"])
def test_run_python_function(backend, user_py, tmp_path, capsys):
    x = np.random.default_rng(2).standard_normal((64, 128)).astype(np.float32)
    w = np.random.default_rng(3).standard_normal((128, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    assert (
        main(
            [
                "run",
                f"{user_py}:scaled",
                "-i",
                f"x={tmp_path / 'x.npy'}",
                "-i",
                f"w={tmp_path / 'w.npy'}",
                "--backend",
                backend,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("y: (64, 16) float32")
    assert (
        main(
            [
                "run",
                f"{user_py}:scaled",
                "-i",
                f"x={tmp_path / 'x.npy'}",
                "-i",
                f"w={tmp_path / 'w.npy'}",
                "--backend",
                backend,
                "-o",
                str(tmp_path / "y.npy"),
            ]
        )
        == 0
    )
    ref = np.tanh(x.astype(np.float64) @ w.astype(np.float64)) * 0.5
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), ref, rtol=0, atol=2e-5)  # f32 matmul


def test_run_missing_npy_is_one_line(tensor_ir, tmp_path, capsys):
    assert main(["run", str(tensor_ir), "-i", f"x={tmp_path}/nope.npy"]) == 1
    assert "nope.npy: no such file" in capsys.readouterr().err
