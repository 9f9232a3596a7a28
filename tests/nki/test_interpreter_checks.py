"""The NKI interpreter's own run-time checks (independent of the static verifier: most tests
run with verify=False to prove the interpreter catches the fault by itself)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ds, ts

F32 = nk.float32
X = np.arange(256 * 512, dtype=np.float32).reshape(256, 512) / 1000


def _run(build, verify=False, x=X):
    b = nk.nki.Builder("k")
    xv = b.add_input("x", x.shape, nk.get_dtype(x.dtype))
    y = b.alloc((128, 512), F32, "hbm", name="y")
    build(b, xv, y)
    b.set_outputs({"y": y})
    return nk.nki.run(b.graph, {"x": x}, verify=verify)


def _store(b, y, t):
    b.dma_copy(dst=y, src=t)
    b.dealloc(t)


def test_uninitialised_tile_read_raises():
    def build(b, x, y):
        t = b.alloc((128, 512))
        b.dma_copy(dst=t[0:64, :], src=x[0:64, :])
        _store(b, y, t)

    with pytest.raises(
        nk.InterpretError,
        match=r"src reads unwritten \(poisoned\) memory of %t at "
        r"window element \[64, 0\]",
    ):
        _run(build, verify=True)


def test_unwritten_output_region_read_raises():
    def build(b, x, y):
        t = b.alloc((128, 512))
        b.dma_copy(dst=t, src=y)
        _store(b, y, t)

    with pytest.raises(nk.InterpretError, match="unwritten .* memory of %y"):
        _run(build, verify=True)


def test_output_left_partly_unwritten_raises():
    def build(b, x, y):
        t = b.alloc((128, 512))
        b.dma_copy(dst=t, src=x[0:128, :])
        b.dma_copy(dst=y[0:64, :], src=t[0:64, :])
        b.dealloc(t)

    with pytest.raises(
        nk.InterpretError, match=r"output y has 32,768 unwritten elements \(first at \[64, 0\]\)"
    ):
        _run(build, verify=True)


def test_out_of_bounds_window_raises_with_the_iteration():
    def build(b, x, y):
        with b.fori_loop(0, 3) as i:
            t = b.alloc((128, 512))
            b.dma_copy(dst=t, src=x[ts(i, 128), :])
            b.dma_copy(dst=y, src=t)
            b.dealloc(t)

    with pytest.raises(
        nk.InterpretError,
        match=r"src dim 0 window \[256, 384\) is out of bounds for "
        r"%x of shape \(256, 512\) \(iteration %i = 2\)",
    ):
        _run(build)


def test_use_after_dealloc_raises():
    def build(b, x, y):
        t = b.alloc((128, 512))
        b.dma_copy(dst=t, src=x[0:128, :])
        b.dealloc(t)
        b.dma_copy(dst=y, src=t)

    with pytest.raises(nk.InterpretError, match="src uses %t after its dealloc"):
        _run(build)


def test_double_dealloc_raises():
    def build(b, x, y):
        t = b.alloc((128, 512))
        b.dma_copy(dst=t, src=x[0:128, :])
        b.dma_copy(dst=y, src=t)
        b.dealloc(t)
        b.dealloc(t)

    with pytest.raises(nk.InterpretError, match="%t is deallocated twice"):
        _run(build)


def test_leak_at_kernel_end_raises():
    def build(b, x, y):
        with b.fori_loop(0, 2):
            t = b.alloc((128, 512))
            b.dma_copy(dst=t, src=x[0:128, :])
            b.dma_copy(dst=y, src=t)

    with pytest.raises(nk.InterpretError, match=r"still allocated at kernel end \(2 live tile\(s\) leaked\)"):
        _run(build)


def test_sbuf_capacity_is_enforced_at_run_time():
    def build(b, x, y):
        for _ in range(5):
            b.alloc((128, 12_000))

    with pytest.raises(nk.InterpretError, match="SBUF exhausted: 240,000 B/partition > 212,984"):
        _run(build)


def test_psum_banks_are_enforced_at_run_time():
    def build(b, x, y):
        for _ in range(9):
            b.alloc((128, 512), F32, "psum")

    with pytest.raises(nk.InterpretError, match="PSUM exhausted: 8 of all 8 banks are in use"):
        _run(build)


def test_psum_tile_larger_than_a_bank_raises_at_run_time():
    with pytest.raises(nk.InterpretError, match="PSUM tile of 4,096 B/partition exceeds a 2,048 B bank"):
        _run(lambda b, x, y: b.alloc((128, 1024), F32, "psum"))


def _accumulate_onto(init):
    def build(b, x, y):
        st, mv = b.alloc((128, 128)), b.alloc((128, 512))
        ps = b.alloc((128, 512), F32, "psum")
        b.dma_copy(dst=st, src=x[0:128, 0:128])
        b.dma_copy(dst=mv, src=x[0:128, :])
        if init == "memset":
            b.memset(dst=ps, value=0.0)
        elif init == "transpose":
            b.nc_transpose(dst=ps[:, 0:128], data=st)
            b.nc_matmul(dst=ps[:, 128:512], stationary=st, moving=mv[:, 0:384])
        b.nc_matmul(dst=ps, stationary=st, moving=mv, accumulate=True)
        out = b.alloc((128, 512))
        b.tensor_copy(dst=out, src=ps)
        _store(b, y, out)
        for v in (st, mv, ps):
            b.dealloc(v)

    return build


@pytest.mark.parametrize("init", ["memset", "transpose"])
def test_accumulate_onto_psum_not_written_by_matmul_raises(init):
    with pytest.raises(nk.InterpretError, match="accumulate=true onto PSUM not last written by nc_matmul"):
        _run(_accumulate_onto(init), verify=True)


def test_accumulate_onto_unwritten_psum_reports_poison():
    with pytest.raises(nk.InterpretError, match=r"dst reads unwritten \(poisoned\) memory of %ps"):
        _run(_accumulate_onto("nothing"), verify=True)


@pytest.mark.parametrize("func,scale", [("sin", 1.0), ("arctan", 1.0)])
def test_activation_outside_documented_domain_raises(func, scale):
    def build(b, x, y):
        t = b.alloc((128, 512))
        b.dma_copy(dst=t, src=x[0:128, :])  # values 0 .. 65.5
        b.activation(dst=t, op=func, data=t, scale=scale)
        _store(b, y, t)

    with pytest.raises(nk.InterpretError, match=f"{func} input range .* leaves the documented domain"):
        _run(build, verify=True)


def test_sin_inside_its_domain_is_accurate():
    x = np.linspace(-3.14, 3.14, 256 * 512, dtype=np.float32).reshape(256, 512)

    def build(b, xv, y):
        t = b.alloc((128, 512))
        b.dma_copy(dst=t, src=xv[0:128, :])
        b.activation(dst=t, op="sin", data=t)
        _store(b, y, t)

    out = _run(build, verify=True, x=x)["y"]
    np.testing.assert_allclose(out, np.sin(x[0:128].astype(np.float64)), rtol=0, atol=1e-6)


def test_write_to_kernel_input_raises_at_run_time():
    def build(b, x, y):
        t = b.alloc((128, 512))
        b.memset(dst=t, value=1.0)
        b.dma_copy(dst=x[0:128, :], src=t)
        _store(b, y, t)

    with pytest.raises(nk.InterpretError, match="dst writes kernel input %x"):
        _run(build)


def test_broadcast_write_raises_at_run_time():
    def build(b, x, y):
        t = b.alloc((128, 512))
        b.dma_copy(dst=t[:, ds(0, 512, 0)], src=x[0:128, :])
        _store(b, y, t)

    with pytest.raises(nk.InterpretError, match="dst writes one element of %t more than once"):
        _run(build)


def test_static_errors_stop_run_before_interpretation():
    def build(b, x, y):
        t = b.alloc((128, 512))
        b.dma_copy(dst=t, src=x[0:128, :])
        b.dma_copy(dst=y, src=t)

    with pytest.raises(nk.VerifyError, match="never deallocated"):
        _run(build, verify=True)


def test_inputs_are_validated():
    b = nk.nki.Builder("k")
    x = b.add_input("x", (128, 512), F32)
    y = b.alloc((128, 512), F32, "hbm", name="y")
    t = b.alloc((128, 512))
    b.dma_copy(dst=t, src=x)
    _store(b, y, t)
    b.set_outputs({"y": y})
    with pytest.raises(nk.InterpretError, match="missing"):
        nk.nki.run(b.graph, {})
    with pytest.raises(nk.InterpretError, match="shape"):
        nk.nki.run(b.graph, {"x": X})
    with pytest.raises(nk.InterpretError, match="dtype"):
        nk.nki.run(b.graph, {"x": X[:128].astype(np.float16)})
    np.testing.assert_array_equal(nk.nki.run(b.graph, {"x": X[:128]})["y"], X[:128])


def test_ill_shaped_operands_without_verify_raise_interpret_errors():
    def build(b, x, y):
        t, u = b.alloc((128, 512)), b.alloc((128, 64))
        b.dma_copy(dst=t, src=x[0:128, :])
        b.dma_copy(dst=u, src=x[0:128, 0:64])
        b.tensor_tensor(dst=t, data1=t, data2=u, op="add")
        _store(b, y, t)
        b.dealloc(u)

    with pytest.raises(nk.InterpretError, match="operands do not fit this op"):
        _run(build)
