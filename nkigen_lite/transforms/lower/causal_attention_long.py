"""``tensor.causal_attention`` over more keys than a query tile's scores fit in PSUM (more than
``KEY_BLOCK`` = causal_attention.MAX_KEYS, 2048): an online softmax over key blocks.

Everything but the softmax is causal_attention.py's kernel (its ``_Emitter``, reused): one loop
over the KV heads; per KV head K and V loaded once (one DMA each, resident in SBUF for every
query tile of the head's query sweep), Kᵀ by TensorE transposes, Q of the head's R query heads
for all query tiles in one DMA, Qᵀ likewise, O of a tile's R heads stored by one DMA; the one
constant mask tile (``mask/scale`` where key > row, built on chip by GpSimd ``affine_select``)
added only to each tile's diagonal chunk.

A unit is (query head j, query tile t, key block [lo, stop)): the keys up to the tile's last
row split in blocks of ``KEY_BLOCK`` (blocks past the diagonal do not exist: no loads, no
instructions). A tile whose keys fit one block is causal_attention.py's unit. Otherwise, per
block, with the running exp bias ``β = -scale·m`` (``m`` the running row max of S):

- ``S`` of the block in PSUM (at most four banks), ``-max S`` by negated row reduces;
- ``β' = min(scale·(-max S), β)`` and ``α = exp(β' - β)`` (one VectorE, one ScalarE op; the
  first block: ``β = scale·(-max S)``);
- ``P = exp(scale·S + β')`` in the 16-bit dtype with the row sums ``σ`` fused (1/√d folded in
  the activation's scale), ``l = l·α + σ`` (one op);
- ``O_b = Pᵀᵀ V`` of the block's chunks in PSUM, ``A = A·α + O_b`` in fp32 SBUF (the product on
  GpSimd, the sum on VectorE reading PSUM; the first block copies ``O_b``);
- after the last (diagonal) block ``O = A · 1/l`` in the output dtype.

Units are ordered tile by tile, block by block, head by head, through causal_attention.py's
software pipeline (scores of unit u+1 before the ``P V`` of unit u) and list schedule.

Limits (``long_supported``): causal_attention.py's shapes and dtypes, any number of keys whose
per-KV-head operands (Q and Qᵀ of the group, K, Kᵀ, V) fit ``resident_budget`` bytes per
partition: 3/4 of SBUF less 32 KiB (Qwen3-0.6B: 56 KiB at seq 4096, 112 KiB at 8192, of 124).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.dtypes import get_dtype
from ...ir.graph import Block
from ...nki.ops import DmaCopyOp
from ...nki.types import MemorySpace
from ...nki.types import access_of as _acc
from .attention_units import attention_dims
from .causal_attention import DTYPES, F32, MAX_HEAD_DIM, MAX_KEYS, MAX_VALUE_DIM, SKIP_MASK, P, _Emitter
from .emit_order import SBUF_SHARE, list_order

KEY_BLOCK = MAX_KEYS  # keys per block: a query tile's scores of one block in four PSUM banks
WORKING_BYTES = 32 * 1024  # per partition: probabilities, Pᵀ and accumulators of units in flight
WINDOW_OPS = 2000  # instructions list-scheduled together (a window ends after an output store)


def resident_bytes(m: int, n: int, d: int, dv: int, rep: int, itemsize: int) -> int:
    """SBUF bytes per partition one KV head's operands hold: Q and Qᵀ of its ``rep`` query heads
    over all ``m`` rows, K, Kᵀ and V of its ``n`` keys."""
    tiles, chunks = -(-m // P), -(-n // P)
    return itemsize * (rep * (tiles * d + m) + chunks * (d + dv) + n)


def resident_budget(target) -> int:
    """Bytes per partition the resident operands may take: the share of SBUF the list schedule
    keeps (emit_order.SBUF_SHARE) less ``WORKING_BYTES`` for the units in flight."""
    return int(target.sbuf_bytes_per_partition * SBUF_SHARE) - WORKING_BYTES


def long_refusal(q_shape, k_shape, v_shape, dtype, mask_value, target) -> str | None:
    """Why the long-key kernel cannot take the shapes (the rule, with the numbers), or None."""
    dims = attention_dims(q_shape, k_shape, v_shape)
    if dims is None:
        return "q (..., H, M, D), k (..., G, N, D), v (..., G, N, Dv) with G dividing H expected"
    m, d, n, dv = dims
    name = getattr(dtype, "name", dtype)
    if m != n or n <= KEY_BLOCK or d > MAX_HEAD_DIM or dv > MAX_VALUE_DIM:
        return (
            f"M {m}, N {n}, D {d}, Dv {dv}: the kernel takes M == N > {KEY_BLOCK}, "
            f"D <= {MAX_HEAD_DIM}, Dv <= {MAX_VALUE_DIM}"
        )
    if name not in DTYPES or float(mask_value) > SKIP_MASK:
        return f"dtype {name} / mask_value {mask_value}: {'/'.join(DTYPES)} and a mask <= {SKIP_MASK}"
    rep = q_shape[-3] // k_shape[-3]
    res = resident_bytes(m, n, d, dv, rep, get_dtype(name).itemsize)
    if res > resident_budget(target):
        return (
            f"Q, K and V of one KV head need {res} B per partition at {n} keys, more than the "
            f"{resident_budget(target)} B the kernel keeps resident (3/4 of SBUF less {WORKING_BYTES} B "
            "for the units in flight)"
        )
    return None


def _is_store(op) -> bool:
    """An output store (the only DMAs into HBM in the loop body)."""
    return isinstance(op, DmaCopyOp) and op.access("dst").space is MemorySpace.HBM


@dataclass
class _Running:
    """A (query head, query tile)'s online-softmax state between key blocks: the exp bias
    ``β = -scale·m``, the row sums ``l`` and the fp32 accumulator ``A`` (None before the first
    block's ``P V``)."""

    bias: object
    total: object
    acc: object = None


class LongEmitter(_Emitter):
    """causal_attention.py's kernel with units over key blocks (module docstring)."""

    def order(self, block) -> None:
        """List-schedule ``block`` in windows of about ``WINDOW_OPS`` instructions, each ending
        after an output store (nothing in PSUM is live there), a window the scheduler cannot
        keep within memory split at its middle store: one schedule over a KV head's whole sweep
        runs ScalarE's exps so far ahead of the ``P V`` that the probabilities fill SBUF and the
        scheduler keeps program order (attention alone, 16 / 8 heads at seq 4096: 5,870.5 µs,
        in windows 2,467.5 µs)."""
        ops = list(block)
        for op in ops:
            block.remove(op)
        cur: list = []
        for op in ops:
            cur.append(op)
            if len(cur) >= WINDOW_OPS and _is_store(op):
                self._schedule(cur, block)
                cur = []
        self._schedule(cur, block)

    def _schedule(self, ops: list, block) -> None:
        """Append ``ops`` to ``block`` in list-schedule order (halves when it fails)."""
        part = Block([], [])
        for op in ops:
            part.append(op)
        if list_order(part, self.ctx.target) is None:
            stores = [i for i, op in enumerate(ops[:-1]) if _is_store(op)]
            if stores:
                mid = stores[len(stores) // 2] + 1
                for op in ops:
                    part.remove(op)
                self._schedule(ops[:mid], block)
                self._schedule(ops[mid:], block)
                return
        for op in list(part):
            part.remove(op)
            block.append(op)

    def tile_end(self, t: int) -> int:
        """The key after tile ``t``'s last row."""
        return min(self.m, (t + 1) * P)

    def units(self) -> list:
        """(query head, query tile, first key, stop key): tile by tile, block by block, head by
        head; only keys up to the tile's last row."""
        self.running: dict[tuple, _Running] = {}
        out = []
        for t in range(self.tiles):
            end = self.tile_end(t)
            for lo in range(0, end, KEY_BLOCK):
                out += [(j, t, lo, min(end, lo + KEY_BLOCK)) for j in range(self.rep)]
        return out

    def ends_tile(self, unit) -> bool:
        return unit[0] == self.rep - 1 and unit[3] == self.tile_end(unit[1])

    def unit_scores(self, q_t, k_t, unit, mask):
        j, t, lo, stop = unit
        if lo == 0 and stop == self.tile_end(t):  # one block: causal_attention.py's unit
            return self.scores(q_t, k_t, j, t, mask)
        return self.block_scores(q_t, k_t, unit, mask)

    def unit_values(self, v_nat, res, unit, out):
        j, t, lo, stop = unit
        if lo == 0 and stop == self.tile_end(t):
            return self.values(v_nat, res, j, t, out)
        return self.block_values(v_nat, res, unit, out)

    def block_scores(self, q_t, k_t, unit, mask):
        """Stage 1 of a key block (a generator returning (P, rows, α, 1/l or None)): S, -max S,
        the running bias and α, P with its row sums, l; 1/l after the last block."""
        b = self.b
        j, t, lo, stop = unit
        parts, mt = yield from self.score_parts(q_t, k_t, j, t, mask, lo, stop)
        rows, col = (0, mt), (0, 1)
        neg = self.neg_max(parts, mt)
        state = self.running.get((j, t)) if lo else None
        bias = b.alloc((P, 1), F32, name="exp_bias")
        alpha = None
        if state is None:
            b.tensor_scalar(
                dst=_acc(bias, rows, col), data=_acc(neg, rows, col), op0="multiply", operand0=self.scale
            )
        else:  # β' = min(scale·(-max S), β), α = exp(β' - β)
            b.tensor_scalar(
                dst=_acc(bias, rows, col),
                data=_acc(neg, rows, col),
                op0="multiply",
                operand0=self.scale,
                op1="minimum",
                operand1=_acc(state.bias, rows, col),
            )
            alpha = b.alloc((P, 1), F32, name="rescale")
            b.activation(
                dst=_acc(alpha, rows, col),
                op="exp",
                data=_acc(state.bias, rows, col),
                bias=_acc(bias, rows, col),
                scale=-1.0,
            )
        p, sums = self.exps(parts, bias, mt, stop - lo)
        total = sums
        if state is not None:  # l = l·α + σ
            total = b.alloc((P, 1), F32, name="row_sum_run")
            b.tensor_scalar(
                dst=_acc(total, rows, col),
                data=_acc(state.total, rows, col),
                op0="multiply",
                operand0=_acc(alpha, rows, col),
                op1="add",
                operand1=_acc(sums, rows, col),
            )
        if state is None:
            self.running[(j, t)] = _Running(bias, total)
        else:
            state.bias, state.total = bias, total
        recip = None
        if stop == self.tile_end(t):
            recip = b.alloc((P, 1), F32, name="recip")
            b.activation(dst=_acc(recip, rows, col), op="reciprocal", data=_acc(total, rows, col))
        return p, mt, alpha, recip

    def block_values(self, v_nat, res, unit, out):
        """Stage 2 of a key block (a generator): ``O_b = Pᵀᵀ V`` in PSUM; then ``A = A·α + O_b``
        (the first block: ``A = O_b``) and after the last block ``O = A · 1/l`` into ``out[:, j]``."""
        b, dv = self.b, self.dv
        j, t, lo, stop = unit
        p, mt, alpha, recip = res
        rows, feats = (0, mt), (0, dv)
        o = self.probs_values(v_nat, p, mt, t, lo // P, -(-stop // P) - 1)
        yield
        state = self.running[(j, t)]
        if alpha is None:
            state.acc = b.alloc((P, dv), F32, name="acc")
            b.tensor_copy(dst=_acc(state.acc, rows, feats), src=_acc(o, rows, feats))
        else:
            acc = _acc(state.acc, rows, feats)
            # GpSimd takes tensor_scalar only for rsqrt: α broadcast along the features instead
            b.tensor_tensor(
                dst=acc, data1=acc, data2=_acc(alpha, rows, (0, dv, 0)), op="multiply", engine="gpsimd"
            )
            b.tensor_tensor(dst=acc, data1=acc, data2=_acc(o, rows, feats), op="add")
        if recip is not None:
            b.tensor_scalar(
                dst=_acc(out, rows, (j, 1), feats),
                data=_acc(state.acc, rows, feats),
                op0="multiply",
                operand0=_acc(recip, rows, (0, 1)),
            )
