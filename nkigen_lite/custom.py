"""Custom NKI kernels inside tensor graphs: the hardware check of their bodies and
``nk.check_custom``, which runs a body on the NKI interpreter and its NumPy reference on the
same inputs and reports where they disagree (docs/extending.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ir.errors import BuildError, VerifyError
from .ir.graph import Graph
from .ir.parser import parse
from .nki import run as nki_run
from .nki import verify as nki_verify
from .tensor.ops.custom import set_body_verifier
from .testing.tolerance import close_mask, tolerance_for

set_body_verifier(nki_verify)


@dataclass(frozen=True)
class OutputCheck:
    """One output compared: how many elements differ beyond tolerance, and the first of them."""

    name: str
    size: int
    mismatches: int
    first: tuple[int, ...] | None
    body_value: float | None
    reference_value: float | None
    max_abs_diff: float
    rtol: float
    atol: float

    def __str__(self) -> str:
        if not self.mismatches:
            return f"output {self.name!r}: agrees (max |diff| {self.max_abs_diff:.3g})"
        return (
            f"output {self.name!r}: {self.mismatches} of {self.size} elements differ beyond "
            f"rtol={self.rtol:g}, atol={self.atol:g}; first at {self.first}: body "
            f"{self.body_value!r}, reference {self.reference_value!r}; max |diff| {self.max_abs_diff:.3g}"
        )


@dataclass(frozen=True)
class CustomCheck:
    """The result of ``check_custom``: ``ok`` when every output agrees; ``str()`` says where not."""

    kernel: str
    outputs: tuple[OutputCheck, ...]

    @property
    def ok(self) -> bool:
        return all(o.mismatches == 0 for o in self.outputs)

    def __str__(self) -> str:
        head = f"custom kernel {self.kernel!r}: " + ("body and reference agree" if self.ok else "DISAGREE")
        return "\n".join([head] + [f"  {o}" for o in self.outputs])


def _random_input(rng, shape, dtype) -> np.ndarray:
    if dtype.is_float:
        return rng.standard_normal(shape).astype(dtype.np_dtype)
    if dtype.is_bool:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-50 if dtype.is_signed else 0, 50, shape).astype(dtype.np_dtype)


def check_custom(body, reference, inputs: dict | None = None, *, rtol=None, atol=None, seed: int = 0):
    """Run ``body`` (an NKI Graph or its text) on the NKI interpreter and ``reference`` (NumPy
    function of the body's inputs, in order, returning its outputs in order) on ``inputs``
    (``{name: array}``; default: seeded random arrays of the body's input types); returns a
    ``CustomCheck`` naming, per output, how many elements disagree and the first of them.
    Tolerances default to the output dtype's (nkigen_lite/testing/tolerance.py). A body that
    breaks a hardware rule raises the verifier's VerifyError, naming the kernel."""
    g = parse(body) if isinstance(body, str) else body
    if not isinstance(g, Graph):
        kind = type(body).__name__
        raise BuildError(f"check_custom: body must be an NKI Graph or its text, got {kind}")
    if not callable(reference):
        raise BuildError(
            f"check_custom({g.name}): reference must be a function, got {type(reference).__name__}"
        )
    rng = np.random.default_rng(seed)
    if inputs is None:
        inputs = {
            n: _random_input(rng, tuple(v.type.shape), v.type.dtype) for n, v in zip(g.input_names, g.inputs)
        }
    missing = [n for n in g.input_names if n not in inputs]
    if missing:
        raise BuildError(f"check_custom({g.name}): inputs {missing} are missing")
    try:
        got = nki_run(g, inputs)
    except VerifyError as e:
        raise VerifyError(f"custom kernel {g.name!r}: its body breaks a hardware rule: {e}") from None
    want = reference(*[np.array(inputs[n], copy=True) for n in g.input_names])
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    if len(want) != len(g.outputs):
        raise BuildError(
            f"check_custom({g.name}): the reference returned {len(want)} arrays for the body's "
            f"{len(g.outputs)} outputs ({', '.join(g.outputs)})"
        )
    checks = []
    for (name, v), w in zip(g.outputs.items(), want):
        dt = v.type.dtype
        r0, a0 = tolerance_for(dt)
        r, a = (r0 if rtol is None else rtol), (a0 if atol is None else atol)
        gv, wv = np.asarray(got[name]), np.asarray(w)
        if gv.shape != wv.shape:
            raise BuildError(
                f"check_custom({g.name}): output {name!r} is {list(gv.shape)} but the reference "
                f"returned {list(wv.shape)}"
            )
        ok = close_mask(gv, wv, dt, r, a)
        bad = np.argwhere(~ok)
        with np.errstate(invalid="ignore"):
            diff = np.abs(gv.astype(np.float64) - wv.astype(np.float64))
        first = tuple(int(i) for i in bad[0]) if len(bad) else None
        checks.append(
            OutputCheck(
                name,
                int(gv.size),
                int(len(bad)),
                first,
                None if first is None else gv[first].item(),
                None if first is None else wv[first].item(),
                float(np.nanmax(diff)) if diff.size and not np.all(np.isnan(diff)) else 0.0,
                r,
                a,
            )
        )
    return CustomCheck(g.name, tuple(checks))
