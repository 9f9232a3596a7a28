"""Blocks that show output (not run) are today's output: each is regenerated and compared."""

import nkigen_lite as nk
from nkigen_lite.workloads.norms import build_rmsnorm
from tests.docs.doc_blocks import ROOT, blocks


def test_emit_md_shows_todays_emitted_rmsnorm():
    """docs/emit.md's first block is exactly what nk.compile(rmsnorm 256x1024 f32).nki_source()
    emits now."""
    shown = blocks(ROOT / "docs" / "emit.md")[0]
    assert shown.not_run and "emitted" in shown.not_run
    assert shown.source == nk.compile(build_rmsnorm(shape=(256, 1024))).nki_source()
