"""The default tensor pipeline and ``nkigen-lite opt``."""

import io

import pytest

import nkigen_lite as nk
from nkigen_lite.cli import main
from nkigen_lite.ir.passes import PASS_REGISTRY
from nkigen_lite.transforms import CanonicalizeCounts, DecomposeCounts, LayoutAnalysis
from nkigen_lite.transforms.pipeline import (
    DEFAULT_STAGES,
    DEFAULT_TENSOR_PASSES,
    default_tensor_pipeline,
)
from nkigen_lite.workloads import get_workload

IR = """graph @g(%x: tensor<128x64xf32>, %w: tensor<64x32xf32>) {
  %one = tensor.full {value = 1.0} : tensor<f32>
  %s = tensor.sqrt %x : tensor<128x64xf32>
  %r = tensor.div %one, %s : tensor<128x64xf32>
  %m = tensor.reduce %r {axes = [1], kind = mean} : tensor<128xf32>
  %p = tensor.matmul %x, %w : tensor<128x32xf32>
  return m = %m, p = %p
}
"""


def test_default_pipeline_runs_the_tensor_passes_and_verifies():
    assert DEFAULT_TENSOR_PASSES == ("canonicalize", "decompose", "canonicalize", "layout")
    assert [p for _, p in DEFAULT_STAGES[:4]] == list(DEFAULT_TENSOR_PASSES)
    assert nk.compiler.STAGES == ("input", *(s for s, _ in DEFAULT_STAGES))
    assert {"canonicalize", "decompose", "layout"} <= set(PASS_REGISTRY)
    seen = []
    pipe = default_tensor_pipeline(print_after="all", print_fn=lambda n, t: seen.append(n))
    res = pipe.run(nk.parse(IR))
    assert seen == list(DEFAULT_TENSOR_PASSES)
    assert "tensor.rsqrt" in res.ir_after("canonicalize")
    assert "kind = mean" not in res.ir_after("decompose")
    assert "tensor.layout_convert %x" in res.ir_after("layout")
    assert set(res.ctx.analyses) >= {CanonicalizeCounts, DecomposeCounts, LayoutAnalysis}


def test_pipeline_output_is_deterministic():
    g = get_workload("swiglu_mlp").graph()
    a = default_tensor_pipeline().run(nk.parse(str(g)))
    b = default_tensor_pipeline().run(nk.parse(str(g)))
    assert str(a.graph) == str(b.graph)
    assert str(a.ctx.get(LayoutAnalysis)) == str(b.ctx.get(LayoutAnalysis))


def _opt(tmp_path, capsys, *args, text=IR):
    f = tmp_path / "in.mlir"
    f.write_text(text)
    rc = main(["opt", str(f), *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_opt_prints_ir_that_parses_and_the_layout_as_comments(tmp_path, capsys):
    rc, out, err = _opt(tmp_path, capsys, "--print-layout")
    assert rc == 0 and err == ""
    g = nk.parse(out)  # the layout lines are // comments
    assert str(g) in out
    assert "// layout @g (partitions = 128)" in out
    assert "//   conversion %x_conv = layout_convert %x: [P, F] -> [F, P]" in out


def test_opt_selected_passes_print_after_all_and_timing(tmp_path, capsys):
    rc, out, err = _opt(tmp_path, capsys, "--passes", "canonicalize", "--print-after-all", "--timing")
    assert rc == 0
    assert "tensor.rsqrt" in out and "kind = mean" in out
    assert "// -----// IR Dump After canonicalize //----- //" in err
    assert "// timing: canonicalize" in err


def test_opt_reads_stdin_and_takes_knobs(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(IR))
    rc = main(["opt", "-", "--print-layout", "--knobs", '{"w": {"tile_size": 32}}'])
    out = capsys.readouterr().out
    assert rc == 0
    line = next(s for s in out.splitlines() if s.startswith("//   %w "))
    assert line.split()[-1] == "32"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--passes", "canonicalize,nope"], "unknown pass 'nope'"),
        (["--knobs", "{x"], "--knobs is not valid JSON"),
        (["--knobs", "[1]"], "--knobs must be a JSON object"),
        (["--knobs", '{"q": {}}'], "layout knob 'q'"),
        (["--passes", "canonicalize", "--print-layout"], "--print-layout needs the layout pass"),
    ],
)
def test_opt_errors_are_one_line_messages(tmp_path, capsys, args, message):
    rc, out, err = _opt(tmp_path, capsys, *args)
    assert rc == 1 and message in err and "Traceback" not in err


def test_opt_reports_bad_ir(tmp_path, capsys):
    rc, out, err = _opt(tmp_path, capsys, text="graph @g( {")
    assert rc == 1 and "nkigen-lite: error:" in err


def test_other_subcommands_still_work(tmp_path, capsys):
    f = tmp_path / "in.mlir"
    f.write_text(IR)
    assert main(["verify", str(f)]) == 0
    assert main(["workloads"]) == 0
    assert "softmax" in capsys.readouterr().out
