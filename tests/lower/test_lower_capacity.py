"""Bad input at model scale (issue 11): tensors that cannot fit the HBM a NeuronCore
addresses, or whose byte counts overflow 64-bit sizes, get one BuildError naming the value
and the numbers, before any lowering work (no raw exception, no hang)."""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite.nki.target import TRN2
from nkigen_lite.tensor.builder import Builder


def _graph(shape, dtype=nk.float32):
    b = Builder("big")
    x = b.add_input("x", shape, dtype)
    b.set_outputs({"y": b.exp(x + 1.0)})
    return b.graph


@pytest.mark.parametrize(
    "shape", [(2**20, 2**14), (2**40, 2**30), (2**62, 4)], ids=["64GiB", "2^70-elements", "int64-overflow"]
)
def test_a_tensor_larger_than_hbm_is_one_build_error_naming_it(shape):
    with pytest.raises(nk.BuildError) as e:
        nk.compile(_graph(shape))
    msg = str(e.value)
    assert "%x" in msg and f"{TRN2.hbm_bytes:,} B" in msg
    assert f"{shape[0] * shape[1] * 4:,} B" in msg


def test_inputs_and_outputs_that_together_exceed_hbm():
    b = Builder("io")
    xs = [b.add_input(f"x{i}", (2**16, 2**15), nk.float32) for i in range(3)]  # 8 GiB each
    b.set_outputs({"y": xs[0] + xs[1] + xs[2]})
    with pytest.raises(nk.BuildError, match="inputs and outputs together needs 34,359,738,368 B"):
        nk.compile(b.graph)
