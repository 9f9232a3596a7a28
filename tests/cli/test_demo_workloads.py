"""The nkigen-lite command line: demo, compile --workload / IR text, workloads."""

from __future__ import annotations

import ast
import re

import pytest

from nkigen_lite.cli import main


def _errors(text: str) -> list[float]:
    return [float(m) for m in re.findall(r"max \|err\| / max \|ref\| = ([0-9.e+-]+)", text)]


@pytest.mark.parametrize("workload", ["softmax", "rmsnorm", "attention"])
def test_demo_reports_three_small_errors(workload, capsys):
    assert main(["demo", workload]) == 0
    out = capsys.readouterr().out
    assert "# tensor IR" in out and "nki.dma_copy" in out and "instructions:" in out
    errs = _errors(out)
    assert len(errs) == 3 and all(e < 1e-5 for e in errs), errs


def test_compile_emit_prints_a_python_module(capsys):
    assert main(["compile", "--workload", "rmsnorm", "--emit"]) == 0
    src = capsys.readouterr().out
    tree = ast.parse(src)
    kernels = [f for f in tree.body if isinstance(f, ast.FunctionDef)]
    assert len(kernels) == 1 and ast.unparse(kernels[0].decorator_list[0]) == "nki.jit"


def test_compile_ir_text_with_stats_and_stage(tmp_path, capsys):
    f = tmp_path / "g.mlir"
    f.write_text(
        "graph @g(%x: tensor<300x70xf32>) {\n  %e = tensor.exp %x : tensor<300x70xf32>\n  return y = %e\n}\n"
    )
    assert main(["compile", str(f), "--stats"]) == 0
    cap = capsys.readouterr()
    assert "nki.activation" in cap.out and "1.000 x minimum" in cap.err  # stats on stderr
    assert main(["compile", str(f), "--stage", "decompose"]) == 0
    assert "tensor.exp" in capsys.readouterr().out


def test_workloads_lists_every_workload(capsys):
    assert main(["workloads"]) == 0
    out = capsys.readouterr().out
    for name in ("softmax", "rmsnorm", "layernorm", "attention", "rope", "swiglu_mlp", "matmul"):
        assert name in out


def test_bad_input_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    f = tmp_path / "bad.mlir"
    f.write_text("graph @g(%x: tensor<4xf32>) {\n  %y = tensor.nope %x : tensor<4xf32>\n}\n")
    assert main(["compile", str(f)]) == 1
    err = capsys.readouterr().err
    assert "2:" in err and "unknown op 'tensor.nope'" in err
    assert main(["demo", "no_such_workload"]) == 1
    assert "unknown workload" in capsys.readouterr().err
