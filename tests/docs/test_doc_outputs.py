"""Blocks that show output (not run) are today's output: each is regenerated and compared.

When the emitter changes on purpose, refresh the doc with ``uv run python -m tests.docs.test_doc_outputs``.
"""

import nkigen_lite as nk
from nkigen_lite.workloads.norms import build_rmsnorm
from tests.docs.doc_blocks import ROOT, blocks

EMIT_DOC = ROOT / "docs" / "emit.md"


def _emitted_rmsnorm() -> str:
    return nk.compile(build_rmsnorm(shape=(256, 1024))).nki_source()


def test_emit_md_shows_todays_emitted_rmsnorm():
    """docs/emit.md's first block is exactly what nk.compile(rmsnorm 256x1024 f32).nki_source()
    emits now."""
    shown = blocks(EMIT_DOC)[0]
    assert shown.not_run and "emitted" in shown.not_run
    assert shown.source == _emitted_rmsnorm(), (
        "docs/emit.md shows a stale emitted module: refresh it with "
        "`uv run python -m tests.docs.test_doc_outputs` and check the prose still matches"
    )


if __name__ == "__main__":
    text = EMIT_DOC.read_text(encoding="utf-8")
    EMIT_DOC.write_text(text.replace(blocks(EMIT_DOC)[0].source, _emitted_rmsnorm(), 1), encoding="utf-8")
