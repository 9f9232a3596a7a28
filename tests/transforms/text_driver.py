"""Runs the text tests in tests/transforms/text: IR in, passes, CHECK lines out.

A file starts with ``// RUN: pass1,pass2`` and holds cases separated by ``// -----``. Each case
is a graph followed (or preceded) by CHECK lines. The output checked is the IR after the passes,
followed by the layout analysis as ``// `` comments when the layout pass ran. Every case is also
run through the tensor interpreter before and after the passes on random inputs (a case with
collectives on ``world`` ranks, each with its own inputs: nk.run_ranks), in float64 and faithful
mode, within the output dtype's tolerance (constant folding rounds a folded
constant to its dtype, as the ops it replaces would, so even the float64 mode may move by a
rounding of the dtype).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import nkigen_lite as nk
from nkigen_lite.ir.passes import PassContext
from nkigen_lite.parallel.collective_ops import CollectiveOp
from nkigen_lite.testing import assert_close
from nkigen_lite.testing.filecheck import check
from nkigen_lite.transforms.layout import LayoutAnalysis
from nkigen_lite.transforms.pipeline import tensor_pipeline

TEXT_DIR = Path(__file__).parent / "text"
_RUN = re.compile(r"^//\s*RUN:\s*(.+)$", re.M)


@dataclass(frozen=True)
class Case:
    """One text case: where it is, the passes, the IR and the CHECK text."""

    file: str
    index: int
    passes: tuple[str, ...]
    text: str

    @property
    def id(self) -> str:
        return f"{self.file}#{self.index}"


def load_cases() -> list[Case]:
    """Every case of every .mlir file under text/, in file order."""
    out = []
    for path in sorted(TEXT_DIR.glob("*.mlir")):
        src = path.read_text()
        m = _RUN.search(src)
        assert m, f"{path.name}: missing '// RUN: passes' line"
        passes = tuple(p.strip() for p in m.group(1).split(","))
        for i, chunk in enumerate(re.split(r"^//\s*-----\s*$", src, flags=re.M)):
            if "graph @" in chunk:
                out.append(Case(path.name, i, passes, chunk))
    return out


def random_inputs(graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Normal floats (with some exact zeros and integers), small ints, random bools."""
    rng = np.random.default_rng(seed)
    feed = {}
    for name, v in zip(graph.input_names, graph.inputs):
        t = v.type
        if t.dtype.is_float:
            a = rng.standard_normal(t.shape) * 2
            a = np.where(rng.random(t.shape) < 0.1, 0.0, a)
            a = np.where(rng.random(t.shape) < 0.1, np.round(a), a)
        elif t.dtype.is_bool:
            a = rng.random(t.shape) < 0.5
        else:
            lo = 0 if not t.dtype.is_signed else -9
            a = rng.integers(lo, 10, t.shape)
        feed[name] = np.asarray(a).astype(t.dtype.np_dtype)
    return feed


def run_case(case: Case) -> dict:
    """Apply the case's passes, check numerics before/after and the CHECK lines; returns the
    pipeline's context (its analyses record which rules fired)."""
    before = nk.parse(case.text)
    after = nk.parse(case.text)
    result = tensor_pipeline(case.passes).run(after, PassContext())
    out = str(result.graph)
    layout = result.ctx.get(LayoutAnalysis)
    if layout is not None:
        out += "".join(f"// {line}\n" for line in str(layout).splitlines())
    world = max((op.attrs["world"] for op in before.walk() if isinstance(op, CollectiveOp)), default=1)
    feeds = [random_inputs(before, seed) for seed in range(world)]
    for mode in ("float64", "faithful"):
        refs, gots = (
            nk.run_ranks(g, feeds, world=world, mode=mode) if world > 1 else [nk.run(g, feeds[0], mode)]
            for g in (before, result.graph)
        )
        for r, (ref, got) in enumerate(zip(refs, gots)):
            for name, v in before.outputs.items():
                assert_close(got[name], ref[name], v.dtype, what=f"{case.id} {mode} rank {r} {name}")
    check(out, case.text)
    return result.ctx
