"""``nkigen_lite.jax.kernel_call``: call a compiled kernel from JAX, inside ``jax.jit`` or not.

    from nkigen_lite.jax import kernel_call
    rms = kernel_call(rmsnorm)              # a NumPy function, an nk.trace function, a Kernel or a Graph
    f = jax.jit(lambda x, w: jnp.tanh(rms(x, w)))

Arguments are positional JAX (or NumPy) arrays, one per graph input; the result is one array, or
a tuple in graph output order when the graph has several outputs. Shapes and dtypes of the
results come from the compiled kernel (abstract evaluation: ``jax.eval_shape`` compiles but does
not run). Compilation happens once per input shape/dtype configuration (``call.cache``, a
KernelCache).

Where it runs:
- ``backend="interpreter"``: on the host, on the NKI interpreter, through ``jax.pure_callback``
  (works on any JAX platform; under ``jax.vmap`` the kernel runs once per batch element);
- ``backend="neuron"``: the emitted ``@nki.jit`` module, loaded with the real ``nki`` package and
  called on the arguments; inside ``jax.jit`` on a Neuron device it becomes the XLA custom call
  (needs the Neuron SDK and jax-neuronx; not testable without a device);
- ``backend="auto"`` (default): ``neuron`` when JAX's default backend is a Neuron device,
  otherwise ``interpreter``.

jax is an optional dependency (``pip install "nkigen_lite[jax]"``); it is imported when a call is
made, so this module imports without it.
"""

from __future__ import annotations

import types

from .compiler import Kernel
from .ir.errors import BuildError
from .kernel_cache import KernelCache, output_specs
from .nki.target import TRN2, Target

BACKENDS = ("auto", "interpreter", "neuron")


def _jax():
    try:
        import jax
    except ImportError as e:
        raise ImportError("nkigen_lite.jax needs JAX: pip install 'nkigen_lite[jax]'") from e
    return jax


def kernel_call(fn_or_kernel, *, backend: str = "auto", target: Target = TRN2, knobs: dict | None = None):
    """A JAX-callable function running ``fn_or_kernel`` as a compiled NKI kernel (module docstring)."""
    if backend not in BACKENDS:
        raise BuildError(f"nkigen_lite.jax.kernel_call: backend {backend!r} is not one of {BACKENDS}")
    cache = KernelCache(fn_or_kernel, who="nkigen_lite.jax.kernel_call", target=target, knobs=knobs)
    modules: dict[int, types.ModuleType] = {}

    def call(*args):
        jax = _jax()
        for i, a in enumerate(args):
            if not (hasattr(a, "shape") and hasattr(a, "dtype")):
                raise BuildError(
                    f"{cache.who}: argument {i} is a {type(a).__name__}, not an array; "
                    "pass arrays positionally, one per graph input"
                )
        kernel = cache.kernel([(a.shape, a.dtype) for a in args])
        where = backend
        if where == "auto":
            where = "neuron" if jax.default_backend() == "neuron" else "interpreter"
        if where == "neuron":
            outs = _neuron_call(kernel, modules, args)
        else:
            result_types = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in output_specs(kernel)]
            outs = jax.pure_callback(
                lambda *xs: tuple(cache.run(kernel, xs)), tuple(result_types), *args, vmap_method="sequential"
            )
        return outs[0] if len(outs) == 1 else tuple(outs)

    call.cache = cache
    call.__name__ = cache.name
    call.__doc__ = f"{cache.name} as a compiled NKI kernel (nkigen_lite.jax.kernel_call)."
    return call


def _neuron_call(kernel: Kernel, modules: dict, args, xp=None) -> list:
    """Call the emitted ``@nki.jit`` kernel with the installed ``nki`` package (the Neuron device
    path): operands in the described order with constants appended and 0-d tensors as ``[1]``,
    results mapped back to graph outputs (zero-size ones made here). ``xp``: the array
    namespace (``jax.numpy``; tests pass NumPy with the NKI simulator installed as ``nki``)."""
    if xp is None:
        import jax.numpy as xp
    try:
        import nki  # noqa: F401
    except ImportError as e:
        raise ImportError(
            "nkigen_lite.jax.kernel_call(backend='neuron') needs the Neuron SDK "
            "(nki) and jax-neuronx; see docs/emit.md"
        ) from e
    mod = modules.get(id(kernel))
    if mod is None:
        mod = types.ModuleType(f"nkigen_kernel_{kernel.name}")
        exec(compile(kernel.nki_source(), f"<{kernel.name}>", "exec"), vars(mod))  # our emitted code
        modules[id(kernel)] = mod
    desc = kernel.custom_call()
    fn = getattr(mod, desc["kernel"])
    params = [o for o in desc["operands"] if not o["constant"]]
    call_args = [xp.reshape(xp.asarray(a), p["kernel_shape"]) for a, p in zip(args, params)]
    call_args += [xp.asarray(mod.CONSTANTS[o["parameter"]]) for o in desc["operands"] if o["constant"]]
    res = fn(*call_args)
    res = list(res) if isinstance(res, (tuple, list)) else [res]
    by_name = {r["name"]: xp.reshape(v, r["shape"]) for r, v in zip(desc["results"], res)}
    return [
        by_name[s.name] if s.name in by_name else xp.zeros(s.shape, s.dtype) for s in output_specs(kernel)
    ]
