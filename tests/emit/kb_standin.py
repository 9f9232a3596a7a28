"""A recording stand-in for ``nki.compiler.kernel_builder`` (SURFACE CHECK ONLY, not a compile).

It offers the call surface the facts sheet §4 documents (plus the keyword names marked
"assumed" in nkigen_lite/emit/kb_table.py), records every builder call, tracks the shape of
every tensor view it hands out, and rejects keywords outside that surface. Nothing here says
the real SDK accepts the calls; tests marked ``neuron`` do that when the SDK is installed.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

from nkigen_lite.emit.kb_table import ISA_SIGNATURES

# Keywords per nb.isa call: the signature table kept in nkigen_lite/emit/kb_table.py (each
# entry names its source: facts sheet §4 usage, or "assumed").
ISA_KEYWORDS = {name: set(sig.keywords) for name, sig in ISA_SIGNATURES.items()}
DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "tfloat32",
    "float8_e4m3fn",
    "float8_e4m3",
    "float8_e5m2",
    "float8_e3m4",
    "int8",
    "int16",
    "int32",
    "uint8",
    "uint16",
    "uint32",
)


class SurfaceError(AssertionError):
    """The emitter used something outside the documented call surface."""


@dataclass(frozen=True)
class Token:
    """An enum member or memory space: ``kind.member``."""

    kind: str
    member: str


class Enum:
    """``nb.isa.<kind>``: any attribute in ``members`` (or any CamelCase name when open)."""

    def __init__(self, kind: str, members=None):
        self._kind, self._members = kind, members

    def __getattr__(self, name: str) -> Token:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._members is not None and name not in self._members:
            raise SurfaceError(f"{self._kind}.{name} is not a documented member")
        return Token(self._kind, name)


class Sym:
    """A traced loop index: affine ``const + sum(coeff * loop)``."""

    def __init__(self, terms=None, const=0):
        self.terms, self.const = dict(terms or {}), const

    def _lift(self, o):
        return o if isinstance(o, Sym) else Sym({}, o)

    def __add__(self, o):
        o = self._lift(o)
        terms = dict(self.terms)
        for k, c in o.terms.items():
            terms[k] = terms.get(k, 0) + c
        return Sym({k: c for k, c in terms.items() if c}, self.const + o.const)

    __radd__ = __add__

    def __sub__(self, o):
        return self + self._lift(o) * -1

    def __rsub__(self, o):
        return self._lift(o) - self

    def __mul__(self, k):
        if not isinstance(k, int):
            raise SurfaceError(f"loop index multiplied by {k!r}")
        return Sym({v: c * k for v, c in self.terms.items()}, self.const * k)

    __rmul__ = __mul__

    def __repr__(self):
        return " + ".join([f"{c}*{v}" for v, c in sorted(self.terms.items())] + [str(self.const)])


def _size(start, stop, step=1) -> int:
    diff = stop - start
    if isinstance(diff, Sym):
        if diff.terms:
            raise SurfaceError(f"slice {start}:{stop} has a non-constant size")
        diff = diff.const
    return -(-diff // step)


@dataclass
class FakeTensor:
    """A tensor or view handed out by the stand-in: its root's label and the view's shape."""

    root: str
    shape: tuple
    dtype: object
    space: object
    index: tuple = ()  # the key of the last indexing that made this view

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != len(self.shape):
            raise SurfaceError(f"{self.root}: {len(key)} indices for shape {self.shape}")
        shape = []
        for k in key:
            if isinstance(k, DsSlice):
                shape.append(k.size)
            elif isinstance(k, slice):
                shape.append(_size(k.start, k.stop, k.step or 1))
            else:
                raise SurfaceError(f"{self.root}: unsupported index {k!r}")
        return FakeTensor(self.root, tuple(shape), self.dtype, self.space, key)

    def ap(self, pattern, offset=0, vector_offset=None, indirect_dim=0):
        if not pattern or not all(isinstance(s, int) and isinstance(n, int) for s, n in pattern):
            raise SurfaceError(f"{self.root}.ap: bad pattern {pattern!r}")
        if vector_offset is not None and (not isinstance(vector_offset, FakeTensor) or indirect_dim != 0):
            raise SurfaceError(f"{self.root}.ap: vector_offset must be a tensor, indirect_dim 0")
        return FakeTensor(self.root, tuple(n for _, n in pattern), self.dtype, self.space)

    def reshape(self, shape):
        if math.prod(shape) != math.prod(self.shape):
            raise SurfaceError(f"{self.root}: reshape {self.shape} -> {shape}")
        return FakeTensor(self.root, tuple(shape), self.dtype, self.space)


@dataclass(frozen=True)
class DsSlice:
    start: object
    size: int


@dataclass
class Call:
    """One recorded builder call."""

    name: str
    args: tuple
    kwargs: dict


@dataclass
class Recording:
    calls: list = field(default_factory=list)


class _Isa:
    def __init__(self, rec: Recording):
        self._rec = rec
        self.engine = Enum("engine", {"Tensor", "Vector", "Scalar", "Gpsimd", "Sync"})
        self.arith_op = Enum("arith_op")
        self.bitvec_op = Enum("bitvec_op")
        self.activation_function = Enum("activation_function")
        self.activation_reduce_op = Enum("activation_reduce_op", {"Add"})
        self.reduce_cmd = Enum("reduce_cmd", {"Idle", "Reset", "Reduce", "ResetReduce"})

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in ISA_KEYWORDS:
            raise SurfaceError(f"nb.isa.{name} is not in the call surface")

        def isa_call(*args, **kwargs):
            if args:
                raise SurfaceError(f"nb.isa.{name}: positional arguments {args!r}")
            extra = set(kwargs) - ISA_KEYWORDS[name]
            if extra:
                raise SurfaceError(f"nb.isa.{name}: keywords {sorted(extra)} not in the surface")
            self._rec.calls.append(Call(f"isa.{name}", (), kwargs))

        return isa_call


class _Compiler:
    def __init__(self, nb):
        self._nb = nb

    def alloc(self, shape, dtype, space=None, num_buffers=1, name=""):
        self._nb._check(dtype, space, on_chip=True)
        self._nb.rec.calls.append(Call("compiler.alloc", (tuple(shape), dtype), {"space": space}))
        return FakeTensor(name, tuple(shape), dtype, space)

    def release(self, t):
        if not isinstance(t, FakeTensor):
            raise SurfaceError(f"compiler.release of {t!r}")
        self._nb.rec.calls.append(Call("compiler.release", (t.root,), {}))


class FakeKernelBuilder:
    """Module-like stand-in for ``nki.compiler.kernel_builder`` that records calls."""

    def __init__(self):
        self.rec = Recording()
        for d in DTYPES:
            setattr(self, d, Token("dtype", d))
        for s in ("sbuf", "psum", "hbm", "shared_hbm"):
            setattr(self, s, Token("memspace", s))
        self.isa = _Isa(self.rec)
        self.compiler = _Compiler(self)
        self.loops = 0

    def _check(self, dtype, space, on_chip: bool):
        if not (isinstance(dtype, Token) and dtype.kind == "dtype"):
            raise SurfaceError(f"dtype {dtype!r} is not an nb dtype")
        if not (isinstance(space, Token) and space.kind == "memspace"):
            raise SurfaceError(f"memory space {space!r} is not an nb memspace")
        if on_chip != (space.member in ("sbuf", "psum")):
            raise SurfaceError(f"memory space {space.member} for an {'on' if on_chip else 'off'}-chip tensor")

    def Tensor(self, shape, dtype, memspace=None):  # noqa: N802 - the SDK's name
        self._check(dtype, memspace or self.hbm, on_chip=False)
        return ("spec", tuple(shape), dtype)

    def ndarray(self, shape, dtype, memspace=None, num_buffers=1, name=""):
        self._check(dtype, memspace, on_chip=memspace is not None and memspace.member in ("sbuf", "psum"))
        self.rec.calls.append(Call("ndarray", (tuple(shape), dtype), {"memspace": memspace}))
        return FakeTensor(name, tuple(shape), dtype, memspace)

    def ds(self, start, size):
        return DsSlice(start, size)

    def program_id(self, axis):  # assumed name (kb_table.PROGRAM_ID)
        if axis != 0:
            raise SurfaceError(f"program_id axis {axis!r}")
        self.rec.calls.append(Call("program_id", (axis,), {}))
        return Sym({"pid": 1})

    def fori_loop(self, n, body_fn, unroll=False):
        if not isinstance(n, int) or n < 1:
            raise SurfaceError(f"fori_loop trip count {n!r}")
        if not isinstance(unroll, bool):
            raise SurfaceError(f"fori_loop unroll {unroll!r}")
        self.rec.calls.append(Call("fori_loop", (n,), {"unroll": unroll}))
        self.loops += 1
        body_fn(Sym({f"k{self.loops}": 1}))
        self.rec.calls.append(Call("end_loop", (), {}))  # marks where the traced body ends

    def build_kernel(self, kernel_fn, input_specs, output_specs, target="trn2", **hyper):
        params = list(inspect.signature(kernel_fn).parameters)
        if params != list(input_specs) + list(output_specs):
            raise SurfaceError(f"kernel parameters {params} differ from the specs")
        self.rec.calls.append(
            Call(
                "build_kernel",
                (),
                {"target": target, "input_specs": input_specs, "output_specs": output_specs},
            )
        )
        tensors = {
            n: FakeTensor(n, spec[1], spec[2], self.hbm)
            for n, spec in {**input_specs, **output_specs}.items()
        }
        kernel_fn(**tensors)
        return ("module", self.rec)
