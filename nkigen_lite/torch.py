"""``nkigen_lite.torch.kernel_op``: a compiled kernel as a ``torch.library`` custom operator.

    from nkigen_lite.torch import kernel_op
    rms = kernel_op(rmsnorm)                # registers torch.ops.nkigen.rmsnorm
    y = rms(x, w)                           # eager: the kernel runs on the NKI interpreter
    f = torch.compile(lambda x, w: torch.tanh(rms(x, w)), fullgraph=True)

What is registered (``namespace::name``, default ``nkigen::<function or graph name>``):

- the schema ``(Tensor x, Tensor w, ...) -> Tensor`` (or a tuple of Tensors): one Tensor per
  graph input, named after it, and ``outputs`` results. For a ``Kernel`` or ``Graph`` both come
  from the graph; for a NumPy function the tensors are the positional parameters without a
  default (parameters with defaults keep them, as trace-time constants) and ``outputs``
  defaults to 1;
- a CPU implementation that compiles the function for the arguments' shapes and dtypes (once per
  configuration, ``op.cache``: a KernelCache) and runs the kernel on the NKI interpreter;
- a fake (meta) implementation giving the results' shapes and dtypes from the compiled kernel,
  which ``torch.compile`` uses to trace. Symbolic sizes are specialised to their current values
  (``int(size)``), so a new shape recompiles, as it does for the kernel.

The op returns new tensors and mutates nothing; it has no autograd formula. torch is an
optional dependency (``pip install "nkigen_lite[torch]"``; a CPU build is enough); it is imported
when ``kernel_op`` is called, so this module imports without it.
"""

from __future__ import annotations

import inspect
import keyword
import re

import numpy as np

from .compiler import Kernel
from .ir.errors import BuildError
from .ir.graph import Graph
from .kernel_cache import KernelCache, output_specs
from .nki.target import TRN2, Target
from .tensor.trace import TracedFunction

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# NumPy dtype name -> (torch dtype attribute, same-width integer view used to cross to NumPy
# for dtypes torch cannot hand to NumPy directly).
_DTYPES = {
    "float32": ("float32", None),
    "float16": ("float16", None),
    "bfloat16": ("bfloat16", "int16"),
    "float8_e4m3fn": ("float8_e4m3fn", "uint8"),
    "float8_e5m2": ("float8_e5m2", "uint8"),
    "int8": ("int8", None),
    "int16": ("int16", None),
    "int32": ("int32", None),
    "uint8": ("uint8", None),
    "uint16": ("uint16", None),
    "uint32": ("uint32", None),
    "bool": ("bool", None),
}


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError(
            "nkigen_lite.torch needs PyTorch: pip install 'nkigen_lite[torch]' (a CPU build is enough)"
        ) from e
    return torch


def torch_dtype(np_dtype, who: str):
    """The torch dtype of a NumPy dtype, or a BuildError naming it."""
    torch = _torch()
    name = np.dtype(np_dtype).name
    if name not in _DTYPES:
        raise BuildError(f"{who}: dtype {name} has no PyTorch equivalent; supported: " + ", ".join(_DTYPES))
    return getattr(torch, _DTYPES[name][0])


def to_numpy(t) -> np.ndarray:
    """A CPU tensor as a NumPy array of the same dtype (bf16 / fp8 through ml_dtypes)."""
    torch = _torch()
    t = t.detach().contiguous()
    for name, (tname, view) in _DTYPES.items():
        if view is not None and t.dtype == getattr(torch, tname):
            return t.view(getattr(torch, view)).numpy().view(_np_dtype(name))
    return t.numpy()


def from_numpy(a: np.ndarray, who: str):
    """A NumPy array (any supported dtype) as a new CPU tensor of the matching torch dtype."""
    torch = _torch()
    a = np.ascontiguousarray(a)
    dt = torch_dtype(a.dtype, who)
    view = _DTYPES[a.dtype.name][1]
    if view is not None:
        return torch.from_numpy(a.view(np.dtype(view)).copy()).view(dt)
    return torch.from_numpy(a.copy())


def _np_dtype(name: str) -> np.dtype:
    from .ir.dtypes import get_dtype

    return get_dtype(name).np_dtype


def _np_dtype_of(t) -> np.dtype:
    """The NumPy dtype a torch dtype stands for (BuildError when none)."""
    torch = _torch()
    for name, (tname, _) in _DTYPES.items():
        if t.dtype == getattr(torch, tname):
            return _np_dtype(name)
    raise BuildError(f"dtype {t.dtype} is not supported on trn2; supported: " + ", ".join(_DTYPES))


def _signature(fn_or_kernel, cache: KernelCache, outputs: int | None) -> tuple[list[str], int]:
    """Input names and the number of results of the operator."""
    if isinstance(fn_or_kernel, (Kernel, Graph)):
        k_in = list(fn_or_kernel.input_names)
        k_out = len(fn_or_kernel.output_names if isinstance(fn_or_kernel, Kernel) else fn_or_kernel.outputs)
        if outputs is not None and outputs != k_out:
            raise BuildError(f"{cache.who}: outputs={outputs}, but the graph has {k_out} outputs")
        return k_in, k_out
    fn = fn_or_kernel.fn if isinstance(fn_or_kernel, TracedFunction) else fn_or_kernel
    names = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
            if p.kind is p.KEYWORD_ONLY and p.default is not p.empty:
                continue
            raise BuildError(
                f"{cache.who}: parameter {p.name!r} is {p.kind.description}; a torch "
                "operator takes positional tensors (give others a default)"
            )
        if p.default is p.empty:
            names.append(p.name)
    if not names:
        raise BuildError(f"{cache.who}: the function has no positional parameter without a default")
    return names, 1 if outputs is None else outputs


def _arg_names(names: list[str]) -> list[str]:
    out, used = [], set()
    for n in names:
        base = re.sub(r"[^A-Za-z0-9_]", "_", n) or "arg"
        if not _IDENT.match(base) or keyword.iskeyword(base) or base == "self":
            base = f"arg_{base}"
        cand, i = base, 0
        while cand in used:
            i += 1
            cand = f"{base}_{i}"
        used.add(cand)
        out.append(cand)
    return out


def kernel_op(
    fn_or_kernel,
    *,
    name: str | None = None,
    namespace: str = "nkigen",
    outputs: int | None = None,
    target: Target = TRN2,
    knobs: dict | None = None,
):
    """Register ``fn_or_kernel`` as the custom operator ``namespace::name`` (module docstring)
    and return it (callable; also ``torch.ops.<namespace>.<name>``)."""
    torch = _torch()
    cache = KernelCache(fn_or_kernel, who="nkigen_lite.torch.kernel_op", target=target, knobs=knobs)
    op_name = name if name is not None else cache.name
    for part, what in ((namespace, "namespace"), (op_name, "name")):
        if not isinstance(part, str) or not _IDENT.match(part):
            raise BuildError(f"{cache.who}: operator {what} {part!r} is not an identifier")
    qualname = f"{namespace}::{op_name}"
    if outputs is not None and (not isinstance(outputs, int) or outputs < 1):
        raise BuildError(f"{cache.who}: outputs must be a positive int, got {outputs!r}")
    in_names, n_out = _signature(fn_or_kernel, cache, outputs)
    if hasattr(getattr(torch.ops, namespace, None), op_name):
        raise BuildError(f"{cache.who}: operator {qualname} is already registered; pass name=")
    args = ", ".join(f"Tensor {a}" for a in _arg_names(in_names))
    ret = "Tensor" if n_out == 1 else "(" + ", ".join(["Tensor"] * n_out) + ")"
    schema = f"({args}) -> {ret}"

    def kernel_for(tensors):
        if len(tensors) != len(in_names):
            raise BuildError(f"{cache.who}: takes {len(in_names)} tensors {in_names}, got {len(tensors)}")
        specs = []
        for i, t in enumerate(tensors):
            try:
                specs.append((tuple(int(d) for d in t.shape), _np_dtype_of(t)))
            except BuildError as e:
                raise BuildError(f"{cache.who}: argument {i} ({in_names[i]}): {e}") from None
        k = cache.kernel(specs)
        outs = output_specs(k)
        if len(outs) != n_out:
            raise BuildError(
                f"{cache.who}: the compiled graph has {len(outs)} outputs "
                f"{[s.name for s in outs]}, the operator was registered with {n_out}; "
                f"pass outputs={len(outs)}"
            )
        return k, outs

    def cpu_impl(*tensors):
        k, _ = kernel_for(tensors)
        res = [from_numpy(a, cache.who) for a in cache.run(k, [to_numpy(t) for t in tensors])]
        return res[0] if n_out == 1 else tuple(res)

    def fake_impl(*tensors):
        _, outs = kernel_for(tensors)
        dev = tensors[0].device
        res = [tensors[0].new_empty(s.shape, dtype=torch_dtype(s.dtype, cache.who), device=dev) for s in outs]
        return res[0] if n_out == 1 else tuple(res)

    op = torch.library.custom_op(qualname, cpu_impl, mutates_args=(), device_types="cpu", schema=schema)
    op.register_fake(fake_impl)
    op.cache = cache
    op.schema = schema
    return op
