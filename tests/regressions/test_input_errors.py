"""Issue 10's smaller items: bad shapes given to add_input and bytes given to nk.parse raise one
clear error naming the input and the rule (they used to truncate silently or raise a bare
TypeError)."""

import pytest

import nkigen_lite as nk


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ((2.5, 4), r"add_input 'x': .*non-integer dimension 2\.5"),
        (None, r"add_input 'x': .*sequence of ints, got None"),
    ],
)
def test_add_input_rejects_a_bad_shape(shape, message):
    b = nk.Builder("g")
    with pytest.raises(nk.BuildError, match=message):
        b.add_input("x", shape, nk.float32)


def test_parse_of_bytes_says_to_decode():
    with pytest.raises(nk.ParseError, match=r"got bytes .*decode"):
        nk.parse(b"graph @g() {}")
