"""Kernel Builder emitter: NKI IR -> ``nki.compiler.kernel_builder`` calls -> a NISA MLIR module.

The only module that imports the Neuron SDK, lazily in ``import_kernel_builder``. The walk is
written against a builder module ``nb`` passed in (``emit_kb``), so it can be driven by the
real SDK (``build_kb``) or by a recording stand-in of the same call surface in tests. The
kernel function takes every input and output as an HBM ``nb.Tensor`` parameter; output
allocations are those parameters, tiles are ``nb.compiler.alloc`` / ``release`` pairs, loops
are ``nb.fori_loop`` (traced once), and every compute op is one ``nb.isa`` call named in
``kb_table.py``.
"""

from __future__ import annotations

import inspect

from ..ir.errors import BuildError
from ..nki.types import Access, Affine
from . import kb_table as T
from .accesses import access_pattern, kernel_shape, needs_pattern
from .kb_rules import KB_RULES
from .names import kernel_names

SDK_INSTALL = "pip install --extra-index-url https://pip.repos.neuron.amazonaws.com nki neuronx-cc"


class NeuronSdkMissing(ImportError):
    """The Neuron SDK's Kernel Builder (package ``nki``) cannot be imported."""


def import_kernel_builder():
    """``nki.compiler.kernel_builder``, or NeuronSdkMissing saying how to install it."""
    try:
        from nki.compiler import kernel_builder  # the Neuron SDK; optional
    except ImportError as e:
        raise NeuronSdkMissing(
            f"the Kernel Builder path needs the Neuron SDK package 'nki' (module "
            f"nki.compiler.kernel_builder), which is not importable here ({e}). It is published "
            f"only in the Neuron repository: {SDK_INSTALL}"
        ) from None
    return kernel_builder


# Default of the ``unroll=`` option: True. NKIPy's move from nki 0.3.0 to 0.6.0b1 needed
# ``fori_loop(unroll=True)`` to work around a neuronx-cc bug with rolled Kernel Builder loops
# (reference sheet nkipy_ops_and_workloads.md §5, "Toolchain / version pinning"); pass
# ``unroll=False`` to get rolled loops once a compiler without that bug is in use.
DEFAULT_UNROLL = True


def build_kb(graph, target: str = "trn2", unroll: bool = DEFAULT_UNROLL):
    """Build the NISA MLIR module of an NKI graph with the real Kernel Builder."""
    return emit_kb(graph, import_kernel_builder(), target, unroll=unroll)


def emit_kb(graph, nb, target: str = "trn2", unroll: bool = DEFAULT_UNROLL):
    """Drive builder module ``nb`` over an NKI graph; returns ``nb.build_kernel(...)``'s result.
    ``unroll`` is passed to every ``nb.fori_loop`` (see DEFAULT_UNROLL for the reason)."""
    if not isinstance(unroll, bool):
        raise BuildError(f"emit_kb: unroll must be True or False, got {unroll!r}")
    func_name, names = kernel_names(graph)
    # an output aliasing an input is that input (nk.nki.verify): the kernel updates the input
    # parameter in place, so it gets no output parameter of its own
    params = set(graph.inputs)  # values hash by identity
    outputs = {v: names[v] for v in graph.outputs.values() if v not in params}

    def spec(v):
        return getattr(nb, T.TENSOR_SPEC)(kernel_shape(v.type), _dtype(nb, v.type.dtype, names[v]))

    input_specs = {names[v]: spec(v) for v in graph.inputs}
    output_specs = {name: spec(v) for v, name in outputs.items()}

    signature = inspect.Signature(
        [
            inspect.Parameter(
                n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=getattr(nb, T.TENSOR_SPEC)
            )
            for n in list(input_specs) + list(output_specs)
        ]
    )

    def kernel(*args, **kwargs):
        tensors = signature.bind(*args, **kwargs).arguments  # the builder may pass either way
        _Walker(nb, names, outputs, tensors, graph.inputs, unroll).block(graph.body)

    kernel.__signature__ = signature
    kernel.__name__ = kernel.__qualname__ = func_name
    return getattr(nb, T.BUILD_KERNEL)(
        kernel, input_specs=input_specs, output_specs=output_specs, target=target
    )


def _dtype(nb, dtype, what: str):
    name = T.DTYPES.get(dtype.numpy_name)
    if name is None:
        raise BuildError(f"emit_kb: {what} has dtype {dtype.name}, which Kernel Builder does not offer")
    return getattr(nb, name)


class _Walker:
    """Replays the ops of an NKI graph as builder calls inside the traced kernel function."""

    def __init__(self, nb, names: dict, outputs: dict, tensors: dict, inputs, unroll: bool):
        self.nb, self.isa = nb, nb.isa
        self.unroll = unroll
        self.names = names
        self.outputs = outputs
        self.tensors = tensors  # kernel parameters by name (inputs and outputs)
        self.env: dict = {v: tensors[names[v]] for v in inputs}
        self.views: dict = {}

    def block(self, block) -> None:
        for op in block:
            if op.is_terminator:
                continue
            rule = KB_RULES.get(type(op))
            if rule is None:
                raise BuildError(f"emit_kb: no Kernel Builder rule for {op.name}")
            rule(self, op)

    # ---- operands ------------------------------------------------------------------------------
    def affine(self, a: Affine):
        """The value of a loop-index expression (an int, or arithmetic on traced indices)."""
        out = None
        for v, c in a.terms:
            term = self.env[v] if c == 1 else self.env[v] * c
            out = term if out is None else out + term
        if out is None:
            return a.const
        return out + a.const if a.const else out

    def access(self, op, attr: str):
        acc: Access = op.access(attr)
        if needs_pattern(acc, self.views):
            root, pattern, offset = access_pattern(acc, self.views)
            return self.env[root].ap(pattern=[list(p) for p in pattern], offset=self.affine(offset))
        base = self.env[acc.tensor]
        if acc.is_whole():
            return base
        key = []
        for d in acc.dims:
            start = self.affine(d.offset)
            if d.stride == 1 or d.size == 1:  # one element: a stride-0 (broadcast) dim of size 1 too
                key.append(getattr(self.nb, T.DS)(start, d.size))
            else:
                key.append(slice(start, start + (d.size - 1) * d.stride + 1, d.stride))
        return base[tuple(key)]

    def operand(self, op, attr: str):
        """An access or an immediate."""
        return self.access(op, attr) if op.access(attr) is not None else op.attrs[attr]

    def engine(self, op):
        return getattr(getattr(self.isa, T.ENGINE_ENUM), T.ENGINES[op.engine])

    def alu(self, name: str):
        enum = T.BITVEC_ENUM if T.alu_kind(name) == "bitvec" else T.ARITH_ENUM
        return getattr(getattr(self.isa, enum), T.camel(name))

    def isa_call(self, name: str, **kwargs) -> None:
        getattr(self.isa, name)(**kwargs)
