"""``nki.jit`` / ``nki.simulate``: run a kernel function on NumPy arrays and return NumPy arrays.

NumPy array arguments become read-only ``nl.shared_hbm`` tensors; other arguments (ints,
tuples of ints, ...) pass through as compile-time values. The kernel must return its outputs:
whole, fully written ``nl.shared_hbm`` tensors it allocated [MIG].
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .enums import shared_hbm
from .errors import NkiSimError
from .grid import run_grid
from .language import resolve_dtype
from .runtime import SimStats, end_run, start_run
from .storage import Storage
from .tensor import NkiTensor, compact_strides


class JitKernel:
    """A function decorated with @nki.jit; calling it with NumPy arrays runs it on the simulator."""

    def __init__(self, func):
        if not callable(func):
            raise NkiSimError(f"nki.jit expects a function, got {func!r}")
        self.func = func
        functools.update_wrapper(self, func)

    @property
    def name(self) -> str:
        return getattr(self.func, "__name__", "kernel")

    def __call__(self, *args, **kwargs):
        outputs, _ = run_kernel(self.func, args, kwargs)
        return outputs

    def __getitem__(self, grid):
        """``kernel[2](...)``: launch on the 2 physical cores of an LNC=2 logical core (grid.py)."""

        def launch(*args, **kwargs):
            return run_kernel(self.func, args, kwargs, grid=grid)[0]

        return launch

    def __repr__(self) -> str:
        return f"<nki.jit kernel {self.name}>"


def jit(func=None, **options):
    """Decorator marking a kernel (@nki.jit or @nki.jit())."""
    if options:
        raise NkiSimError(f"nki.jit options {sorted(options)} are not simulated")
    if func is None:
        return jit
    return func if isinstance(func, JitKernel) else JitKernel(func)


def simulate(kernel):
    """nki.simulate(kernel)(*args): run a kernel (jit-decorated or plain) on the simulator."""
    return jit(kernel)


def run_kernel(func, args: tuple, kwargs: dict, writable=(), grid=None) -> tuple[object, SimStats]:
    """Call a kernel function with NumPy inputs; return (outputs as NumPy arrays, statistics).
    Parameters named in ``writable`` are updated in place (the caller's arrays are copied) and
    may be returned as outputs (IO aliasing); every other input is read-only. With ``grid``
    (``kernel[grid]``, the LNC degree) every core runs the kernel and their outputs are combined
    (grid.py); the statistics are core 0's."""
    if grid is None:
        return _run_once(func, args, kwargs, writable, _collect_outputs)
    name = getattr(func, "__name__", "kernel")
    if writable:
        raise NkiSimError(f"kernel {name}[{grid}]: inputs updated in place are not simulated under a grid")
    stats: list[SimStats] = []

    def one_core(_core):
        raw, st = _run_once(func, args, kwargs, (), _raw_outputs)
        stats.append(st)
        return raw

    return run_grid(name, grid, one_core), stats[0]


def _run_once(func, args: tuple, kwargs: dict, writable, collect) -> tuple[object, SimStats]:
    name = getattr(func, "__name__", "kernel")
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except TypeError as e:
        raise NkiSimError(f"kernel {name}: bad arguments: {e}") from None
    run = start_run(name)
    try:
        inputs = []
        for pname, value in list(bound.arguments.items()):
            bound.arguments[pname] = _to_kernel_arg(
                value, pname, f"kernel input {name}({pname})", run, inputs
            )
            if pname in writable and isinstance(value, np.ndarray):
                inputs[-1].read_only = False
        with np.errstate(all="ignore"):  # IEEE results (inf, nan) are the data, not warnings
            result = func(*bound.args, **bound.kwargs)
        outputs = collect(result, name, inputs)
    finally:
        stats = end_run(run)
    return outputs, stats


def _to_kernel_arg(value, label: str, where: str, run, inputs: list):
    if isinstance(value, np.ndarray):
        dtype = resolve_dtype(value.dtype, where)
        st = Storage(value.shape, dtype, shared_hbm, label, run)
        st.data[:] = np.ascontiguousarray(value, dtype=dtype.np_dtype).ravel()
        st.written[:] = True
        st.read_only = True
        inputs.append(st)
        return NkiTensor(st, 0, value.shape, compact_strides(value.shape))
    if isinstance(value, tuple):
        return tuple(
            _to_kernel_arg(v, f"{label}[{i}]", f"{where}[{i}]", run, inputs) for i, v in enumerate(value)
        )
    return value


def _collect_outputs(result, name: str, inputs: list):
    if isinstance(result, (tuple, list)):
        return tuple(_output_array(r, f"kernel {name} output {i}", inputs) for i, r in enumerate(result))
    return _output_array(result, f"kernel {name} output", inputs)


def _raw_outputs(result, name: str, inputs: list):
    """Like _collect_outputs, but (values, written mask) per output, unwritten elements allowed
    (another core of the launch may write them)."""

    def raw(t, where):
        _check_output(t, where, inputs)
        st = t.storage
        return np.array(st.data).reshape(st.shape), np.array(st.written).reshape(st.shape)

    if isinstance(result, (tuple, list)):
        return True, [raw(r, f"kernel {name} output {i}") for i, r in enumerate(result)]
    return False, [raw(result, f"kernel {name} output")]


def _output_array(t, where: str, inputs: list) -> np.ndarray:
    _check_output(t, where, inputs)
    return np.array(t.read(where)).reshape(t.storage.shape)


def _check_output(t, where: str, inputs: list) -> None:
    if not isinstance(t, NkiTensor):
        raise NkiSimError(f"{where}: kernels must return tensors they allocated, got {type(t).__name__}")
    st = t.storage
    if st.buffer is not shared_hbm:
        raise NkiSimError(f"{where}: {st.label()} must be allocated in nl.shared_hbm [MIG]")
    if any(st is s for s in inputs) and st.read_only:
        raise NkiSimError(
            f"{where}: returns kernel input {st.label()}; outputs must be new tensors "
            "(or inputs the module's ALIASES names as updated in place)"
        )
    if t.offset != 0 or t.shape != st.shape or t.strides != compact_strides(st.shape):
        raise NkiSimError(f"{where}: returns a view {t.describe()}; return the whole tensor")
