"""Per-op rules of the NKI source emitter: one ``nisa`` call (or Python statement) per NKI op.

``SOURCE_RULES[op class] = SourceRule(emit, calls)``; ``calls`` lists the ``nl`` / ``nisa``
names the rule may write, so a test can check each exists in the simulator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..nki import ops as K
from ..nki.types import HbmType
from .accesses import format_affine, is_reshape_view, kernel_shape
from .nki_source import SourceEmitter, nl_dtype, scalar


@dataclass(frozen=True)
class SourceRule:
    """How one NKI op becomes source text, and the NKI API names it uses."""

    emit: Callable[[SourceEmitter, object], None]
    calls: tuple[str, ...]


SOURCE_RULES: dict[type, SourceRule] = {}


def rule(op_cls, *calls: str):
    def register(fn):
        SOURCE_RULES[op_cls] = SourceRule(fn, calls)
        return fn

    return register


def _engine(op) -> tuple[str, str]:
    return ("engine", f"nisa.engine.{op.engine}")


def _pattern(pattern) -> str:
    return "[" + ", ".join(f"[{s}, {n}]" for s, n in pattern) + "]"


@rule(K.AllocOp, "nl.ndarray", "nl.sbuf", "nl.psum", "nl.hbm", "nl.shared_hbm")
def _alloc(e: SourceEmitter, op) -> None:
    v = op.result
    t = v.type
    if isinstance(t, HbmType):
        buffer = "nl.shared_hbm" if v in e.outputs else "nl.hbm"
    else:
        buffer = f"nl.{t.space.value}"
    if op.bufs > 1:
        # each (unrolled) iteration declares its own tile; the lowering reserved room for
        # ``bufs`` of them so the NKI compiler can place consecutive iterations apart
        e.line(f"# {e.name(v)}: {op.bufs} rotating buffers (the next iteration's DMA overlaps this one)")
    e.call(
        f"{e.name(v)} = nl.ndarray",
        [("", repr(kernel_shape(t))), ("dtype", nl_dtype(t.dtype, e.name(v))), ("buffer", buffer)],
    )


@rule(K.DeallocOp)
def _dealloc(e: SourceEmitter, op) -> None:
    # `del` is not in the NKI 0.6 kernel language (docs/emit.md); re-binding the name to None is
    # a plain assignment: the tile has no further uses, and the simulator frees it here.
    e.line(f"{e.name(op.operand(0))} = None")


@rule(K.HbmViewOp)
def _hbm_view(e: SourceEmitter, op) -> None:
    # Other views are written as .ap(...) patterns where they are accessed.
    if is_reshape_view(op) and op.result.has_uses:
        e.line(f"{e.name(op.result)} = {e.name(op.operand(0))}.reshape({kernel_shape(op.result.type)!r})")


@rule(K.DmaCopyOp, "nisa.dma_copy")
def _dma_copy(e: SourceEmitter, op) -> None:
    e.call("nisa.dma_copy", [("dst", e.access(op, "dst")), ("src", e.access(op, "src"))])


@rule(K.TensorCopyOp, "nisa.tensor_copy", "nisa.engine")
def _tensor_copy(e: SourceEmitter, op) -> None:
    e.call("nisa.tensor_copy", [("dst", e.access(op, "dst")), ("src", e.access(op, "src")), _engine(op)])


@rule(K.MemsetOp, "nisa.memset", "nisa.engine")
def _memset(e: SourceEmitter, op) -> None:
    dt = op.access("dst").dtype
    value = op.attrs["value"]
    if dt.is_int or dt.is_bool:  # a float value stays a float (an error for both checkers)
        text = scalar(value) if isinstance(value, float) else scalar(int(value))
    else:
        text = scalar(float(value))
    e.call("nisa.memset", [("dst", e.access(op, "dst")), ("value", text), _engine(op)])


@rule(K.IotaOp, "nisa.iota")
def _iota(e: SourceEmitter, op) -> None:
    args = [("dst", e.access(op, "dst")), ("pattern", _pattern(op.attrs["pattern"]))]
    offset = op.affine("offset")
    if not (offset.is_const and offset.const == 0):
        args.append(("offset", format_affine(offset, e.name)))
    if op.attrs["channel_multiplier"]:
        args.append(("channel_multiplier", str(op.attrs["channel_multiplier"])))
    e.call("nisa.iota", args)


@rule(K.MatmulOp, "nisa.nc_matmul")
def _matmul(e: SourceEmitter, op) -> None:
    two_d = e.accesses.format_2d  # operands are documented as 2-D: collapse extra free dims
    e.call(
        "nisa.nc_matmul",
        [
            ("dst", two_d(op.access("dst"))),
            ("stationary", two_d(op.access("stationary"))),
            ("moving", two_d(op.access("moving"))),
            ("accumulate", repr(bool(op.attrs["accumulate"]))),
        ],
    )


@rule(K.TransposeOp, "nisa.nc_transpose", "nisa.engine")
def _transpose(e: SourceEmitter, op) -> None:
    e.call("nisa.nc_transpose", [("dst", e.access(op, "dst")), ("data", e.access(op, "data")), _engine(op)])


@rule(K.ActivationOp, "nisa.activation", "nl.add", "nisa.reduce_cmd")
def _activation(e: SourceEmitter, op) -> None:
    args = [("dst", e.access(op, "dst")), ("op", f"nl.{op.attrs['op']}"), ("data", e.access(op, "data"))]
    if op.access("bias") is not None:
        args.append(("bias", e.access(op, "bias")))
    if op.access("scale") is not None or op.attrs["scale"] != 1.0:
        args.append(("scale", e.operand(op, "scale")))
    if op.access("reduce_res") is not None:
        args += [
            ("reduce_op", "nl.add"),
            ("reduce_res", e.access(op, "reduce_res")),
            ("reduce_cmd", "nisa.reduce_cmd.reset_reduce"),
        ]
    e.call("nisa.activation", args)


@rule(K.TensorTensorOp, "nisa.tensor_tensor", "nisa.engine")
def _tensor_tensor(e: SourceEmitter, op) -> None:
    e.call(
        "nisa.tensor_tensor",
        [
            ("dst", e.access(op, "dst")),
            ("data1", e.access(op, "data1")),
            ("data2", e.access(op, "data2")),
            ("op", f"nl.{op.attrs['op']}"),
            _engine(op),
        ],
    )


@rule(K.TensorScalarOp, "nisa.tensor_scalar", "nisa.engine")
def _tensor_scalar(e: SourceEmitter, op) -> None:
    args = [
        ("dst", e.access(op, "dst")),
        ("data", e.access(op, "data")),
        ("op0", f"nl.{op.attrs['op0']}"),
        ("operand0", e.operand(op, "operand0")),
    ]
    if op.attrs["reverse0"]:
        args.append(("reverse0", "True"))
    if op.attrs["op1"] is not None:
        args += [("op1", f"nl.{op.attrs['op1']}"), ("operand1", e.operand(op, "operand1"))]
        if op.attrs["reverse1"]:
            args.append(("reverse1", "True"))
    args.append(_engine(op))
    e.call("nisa.tensor_scalar", args)


@rule(K.TensorReduceOp, "nisa.tensor_reduce")
def _tensor_reduce(e: SourceEmitter, op) -> None:
    args = [
        ("dst", e.access(op, "dst")),
        ("op", f"nl.{op.attrs['op']}"),
        ("data", e.access(op, "data")),
        ("axis", repr(tuple(op.attrs["axis"]))),
    ]
    if op.attrs["negate"]:
        args.append(("negate", "True"))
    if op.attrs["keepdims"]:
        args.append(("keepdims", "True"))
    e.call("nisa.tensor_reduce", args)


@rule(K.SelectOp, "nisa.select_reduce", "nisa.reduce_cmd")
def _select(e: SourceEmitter, op) -> None:
    args = [
        ("dst", e.access(op, "dst")),
        ("predicate", e.access(op, "predicate")),
        ("on_true", e.access(op, "on_true")),
        ("on_false", e.operand(op, "on_false")),
    ]
    if op.attrs["reverse_pred"]:
        args.append(("reverse_pred", "True"))
    if op.access("reduce_res") is not None:
        args += [
            ("reduce_res", e.access(op, "reduce_res")),
            ("reduce_cmd", "nisa.reduce_cmd.reset_reduce"),
        ]  # reduce_op: the default, max (the only one select_reduce has)
    e.call("nisa.select_reduce", args)


@rule(K.AffineSelectOp, "nisa.affine_select")
def _affine_select(e: SourceEmitter, op) -> None:
    args = [
        ("dst", e.access(op, "dst")),
        ("pattern", _pattern(op.attrs["pattern"])),
        ("channel_multiplier", str(op.attrs["channel_multiplier"])),
        ("on_true_tile", e.access(op, "on_true_tile")),
        ("on_false_value", scalar(float(op.attrs["on_false_value"]))),
        ("cmp_op", f"nl.{op.attrs['cmp_op']}"),
    ]
    offset = op.affine("offset")
    if not (offset.is_const and offset.const == 0):
        args.append(("offset", format_affine(offset, e.name)))
    e.call("nisa.affine_select", args)


@rule(K.ForiLoopOp)
def _loop(e: SourceEmitter, op) -> None:
    lo, hi, step = op.attrs["lower"], op.attrs["upper"], op.attrs["step"]
    bounds = f"{hi}" if (lo, step) == (0, 1) else (f"{lo}, {hi}" if step == 1 else f"{lo}, {hi}, {step}")
    mark = e.mark()
    # NKI 0.6: nl.affine_range / nl.sequential_range are deprecated aliases of range (unrolled
    # at specialization); the dependence classification stays visible as a comment.
    note = "" if e.loops[op] == "affine" else "  # sequential: iterations depend on each other"
    e.line(f"for {e.name(op.index)} in range({bounds}):{note}")
    header_end = len(e.lines)
    e.block(op.body)
    if len(e.lines) == header_end:  # nothing to do in the body: the loop is dead code
        e.rewind(mark)


from . import (  # noqa: E402  (registered rules, after the tables they fill)
    source_bn,  # noqa: F401
    source_collective,  # noqa: F401
    source_dma_transpose,  # noqa: F401
    source_indirect,  # noqa: F401
    source_scan,  # noqa: F401
    source_shuffle,  # noqa: F401
    source_top8,  # noqa: F401
)
