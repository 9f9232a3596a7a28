"""Kernel.report / nkigen-lite report: one self-contained HTML file whose links resolve, whose
NKI instructions point at the tensor op and the Python line they came from, whose numbers agree
with the statistics computed elsewhere, and which is byte-identical for the same kernel."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.compiler import STAGES
from nkigen_lite.report.occupancy import occupancy
from nkigen_lite.report.op_table import op_rows
from tests.report.html_check import Page

ROOT = Path(__file__).resolve().parents[2]


def _rmsnorm(x, w):
    ms = (x * x).mean(axis=-1, keepdims=True)  # line A
    return x / np.sqrt(ms + 1e-6) * w  # line B


X = np.random.default_rng(0).random((256, 1024)).astype(np.float32)
W = np.random.default_rng(1).random(1024).astype(np.float32)


@pytest.fixture(scope="module")
def kernel():
    return nk.compile(_rmsnorm, X, W)


@pytest.fixture(scope="module")
def page(kernel):
    return kernel.report()


def test_self_contained(page):
    p = Page(page)
    assert p.srcs == []  # no image, script or frame loaded from anywhere
    assert "<script" not in page and "<link" not in page and "@import" not in page
    assert not [h for h, _ in p.hrefs if not h.startswith("#")], "every link stays in the page"
    assert p.tags.get("svg", 0) == 3  # SBUF, PSUM, timeline


def test_every_link_resolves_and_ids_are_unique(page):
    p = Page(page)
    assert len(p.ids) == len(set(p.ids))
    ids = set(p.ids)
    missing = [h for h, _ in p.hrefs if h[1:] not in ids]
    assert missing == []


def test_sections_and_one_ir_per_stage(page, kernel):
    p = Page(page)
    for section in ("warnings", "ops", "memory", "timeline", "ir", "python"):
        assert section in p.ids
    for stage in STAGES:
        assert f"stage-{stage}" in p.ids
        lines = kernel.ir(stage).splitlines()
        # every IR line is in the page, numbered, in order
        assert f"ir-{stage}-{len(lines)}" in p.ids and f"ir-{stage}-{len(lines) + 1}" not in p.ids


def test_nki_instructions_link_to_their_tensor_op_and_python_line(page, kernel):
    p = Page(page)
    final = STAGES[-1]
    src = Path(__file__).read_text().splitlines()
    line_a = next(i for i, s in enumerate(src, 1) if s.endswith("# line A"))
    line_b = next(i for i, s in enumerate(src, 1) if s.endswith("# line B"))
    op_links = py_links = 0
    for n, line in enumerate(kernel.ir(final).splitlines(), 1):
        m = re.search(r'loc\("(tensor\.\w+) (%[\w.]+) at test_report\.py:(\d+)"\)', line)
        if not m:
            continue
        op_name, value, py_line = m.group(1), m.group(2), int(m.group(3))
        assert py_line in (line_a, line_b)
        row = p.text_of[f"ir-{final}-{n}"]
        assert f"{op_name} {value}" in row and f"test_report.py:{py_line}" in row
        # the link targets: the defining line of that value in the IR the lowering read ...
        target = re.search(rf'id="ir-{final}-{n}".*?href="#(ir-layout-\d+)"', page).group(1)
        assert re.match(rf"\s*{re.escape(value)} = {re.escape(op_name)} ", p.text_of[target].split(" ", 1)[1])
        op_links += 1
        # ... and the user's line, shown with its source text
        py = f"py-test_report_py-{py_line}"
        assert py in p.ids and src[py_line - 1].strip() in p.text_of[py]
        py_links += 1
    assert op_links >= 4 and py_links == op_links


def test_per_op_table_agrees_with_stats_and_estimate(kernel):
    est, st = kernel.estimate(), kernel.stats()
    rows = op_rows(kernel.nki, est.by_op_ns)
    assert sum(r.dma_bytes for r in rows) == st.dma_bytes
    assert sum(r.modelled_ns for r in rows) == pytest.approx(sum(est.by_op_ns.values()))
    assert sum(r.executed for r in rows) == est.instructions


def test_occupancy_peaks_match_the_verifier(kernel):
    pts = occupancy(kernel.nki)
    st = kernel.stats()
    assert max(s for s, _, _ in pts) == st.peak_sbuf_bytes
    assert max(b for _, b, _ in pts) * kernel.target.psum_bank_bytes == st.peak_psum_bytes
    assert pts[-1][:2] == (0, 0)  # everything allocated is freed


def test_timeline_has_one_bar_per_scheduled_instruction():
    b = nk.Builder("two_ops")
    x = b.add_input("x", (128, 64), nk.float32)
    b.set_outputs({"y": b.exp(x) * 2.0})
    k = nk.compile(b.graph)
    svg = k.report().split('<h2 id="timeline">')[1].split("</svg>")[0]
    bars = re.findall(r'<rect [^>]*class="e-(\w+)"', svg)
    # no loop: every instruction of the kernel is scheduled once
    assert len(bars) == k.stats().instructions_dynamic
    assert bars.count("dma") == k.stats().dma_count


def test_deterministic(kernel):
    again = nk.compile(_rmsnorm, X, W)
    assert again.report() == kernel.report()


def test_warnings_are_listed():
    """A transposed output is a DMA-descriptor cliff (an HBM -> HBM element-wise copy): the
    report shows the warning's text; a kernel without warnings says so."""
    b = nk.Builder("transposed")
    x = b.add_input("x", (512, 512), nk.float32)
    b.set_outputs({"y": b.transpose(b.exp(x))})
    k = nk.compile(b.graph)
    assert k.warnings()
    page = k.report()
    for w in k.warnings():
        assert html.escape(str(w)) in page
    assert "No performance warnings" not in page
    b = nk.Builder("quiet")
    x = b.add_input("x", (128, 64), nk.float32)
    b.set_outputs({"y": b.exp(x)})
    k = nk.compile(b.graph)
    assert ("No performance warnings" in k.report()) == (not k.warnings())


def test_report_writes_the_file(tmp_path, kernel):
    path = tmp_path / "r.html"
    text = kernel.report(path)
    assert path.read_text(encoding="utf-8") == text == kernel.report()


def test_cli_report(tmp_path):
    out = tmp_path / "k.html"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "nkigen_lite",
            "report",
            str(ROOT / "examples" / "rmsnorm.py") + ":rmsnorm",
            "-i",
            "x=256x1024:bf16",
            "-i",
            "w=1024:bf16",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    p = Page(page)
    # the user's file is found by the path given on the command line
    assert any(i.startswith("py-rmsnorm_py-") for i in p.ids)
    assert "ms = (xf * xf).mean(axis=-1, keepdims=True)" in page
    bad = subprocess.run(
        [sys.executable, "-m", "nkigen_lite", "report", "nope.py:f", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "nope.py" in bad.stderr
