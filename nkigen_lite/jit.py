"""``nk.jit``: call a NumPy function on arrays and have it run as a compiled NKI kernel.

    @nk.jit
    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    y = softmax(x)          # traced, compiled and cached on the first call for x's shape/dtype

Each call binds the arguments as ``nk.trace`` does: arrays (also inside lists, tuples and dicts)
are kernel inputs; everything else (numbers, strings, ``static_argnames``) is static. A
signature — every array's shape and dtype plus the static values — is traced and compiled once
and kept in memory; compiled kernels are also kept on disk (``nkigen_lite/cache.py``: keyed by
the graph, the compiler and the knobs; ``NKIGEN_LITE_CACHE`` picks the directory), so another
process compiling the same function for the same shapes loads it instead.

``backend=``: ``"interpreter"`` (the NKI interpreter, default), ``"simulator"`` (the emitted
``@nki.jit`` module on the NumPy NKI simulator) or ``"device"`` (the emitted module through the
Neuron SDK's ``nki.baremetal`` on a Trainium device; NeuronSdkMissing without the SDK).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence

import numpy as np

from . import cache as _cache
from .compiler import Kernel, pack_outputs
from .compiler import compile as nk_compile
from .ir.errors import BuildError, InterpretError
from .nki.target import TRN2, Target
from .tensor.trace import TracedFunction

BACKENDS = ("interpreter", "simulator", "device")


def jit(
    fn=None,
    *,
    backend: str = "interpreter",
    knobs: dict | None = None,
    static_argnames: Sequence[str] = (),
    target: Target = TRN2,
    cache: bool = True,
    verbose: bool = False,
    name: str | None = None,
):
    """Compile ``fn`` per argument signature and run it as an NKI kernel (see module doc).

    Use as ``@nk.jit``, ``@nk.jit(backend="simulator")`` or ``nk.jit(fn)``. ``cache=False``
    keeps kernels in memory only.
    """

    def wrap(f):
        return JitFunction(
            f,
            backend=backend,
            knobs=knobs,
            static_argnames=static_argnames,
            target=target,
            cache=cache,
            verbose=verbose,
            name=name,
        )

    return wrap if fn is None else wrap(fn)


class JitFunction:
    """A function compiled per signature; call it like the NumPy function it wraps."""

    def __init__(
        self,
        fn,
        *,
        backend="interpreter",
        knobs=None,
        static_argnames=(),
        target=TRN2,
        cache=True,
        verbose=False,
        name=None,
    ):
        if backend not in BACKENDS:
            raise BuildError(f"nk.jit: backend {backend!r} is not one of {', '.join(BACKENDS)}")
        if isinstance(fn, TracedFunction):
            self.traced = fn
        else:
            self.traced = TracedFunction(fn, name=name, static_argnames=static_argnames)
        functools.update_wrapper(self, self.traced.fn)
        self.backend, self.knobs, self.target = backend, dict(knobs or {}), target
        self.cache, self.verbose = cache, verbose
        self._kernels: dict[tuple, Kernel] = {}
        self._mutation_outputs: dict[int, tuple] = {}  # id(kernel) -> outputs added by mutation
        self.counts = {"traces": 0, "compiles": 0, "disk_hits": 0, "memory_hits": 0}

    def __repr__(self) -> str:
        return (
            f"<nk.jit {self.traced.graph_name}{self.traced.signature} backend={self.backend}, "
            f"{len(self._kernels)} compiled>"
        )

    def __call__(self, *args, **kwargs):
        kernel, arrays, originals = self._kernel(args, kwargs)
        inputs = dict(zip(kernel.input_names, arrays))
        if self.backend == "interpreter":
            out = kernel.run(inputs)
        elif self.backend == "simulator":
            from .emit.simulate import simulate

            out = simulate(kernel, inputs)
        else:
            out = _run_on_device(kernel, inputs)
        return pack_outputs(self._write_back(kernel, out, dict(zip(kernel.input_names, originals))))

    def _write_back(self, kernel: Kernel, out: dict, originals: dict) -> dict:
        """NumPy semantics for arguments the function updated in place: the updated contents go
        back into the caller's arrays; outputs that exist only for that are not returned."""
        for o, i in kernel.io.aliases.items() if kernel.io is not None else ():
            np.copyto(originals[i], out[o], casting="unsafe")
        added = self._mutation_outputs.get(id(kernel), ())
        return {n: a for n, a in out.items() if n not in added}

    def kernel(self, *args, **kwargs) -> Kernel:
        """The compiled Kernel for these arguments (compiling it if needed), without running."""
        return self._kernel(args, kwargs)[0]

    # ---- internals ---------------------------------------------------------------------------
    def _kernel(self, args, kwargs) -> tuple[Kernel, list[np.ndarray], list[np.ndarray]]:
        try:
            bound = self.traced.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise BuildError(f"{self.traced.graph_name}{self.traced.signature}: {e}") from None
        arrays: list[np.ndarray] = []
        key = tuple(self._walk(pname, val, arrays) for pname, val in bound.arguments.items())
        kernel = self._kernels.get(key)
        if kernel is not None:
            self.counts["memory_hits"] += 1
        else:
            kernel = self._compile(args, kwargs)
            self._kernels[key] = kernel
        inputs = [self._as_input(kernel, n, a) for n, a in zip(kernel.input_names, arrays)]
        return kernel, inputs, arrays

    def _walk(self, pname, val, arrays):
        """A hashable signature of one argument; collects its arrays in trace order."""
        param = self.traced.signature.parameters[pname]
        if pname in self.traced.static_argnames:
            return ("static", _static_key(val))
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            return tuple(_sig(v, arrays) for v in val)
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            return tuple((k, _sig(v, arrays)) for k, v in val.items())
        return _sig(val, arrays)

    def _compile(self, args, kwargs) -> Kernel:
        self.counts["traces"] += 1
        graph = self.traced.trace_with(args, kwargs, warn_constants=False)
        directory = _cache.cache_dir() if self.cache else None
        key = _cache.cache_key(str(graph), self.target.name, self.knobs) if directory else None
        k = _cache.load(directory, key, self.target) if directory else None
        if k is not None:
            self.counts["disk_hits"] += 1
        else:
            self.counts["compiles"] += 1
            k = nk_compile(graph, target=self.target, knobs=self.knobs, verbose=self.verbose)
            if directory:
                _cache.store(directory, key, k)
        self._mutation_outputs[id(k)] = getattr(graph, "mutation_outputs", ())
        return k

    @staticmethod
    def _as_input(kernel: Kernel, name: str, a: np.ndarray) -> np.ndarray:
        want = kernel.input_types[name].dtype.np_dtype
        if a.dtype != want and a.dtype.itemsize == 8 and a.dtype.kind == np.dtype(want).kind:
            if a.dtype.kind in "iu" and a.size:  # a value the narrow type cannot hold would wrap
                info = np.iinfo(want)
                bad = (a < info.min) | (a > info.max)
                if bad.any():
                    pos = tuple(int(k) for k in np.argwhere(bad)[0])
                    raise InterpretError(
                        f"input {name!r}: value {int(a[pos])} at position {list(pos)} does not fit in "
                        f"{np.dtype(want).name}, the kernel's dtype for this {a.dtype.name} array "
                        "(trn2 has no 64-bit types; it would wrap, not raise)"
                    )
            return a.astype(want)  # 64-bit arrays narrow as the trace did (it warned)
        return a


def _sig(x, arrays: list):
    if isinstance(x, np.ndarray):
        arrays.append(x)
        return ("array", x.shape, x.dtype.str)
    if isinstance(x, dict):
        return ("dict", tuple((k, _sig(v, arrays)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_sig(v, arrays) for v in x))
    return ("static", _static_key(x))


def _static_key(x):
    if isinstance(x, np.ndarray):
        return ("ndarray", x.shape, x.dtype.str, x.tobytes())
    try:
        hash(x)
    except TypeError:
        return ("repr", type(x).__qualname__, repr(x))
    return (type(x).__qualname__, x)


def _run_on_device(kernel: Kernel, inputs: dict) -> dict:
    """Run the emitted module with the Neuron SDK's ``nki.baremetal`` (needs a Trainium)."""
    from .emit.kernel_builder import NeuronSdkMissing

    try:
        import nki as real_nki
    except ImportError:
        raise NeuronSdkMissing(
            "nk.jit(backend='device') needs the Neuron SDK (nki, neuronx-cc) and a Trainium "
            "device; install it with `pip install nki neuronx-cc --extra-index-url "
            "https://pip.repos.neuron.amazonaws.com`, or use backend='interpreter' / "
            "'simulator'"
        ) from None
    import types

    module = types.ModuleType(f"nkigen_{kernel.name}")
    exec(compile(kernel.nki_source(), f"<{kernel.name}>", "exec"), vars(module))  # our own code
    fn = next(
        v
        for k, v in vars(module).items()
        if callable(v)
        and not k.startswith("_")
        and not isinstance(v, types.ModuleType)
        and getattr(v, "__module__", None) is None
    )
    params = list(module.INPUT_SPECS)
    kwargs = {p: inputs[n] for p, n in zip(params, module.INPUT_NAMES)}
    kwargs.update(getattr(module, "CONSTANTS", {}))
    result = real_nki.baremetal(fn)(**kwargs)
    result = result if isinstance(result, tuple) else (result,)
    return dict(zip(module.OUTPUT_NAMES, (np.asarray(r) for r in result)))
