"""NkiOp.access reuses the dims it unpacked while the op's spec and operands stay the same
(nki/ops/base.py): a fresh Access each call, and the new tensor or loop index after an operand
changes; NkiOp.tensors gives the accesses' tensors without unpacking them."""

from __future__ import annotations

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, NkiOp
from nkigen_lite.workloads.registry import get_workload

from ..workload_kernels import workload_kernel
from .kernels import matmul, tiled_add


def _loads(g):
    return [
        op
        for op in g.walk()
        if isinstance(op, DmaCopyOp) and op.access("dst").tensor.type.space.name == "SBUF"
    ]


def test_access_is_a_new_object_with_equal_dims():
    op = _loads(tiled_add(300, 64))[0]
    a, b = op.access("src"), op.access("src")
    assert a is not b  # Accesses compare by identity: callers never get a shared one
    assert a.tensor is b.tensor and a.dims == b.dims


def _pos(op, v) -> int:
    """Operand position of ``v`` by identity (kernel Values overload ``==``)."""
    return next(k for k, o in enumerate(op.operands) if o is v)


def _indices(acc) -> list:
    return [v for d in acc.dims for v, _ in d.offset.terms]


def test_access_follows_an_operand_change():
    g = matmul(128, 256, 1024)  # loops i (rows) and j (512-column blocks) around the K steps
    loops = [op for op in g.walk() if op.name == "nki.fori_loop"]
    i, j = (loop.regions[0].blocks[0].args[0] for loop in loops[:2])
    op = next(o for o in g.walk() if isinstance(o, DmaCopyOp) and any(v is i for v in o.operands))
    name = next(n for n, _ in op.access_attrs() if any(v is i for v in _indices(op.access(n))))
    before = op.access(name)
    op.set_operand(_pos(op, i), j)  # the same spec over another loop index
    after = op.access(name)
    assert all(a is (j if b is i else b) for a, b in zip(_indices(after), _indices(before)))
    assert after.dims != before.dims
    other = g.body.args[1] if before.tensor is not g.body.args[1] else g.body.args[0]
    op.set_operand(_pos(op, before.tensor), other)
    assert op.access(name).tensor is other


def test_tensors_match_the_unpacked_accesses():
    g = tiled_add(300, 64)
    ops = [op for op in g.walk() if isinstance(op, NkiOp)]
    for op in ops:
        names = [n for n, _ in op.access_attrs()]
        assert all(a is b for a, b in zip(op.tensors(), [op.access(n).tensor for n in names], strict=True))
        written = [op.access(n).tensor for n in names if n in op.writes]
        assert all(a is b for a, b in zip(op.tensors(op.writes), written, strict=True))


def test_compile_is_deterministic():
    """A fresh compile equals the session's compile of the same graph (made earlier, after
    other compiles: the memo caches and object ids differ)."""
    g = get_workload("qwen3_decode").graph()
    a, b = workload_kernel("qwen3_decode"), nk.compile(g)
    assert str(a.nki) == str(b.nki) and a.nki_source() == b.nki_source()
