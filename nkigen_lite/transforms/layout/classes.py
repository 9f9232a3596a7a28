"""Union-find over dim variables, each class carrying at most one required role, with an undo
journal so that a set of constraints can be tried and rolled back as a whole."""

from __future__ import annotations

ROLES = ("I", "P", "F")


class RoleClasses:
    """Dim variables (ints) grouped into classes that must share one role."""

    def __init__(self):
        self.parent: list[int] = []
        self.size: list[int] = []
        self.role: list[str | None] = []
        self._log: list[tuple[list, int, object]] | None = None

    def new(self) -> int:
        self.parent.append(len(self.parent))
        self.size.append(1)
        self.role.append(None)
        return len(self.parent) - 1

    def find(self, a: int) -> int:
        while self.parent[a] != a:  # union by size keeps trees shallow; no path compression,
            a = self.parent[a]  # so that the journal stays small
        return a

    def role_of(self, a: int) -> str | None:
        return self.role[self.find(a)]

    def _set(self, arr: list, i: int, v) -> None:
        if self._log is not None:
            self._log.append((arr, i, arr[i]))
        arr[i] = v

    def union(self, a: int, b: int) -> bool:
        """Merge the classes of a and b; False (and no change) if their roles differ."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        x, y = self.role[ra], self.role[rb]
        if x is not None and y is not None and x != y:
            return False
        merged = x if x is not None else y
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self._set(self.parent, rb, ra)
        self._set(self.size, ra, self.size[ra] + self.size[rb])
        if self.role[ra] != merged:
            self._set(self.role, ra, merged)
        return True

    def require(self, a: int, role: str) -> bool:
        """Give a's class ``role``; False (and no change) if it already has another."""
        r = self.find(a)
        cur = self.role[r]
        if cur is None:
            self._set(self.role, r, role)
            return True
        return cur == role

    def begin(self) -> None:
        """Start journaling changes (for ``rollback``)."""
        self._log = []

    def commit(self) -> None:
        self._log = None

    def rollback(self) -> None:
        """Undo every change since ``begin``."""
        for arr, i, old in reversed(self._log or []):
            arr[i] = old
        self._log = None
