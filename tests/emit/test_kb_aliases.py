"""Kernel Builder path with IO aliasing (SURFACE CHECK, not a compile): an output that updates
an input in place is that input's kernel parameter — it gets no output parameter of its own
(two parameters of one name were an error), and the in-place writes land on the input."""

import nkigen_lite as nk
from nkigen_lite.emit import emit_kb

from .kb_standin import FakeKernelBuilder


def _kv_write():
    b = nk.Builder("kv_write")
    cache = b.add_input("cache", (4, 64, 32), nk.bfloat16)
    k = b.add_input("k", (4, 1, 32), nk.bfloat16)
    pos = b.add_input("pos", (), nk.int32)
    new = b.dynamic_update_slice(cache, k, [0, pos, 0])
    b.set_outputs({"cache_out": new, "total": b.sum(k.astype(nk.float32))}, aliases={"cache_out": "cache"})
    return nk.compile(b.graph)


def test_an_aliased_output_is_its_input_parameter():
    nb = FakeKernelBuilder()
    emit_kb(_kv_write().nki, nb)
    (build,) = [c for c in nb.rec.calls if c.name == "build_kernel"]
    assert list(build.kwargs["input_specs"])[:3] == ["cache", "k", "pos"]
    assert list(build.kwargs["output_specs"]) == ["total"]  # cache_out is the cache parameter
    written = [c.kwargs["dst"].root for c in nb.rec.calls if c.name == "isa.dma_copy"]
    assert "cache" in written and "total" in written
