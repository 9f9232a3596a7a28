"""benchmarks/topk.py names the path each row took: the native argmax (find_index8 against the
row's maximum, no max8) is "native", the forced decomposition "decomposed"."""

from __future__ import annotations

import nkigen_lite as nk
from benchmarks.topk import _graph, decomposed_only, path


def test_argmax_rows_name_their_lowering():
    g = lambda: _graph((8, 20000), nk.float32, 0)  # noqa: E731  (rows long enough for no max8)
    with decomposed_only():
        assert path(nk.compile(g())) == "decomposed"
    native = nk.compile(g())
    assert not any(op.name == "nki.max8" for op in native.nki.walk())  # the case the label missed
    assert path(native) == "native"
