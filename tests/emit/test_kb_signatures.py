"""Kernel Builder signature surface: every ``nb.isa`` call the emitter can make (a program using
every NKI op, and every workload) uses a name and only keywords in the signature table
``nkigen_lite/emit/kb_table.ISA_SIGNATURES``, each entry naming its source. There is no public
Kernel Builder reference to check against (docs/emit.md lists what was searched); this checks
the emitter against the table we keep, SURFACE ONLY (nothing is compiled)."""

import pytest

from nkigen_lite.emit import emit_kb
from nkigen_lite.emit.kb_table import ISA_SIGNATURES
from nkigen_lite.workloads.registry import WORKLOADS, _load_all

from ..nki.test_text import every_op_graph
from ..workload_kernels import workload_kernel
from .kb_standin import FakeKernelBuilder

_load_all()


def _isa_calls(graph):
    nb = FakeKernelBuilder()
    emit_kb(graph, nb, target="trn2")
    return [c for c in nb.rec.calls if c.name.startswith("isa.")]


def _check(calls):
    for c in calls:
        name = c.name.removeprefix("isa.")
        assert name in ISA_SIGNATURES, f"nb.isa.{name} is not in the signature table"
        extra = set(c.kwargs) - ISA_SIGNATURES[name].keywords
        assert not extra, f"nb.isa.{name}: keywords {sorted(extra)} are not in its signature"


def test_every_nki_op_emits_calls_inside_the_signature_table():
    calls = _isa_calls(every_op_graph())
    _check(calls)
    used = {c.name.removeprefix("isa.") for c in calls}
    # the every-op program reaches the calls of every compute op (both matmul/transpose engines
    # are in it; bitwise variants are checked by the workloads and the table test below)
    assert {"dma_copy", "matmul", "activation", "select_reduce", "affine_select", "iota"} <= used


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_workload_emits_calls_inside_the_signature_table(name):
    _check(_isa_calls(workload_kernel(name).nki))


def test_every_table_entry_names_its_source():
    for name, sig in ISA_SIGNATURES.items():
        assert sig.keywords and ("dst" in sig.keywords or "dsts" in sig.keywords), name  # dsts: collectives
        assert sig.source.strip(), f"nb.isa.{name}: no source"


def test_an_unknown_keyword_is_caught():
    """The check can fail: a call with a keyword outside its signature is refused by the stand-in."""
    nb = FakeKernelBuilder()
    with pytest.raises(AssertionError, match="keyword|not"):
        nb.isa.matmul(dst=None, stationary=None, moving=None, accumulate=True)
