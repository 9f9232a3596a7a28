"""The union-find of the layout solver: roles survive merges in either direction, rollback."""

from nkigen_lite.transforms.layout.classes import RoleClasses


def test_union_keeps_the_role_whichever_root_survives():
    for big_first in (True, False):
        c = RoleClasses()
        a, b, d = c.new(), c.new(), c.new()
        c.union(b, d)  # b's class is the bigger one
        assert c.require(a, "P")
        assert c.union(b, a) if big_first else c.union(a, b)
        assert c.role_of(a) == c.role_of(b) == c.role_of(d) == "P"


def test_conflicting_union_and_require_change_nothing():
    c = RoleClasses()
    a, b = c.new(), c.new()
    c.require(a, "P")
    c.require(b, "F")
    assert not c.union(a, b) and c.find(a) != c.find(b)
    assert not c.require(a, "F") and c.role_of(a) == "P"


def test_rollback_undoes_everything_since_begin():
    c = RoleClasses()
    a, b, d = c.new(), c.new(), c.new()
    c.require(a, "I")
    c.begin()
    c.union(a, b)
    c.require(d, "F")
    c.union(b, d) or None
    c.rollback()
    assert c.find(b) == b and c.role_of(b) is None and c.role_of(d) is None
    assert c.role_of(a) == "I"
    c.begin()
    c.union(a, b)
    c.commit()
    assert c.role_of(b) == "I"
