"""Random matmul-family programs for differential fuzzing (tests/property/test_matmul_fuzz.py).

``draw_case(rng)`` picks one program: a plain ``a @ b`` with either operand transposed
(``a.T @ b``, ``a @ b.T``, ``a.T @ b.T``), 3-D @ 2-D, 3-D @ 3-D, broadcasting batch dims,
vectors (1-D @ 2-D, 2-D @ 1-D), matmuls of casts (bf16 -> f32 inputs) and matmuls followed by
elementwise epilogues (bias row, scale, relu / tanh, residual add, cast to bf16). Shapes straddle
the lowering's thresholds: M, N, K multiples of 128 and not, 1..8+ M tiles, K from 1 to 4096,
N up to 4096, odd sizes. Dtypes f32 / bf16 / fp16 / int8 / int32.

Float inputs are multiples of 1/8 in [-2, 2]: every product is exact in bf16, and every fp32
sum of K <= 4096 products is exact (they are multiples of 1/64 below 2**14), so a float case's
only rounding errors are the output's (and its epilogue's) — ``tolerance`` states the bound.
Integer inputs span the dtype's range (int8) or +-2**20 (int32), so int32 matmuls wrap, as
NumPy's do; they are compared exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

NP_DTYPES = {
    "f32": np.float32,
    "bf16": ml_dtypes.bfloat16,
    "f16": np.float16,
    "int8": np.int8,
    "int32": np.int32,
}

# unit roundoff of each float output dtype
UNIT = {"f32": 2.0**-24, "bf16": 2.0**-8, "f16": 2.0**-11}

# dims straddling the lowering's thresholds (partition 128, PSUM bank 512 fp32, 4 KiB rows)
DIMS = (1, 2, 3, 7, 64, 127, 128, 129, 200, 255, 256, 257, 384, 511, 512, 513, 640, 1000, 1024, 1025)
KS = DIMS + (2048, 4096)
MAX_ELEMENTS = 1 << 20  # operands and result each at most this many elements (runs in seconds)


@dataclass
class Case:
    """One program: ``fn`` (traced by nk.compile), its inputs, a float64 reference ``ref``
    and a magnitude ``mag`` (same shape: the sum of |terms| each output element accumulates,
    |a| @ |b| plus |bias| / |residual|) the float tolerance scales with."""

    name: str
    fn: object
    inputs: dict = field(default_factory=dict)
    ref: np.ndarray | None = None
    mag: np.ndarray | None = None
    out_dtype: str = "f32"
    extra_roundings: int = 0  # roundings the epilogue adds (a cast, a second op on bf16 C)

    def tolerance(self) -> np.ndarray:
        """Per-element bound: ``(2 + extra) * u * mag`` for the output's unit roundoff ``u``
        (C rounded once to the output, the epilogue's ops rounding again), plus fp32's
        ``4 * u32 * mag`` for reorderings of the exact sums. 0 for integers."""
        if self.out_dtype not in UNIT:
            return np.zeros_like(self.mag)
        u = UNIT[self.out_dtype]
        return (2 + 2 * self.extra_roundings) * u * self.mag + 4 * 2.0**-24 * self.mag + 1e-30


def _floats(rng, shape, dt):
    return (rng.integers(-16, 17, size=shape) / 8.0).astype(NP_DTYPES[dt])


def _ints(rng, shape, dt):
    if dt == "int8":
        return rng.integers(-128, 128, size=shape).astype(np.int8)
    return rng.integers(-(2**20), 2**20, size=shape).astype(np.int32)


def _arr(rng, shape, dt):
    return _ints(rng, shape, dt) if dt.startswith("int") else _floats(rng, shape, dt)


def _dim(rng, choices=DIMS):
    if rng.random() < 0.2:
        return int(rng.integers(1, 300))
    return int(choices[rng.integers(len(choices))])


def _mnk(rng, cap=MAX_ELEMENTS):
    while True:
        m, n, k = _dim(rng), _dim(rng), _dim(rng, KS)
        if rng.random() < 0.25:  # many M tiles
            m = 128 * int(rng.integers(1, 10)) + int(rng.choice([0, 0, 1, 64, 127]))
        if rng.random() < 0.1:
            n = int(rng.choice([2048, 3000, 4096]))
        if m * k <= cap and k * n <= cap and m * n <= cap:
            return m, n, k


def _f64(x):
    return x.astype(np.float64)


def draw_case(rng, cap: int = MAX_ELEMENTS) -> Case:  # noqa: C901 (one branch per program kind)
    """One random program (see the module docstring)."""
    kind = str(
        rng.choice(
            [
                "plain",
                "plain",
                "trans",
                "bias",
                "epilogue",
                "batched3x2",
                "batched3x3",
                "bcast",
                "vector",
                "cast_in",
                "int",
            ]
        )
    )
    dt = str(rng.choice(["f32", "bf16", "bf16", "f16"]))
    m, n, k = _mnk(rng, cap)
    if kind in ("plain", "trans"):
        ta, tb = (
            (False, False)
            if kind == "plain"
            else [(True, False), (False, True), (True, True)][rng.integers(3)]
        )
        a = _arr(rng, (k, m) if ta else (m, k), dt)
        b = _arr(rng, (n, k) if tb else (k, n), dt)
        fns = {
            (False, False): lambda a, b: a @ b,
            (True, False): lambda a, b: a.T @ b,
            (False, True): lambda a, b: a @ b.T,
            (True, True): lambda a, b: a.T @ b.T,
        }
        aa, bb = (_f64(a).T if ta else _f64(a)), (_f64(b).T if tb else _f64(b))
        return Case(
            f"{'a.T' if ta else 'a'} @ {'b.T' if tb else 'b'} {dt} M={m} K={k} N={n}",
            fns[(ta, tb)],
            {"a": a, "b": b},
            aa @ bb,
            np.abs(aa) @ np.abs(bb),
            dt,
        )
    if kind == "bias":
        a, w, bias = _arr(rng, (m, k), dt), _arr(rng, (k, n), dt), _arr(rng, (n,), dt)
        act = str(rng.choice(["none", "relu"]))
        ref = _f64(a) @ _f64(w) + _f64(bias)
        mag = np.abs(_f64(a)) @ np.abs(_f64(w)) + np.abs(_f64(bias))
        if act == "relu":
            return Case(
                f"relu(x @ w + b) {dt} M={m} K={k} N={n}",
                lambda x, w, b: np.maximum(x @ w + b, 0),
                {"x": a, "w": w, "b": bias},
                np.maximum(ref, 0),
                mag,
                dt,
                1,
            )
        return Case(
            f"x @ w + b {dt} M={m} K={k} N={n}",
            lambda x, w, b: x @ w + b,
            {"x": a, "w": w, "b": bias},
            ref,
            mag,
            dt,
            1,
        )
    if kind == "epilogue":
        a, w = _arr(rng, (m, k), dt), _arr(rng, (k, n), dt)
        c, cm = _f64(a) @ _f64(w), np.abs(_f64(a)) @ np.abs(_f64(w))
        which = str(rng.choice(["scale", "tanh", "residual", "cast_bf16"]))
        if which == "scale":
            return Case(
                f"(a @ b) * 0.5 {dt} M={m} K={k} N={n}",
                lambda a, b: (a @ b) * 0.5,
                {"a": a, "b": w},
                c * 0.5,
                cm * 0.5,
                dt,
                1,
            )
        if which == "tanh":
            return Case(
                f"tanh(a @ b) {dt} M={m} K={k} N={n}",
                lambda a, b: np.tanh(a @ b),
                {"a": a, "b": w},
                np.tanh(c),
                cm + 1,
                dt,
                2,
            )
        if which == "residual":
            r = _arr(rng, (m, n), dt)
            return Case(
                f"a @ b + r {dt} M={m} K={k} N={n}",
                lambda a, b, r: a @ b + r,
                {"a": a, "b": w, "r": r},
                c + _f64(r),
                cm + np.abs(_f64(r)),
                dt,
                1,
            )
        return Case(
            f"(a @ b).astype(bf16) {dt} M={m} K={k} N={n}",
            lambda a, b: (a @ b).astype(ml_dtypes.bfloat16),
            {"a": a, "b": w},
            c,
            cm,
            "bf16",
            1,
        )
    if kind in ("batched3x2", "batched3x3", "bcast"):
        bsz = int(rng.choice([1, 2, 3, 4, 8]))
        while bsz * max(m * k, k * n, m * n) > cap:
            m, n, k = _mnk(rng, cap // 8)
        if kind == "batched3x2":
            sa, sb = (bsz, m, k), (k, n)
        elif kind == "batched3x3":
            sa, sb = (bsz, m, k), (bsz, k, n)
        else:
            sa, sb = [((1, m, k), (bsz, k, n)), ((bsz, m, k), (1, k, n)), ((2, 1, m, k), (bsz, k, n))][
                rng.integers(3)
            ]
        a, b = _arr(rng, sa, dt), _arr(rng, sb, dt)
        tb = kind == "batched3x3" and rng.random() < 0.4
        if tb:
            b = np.ascontiguousarray(np.swapaxes(b, -1, -2))
            return Case(
                f"a @ b.T(0,2,1) {dt} {sa} x {b.shape}",
                lambda a, b: a @ b.transpose(0, 2, 1),
                {"a": a, "b": b},
                _f64(a) @ np.swapaxes(_f64(b), -1, -2),
                np.abs(_f64(a)) @ np.swapaxes(np.abs(_f64(b)), -1, -2),
                dt,
            )
        return Case(
            f"a @ b {dt} {sa} x {sb}",
            lambda a, b: a @ b,
            {"a": a, "b": b},
            _f64(a) @ _f64(b),
            np.abs(_f64(a)) @ np.abs(_f64(b)),
            dt,
        )
    if kind == "vector":
        if rng.random() < 0.5:
            sa, sb = (k,), (k, n)
        else:
            sa, sb = (m, k), (k,)
        a, b = _arr(rng, sa, dt), _arr(rng, sb, dt)
        return Case(
            f"a @ b {dt} {sa} x {sb}",
            lambda a, b: a @ b,
            {"a": a, "b": b},
            _f64(a) @ _f64(b),
            np.abs(_f64(a)) @ np.abs(_f64(b)),
            dt,
        )
    if kind == "cast_in":
        src = str(rng.choice(["bf16", "f16"]))
        a, b = _arr(rng, (m, k), src), _arr(rng, (k, n), src)
        return Case(
            f"a.astype(f32) @ b.astype(f32) from {src} M={m} K={k} N={n}",
            lambda a, b: a.astype(np.float32) @ b.astype(np.float32),
            {"a": a, "b": b},
            _f64(a) @ _f64(b),
            np.abs(_f64(a)) @ np.abs(_f64(b)),
            "f32",
        )
    # integers: NumPy's matmul in the operands' dtype (wrapping)
    idt = str(rng.choice(["int8", "int32"]))
    while m * k > cap // 16 or k * n > cap // 16 or m * n > cap // 16:
        m, n, k = _mnk(rng, cap // 16)
    a, b = _arr(rng, (m, k), idt), _arr(rng, (k, n), idt)
    form = str(rng.choice(["plain", "wide"]))
    if form == "wide":
        ref = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
        return Case(
            f"a.astype(int32) @ b.astype(int32) {idt} M={m} K={k} N={n}",
            lambda a, b: a.astype(np.int32) @ b.astype(np.int32),
            {"a": a, "b": b},
            ref,
            np.zeros(ref.shape),
            "int32",
        )
    ref = (a.astype(np.int64) @ b.astype(np.int64)).astype(NP_DTYPES[idt])
    return Case(
        f"a @ b {idt} M={m} K={k} N={n}", lambda a, b: a @ b, {"a": a, "b": b}, ref, np.zeros(ref.shape), idt
    )


# int32 -> int32 operand producers (their value ranges decide WideIntMatmul's digits)
INT_PRODUCERS = {
    "x % 256": lambda x: x % 256,
    "x // 65536": lambda x: x // 65536,
    "x & 255": lambda x: x & 255,
    "abs(x)": np.abs,
    "clip(x, -1000, 1000)": lambda x: np.clip(x, -1000, 1000),
    "x.astype(int8).astype(int32)": lambda x: x.astype(np.int8).astype(np.int32),
    "x % -7": lambda x: x % -7,
    "x": lambda x: x,
}


def _aligned(rng, cap=MAX_ELEMENTS):
    """M, N, K biased to the DMA-transpose / lead-tile conditions: multiples of 16 and 128."""
    while True:
        m = int(rng.choice([16, 32, 48, 112, 128, 144, 256, 384, 512, 640, 1024, 1152, 2048]))
        n = int(rng.choice([16, 64, 128, 176, 256, 512, 528, 1024, 2048, 4096]))
        k = int(rng.choice([128, 256, 384, 512, 640, 1024, 1152, 2048, 4096]))
        if rng.random() < 0.2:
            k = _dim(rng, KS)
        if m * k <= cap and k * n <= cap and m * n <= cap:
            return m, n, k


def draw_case2(rng, cap: int = MAX_ELEMENTS) -> Case:  # noqa: C901 (one branch per program kind)
    """Programs near the lowering's special paths: Linear layers ``x @ w.T + b``, bias forms
    (row, (1, N), f32 bias on a bf16 matmul, bias on the left, subtracted), chained matmuls,
    operand producers, sliced operands, mixed dtypes, batched transposes, integer
    transposes, int32 operands computed by range-deciding producers (INT_PRODUCERS), gathered
    rows and selected experts."""
    kind = str(
        rng.choice(
            [
                "linear",
                "bias_forms",
                "chain",
                "producer",
                "sliced",
                "mixed",
                "btrans",
                "int_trans",
                "int_producers",
                "gather",
                "expert",
            ]
        )
    )
    dt = str(rng.choice(["bf16", "bf16", "f16", "f32"]))
    m, n, k = _aligned(rng, cap) if rng.random() < 0.7 else _mnk(rng, cap)
    A = lambda s, d=dt: _arr(rng, s, d)  # noqa: E731
    if kind == "linear":
        x, w, b = A((m, k)), A((n, k)), A((n,))
        ta = rng.random() < 0.3
        if ta:
            x = np.ascontiguousarray(x.T)
            xa = _f64(x).T
            fn = lambda x, w, b: x.T @ w.T + b  # noqa: E731
        else:
            xa = _f64(x)
            fn = lambda x, w, b: x @ w.T + b  # noqa: E731
        ref = xa @ _f64(w).T + _f64(b)
        mag = np.abs(xa) @ np.abs(_f64(w)).T + np.abs(_f64(b))
        return Case(
            f"{'x.T' if ta else 'x'} @ w.T + b {dt} M={m} K={k} N={n}",
            fn,
            {"x": x, "w": w, "b": b},
            ref,
            mag,
            dt,
            1,
        )
    if kind == "bias_forms":
        x, w = A((m, k)), A((k, n))
        c, cm = _f64(x) @ _f64(w), np.abs(_f64(x)) @ np.abs(_f64(w))
        form = str(rng.choice(["row2d", "f32bias", "left", "sub", "col", "scalar_then_bias"]))
        if form == "row2d":
            b = A((1, n))
            return Case(
                f"x @ w + b(1,N) {dt} M={m} K={k} N={n}",
                lambda x, w, b: x @ w + b,
                {"x": x, "w": w, "b": b},
                c + _f64(b),
                cm + np.abs(_f64(b)),
                dt,
                1,
            )
        if form == "f32bias":
            b = A((n,), "f32")
            return Case(
                f"x @ w + b(f32) {dt} M={m} K={k} N={n}",
                lambda x, w, b: x @ w + b,
                {"x": x, "w": w, "b": b},
                c + _f64(b),
                cm + np.abs(_f64(b)),
                dt,
                1,
            )
        if form == "left":
            b = A((n,))
            return Case(
                f"b + x @ w {dt} M={m} K={k} N={n}",
                lambda x, w, b: b + x @ w,
                {"x": x, "w": w, "b": b},
                c + _f64(b),
                cm + np.abs(_f64(b)),
                dt,
                1,
            )
        if form == "sub":
            b = A((n,))
            return Case(
                f"x @ w - b {dt} M={m} K={k} N={n}",
                lambda x, w, b: x @ w - b,
                {"x": x, "w": w, "b": b},
                c - _f64(b),
                cm + np.abs(_f64(b)),
                dt,
                1,
            )
        if form == "col":
            b = A((m, 1))
            return Case(
                f"x @ w + b(M,1) {dt} M={m} K={k} N={n}",
                lambda x, w, b: x @ w + b,
                {"x": x, "w": w, "b": b},
                c + _f64(b),
                cm + np.abs(_f64(b)),
                dt,
                1,
            )
        b = A((n,))
        return Case(
            f"(x @ w) * 2 + b {dt} M={m} K={k} N={n}",
            lambda x, w, b: (x @ w) * 2 + b,
            {"x": x, "w": w, "b": b},
            2 * c + _f64(b),
            2 * cm + np.abs(_f64(b)),
            dt,
            2,
        )
    if kind == "chain":
        n2 = int(rng.choice([1, 16, 128, 129, 256]))
        while m * n * 8 > cap:
            m, n, k = _mnk(rng, cap)
        a, b, c2 = A((m, k)), A((k, n)), A((n, n2))
        ab = _f64(a) @ _f64(b)
        if dt != "f32":  # the intermediate is rounded to dt: reference keeps that rounding
            ab = ab.astype(NP_DTYPES[dt]).astype(np.float64)
        mag = (np.abs(_f64(a)) @ np.abs(_f64(b))) @ np.abs(_f64(c2))
        return Case(
            f"(a @ b) @ c {dt} M={m} K={k} N={n} N2={n2}",
            lambda a, b, c: (a @ b) @ c,
            {"a": a, "b": b, "c": c2},
            ab @ _f64(c2),
            mag,
            dt,
            1,
        )
    if kind == "producer":
        a, b = A((m, k)), A((n, k))
        ra = np.maximum(_f64(a), 0)
        return Case(
            f"relu(a) @ (b * 2).T {dt} M={m} K={k} N={n}",
            lambda a, b: np.maximum(a, 0) @ (b * 2).T,
            {"a": a, "b": b},
            ra @ (2 * _f64(b)).T,
            np.abs(ra) @ np.abs(2 * _f64(b)).T,
            dt,
        )
    if kind == "sliced":
        a, b = A((m + 1, k + 3)), A((k + 1, n + 2))
        aa, bb = _f64(a)[1:, 2 : k + 2], _f64(b)[:k, 1 : n + 1]
        return Case(
            f"a[1:, 2:k+2] @ b[:k, 1:n+1] {dt} M={m} K={k} N={n}",
            lambda a, b: a[1:, 2 : k + 2] @ b[:k, 1 : n + 1],
            {"a": a, "b": b},
            aa @ bb,
            np.abs(aa) @ np.abs(bb),
            dt,
        )
    if kind == "mixed":
        a, b = A((m, k), "bf16"), A((k, n), str(rng.choice(["f32", "f16"])))
        out = "f32"
        return Case(
            f"a(bf16) @ b({b.dtype}) M={m} K={k} N={n}",
            lambda a, b: a @ b,
            {"a": a, "b": b},
            _f64(a) @ _f64(b),
            np.abs(_f64(a)) @ np.abs(_f64(b)),
            out,
        )
    if kind == "btrans":
        bsz = int(rng.choice([2, 3, 4]))
        while bsz * max(m * k, k * n, m * n) > cap:
            m, n, k = _mnk(rng, cap // 4)
        a, b = A((bsz, k, m)), A((bsz, k, n))
        aa = np.swapaxes(_f64(a), 1, 2)
        return Case(
            f"a.transpose(0,2,1) @ b {dt} B={bsz} M={m} K={k} N={n}",
            lambda a, b: a.transpose(0, 2, 1) @ b,
            {"a": a, "b": b},
            aa @ _f64(b),
            np.abs(aa) @ np.abs(_f64(b)),
            dt,
        )
    if kind == "int_trans":
        idt = str(rng.choice(["int8", "int32"]))
        while m * k > cap // 16 or k * n > cap // 16 or m * n > cap // 16:
            m, n, k = _mnk(rng, cap // 16)
        a, b = _arr(rng, (k, m), idt), _arr(rng, (n, k), idt)
        ref = (a.astype(np.int64).T @ b.astype(np.int64).T).astype(NP_DTYPES[idt])
        return Case(
            f"a.T @ b.T {idt} M={m} K={k} N={n}",
            lambda a, b: a.T @ b.T,
            {"a": a, "b": b},
            ref,
            np.zeros(ref.shape),
            idt,
        )
    if kind == "int_producers":  # int32 operands computed by ops whose ranges pick the digits
        while m * k > cap // 16 or k * n > cap // 16 or m * n > cap // 16:
            m, n, k = _mnk(rng, cap // 16)
        a = rng.integers(-(2**31), 2**31, size=(m, k), dtype=np.int64).astype(np.int32)
        b = rng.integers(-(2**31), 2**31, size=(k, n), dtype=np.int64).astype(np.int32)
        names = sorted(INT_PRODUCERS)
        pa, pb = names[rng.integers(len(names))], names[rng.integers(len(names))]
        fa, fb = INT_PRODUCERS[pa], INT_PRODUCERS[pb]
        ref = (fa(a).astype(np.int64) @ fb(b).astype(np.int64)).astype(np.int32)
        return Case(
            f"({pa.replace('x', 'a')}) @ ({pb.replace('x', 'b')}) int32 M={m} K={k} N={n}",
            lambda a, b: fa(a) @ fb(b),
            {"a": a, "b": b},
            ref,
            np.zeros(ref.shape),
            "int32",
        )
    if kind == "gather":
        e = int(rng.choice([4, 17, 300]))
        nid = min(m, 512)
        table, w = A((e, k)), A((k, n))
        ids = rng.integers(0, e, size=nid).astype(np.int32)
        g = _f64(table)[ids]
        return Case(
            f"table[ids] @ w {dt} E={e} ids={nid} K={k} N={n}",
            lambda table, ids, w: table[ids] @ w,
            {"table": table, "ids": ids, "w": w},
            g @ _f64(w),
            np.abs(g) @ np.abs(_f64(w)),
            dt,
        )
    # selected experts: a @ table[ids]
    e, na = int(rng.choice([2, 4, 8])), int(rng.choice([1, 2, 4]))
    mm, kk, nn = (
        int(rng.choice([1, 16, 128, 130])),
        int(rng.choice([64, 128, 256])),
        int(rng.choice([64, 128, 512, 600])),
    )
    a, table = A((na, mm, kk)), A((e, kk, nn))
    ids = rng.integers(0, e, size=na).astype(np.int32)
    sel = _f64(table)[ids]
    return Case(
        f"a @ table[ids] {dt} E={e} na={na} M={mm} K={kk} N={nn}",
        lambda a, table, ids: a @ table[ids],
        {"a": a, "table": table, "ids": ids},
        _f64(a) @ sel,
        np.abs(_f64(a)) @ np.abs(sel),
        dt,
    )
