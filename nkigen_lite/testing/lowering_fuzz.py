"""Seeded random NumPy programs over the reduction, element-wise, indexed and topk lowerings.

Each case is drawn from one integer seed: a program family (softmax / clamped SwiGLU over few
long rows, topk and argmax / argmin, mean + var, column sums / extremes / moments / softmax /
argmax, cumsum, flips, gathers, integer sums, broadcasts, permutes, interleaving stacks), a
shape straddling the thresholds of those lowerings (1-8 rows, multiples of 128 plus or minus
one, rows of 1 to 151,936 elements), a dtype and data with ties, NaN, infinities and signed
zeros. ``check_case`` compiles the program with ``nk.compile``, runs the kernel on the NKI
interpreter and the emitted code on the simulator and compares both with NumPy:

- float outputs against NumPy in float64 on the same (exactly representable) inputs, within
  ``TOL`` of the inputs' least precise dtype times max(|ref|, max finite |ref| of the output,
  1) (fused instructions round differently; long fp32 sums lose a few ulp of the largest
  partial sum); NaN where NumPy gives NaN, infinities of the same sign;
- integer outputs exactly, with NumPy's wraparound (the reference cast to the kernel's dtype);
- index outputs (argmax, argmin, topk's indices) exactly: NumPy's first extreme, NaN the
  extreme (topk of data holding NaN may refuse at run time with an ``InterpretError`` naming
  ``nki.max8``, docs/tensor_ops.md).

A build-time ``BuildError`` (one clear message) is accepted only for documented limits:
``accepted_refusal`` lists them; any other exception is a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

import nkigen_lite as nk

BF16 = ml_dtypes.bfloat16
TOL = {"float32": 2e-5, "bfloat16": 3e-2}

ROWS = (1, 2, 3, 4, 5, 7, 8, 9, 16, 127, 128, 129, 256, 384)
COLS = (1, 2, 7, 8, 9, 15, 16, 17, 31, 64, 90, 127, 128, 129, 255, 256, 257, 512, 513, 1000, 1440, 2048, 4097)
LONG = (4096, 8192, 12288, 32000, 151936)
MAX_ELEMS = 1 << 19


@dataclass
class Case:
    """One program with its inputs and NumPy reference (``ref(*float64 or int inputs)``)."""

    name: str
    fn: Callable
    args: tuple
    ref: Callable
    index_outputs: tuple = ()  # positions of outputs that are indices (compared exactly)
    topk: bool = False  # a topk whose data may hold NaN (refusal allowed)

    def describe(self) -> str:
        shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.args)
        return f"{self.name}({shapes})"


def _shape2(rng, max_elems=MAX_ELEMS):
    while True:
        r = int(rng.choice(ROWS))
        c = int(rng.choice(LONG)) if rng.random() < 0.15 else int(rng.choice(COLS))
        if r * c <= max_elems:
            return r, c


def _floats(rng, shape, dtype, specials=True):
    """Multiples of 1/8 in [-3, 3] (many ties) or normals; sometimes NaN / inf / -0.0; now and
    then every element drawn from a few specials (rows of -inf, inf and NaN ties, signed zeros)."""
    if specials and rng.random() < 0.08:
        sets = ([-np.inf, 1.0], [-np.inf], [np.inf, -np.inf, 1.0], [np.nan, 1.0], [-0.0, 0.0], [np.inf, 2.0])
        pick = sets[int(rng.integers(0, len(sets)))]
        return rng.choice(np.array(pick), size=shape).astype(dtype)
    if rng.random() < 0.5:
        a = rng.integers(-24, 25, size=shape) / 8.0
    else:
        a = rng.standard_normal(shape) * float(rng.choice([0.5, 2.0, 30.0]))
    if specials and a.size and rng.random() < 0.3:
        n = max(1, int(a.size * rng.choice([0.0005, 0.01, 0.2])))
        flat = a.reshape(-1)
        pos = rng.integers(0, a.size, size=n)
        kinds = rng.choice(["nan", "inf", "-inf", "-0", "big"], size=n, p=[0.3, 0.2, 0.2, 0.2, 0.1])
        vals = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "-0": -0.0, "big": 1e15}
        for p, kd in zip(pos, kinds):
            flat[p] = vals[kd]
    return np.asarray(a).astype(dtype)


def _fdtype(rng):
    return np.float32 if rng.random() < 0.7 else BF16


# ---------------------------------------------------------------- families


def _softmax(rng):
    r, c = _shape2(rng)
    x = _floats(rng, (r, c), _fdtype(rng), specials=rng.random() < 0.3)

    def f(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    return Case("softmax(-1)", f, (x,), f)


def _swiglu(rng):
    r, c = _shape2(rng)
    dt = _fdtype(rng)
    g, u = _floats(rng, (r, c), dt, False), _floats(rng, (r, c), dt, False)

    def f(g, u):
        g = np.minimum(g, 7.0)
        u = np.clip(u, -7.0, 7.0)
        return (u + 1.0) * (g * (1 / (1 + np.exp(-1.702 * g))))

    return Case("clamped_swiglu", f, (g, u), f)


def _elementwise(rng):
    r, c = _shape2(rng)
    dt = _fdtype(rng)
    x = _floats(rng, (r, c), dt)
    w = _floats(rng, (c,), dt, False)
    b = _floats(rng, (c,), dt, False)
    which = int(rng.integers(0, 5))
    if which == 0:
        return Case("x*w+b", lambda x, w, b: x * w + b, (x, w, b), lambda x, w, b: x * w + b)
    if which == 1:
        a = float(rng.choice([0.01, 0.2, 0.5]))
        return Case(
            f"leaky({a})", lambda x: np.where(x > 0, x, a * x), (x,), lambda x: np.where(x > 0, x, a * x)
        )
    if which == 2:
        a = float(rng.choice([2.0, 1.5]))
        return Case(
            f"leaky_gt1({a})", lambda x: np.where(x > 0, x, a * x), (x,), lambda x: np.where(x > 0, x, a * x)
        )
    if which == 3:
        y = _floats(rng, (r, c), dt)
        return Case("x<y", lambda x, y: x < y, (x, y), lambda x, y: x < y)
    return Case("x*2+1", lambda x: x * 2.0 + 1.0, (x,), lambda x: x * 2.0 + 1.0)


def _topk(rng):
    r, c = _shape2(rng)
    if c < 2:
        c = 2
    dt = np.float32 if rng.random() < 0.6 else (BF16 if rng.random() < 0.5 else np.int32)
    if dt == np.int32:
        x = rng.integers(-5, 6, size=(r, c)).astype(np.int32)
    else:
        x = _floats(rng, (r, c), dt)
    k = int(rng.choice([1, 1, 2, 4, 8, 9, 16])) if c >= 16 else int(rng.integers(1, c + 1))
    k = min(k, c)
    largest = bool(rng.random() < 0.7)

    def f(x):
        return nk.topk(x, k, -1, largest)

    def ref(x):
        return nk.topk(x, k, -1, largest)

    return Case(f"topk(k={k},largest={largest})", f, (x,), ref, index_outputs=(1,), topk=True)


def _argext(rng):
    axis = -1 if rng.random() < 0.6 else 0
    r, c = _shape2(rng)
    dt = np.float32 if rng.random() < 0.6 else (BF16 if rng.random() < 0.5 else np.int32)
    if dt == np.int32:
        x = rng.integers(-3, 4, size=(r, c)).astype(np.int32)
    else:
        x = _floats(rng, (r, c), dt)
    keep = bool(rng.random() < 0.3)
    op = np.argmax if rng.random() < 0.5 else np.argmin

    def f(x):
        return op(x, axis=axis, keepdims=keep)

    return Case(f"{op.__name__}(axis={axis},keepdims={keep})", f, (x,), f, index_outputs=(0,))


def _moments(rng):
    r, c = _shape2(rng)
    x = _floats(rng, (r, c), _fdtype(rng), specials=rng.random() < 0.3)
    which = int(rng.integers(0, 4))
    if which == 0:
        f = lambda x: (x.mean(-1), x.var(-1))  # noqa: E731
    elif which == 1:
        f = lambda x: x.var(-1, ddof=1) if x.shape[-1] > 1 else x.var(-1)  # noqa: E731
    elif which == 2:
        f = lambda x: x.std(-1, keepdims=True)  # noqa: E731
    else:

        def f(x):
            m = x.mean(-1, keepdims=True)
            v = x.var(-1, keepdims=True)
            return (x - m) / np.sqrt(v + 1e-5)

    return Case(f"moments{which}", f, (x,), f)


def _column_reduce(rng):
    r, c = _shape2(rng)
    dt = _fdtype(rng)
    x = _floats(rng, (r, c), dt, specials=rng.random() < 0.3)
    keep = bool(rng.random() < 0.3)
    which = str(rng.choice(["sum", "max", "min", "mean", "var"]))

    def f(x):
        return getattr(x, which)(0, keepdims=keep)

    return Case(f"{which}(0,keepdims={keep})", f, (x,), f)


def _kept_axis(rng):
    b = int(rng.choice([1, 2, 3, 4, 16]))
    s = int(rng.choice([1, 7, 128, 129, 256, 512]))
    d = int(rng.choice([1, 8, 64, 256, 300]))
    x = _floats(rng, (b, s, d), np.float32, specials=rng.random() < 0.2)
    which = int(rng.integers(0, 4))
    fs = [
        ("sum((0,2))", lambda x: x.sum((0, 2))),
        ("sum(1)", lambda x: x.sum(1)),
        ("var(1)", lambda x: x.var(1)),
        ("max(1)", lambda x: x.max(1)),
    ]
    name, f = fs[which]
    return Case(name, f, (x,), f)


def _column_softmax(rng):
    if rng.random() < 0.5:
        r, c = _shape2(rng)
        shape, axis = (r, c), 0
    else:
        shape, axis = (
            (int(rng.choice([1, 2, 3])), int(rng.choice([128, 256, 7])), int(rng.choice([1, 64, 129]))),
            1,
        )
    x = _floats(rng, shape, _fdtype(rng), specials=rng.random() < 0.2)

    def f(x):
        e = np.exp(x - x.max(axis, keepdims=True))
        return e / e.sum(axis, keepdims=True)

    return Case(f"softmax({axis})", f, (x,), f)


def _cumsum(rng):
    axis = -1 if rng.random() < 0.5 else 0
    r, c = _shape2(rng, 1 << 17)
    x = _floats(rng, (r, c), np.float32, specials=rng.random() < 0.15)

    def f(x):
        return np.cumsum(x, axis)

    return Case(f"cumsum({axis})", f, (x,), f)


def _flip(rng):
    if rng.random() < 0.7:
        r, c = _shape2(rng)
        shape = (r, c)
        axis = int(rng.choice([0, -1]))
    else:
        shape = (int(rng.choice([1, 2, 3])), int(rng.choice([1, 5, 128, 256])), int(rng.choice([1, 7, 64])))
        axis = int(rng.choice([0, 1, 2]))
    dt = np.float32 if rng.random() < 0.6 else (BF16 if rng.random() < 0.5 else np.int32)
    x = rng.integers(-1000, 1000, size=shape).astype(dt) if dt == np.int32 else _floats(rng, shape, dt)
    plus = rng.random() < 0.5

    def f(x):
        y = np.flip(x, axis)
        return y * 2 if plus else y

    return Case(f"flip({axis},plus={plus})", f, (x,), f)


def _gather(rng):
    which = int(rng.integers(0, 4))
    dt = np.float32 if rng.random() < 0.7 else BF16
    if which == 0:  # take_along_axis
        r, c = _shape2(rng, 1 << 16)
        x = _floats(rng, (r, c), dt)
        m = int(rng.choice([1, 2, 8, 16]))
        idx = rng.integers(0, c, size=(r, m)).astype(np.int32)
        f = lambda x, i: np.take_along_axis(x, i, axis=-1)  # noqa: E731
        return Case("take_along_axis(-1)", f, (x, idx), f)
    if which == 1:  # np.take axis 1
        r, c = _shape2(rng, 1 << 16)
        x = _floats(rng, (r, c), dt)
        m = int(rng.choice([1, 3, 8, 128]))
        ids = rng.integers(-c, c, size=(m,)).astype(np.int32)
        f = lambda x, i: np.take(x, i, axis=1)  # noqa: E731
        return Case("take(axis=1)", f, (x, ids), f)
    if which == 2:  # embedding with negative ids
        v = int(rng.choice([7, 128, 1000, 4096]))
        d = int(rng.choice([1, 16, 64, 257]))
        w = _floats(rng, (v, d), dt)
        shapes = [(8,), (3, 5), (128,), (2, 64), (129,)]
        ishape = shapes[int(rng.integers(0, len(shapes)))]
        ids = rng.integers(-v, v, size=ishape).astype(np.int32)
        f = lambda w, i: w[i]  # noqa: E731
        return Case("embedding", f, (w, ids), f)
    # topk then take_along_axis (router-like)
    r = int(rng.choice([1, 4, 8, 128]))
    c = int(rng.choice([16, 32, 128, 129]))
    x = _floats(rng, (r, c), np.float32, specials=False)
    k = int(rng.choice([1, 2, 4, 8]))

    def f(x):
        v, i = nk.topk(x, k)
        e = np.exp(v - v.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True), i

    return Case(f"router(k={k})", f, (x,), f, index_outputs=(1,))


def _int_sum(rng):
    r, c = _shape2(rng, 1 << 17)
    dt = np.int32 if rng.random() < 0.6 else np.int8
    info = np.iinfo(dt)
    hi = int(rng.choice([3, 100, info.max]))
    x = rng.integers(max(info.min, -hi), hi, size=(r, c), endpoint=True).astype(dt)
    axis = int(rng.choice([-1, 0]))
    keep = bool(rng.random() < 0.3)

    def f(x):
        return x.sum(axis, keepdims=keep)

    return Case(f"int_sum({axis},keep={keep})", f, (x,), f)


def _broadcast(rng):
    shape = (
        int(rng.choice([1, 2, 3])),
        int(rng.choice([1, 64, 128, 256])),
        int(rng.choice([1, 8, 128, 512])),
    )
    x = _floats(rng, shape, _fdtype(rng))
    rep = int(rng.choice([2, 3, 4]))
    if rng.random() < 0.5:
        f = lambda x: np.repeat(x, rep, axis=0)  # noqa: E731
        return Case(f"repeat({rep},0)", f, (x,), f)
    f = lambda x: np.broadcast_to(x[None], (rep,) + x.shape) + 0  # noqa: E731
    return Case(f"broadcast_to({rep})", f, (x,), f)


def _permute(rng):
    if rng.random() < 0.5:
        r, c = _shape2(rng)
        x = _floats(rng, (r, c), _fdtype(rng))
        f = lambda x: x.T.copy()  # noqa: E731
        return Case("T", f, (x,), f)
    shape = (int(rng.choice([1, 2, 4])), int(rng.choice([1, 128, 256, 7])), int(rng.choice([1, 64, 512, 3])))
    x = _floats(rng, shape, _fdtype(rng))
    perm = tuple(int(p) for p in rng.permutation(3))
    f = lambda x: np.transpose(x, perm).copy()  # noqa: E731
    return Case(f"transpose{perm}", f, (x,), f)


def _interleave(rng):
    r = int(rng.choice([1, 2, 8, 128, 129, 256]))
    h = int(rng.choice([1, 4, 32, 64, 100]))
    dt = _fdtype(rng)
    x = _floats(rng, (r, 2 * h), dt)
    which = int(rng.integers(0, 3))
    if which == 0:
        f = lambda x: np.stack([x[:, :h] * 2.0, x[:, h:] + 1.0], -1)  # noqa: E731
        return Case("stack_interleave", f, (x,), f)
    if which == 1:
        f = lambda x: np.concatenate([-x[:, h:], x[:, :h]], -1)  # noqa: E731
        return Case("rotate_half", f, (x,), f)
    c = _floats(rng, (r, h), dt, False)
    s = _floats(rng, (r, h), dt, False)

    def f(x, c, s):
        a, b = x[:, :h], x[:, h:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1)

    return Case("rope_halves", f, (x, c, s), f)


def _big_columns(rng):
    """Reductions over a leading or middle axis of multiple-of-128 shapes (the column lowerings)."""
    while True:
        n = int(rng.choice([128, 256, 384, 512, 1024, 2048]))
        d = int(rng.choice([128, 256, 384, 512, 1024, 2048, 4096]))
        b = int(rng.choice([1, 1, 2, 3, 4]))
        if b * n * d <= 1 << 21:
            break
    shape, axis = ((n, d), 0) if b == 1 else ((b, n, d), 1)
    x = _floats(rng, shape, np.float32 if rng.random() < 0.85 else BF16, specials=rng.random() < 0.3)
    keep = bool(rng.random() < 0.3)
    which = str(
        rng.choice(
            ["sum", "max", "min", "mean", "var", "std", "argmax", "argmin", "softmax", "cumsum", "kept"]
        )
    )
    if which in ("argmax", "argmin"):
        op = getattr(np, which)
        f = lambda x: op(x, axis=axis, keepdims=keep)  # noqa: E731
        return Case(f"{which}({axis},keepdims={keep})", f, (x,), f, index_outputs=(0,))
    if which == "softmax":

        def f(x):
            e = np.exp(x - x.max(axis, keepdims=True))
            return e / e.sum(axis, keepdims=True)

        return Case(f"softmax({axis})", f, (x,), f)
    if which == "cumsum":
        f = lambda x: np.cumsum(x, 0)  # noqa: E731
        return Case("cumsum(0)", f, (x,), f)
    if which == "kept" and b > 1:
        f = lambda x: x.sum((0, 2), keepdims=keep)  # noqa: E731
        return Case(f"sum((0,2),keepdims={keep})", f, (x,), f)
    which = "sum" if which == "kept" else which
    f = lambda x: getattr(x, which)(axis, keepdims=keep)  # noqa: E731
    return Case(f"{which}({axis},keepdims={keep})", f, (x,), f)


def _few_long_rows(rng):
    """1-8 rows of 1,000 to 151,936 elements (decode, vocabulary rows)."""
    r = int(rng.integers(1, 9))
    c = int(rng.choice([1000, 1440, 1441, 2880, 4096, 4097, 8192, 12000, 32000, 32768, 65536, 151936]))
    if r * c > 1 << 20:
        r = max(1, (1 << 20) // c)
    dt = _fdtype(rng)
    x = _floats(rng, (r, c), dt, specials=rng.random() < 0.3)
    which = str(
        rng.choice(["softmax", "argmax", "argmin", "top1", "topk", "cumsum", "swiglu", "scale", "max", "sum"])
    )
    if which == "softmax":

        def f(x):
            e = np.exp(x - x.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)

        return Case("softmax(-1)", f, (x,), f)
    if which in ("argmax", "argmin"):
        op = getattr(np, which)
        f = lambda x: op(x, -1)  # noqa: E731
        return Case(f"{which}(-1)", f, (x,), f, index_outputs=(0,))
    if which in ("top1", "topk"):
        k = 1 if which == "top1" else int(rng.choice([2, 4, 8, 16, 50]))
        largest = bool(rng.random() < 0.7)
        f = lambda x: nk.topk(x, k, -1, largest)  # noqa: E731
        return Case(f"topk(k={k},largest={largest})", f, (x,), f, index_outputs=(1,), topk=True)
    if which == "cumsum":
        x = x.astype(np.float32)
        f = lambda x: np.cumsum(x, -1)  # noqa: E731
        return Case("cumsum(-1)", f, (x,), f)
    if which == "swiglu":
        u = _floats(rng, (r, c), dt, False)

        def f(g, u):
            g = np.minimum(g, 7.0)
            u = np.clip(u, -7.0, 7.0)
            return (u + 1.0) * (g * (1 / (1 + np.exp(-1.702 * g))))

        return Case("clamped_swiglu", f, (x, u), f)
    if which == "scale":
        w = _floats(rng, (c,), dt, False)
        f = lambda x, w: x * w + 1.0  # noqa: E731
        return Case("x*w+1", f, (x, w), f)
    f = lambda x: getattr(x, which)(-1)  # noqa: E731
    return Case(f"{which}(-1)", f, (x,), f)


FAMILIES = {
    "big_columns": _big_columns,
    "few_long_rows": _few_long_rows,
    "softmax": _softmax,
    "swiglu": _swiglu,
    "elementwise": _elementwise,
    "topk": _topk,
    "argext": _argext,
    "moments": _moments,
    "column_reduce": _column_reduce,
    "kept_axis": _kept_axis,
    "column_softmax": _column_softmax,
    "cumsum": _cumsum,
    "flip": _flip,
    "gather": _gather,
    "int_sum": _int_sum,
    "broadcast": _broadcast,
    "permute": _permute,
    "interleave": _interleave,
}


def make_case(seed: int, family: str | None = None, max_elems: int | None = None) -> Case:
    """The case of ``seed`` (a family drawn from it unless ``family`` names one); with
    ``max_elems``, the first of the seed's draws whose inputs hold at most that many elements
    together (the quick default test)."""
    names = sorted(FAMILIES)
    for attempt in range(1000):
        rng = np.random.default_rng(seed if attempt == 0 else [seed, attempt])
        fam = family or names[int(rng.integers(0, len(names)))]
        case = FAMILIES[fam](rng)
        if max_elems is None or sum(a.size for a in case.args) <= max_elems:
            return case
    raise ValueError(f"no case of at most {max_elems} elements for seed {seed}, family {family}")


# ---------------------------------------------------------------- checking


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _f64(a):
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == BF16 else a


def _loosest(args) -> float:
    tols = [
        TOL["bfloat16"] if a.dtype == BF16 else TOL["float32"]
        for a in args
        if a.dtype.kind == "f" or a.dtype == BF16
    ]
    return max(tols) if tols else TOL["float32"]


def compare(case: Case, got: tuple, what: str) -> None:
    """Raise AssertionError when ``got`` (the kernel's outputs) differs from the reference."""
    refs = _as_tuple(case.ref(*[_f64(a) for a in case.args]))
    refs_native = None
    assert len(got) == len(refs), f"{what}: {len(got)} outputs, NumPy {len(refs)}"
    tol = _loosest(case.args)
    for i, (g, r) in enumerate(zip(got, refs)):
        g, r = np.asarray(g), np.asarray(r)
        assert g.shape == r.shape, f"{what} output {i}: shape {g.shape}, NumPy {r.shape}"
        if i in case.index_outputs or r.dtype.kind in "iub":
            if r.dtype.kind in "iu" and g.dtype.kind in "iu" and i not in case.index_outputs:
                if refs_native is None:
                    refs_native = _as_tuple(case.ref(*case.args))
                r = np.asarray(refs_native[i]).astype(g.dtype)
            bad = g != r
            if bad.any():
                pos = tuple(int(p) for p in np.argwhere(bad)[0])
                raise AssertionError(
                    f"{what} output {i}: {int(bad.sum())} of {g.size} differ; "
                    f"first at {pos}: got {g[pos]}, NumPy {r[pos]}"
                )
            continue
        g64 = g.astype(np.float64)
        fin = np.abs(r[np.isfinite(r)])
        mag = max(1.0, float(fin.max())) if fin.size else 1.0
        allowed = tol * np.maximum(np.abs(np.nan_to_num(r, posinf=0, neginf=0)), mag)
        with np.errstate(invalid="ignore"):
            ok = (np.isnan(g64) & np.isnan(r)) | (g64 == r) | (np.isfinite(r) & (np.abs(g64 - r) <= allowed))
            # a result beyond the float range overflows (bf16 and f32 share theirs)
            ok |= np.isinf(g64) & (np.sign(g64) == np.sign(r)) & (np.abs(r) > 3.3e38)
        if not ok.all():
            pos = tuple(int(p) for p in np.argwhere(~ok)[0])
            raise AssertionError(
                f"{what} output {i}: {int((~ok).sum())} of {g.size} differ; "
                f"first at {pos}: got {g64[pos]!r}, "
                f"NumPy {r[pos]!r} (tol {tol} x max(|ref|, {mag}))"
            )


def accepted_refusal(case: Case, err: Exception, stage: str) -> bool:
    """Documented refusals: topk over data holding NaN at run time (naming nki.max8)."""
    if stage == "run" and case.topk and isinstance(err, nk.InterpretError) and "max8" in str(err):
        return any(np.isnan(_f64(a)).any() for a in case.args if a.dtype.kind == "f" or a.dtype == BF16)
    return False


def check_case(case: Case, simulate: bool = True) -> str:
    """Compile, run on the NKI interpreter and the simulator, compare. Returns "ok" or
    "refused: ..." for an accepted refusal; raises on any failure."""
    try:
        kern = nk.compile(case.fn, *case.args)
    except nk.BuildError as e:
        if accepted_refusal(case, e, "compile"):
            return f"refused: {e}"
        raise
    feeds = dict(zip(kern.input_names, case.args))
    runs = [("NKI interpreter", lambda: kern.run(feeds))]
    if simulate:
        runs.append(("simulator", lambda: nk.simulate(kern, feeds)))
    for how, run in runs:
        try:
            out = run()
        except nk.InterpretError as e:
            if accepted_refusal(case, e, "run"):
                return f"refused: {type(e).__name__}"
            raise
        got = tuple(out[n] for n in kern.output_names)
        compare(case, got, f"{case.describe()} {how}")
    return "ok"
