"""activation, tensor_copy and tensor_scalar pair their data operand with dst element by
element (nkigen_lite/nki/pairing.py): the verifier and, with verify=False, the interpreter
refuse a data access whose free dims differ from dst's (a reshape or a permutation of equal
element count), and accept one that differs only by size-1 dims."""

import numpy as np
import pytest

import nkigen_lite as nk

F32 = nk.float32
X = (np.arange(128 * 6, dtype=np.float32).reshape(128, 6) - 300) / 100


def _kernel(instr, src_shape, dst_shape):
    """x (128, 6) -> an SBUF tile of src_shape -> ``instr`` into a dst of dst_shape -> y."""
    b = nk.nki.Builder("k")
    x = b.add_input("x", (128, 6), F32)
    y = b.alloc((128, 6), F32, "hbm", name="y")
    src = b.alloc(src_shape, F32, "sbuf", name="src")
    b.dma_copy(dst=src, src=x)
    dst = b.alloc(dst_shape, F32, "sbuf", name="dst")
    if instr == "tensor_copy":
        b.tensor_copy(dst=dst, src=src)
    elif instr == "activation":
        b.activation(dst=dst, op="exp", data=src)
    else:
        b.tensor_scalar(dst=dst, data=src, op0="multiply", operand0=2.0)
    b.dma_copy(dst=y, src=dst)
    b.dealloc(src)
    b.dealloc(dst)
    b.set_outputs({"y": y})
    return b.graph


INSTRS = ("tensor_copy", "activation", "tensor_scalar")
OPERAND = {"tensor_copy": "src", "activation": "data", "tensor_scalar": "data"}
REF = {"tensor_copy": X, "activation": np.exp(X.astype(np.float64)), "tensor_scalar": 2.0 * X}
BAD = [((128, 2, 3), (128, 6)), ((128, 6), (128, 3, 2)), ((128, 2, 3), (128, 3, 2))]


def _msg(instr, src_shape, dst_shape):
    name = OPERAND[instr]
    return (
        rf"nki.{instr}: {name} access shape \[{', '.join(map(str, src_shape))}\] does not pair with "
        rf"dst access shape \[{', '.join(map(str, dst_shape))}\]: {instr} pairs {name} and dst "
        r"element by element, so they need the same partitions and the same free dims"
    )


@pytest.mark.parametrize("shapes", BAD, ids=str)
@pytest.mark.parametrize("instr", INSTRS)
def test_the_verifier_refuses_a_reshaped_or_permuted_data_operand(instr, shapes):
    with pytest.raises(nk.VerifyError, match=_msg(instr, *shapes)):
        nk.nki.verify(_kernel(instr, *shapes))


@pytest.mark.parametrize("shapes", BAD, ids=str)
@pytest.mark.parametrize("instr", INSTRS)
def test_the_interpreter_refuses_it_without_the_verifier(instr, shapes):
    with pytest.raises(nk.InterpretError, match=_msg(instr, *shapes)):
        nk.nki.run(_kernel(instr, *shapes), {"x": X}, verify=False)


@pytest.mark.parametrize("shapes", [((128, 1, 6), (128, 6)), ((128, 6), (128, 6, 1)), ((128, 6), (128, 6))])
@pytest.mark.parametrize("instr", INSTRS)
def test_size_one_dims_do_not_change_the_pairing(instr, shapes):
    g = _kernel(instr, *shapes)
    nk.nki.verify(g)
    got = nk.nki.run(g, {"x": X})["y"]
    np.testing.assert_allclose(got, REF[instr], rtol=1e-5, atol=1e-5)  # f32 (ScalarE exp: 1e-5)


def test_partitions_must_match_too():
    from nkigen_lite.nki.pairing import pairing_error

    assert pairing_error("nki.tensor_copy", "src", (64, 12), (128, 6)) is not None
    assert pairing_error("nki.tensor_copy", "src", (128, 1, 6, 1), (128, 6)) is None
