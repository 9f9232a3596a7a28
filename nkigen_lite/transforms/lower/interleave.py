"""Two independent iterations of a Tensor-engine loop, interleaved instruction by instruction.

Every engine runs its instruction stream in program order, and one loop iteration of a row
pipeline (attention per query block, a matmul row tile and its epilogue) is one long dependency
chain: each instruction waits for its producer on another engine plus the cross-engine
semaphore latency, so the engines idle most of the iteration and the next iteration's
instructions sit behind it in their streams. When the iterations of a loop are independent,
the loop runs pairs of them with their instructions alternating (A₀ B₀ A₁ B₁ …, an
unroll-and-jam by 2): while A's next instruction waits for its producer, the engine runs B's.
An odd trip count runs the last iteration alone after the loop; a loop of 2 trips becomes its
two iterations straight.

A loop is transformed when its body (nested loops included) runs a Tensor-engine instruction
and a ScalarE activation or VectorE reduction — a chain across engines — or a ScalarE row sum
of an integer tile (the digit planes of an exact integer sum, whose combine on VectorE waits
for the last plane's sum); the loads, matmuls and
copies of a plain matmul overlap through rotating buffers instead, which the doubled tiles would
crowd out — and only when the result is certainly the same: every instruction in it writes
only tiles allocated inside the body, or HBM tensors and SBUF tiles allocated before it that
nothing in the loop reads, and the windows of one such tensor written in different iterations
are disjoint (one view, and a dim in which all its writers move together by at least their
joint span per iteration: a row tile's slot of a buffer holding all rows); the body holds only
allocations, deallocations, loops and NKI instructions (no collectives, no indirect DMAs); and
the kernel's SBUF and PSUM still fit with both iterations' tiles live (counted as the verifier
counts them). Each round transforms the innermost qualifying loops; ``ROUNDS`` rounds (a loop
unrolled whole leaves its parent innermost, a pair loop may be paired again) bound the growth
of a nest to 2^ROUNDS copies, so the work stays linear in the kernel.
Runs after ``insert_deallocs`` and before rotating buffers are chosen.
"""

from __future__ import annotations

from ...ir.graph import Block, Graph, Region
from ...nki.access import AffineSpec, pack
from ...nki.ops import (
    ActivationOp,
    AllocOp,
    CollectiveOp,
    DeallocOp,
    DmaGatherOp,
    DmaScatterOp,
    ForiLoopOp,
    MatmulOp,
    NkiOp,
    TensorReduceOp,
    TransposeOp,
)
from ...nki.target import Target
from ...nki.types import Access, Affine, DimSlice, IndexType, MemorySpace, TileType
from .rotation import _peaks

_TENSOR_OPS = (MatmulOp, TransposeOp)
_CHAIN_OPS = (ActivationOp, TensorReduceOp)


class _Unsupported(Exception):
    """The loop holds something the interleaving does not copy."""


def _allocated(body: Block) -> set:
    return {op.result for op in body.walk() if isinstance(op, AllocOp)}


def _independent(loop: ForiLoopOp) -> bool:
    """The module docstring's conditions on what the body reads and writes."""
    body = loop.body
    local = _allocated(body)
    idx = loop.index
    inner = {id(op.index) for op in body.walk() if isinstance(op, ForiLoopOp)}
    read_outside, writes = set(), []
    for op in body.walk():
        if isinstance(op, (AllocOp, DeallocOp, ForiLoopOp)):
            continue
        if not isinstance(op, NkiOp) or isinstance(op, (CollectiveOp, DmaGatherOp, DmaScatterOp)):
            return False
        written = {name for name in op.writes}
        for name, _spec in op.access_attrs():
            acc = op.access(name)
            if name in written:
                writes.append(acc)
            elif acc.tensor not in local:
                read_outside.add(_root(acc.tensor))
    by_root: dict = {}
    for acc in writes:
        if acc.tensor in local:
            continue
        if acc.tensor.type.space is MemorySpace.PSUM or _root(acc.tensor) in read_outside:
            return False
        by_root.setdefault(_root(acc.tensor), []).append(acc)
    return all(_disjoint(accs, idx, loop.attrs["step"], inner) for accs in by_root.values())


def _disjoint(accs: list, idx, step: int, inner: set) -> bool:
    """The windows the accesses ``accs`` (one tensor) write in different iterations are
    disjoint: they address the tensor through one view, and in some dim all their offsets move
    by the same ``c`` per iteration, depend on no loop inside the body, and together span at
    most ``|c·step|`` elements in one iteration."""
    if any(a.tensor is not accs[0].tensor for a in accs):
        return False
    for d in range(len(accs[0].dims)):
        coeffs, rests, lo, hi = set(), set(), None, None
        for a in accs:
            dim = a.dims[d]
            terms = [(v, k) for v, k in dim.offset.terms if k]
            if any(id(v) in inner for v, _ in terms):
                break
            coeffs.add(sum(k for v, k in terms if v is idx))
            rests.add(tuple(sorted((id(v), k) for v, k in terms if v is not idx)))
            c0 = dim.offset.const
            end = c0 + (dim.size - 1) * dim.stride + 1
            lo = c0 if lo is None else min(lo, c0)
            hi = end if hi is None else max(hi, end)
        else:
            if len(coeffs) == 1 and len(rests) == 1:
                (c,) = coeffs
                if c and hi - lo <= abs(c * step):
                    return True
    return False


def _root(v):
    op = v.defining_op
    return op.operand(0) if op is not None and op.name == "nki.hbm_view" else v


def _subst_affine(a: Affine, sub: dict) -> Affine:
    out = Affine.of(a.const)
    for v, c in a.terms:
        out = out + (sub[id(v)] * c if id(v) in sub else Affine((0), ((v, c),)))
    return out


def _subst_access(acc: Access, vmap: dict, sub: dict) -> Access:
    dims = tuple(DimSlice(_subst_affine(d.offset, sub), d.size, d.stride) for d in acc.dims)
    return Access(vmap.get(acc.tensor, acc.tensor), dims)


def _clone_into(src: Block, dst: list, vmap: dict, sub: dict) -> None:
    for op in src:
        dst.append(_clone_op(op, vmap, sub))


def _clone_op(op, vmap: dict, sub: dict):
    if isinstance(op, AllocOp):
        new = AllocOp([], dict(op.attrs), [op.result.type])
        new.result.name_hint = op.result.name_hint
        vmap[op.result] = new.result
    elif isinstance(op, DeallocOp):
        new = DeallocOp([vmap.get(op.operand(0), op.operand(0))])
    elif isinstance(op, ForiLoopOp):
        block = Block([IndexType()], [op.index.name_hint])
        inner = dict(sub)
        inner[id(op.index)] = Affine.of(block.args[0])
        ops: list = []
        _clone_into(op.body, ops, vmap, inner)
        for o in ops:
            block.append(o)
        new = ForiLoopOp([], dict(op.attrs), [], [Region([block])])
    elif isinstance(op, NkiOp):
        items = []
        for a in op.attr_spec:
            val = op.attrs[a.name]
            spec_acc = op.access(a.name) if a.name in dict(op.access_attrs()) else None
            if spec_acc is not None:
                val = _subst_access(spec_acc, vmap, sub)
            elif isinstance(val, AffineSpec):
                val = _subst_affine(op.affine(a.name), sub)
            items.append((a.name, val))
        operands, attrs = pack(items)
        new = type(op)(operands, attrs)
    else:
        raise _Unsupported(op.name)
    new.loc = op.loc
    return new


def _copies(loop: ForiLoopOp, starts: list[Affine]) -> list[list]:
    """One cloned body per start index expression."""
    out = []
    for start in starts:
        ops: list = []
        _clone_into(loop.body, ops, {}, {id(loop.index): start})
        out.append(ops)
    return out


def _merge(a: list, b: list) -> list:
    """A₀ B₀ A₁ B₁ … (the two copies have the same instructions)."""
    out = []
    for x, y in zip(a, b):
        out += [x, y]
    return out


def _interleaved(loop: ForiLoopOp) -> list:
    """The ops replacing ``loop``: the pair loop (or the two iterations) and a remainder."""
    lo, step, n = loop.attrs["lower"], loop.attrs["step"], loop.trip_count
    pairs, odd = n // 2, n % 2
    out = []
    if pairs == 1:
        a, b = _copies(loop, [Affine.of(lo), Affine.of(lo + step)])
        out += _merge(a, b)
    else:
        block = Block([IndexType()], [loop.index.name_hint])
        c = Affine.of(block.args[0])
        a, b = _copies(loop, [c * (2 * step) + lo, c * (2 * step) + (lo + step)])
        for o in _merge(a, b):
            block.append(o)
        new = ForiLoopOp([], {"lower": 0, "upper": pairs, "step": 1}, [], [Region([block])])
        new.loc = loop.loc
        out.append(new)
    if odd:
        (rest,) = _copies(loop, [Affine.of(lo + step * (n - 1))])
        out += rest
    return out


def _has_tensor_work(loop: ForiLoopOp) -> bool:
    """The body runs the Tensor engine and a ScalarE activation or a VectorE reduction: a chain
    across engines (a plain matmul's loads, matmuls and copies rotate buffers instead); or it
    sums integer digit planes on ScalarE (``_int_row_sum``), whose combine on VectorE waits for
    the last plane's sum."""
    ops = list(loop.body.walk())
    if any(_int_row_sum(op) for op in ops):
        return True
    return any(isinstance(op, _TENSOR_OPS) for op in ops) and any(isinstance(op, _CHAIN_OPS) for op in ops)


def _int_row_sum(op) -> bool:
    """A ScalarE row sum (``reduce_res``) of an integer tile: a digit plane of an exact integer
    sum (decomposition/digit_planes.py, fold.py)."""
    if not isinstance(op, ActivationOp) or op.access("reduce_res") is None:
        return False
    return op.access("data").dtype.is_int


def _candidates(block: Block, live: tuple[int, int], out: list, skip) -> tuple[int, int]:
    """Innermost independent Tensor-engine loops of ``block`` (post-order) that ``skip`` does
    not exclude, each with the SBUF bytes / PSUM banks live where it starts."""
    return _candidates_of(
        block, live, out, lambda op: _has_tensor_work(op) and _independent(op) and not skip(op)
    )


MAX_BODY_OPS = 1024  # larger bodies hold independent work enough; copying them costs compile time


def _candidates_of(block: Block, live: tuple[int, int], out: list, qualifies) -> tuple[int, int]:
    """Innermost loops of ``block`` (post-order) of at most ``MAX_BODY_OPS`` ops for which
    ``qualifies(loop)`` holds, each with the SBUF bytes / PSUM banks live where it starts."""
    sbuf, banks = live
    owner: dict = {}
    for op in list(block):
        if isinstance(op, AllocOp) and isinstance(op.result.type, TileType):
            t = op.result.type
            owner[op.result] = t
            if t.space is MemorySpace.SBUF:
                sbuf += t.bytes_per_partition * op.bufs
            else:
                banks += op.bufs
        elif isinstance(op, DeallocOp) and op.operand(0) in owner:
            t = owner.pop(op.operand(0))
            if t.space is MemorySpace.SBUF:
                sbuf -= t.bytes_per_partition
            else:
                banks -= 1
        elif isinstance(op, ForiLoopOp):
            before = len(out)
            _candidates_of(op.body, (sbuf, banks), out, qualifies)
            small = sum(1 for _ in op.body) <= MAX_BODY_OPS
            if len(out) == before and op.trip_count >= 2 and small and qualifies(op):
                out.append((op, sbuf, banks))
    return sbuf, banks


ROUNDS = 3  # pairing may repeat on the loop made (at most 8 iterations interleaved)


def drop_ops(ops) -> None:
    """Forget the operand uses of ``ops`` (a rewrite not kept, nested ops included)."""
    for o in ops:
        for inner in o.walk():
            inner.drop_operand_uses()


def replace_loop_if_fits(loop, ops: list, sbuf: int, banks: int, target: Target) -> bool:
    """Put ``ops`` (a rewrite of ``loop`` not yet in any block) in place of ``loop`` when their
    peak SBUF and PSUM, starting from the ``sbuf`` bytes and ``banks`` live around the loop, fit
    ``target``; otherwise drop ``ops``' operand uses and keep the loop. Returns whether it
    replaced."""
    tmp = Block([], [])
    for o in ops:
        tmp.append(o)
    s, b = _peaks(tmp, {}, sbuf, banks)
    if s > target.sbuf_bytes_per_partition or b > target.psum_num_banks:
        drop_ops(tmp)
        return False
    parent = loop.parent
    for o in list(tmp):
        tmp.remove(o)
        parent.insert_before(loop, o)
    for inner in reversed(list(loop.walk())):
        inner.drop_operand_uses()
    parent.remove(loop)
    return True


def interleave_loops(graph: Graph, target: Target, skip=lambda _loop: False, keep=None) -> int:
    """Interleave pairs of iterations of the qualifying loops (module docstring) but the loops
    as lowered (the first round) that ``skip(loop)`` leaves to another transform; the pair
    loops made here are paired further as before. ``keep(loop, ops, sbuf, banks)``, when given,
    may refuse a rewrite ``ops`` of ``loop`` (stage_fit.py). Returns how many loops were
    transformed."""
    done = 0
    for r in range(ROUNDS):
        found: list = []
        _candidates(graph.body, (0, 0), found, skip if r == 0 else lambda _loop: False)
        changed = 0
        for loop, sbuf, banks in found:
            try:
                ops = _interleaved(loop)
            except _Unsupported:
                continue
            if keep is not None and not keep(loop, ops, sbuf, banks):
                drop_ops(ops)
                continue
            if replace_loop_if_fits(loop, ops, sbuf, banks, target):
                changed += 1
        done += changed
        if not changed:
            break
    return done
