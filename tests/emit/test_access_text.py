"""Index text of one dim of an emitted access (nkigen_lite/emit/accesses.py)."""

from nkigen_lite.emit.accesses import _dim
from nkigen_lite.nki.types import DimSlice


def test_a_broadcast_dim_of_one_element_is_a_unit_step_slice():
    # A stride-0 dim of size 1 (head_halves' half of a 2-head broadcast) reads one element; as
    # "0:1:0" NumPy-style indexing (and the NKI simulator) refuse the zero step.
    assert _dim(DimSlice(0, 1, 0), str) == "0:1"
    assert _dim(DimSlice(3, 1, 0), str) == "3:4"


def test_strided_and_unit_dims_keep_their_text():
    assert _dim(DimSlice(0, 4, 1), str) == "0:4"
    assert _dim(DimSlice(2, 3, 2), str) == "2:7:2"
