"""Loop nests of a fusion group: the loops (I dims, the partition-chunk loop, the free-chunk
loop) and the *instance* in force at some point of the nest (offset and extent per domain dim)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...nki.types import Affine
from .plan import GroupPlan


@dataclass(frozen=True)
class LoopSpec:
    """One loop of the nest over domain dim ``dim``: ``n_full`` chunks of ``chunk`` (in a
    fori_loop when n_full > 1), then a peeled remainder of ``rem`` elements (if rem > 0)."""

    kind: str  # "I", "P" or "F"
    dim: int
    chunk: int
    n_full: int
    rem: int


def loops_of(plan: GroupPlan) -> list[LoopSpec]:
    """The loop nest of a plan, outermost first (only loops with more than one instance)."""
    dom = plan.domain
    out = [LoopSpec("I", d, 1, dom[d], 0) for d in plan.i_dims if dom[d] > 1]
    if plan.p_dims:
        p0 = plan.p_dims[0]
        if dom[p0] > plan.p_chunk:
            out.append(LoopSpec("P", p0, plan.p_chunk, dom[p0] // plan.p_chunk, dom[p0] % plan.p_chunk))
    if plan.f_chunk is not None and dom[plan.f_dims[0]] > plan.f_chunk:
        f0 = plan.f_dims[0]
        out.append(LoopSpec("F", f0, plan.f_chunk, dom[f0] // plan.f_chunk, dom[f0] % plan.f_chunk))
    # loops over dims that accumulating reductions reduce run innermost (stable otherwise)
    return sorted(out, key=lambda lp: lp.dim in plan.acc_dims)


@dataclass
class Instance:
    """Offsets and extents of the domain dims at one point of the loop nest. Dims whose loop has
    not been entered yet have offset 0 and their full per-iteration extent."""

    plan: GroupPlan
    offsets: dict[int, Affine] = field(default_factory=dict)
    extents: dict[int, int] = field(default_factory=dict)

    @staticmethod
    def top(plan: GroupPlan) -> Instance:
        ext = {}
        for d, n in enumerate(plan.domain):
            ext[d] = 1 if d in plan.i_dims else n
        if plan.p_dims:
            ext[plan.p_dims[0]] = plan.p_chunk
        if plan.f_chunk is not None:
            ext[plan.f_dims[0]] = plan.f_chunk
        return Instance(plan, {d: Affine.of(0) for d in range(len(plan.domain))}, ext)

    def enter(self, dim: int, offset, extent: int) -> Instance:
        off = dict(self.offsets)
        ext = dict(self.extents)
        off[dim] = Affine.of(offset)
        ext[dim] = extent
        return Instance(self.plan, off, ext)

    def rows(self) -> int:
        n = 1
        for d in self.plan.p_dims:
            n *= self.extents[d]
        return n

    def free(self, ext_of_value: tuple[int, ...]) -> tuple[int, ...]:
        """Free shape of a tile for a value with these domain-aligned extents."""
        fs = tuple(1 if ext_of_value[d] == 1 else self.extents[d] for d in self.plan.f_dims)
        return fs or (1,)
