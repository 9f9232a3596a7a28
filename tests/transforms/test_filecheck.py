"""The CHECK matcher: each directive kind matches and fails where LLVM's FileCheck would."""

import pytest

from nkigen_lite.testing.filecheck import check, parse_directives

OUT = """graph @g(%x: tensor<4xf32>) {
  %a = tensor.exp %x : tensor<4xf32>
  %b = tensor.neg %a : tensor<4xf32>
  return y = %b
}
"""


def test_check_next_same_not_pass():
    check(
        OUT,
        """
        // CHECK: graph @g
        // CHECK-NEXT: %a = tensor.exp
        // CHECK-SAME: : tensor<4xf32>
        // CHECK-NOT: tensor.sqrt
        // CHECK: return y = %b
    """,
    )


def test_regex_blocks():
    check(OUT, "CHECK: %{{[a-z]}} = tensor.{{exp|log}} %x")


def test_check_is_ordered():
    with pytest.raises(AssertionError, match=r"check line 2: CHECK: 'tensor.exp' not found"):
        check(OUT, "CHECK: tensor.neg\nCHECK: tensor.exp")


def test_check_next_must_be_the_next_line():
    with pytest.raises(AssertionError, match="not found on the next line"):
        check(OUT, "CHECK: graph @g\nCHECK-NEXT: tensor.neg")


def test_check_same_must_follow_on_the_line():
    with pytest.raises(AssertionError, match="same line"):
        check(OUT, "CHECK: tensor.exp\nCHECK-SAME: %a")


def test_check_not_between_matches_and_at_the_end():
    with pytest.raises(AssertionError, match="'tensor.exp' matched at output line 2"):
        check(OUT, "CHECK: graph\nCHECK-NOT: tensor.exp\nCHECK: return")
    with pytest.raises(AssertionError, match="matched at output line 4"):
        check(OUT, "CHECK: tensor.neg\nCHECK-NOT: return")
    check(OUT, "CHECK: tensor.neg\nCHECK-NOT: tensor.exp")  # only after the last match


def test_failure_shows_where_matching_stopped():
    with pytest.raises(AssertionError) as e:
        check(OUT, "CHECK: tensor.neg\nCHECK: tensor.sqrt")
    msg = str(e.value)
    assert "search started at output line 3" in msg and ">>    3 |   %b = tensor.neg" in msg


def test_bad_check_text_is_an_error():
    with pytest.raises(ValueError, match="no CHECK directives"):
        parse_directives("nothing here")
    with pytest.raises(ValueError, match="cannot be the first"):
        parse_directives("CHECK-NEXT: x")
    with pytest.raises(ValueError, match="empty pattern"):
        parse_directives("CHECK:   ")
