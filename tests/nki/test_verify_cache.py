"""The hardware verifier's result is kept on a graph until any IR is edited (ir/edits.py):
a compiled kernel's ``estimate()`` and ``stats()`` do not walk it again, and an edit after
that (an op moved, an operand replaced) makes the next call check the graph again - an edit
that breaks a rule is caught."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import VerifyError
from nkigen_lite.nki.ops import DeallocOp
from nkigen_lite.nki.target import Target
from nkigen_lite.nki.verify import VerifyContext, verify


def _kernel():
    x = np.zeros((256, 512), np.float32)
    return nk.compile(lambda x: np.exp(x - x.max(-1, keepdims=True)), x)


@pytest.fixture
def runs(monkeypatch):
    count = [0]
    run = VerifyContext.run

    def counted(self):
        count[0] += 1
        return run(self)

    monkeypatch.setattr(VerifyContext, "run", counted)
    return count


def test_estimate_and_stats_reuse_the_compile_verification(runs):
    k = _kernel()
    compiled = runs[0]  # the compile's own checks (the last one of the final kernel)
    assert compiled >= 1
    k.estimate()
    k.stats()
    k.estimate()
    assert runs[0] == compiled
    # another target is checked on its own
    verify(k.nki, Target(**{**vars(k.target), "name": "other"}))
    assert runs[0] == compiled + 1


def test_an_edit_makes_the_graph_be_checked_again(runs):
    k = _kernel()
    g = k.nki
    verify(g, k.target)
    runs[0] = 0
    op = next(o for o in g.body if isinstance(o, DeallocOp))
    anchor = op.next_op
    g.body.remove(op)
    g.body.insert_before(anchor, op)  # the same graph again, but edited
    verify(g, k.target)
    assert runs[0] == 1
    verify(g, k.target)
    assert runs[0] == 1


def test_a_dealloc_moved_before_a_use_is_caught_after_the_kernel_was_verified():
    k = _kernel()
    g = k.nki
    k.estimate()
    k.stats()
    dealloc = next(o for o in g.body if isinstance(o, DeallocOp))
    tile = dealloc.operand(0)
    g.body.remove(dealloc)
    g.body.insert_after(tile.defining_op, dealloc)  # freed before it is used
    with pytest.raises(VerifyError):
        k.estimate()
    with pytest.raises(VerifyError):
        verify(g, k.target)


def test_reused_verification_changes_no_figure():
    k, fresh = _kernel(), _kernel()
    fresh.nki._nki_verified = None
    assert k.estimate() == fresh.estimate()
    assert k.stats() == fresh.stats()
    assert k.nki_source() == _kernel().nki_source()
