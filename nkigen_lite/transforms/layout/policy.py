"""The role policy, one for the layout solver (solver.py) and the group planner
(lower/plan.py): which dims go on the partitions, which stay free, which become loops, and how
many rows a partition tile holds.

Default roles walk a value's (or a fusion group's domain's) dims from the last, skipping dims
whose role is already fixed: the first one is F unless some dim is F already (a dim of extent 1
is F without counting as that one when two or more dims of extent > 1 are left); then, unless
some dim is P already, dims go on the partitions while their extents multiply to at most the
partitions, plus one more dim that is chunked when a chunk of at least 2 rows fits; the rest
are I loops. So an unconstrained matrix is [P, F] and a batch of them [I, P, F].

A tile keeps the innermost P dims whole while their extents multiply to at most the
partitions; the next P dim outwards is chunked so the tile fills the partitions.
"""

from __future__ import annotations


class DefaultRoles:
    """The default role of each free dim, asked for from the last dim to the first (see the
    module docstring). ``has_f`` / ``has_p``: some dim is F / P already."""

    def __init__(self, partitions: int, has_f: bool, has_p: bool, extents=()):
        self.partitions = partitions
        self.need_f = not has_f
        self.folding = not has_p
        self.rows = 1
        # with two or more dims of extent > 1 to place, a unit dim does not count as the free
        # dim: (256, 129, 1) is laid out as (256, 129), not as 256 loops of (129, 1) tiles
        self.skip_units = sum(1 for e in extents if e > 1) >= 2

    def next(self, extent: int) -> str:
        """The role of the next free dim (walking outwards), of extent ``extent``."""
        if self.need_f:
            self.need_f = extent == 1 and self.skip_units
            return "F"
        if not self.folding:
            return "I"
        n = max(extent, 1)
        if self.rows * n <= self.partitions:
            self.rows *= n
            return "P"
        self.folding = False
        return "P" if self.partitions // self.rows >= 2 else "I"


COLUMN_REDUCTION_MIN = 128
"""A reduction keeping its operand's last dim is a *column reduction* when that dim and the
reduced elements both number at least this many (see ``is_column_reduction``)."""


def is_column_reduction(shape, axes) -> bool:
    """True when a reduction over ``axes`` of an operand of ``shape`` keeps the (contiguous)
    last dim and reduces many rows: its reduced dims go on the partitions and loops, the last
    dim stays free, and the partials are combined across partitions (a ones-matmul or a
    TensorE transpose) instead of reading the operand through a transposing, element-wise
    view with the reduced dims free."""
    if not shape or (len(shape) - 1) in axes or shape[-1] < COLUMN_REDUCTION_MIN:
        return False
    red = 1
    for d in axes:
        red *= shape[d]
    return red >= COLUMN_REDUCTION_MIN


def default_roles(extents, fixed, partitions: int) -> list[str]:
    """Roles of dims of ``extents``: ``fixed[d]`` where it is not None, else the default."""
    roles = list(fixed)
    policy = DefaultRoles(
        partitions, "F" in roles, "P" in roles, [extents[d] for d in range(len(roles)) if roles[d] is None]
    )
    for d in range(len(roles) - 1, -1, -1):
        if roles[d] is None:
            roles[d] = policy.next(extents[d])
    return roles


def partition_tile(p_extents, partitions: int) -> tuple[int, int]:
    """(number of innermost P dims kept whole, rows of the chunked dim outside them) for P dims
    of extents ``p_extents`` (outermost first); the chunk is 0 when every P dim is whole."""
    inner = 1
    whole = 0
    for n in reversed(p_extents):
        if inner * max(n, 1) > partitions:
            return whole, max(1, partitions // inner)
        inner *= max(n, 1)
        whole += 1
    return whole, 0


def tile_rows(p_extents, partitions: int) -> int:
    """Partition rows of a full tile over P dims of extents ``p_extents`` (outermost first)."""
    whole, chunk = partition_tile(p_extents, partitions)
    rows = 1
    for n in p_extents[len(p_extents) - whole :] if whole else ():
        rows *= max(n, 1)
    return rows * chunk if chunk else rows
