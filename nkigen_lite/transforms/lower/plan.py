"""Tiling plan of a fusion group: which domain dims are loops (I), partitions (P) or free (F),
how the partition dims are chunked into tiles of at most ``partitions`` rows, and how wide a
free-dim tile may be within the SBUF budget."""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.errors import BuildError
from ...tensor import ops as T
from ..layout.policy import default_roles as policy_roles
from ..layout.policy import is_column_reduction, partition_tile
from .groups import FusionGroup, domain_axes
from .row_partitions import spread_single_row


class RowTooWide(BuildError):
    """A fusion group's row-local reductions need a row wider than SBUF holds; the driver
    regroups with those reductions accumulated over free-dim chunks instead."""

    def __init__(self, message: str, group: FusionGroup):
        super().__init__(message)
        self.group = group


@dataclass(frozen=True)
class GroupPlan:
    """Loop nest and tile shape of one fusion group.

    ``order`` lists the domain dims as (I dims..., P dims..., F dims...); HBM operands are read
    through views permuted into that order. ``p_dims[0]`` is iterated in chunks of ``p_chunk``
    (a fori_loop over full chunks plus a peeled remainder); the other P dims are whole.
    ``f_chunk`` (when not None) chunks ``f_dims[0]`` the same way.
    """

    domain: tuple[int, ...]
    roles: tuple[str, ...]
    i_dims: tuple[int, ...]
    p_dims: tuple[int, ...]
    f_dims: tuple[int, ...]
    p_chunk: int
    f_chunk: int | None
    acc_dims: tuple[int, ...] = ()  # dims reduced by accumulating reductions: loops innermost
    split: tuple[int, int] | None = None  # (d, q): source dim d is domain dims (d, d+1) = (n/q, q)

    @property
    def source_rank(self) -> int:
        """Rank of the group's own domain (before a row split)."""
        return len(self.domain) - (self.split is not None)

    def expand(self, ext: tuple[int, ...]) -> tuple[int, ...]:
        """Extents aligned to the group's domain -> extents in this plan's domain."""
        if self.split is None:
            return tuple(ext)
        d, q = self.split
        pair = (ext[d] // q, q) if ext[d] > 1 else (1, 1)
        return tuple(ext[:d]) + pair + tuple(ext[d + 1 :])

    def expand_strides(self, shape: tuple[int, ...], strides: tuple[int, ...]):
        """(shape, strides) of an HBM view aligned to the group's domain -> the plan's domain."""
        if self.split is None:
            return tuple(shape), tuple(strides)
        d, q = self.split
        s = strides[d]
        pair_s = (s * q, s) if shape[d] > 1 else (0, 0)
        return self.expand(shape), tuple(strides[:d]) + pair_s + tuple(strides[d + 1 :])

    @property
    def order(self) -> tuple[int, ...]:
        return self.i_dims + self.p_dims + self.f_dims

    @property
    def rows(self) -> int:
        """Partition rows of a full tile."""
        n = self.p_chunk
        for d in self.p_dims[1:]:
            n *= self.domain[d]
        return n

    @property
    def free_shape(self) -> tuple[int, ...]:
        """Free dims of a full tile (the first F dim chunked when ``f_chunk`` is set)."""
        out = [self.domain[d] for d in self.f_dims]
        if self.f_chunk is not None and out:
            out[0] = self.f_chunk
        return tuple(out)


def is_row_local(op: T.ReduceOp, free_limit: int, small: int = 2048) -> bool:
    """True when a reduction can run inside one tile row: its reduced elements fit the free
    budget and either some kept dim provides rows or the reduction is small. Other reductions
    accumulate across loops and partitions and must end their fusion group."""
    shape, axes = op.operand(0).type.shape, op.attrs["axes"]
    red = kept = 1
    for d, n in enumerate(shape):
        if d in axes:
            red *= n
        else:
            kept *= n
    if is_column_reduction(shape, axes):  # accumulated over partitions (layout/policy.py)
        return False
    return red <= free_limit and (kept > 1 or red <= small)


def reduced_axes(group: FusionGroup, row_local) -> set[int]:
    """Domain dims reduced by the row-local reductions of the group."""
    axes: set[int] = set()
    for op in group.ops:
        if isinstance(op, T.ReduceOp) and row_local(op):
            axes |= set(domain_axes(op, len(group.domain)))
    return axes


def accumulated_axes(group: FusionGroup, row_local) -> set[int]:
    """Domain dims reduced by the group's accumulating (not row-local) reductions."""
    axes: set[int] = set()
    for op in group.ops:
        if isinstance(op, T.ReduceOp) and not row_local(op):
            axes |= set(domain_axes(op, len(group.domain)))
    return axes


def default_roles(domain: tuple[int, ...], reduce_axes: set[int], partitions: int) -> tuple[str, ...]:
    """The layout solver's default roles (layout/policy.py) with the reduced dims free."""
    fixed = ["F" if d in reduce_axes else None for d in range(len(domain))]
    return tuple(policy_roles(domain, fixed, partitions))


def _free_broadcast_dims(
    roles: list[str], dom, broadcast_dims: set[int], partitions: int, free_budget: int
) -> None:
    """Move P dims along which a group input is broadcast to F (a stride-0 on-chip read instead
    of replicating the input across partitions) while the other P dims still fill the tile."""
    for d in sorted(broadcast_dims):
        if roles[d] != "P":
            continue
        others = [e for e in range(len(dom)) if roles[e] == "P" and e != d]
        rows = 1
        for e in others:
            rows *= dom[e]
        free = dom[d]
        for e in range(len(dom)):
            if roles[e] == "F":
                free *= dom[e]
        if others and min(rows, partitions) >= min(partitions, rows * dom[d]) and free <= free_budget:
            roles[d] = "F"


def _free_stored_broadcast_dims(roles: list[str], dom, store_exts) -> None:
    """A stored value broadcast over a P dim inside a P dim it spans has rows that are not
    contiguous partitions of its tile: that dim moves to F (the value's tile keeps extent 1)."""
    for ext in store_exts:
        spans = False
        for d in range(len(dom)):
            if roles[d] != "P" or dom[d] == 1:
                continue
            if ext[d] > 1:
                spans = True
            elif spans:
                roles[d] = "F"


def make_plan(
    group: FusionGroup,
    roles: tuple[str, ...] | None,
    *,
    partitions: int,
    sbuf_budget: int,
    itemsize_sum: int,
    broadcast_dims: set[int] = frozenset(),
    row_local=lambda _op: True,
    store_exts=(),
) -> GroupPlan:
    """Build the plan from the layout's ``roles`` (None: the default roles). When the layout's
    roles leave a row too wide for SBUF (e.g. every dim free for a value that some other op
    reduces over all axes) while the default roles fit, the default roles win."""
    kw = dict(
        partitions=partitions,
        sbuf_budget=sbuf_budget,
        itemsize_sum=itemsize_sum,
        broadcast_dims=broadcast_dims,
        row_local=row_local,
        store_exts=store_exts,
    )
    if roles is None:
        return _make_plan(group, None, **kw)
    try:
        plan = _make_plan(group, roles, **kw)
    except RowTooWide:
        return _make_plan(group, None, **kw)
    if plan.f_chunk is None:
        return plan
    fallback = _make_plan(group, None, **kw)
    return fallback if fallback.f_chunk is None else plan


def _make_plan(
    group: FusionGroup,
    roles: tuple[str, ...] | None,
    *,
    partitions: int,
    sbuf_budget: int,
    itemsize_sum: int,
    broadcast_dims: set[int] = frozenset(),
    row_local=lambda _op: True,
    store_exts=(),
) -> GroupPlan:
    """Build the plan. ``itemsize_sum`` = Σ itemsize over the tiles live in one iteration per
    free element (an upper bound used to size the free-dim chunk within ``sbuf_budget``);
    ``broadcast_dims`` are domain dims along which some input of the group is broadcast."""
    dom = group.domain
    red = reduced_axes(group, row_local)
    acc = accumulated_axes(group, row_local)
    if roles is None:
        roles = default_roles(dom, red, partitions)
    if len(roles) != len(dom):
        raise BuildError(f"layout roles {roles} do not match the group domain {dom}")
    roles = _adjusted_roles(
        group, list(roles), red, acc, partitions, sbuf_budget, itemsize_sum, broadcast_dims, store_exts
    )
    i_dims = tuple(d for d in range(len(dom)) if roles[d] == "I")
    p_dims = tuple(d for d in range(len(dom)) if roles[d] == "P")
    f_dims = tuple(d for d in range(len(dom)) if roles[d] == "F")
    i_dims, p_list, chunk = _partition_chunk(dom, i_dims, p_dims, partitions)
    roles_out = ["I"] * len(dom)
    for d in p_list:
        roles_out[d] = "P"
    for d in f_dims:
        roles_out[d] = "F"
    # reduced F dims last, so tensor_reduce reduces trailing free axes
    f_dims = tuple(sorted(f_dims, key=lambda d: (d in red or d in acc, d)))
    free = 1
    for d in f_dims:
        free *= dom[d]
    f_chunk = None
    if free * itemsize_sum > sbuf_budget:
        if red:
            raise RowTooWide(
                f"fusion group over {dom}: a row of {free:,} free elements needs "
                f"{free * itemsize_sum:,} B/partition > SBUF budget {sbuf_budget:,} B",
                group,
            )
        inner_free = free // dom[f_dims[0]]
        f_chunk = max(1, sbuf_budget // (itemsize_sum * inner_free))
        f_chunk = min(f_chunk, dom[f_dims[0]])
    return GroupPlan(
        tuple(dom), tuple(roles_out), i_dims, tuple(p_list), f_dims, chunk, f_chunk, tuple(sorted(acc))
    )


def _adjusted_roles(
    group: FusionGroup,
    roles: list,
    red,
    acc,
    partitions: int,
    sbuf_budget: int,
    itemsize_sum: int,
    broadcast_dims,
    store_exts,
) -> list:
    """The I/P/F roles after the group's own constraints: fused reductions over free dims,
    broadcast and stored-broadcast dims freed, kept dims of a partition reduction out of the
    partitions, and an iota sharing the partitions with another dim moved to the free dims."""
    dom = group.domain
    for d in red:  # a fused reduction must run over free dims
        roles[d] = "F"
    _free_broadcast_dims(
        roles, dom, set(broadcast_dims), partitions, max(1, sbuf_budget // max(1, itemsize_sum))
    )
    _free_stored_broadcast_dims(roles, dom, store_exts)
    # a reduction over partitions combines whole partitions: kept dims leave the partitions
    if any(roles[d] == "P" and dom[d] > 1 for d in acc):
        for d in range(len(dom)):
            if roles[d] == "P" and d not in acc and dom[d] > 1:
                roles[d] = "I"
    spread_single_row(roles, dom, red, acc, partitions, store_exts)
    # an iota along a dim that shares the partitions with another dim is not an affine
    # function of the partition index: put that dim in the free dims instead
    for op in group.ops:
        if isinstance(op, T.IotaOp):
            d = op.attrs["axis"] + len(dom) - op.result.type.rank
            if roles[d] == "P" and any(roles[e] == "P" and dom[e] > 1 and e != d for e in range(len(dom))):
                roles[d] = "F"
    return roles


def _partition_chunk(dom, i_dims: tuple, p_dims: tuple, partitions: int) -> tuple[tuple, list, int]:
    """(I dims, P dims, partition chunk): the innermost P dims stay whole; only the outermost
    one that does not fit is chunked, and P dims outside it become I loops (layout/policy.py)."""
    whole, outer_chunk = partition_tile([dom[d] for d in p_dims], partitions)
    keep = list(p_dims[len(p_dims) - whole :]) if whole else []
    p_list = list(p_dims)
    chunk = 1
    if len(keep) < len(p_list):
        outer = p_list[len(p_list) - len(keep) - 1]
        chunk = outer_chunk
        # dims beyond the chunked one cannot also be P: demote them to I loops
        demoted = p_list[: len(p_list) - len(keep) - 1]
        i_dims = tuple(sorted(i_dims + tuple(demoted)))
        p_list = [outer] + keep
    elif keep:
        chunk = dom[keep[0]]
        p_list = keep
    return i_dims, p_list, chunk


def _reads_column(plan: GroupPlan, group: FusionGroup) -> bool:
    """Some op of ``group`` reads a per-row column: an operand spanning the partition dim with
    extent 1 on every free dim of more than one element. Unfolded, each op reading it is one
    ``tensor_scalar`` (or activation) with a per-partition operand; folded q rows to a partition,
    the column holds q values per partition and the op becomes a two-input ``tensor_tensor`` of
    twice the cycles (on GpSimd ~2.3x a ScalarE pass)."""
    dom = plan.domain
    d = plan.p_dims[0]
    wide = [f for f in plan.f_dims if dom[f] > 1]
    if not wide:
        return False
    for op in group.ops:
        for u in op.operands:
            shape = tuple(u.type.shape)
            if len(shape) > len(dom):
                continue
            ext = (1,) * (len(dom) - len(shape)) + shape
            if ext[d] == dom[d] and all(ext[f] == 1 for f in wide):
                return True
    return False


def fold_rows(
    plan: GroupPlan,
    group: FusionGroup,
    row_bytes: int,
    *,
    partitions: int,
    sbuf_budget: int,
    wide_row_bytes: int | None = None,
) -> GroupPlan:
    """Fold several rows of a chunked partition dim into each partition's free dims when the
    rows are narrow: dim d of n rows becomes (n/q partitions, q rows per partition) so one
    instruction covers q times more elements. Only for groups of elementwise ops (no
    reductions or iotas, whose axes are dims of the unsplit domain); returns ``plan`` unchanged
    when nothing is gained. With ``wide_row_bytes`` given, a group whose rows already hold that
    many bytes of its result per partition and that reads a per-row column is not folded
    (``_reads_column``)."""
    dom = plan.domain
    if (
        plan.split is not None
        or plan.f_chunk is not None
        or len(plan.p_dims) != 1
        or any(isinstance(op, (T.ReduceOp, T.IotaOp)) for op in group.ops)
    ):
        return plan
    d = plan.p_dims[0]
    n = dom[d]
    if n <= partitions:
        return plan
    width = 1
    for f in plan.f_dims:
        width *= dom[f]
    if wide_row_bytes is not None and _reads_column(plan, group):
        item = min(op.result.type.dtype.itemsize for op in group.ops)
        if width * item >= wide_row_bytes:
            return plan
    best, best_tiles = 1, -(-n // partitions)
    for q in range(2, n + 1):
        if q * width * row_bytes > sbuf_budget:
            break
        if n % q:
            continue
        tiles = -(-(n // q) // partitions)
        if tiles < best_tiles:
            best, best_tiles = q, tiles
    if best == 1:
        return plan

    def shift(dims):
        return tuple(e + 1 if e > d else e for e in dims)

    domain = dom[:d] + (n // best, best) + dom[d + 1 :]
    roles = list(plan.roles[:d]) + ["P", "F"] + list(plan.roles[d + 1 :])
    return GroupPlan(
        domain,
        tuple(roles),
        shift(plan.i_dims),
        (d,),
        (d + 1,) + shift(plan.f_dims),
        min(n // best, partitions),
        None,
        (),
        (d, best),
    )
