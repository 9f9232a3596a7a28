"""installed() never leaves the simulator in sys.modules; simulate() runs modules by input/output names."""

import sys
import types

import numpy as np
import pytest

from nkigen_lite.nki_sim import NkiSimError, installed, simulate

NAMES = ("nki", "nki.language", "nki.isa")

COPY = """
import nki
import nki.language as nl
import nki.isa as nisa

OUTPUT_NAMES = ("y",)

@nki.jit
def copy_kernel(x):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=y, src=x)
    return y
"""

SPLIT = """
import nki
import nki.language as nl
import nki.isa as nisa

OUTPUT_NAMES = ("lo", "hi")
INPUT_SPECS = {"x": ((4, 6), "float32")}

def half(x, start):
    out = nl.ndarray((4, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x[:, start:start + 3])
    return out

@nki.jit
def split_kernel(x):
    return half(x, 0), half(x, 3)
"""

X = np.arange(24, dtype=np.float32).reshape(4, 6)


@pytest.fixture
def clean_modules():
    """Hide any nki modules for the test and put them back afterwards."""
    saved = {n: sys.modules.pop(n) for n in NAMES if n in sys.modules}
    yield
    for n in NAMES:
        sys.modules.pop(n, None)
    sys.modules.update(saved)


def test_installed_adds_and_removes_the_modules(clean_modules):
    with installed() as nki:
        import nki as imported
        import nki.isa as nisa
        import nki.language as nl

        assert imported is nki and nl is nki.language and nisa is nki.isa
        assert nl.tile_size.pmax == 128 and nl.exp is nl.exp and repr(nl.exp) == "nl.exp"
    assert not any(n in sys.modules for n in NAMES)


def test_installed_restores_a_real_sdk_even_when_the_body_raises(clean_modules):
    real = {n: types.ModuleType(n) for n in NAMES}
    sys.modules.update(real)
    with pytest.raises(RuntimeError, match="boom"):
        with installed():
            import nki

            assert nki is not real["nki"] and hasattr(nki, "jit")
            raise RuntimeError("boom")
    assert all(sys.modules[n] is real[n] for n in NAMES)


def test_nested_installed_blocks_restore_in_order(clean_modules):
    with installed() as outer:
        with installed() as inner:
            assert inner is outer
        assert sys.modules["nki"] is outer
    assert "nki" not in sys.modules


def test_simulate_source_returns_outputs_by_name(clean_modules):
    out = simulate(COPY, {"x": X})
    assert list(out) == ["y"] and out["y"].dtype == np.float32
    np.testing.assert_array_equal(out["y"], X)
    split = simulate(SPLIT, {"x": X})
    np.testing.assert_array_equal(split["lo"], X[:, :3])
    np.testing.assert_array_equal(split["hi"], X[:, 3:])
    assert "nki" not in sys.modules


def test_simulate_accepts_modules_kernels_and_plain_functions(clean_modules):
    module = types.ModuleType("emitted")
    with installed():
        exec(compile(COPY, "emitted", "exec"), vars(module))
    np.testing.assert_array_equal(simulate(module, {"x": X})["y"], X)
    np.testing.assert_array_equal(simulate(module.copy_kernel, {"x": X})["y"], X)
    np.testing.assert_array_equal(simulate(module.copy_kernel.func, {"x": X}, output_names=("z",))["z"], X)
    np.testing.assert_array_equal(simulate(COPY + "\nalias = copy_kernel\n", {"x": X})["y"], X)
    # the kernel object keeps working outside the block through nki.simulate
    with installed() as nki:
        np.testing.assert_array_equal(nki.simulate(module.copy_kernel.func)(X), X)


def test_simulate_is_deterministic(clean_modules):
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    a, b = simulate(SPLIT, {"x": x}), simulate(SPLIT, {"x": x})
    assert all(a[k].tobytes() == b[k].tobytes() for k in a)


@pytest.mark.parametrize(
    "source, inputs, message",
    [
        (COPY, {}, r"missing \['x'\]"),
        (COPY, {"x": X, "w": X}, r"unexpected \['w'\]"),
        (SPLIT, {"x": X[:, :5]}, r"input 'x' is float32\[4, 5\] but the kernel expects float32\[4, 6\]"),
        (SPLIT, {"x": X.astype(np.float16)}, "kernel expects float32"),
        (COPY, {"x": X.astype(np.float64)}, r"kernel input copy_kernel\(x\): dtype float64"),
        (
            COPY.replace('OUTPUT_NAMES = ("y",)', 'OUTPUT_NAMES = ("y", "z")'),
            {"x": X},
            r"returned 1 output\(s\) but OUTPUT_NAMES lists 2",
        ),
        (COPY.replace('OUTPUT_NAMES = ("y",)', ""), {"x": X}, "defines no OUTPUT_NAMES"),
        (
            COPY + "\nalias = copy_kernel\nsecond = nki.jit(lambda x: x)\n",
            {"x": X},
            "exactly one @nki.jit kernel; found copy_kernel, second",
        ),
        ("import nki\nOUTPUT_NAMES = ('y',)\n", {"x": X}, "found none"),
    ],
)
def test_simulate_reports_bad_inputs_and_modules(clean_modules, source, inputs, message):
    with pytest.raises(NkiSimError, match=message):
        simulate(source, inputs)
    assert "nki" not in sys.modules
