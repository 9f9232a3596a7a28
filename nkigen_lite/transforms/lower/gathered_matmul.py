"""``tensor.gathered_matmul`` (``y[s] = a[s // group] @ table[ids[s]]``, M = 1) lowered with every
selected matrix read straight from the table into SBUF, once per selection.

The table (E, K, N) is viewed as ``E·P`` rows of ``q·N`` elements, ``P`` the largest divisor of K
up to 128 and ``q = K / P``: row ``e·P + p`` holds rows ``p·q … p·q + q - 1`` of matrix ``e``,
contiguous in HBM. One indirect DMA (``nki.dma_gather``, index column ``ids[s]·P + p``) brings a
whole selected matrix into a ``[P, q·N]`` tile (``q·N`` contiguous elements per partition), so
the HBM traffic is the selected matrices once each, plus ``a``, the ids and the result.

The contraction runs over the same split of K: ``k = p·q + j``. ``aᵀ`` is staged once for all
selections (``a`` loaded row-major, one TensorE transpose per ``j`` of the columns ``j, j+q, …``),
so its column ``j·na + r`` holds ``a[r, p·q + j]`` on partition ``p``. Per selection and per
128-column chunk of N the matrix chunk is the stationary operand and the ``aᵀ`` column the
moving one (``q`` matmuls accumulating in PSUM; a one-column moving operand costs the minimum
matmul time, half of streaming N columns with ``a`` stationary): the result comes out with N on
the partitions, one PSUM column per selection. After a group of up to 128 selections every
chunk is rounded to the result dtype (PSUM → SBUF, the rounding NumPy's matmul does), transposed
back on TensorE and the group's rows stored with one DMA.

Selections run in a ``fori_loop`` per group (over rows of ``a``, then over the ``group``
selections sharing a row), so the code size does not grow with the number of selections; the
deallocs stage gives the gathered tile rotating buffers, so the DMA of the next selection
overlaps this one's matmuls.
"""

from __future__ import annotations

from ...ir.dtypes import float32
from ...ir.errors import BuildError
from ...nki.builder import Builder
from ...nki.types import Affine, DimSlice
from ...nki.types import access_of as _acc
from ...nki.types import ds as _ds
from ...tensor.composites_gathered_matmul import GatheredMatmulOp
from .custom import register_composite_lowering
from .deallocs import insert_deallocs
from .gathered_blocks import blocks_apply, selection_blocks
from .gathered_blocks import loop as _loop

P = 128  # partitions
BANK_F32 = 512  # fp32 columns per PSUM bank
MAX_BANKS = 4  # PSUM banks holding a selection group's results
MAX_ROW_BYTES = 64 * 1024  # one gathered matrix per partition (q * N elements)
MAX_STAGED_BYTES = 32 * 1024  # aᵀ staged once for all selections, per partition
MAX_SELECTIONS = 4096  # the index columns: 4 bytes per selection on every partition
DTYPES = ("bf16", "f16", "f32")
IDS = ("i32", "u32")


def k_split(k: int) -> tuple[int, int]:
    """(P, q): the largest divisor P of ``k`` up to 128 and q = k / P."""
    p = max(d for d in range(1, min(k, P) + 1) if k % d == 0)
    return p, k // p


def _group_rows(group: int, chunks: int) -> int:
    """Rows of ``a`` per selection group: as many as keep the group within 128 selections and
    its results within ``MAX_BANKS`` PSUM banks (0 when not even one row fits)."""
    rows = P // group
    while rows > 0:
        ns = rows * group
        per_bank = BANK_F32 // ns
        if per_bank and -(-chunks // per_bank) <= MAX_BANKS:
            return rows
        rows -= 1
    return 0


def _bank_split(m: int, chunks: int) -> int:
    """128-column chunks per PSUM bank for ``m`` result columns per chunk and selection, 0 when
    the ``chunks`` do not fit ``MAX_BANKS`` banks."""
    per_bank = BANK_F32 // m
    return per_bank if per_bank and -(-chunks // per_bank) <= MAX_BANKS else 0


def supported(types, attrs) -> bool:
    """Shapes the kernel handles: ``a`` (na, M, K) with M <= 128, ``table`` (E, K, N) of the
    same dtype (bf16 / f16 / f32), ``ids`` (na·group,) int32 / uint32, ``group`` <= 128 when
    M = 1, P >= 32 (P the largest divisor of K up to 128), one matrix at most ``MAX_ROW_BYTES``
    per partition, at most ``MAX_SELECTIONS`` ids, ``aᵀ`` within ``MAX_STAGED_BYTES`` per
    partition when staged once, the row indices ``ids·P + p`` exact in fp32, one selection's results
    within ``MAX_BANKS`` PSUM banks; ``astype`` none or float32 (the rounded results widened on
    their last copy)."""
    at, tt, it = types
    g = int(attrs.get("group", 1))
    if attrs.get("astype", "") not in ("", "float32"):
        return False
    if at.rank != 3 or tt.rank != 3 or it.rank != 1 or min(at.shape + tt.shape + it.shape) <= 0:
        return False
    na, m, k = at.shape
    e, k2, n_cols = tt.shape
    if not 1 <= m <= P or k != k2 or at.dtype is not tt.dtype or at.dtype.name not in DTYPES:
        return False
    if it.dtype.name not in IDS or g < 1 or it.shape[0] != na * g or (m == 1 and g > P):
        return False
    p, q = k_split(k)
    if p < 32 or q * n_cols * tt.dtype.itemsize > MAX_ROW_BYTES or e * p >= 2**24:
        return False
    staged_whole = m == 1 or na == 1
    if it.shape[0] > MAX_SELECTIONS or (staged_whole and q * na * m * at.dtype.itemsize > MAX_STAGED_BYTES):
        return False
    chunks = -(-n_cols // P)
    return _group_rows(g, chunks) > 0 if m == 1 else _bank_split(m, chunks) > 0


class _Kernel:
    """Builds the kernel (module docstring) for one operand signature."""

    def __init__(self, types, attrs):
        at, tt, it = types
        self.group = int(attrs["group"])
        self.na, self.m, self.k = at.shape
        self.e, _, self.n_cols = tt.shape
        self.n = it.shape[0]
        self.dt, self.idt = at.dtype, it.dtype
        self.out_dt = GatheredMatmulOp.infer(types, attrs)[0].dtype
        self.round_dt = GatheredMatmulOp.infer(types, {**attrs, "astype": ""})[0].dtype  # the matmul's
        self.p, self.q = k_split(self.k)
        self.b = b = Builder("gathered_matmul")
        a = b.add_input("a", at.shape, self.dt)
        table = b.add_input("table", tt.shape, self.dt)
        ids = b.add_input("ids", it.shape, self.idt)
        self.y = b.alloc((self.n, self.m, self.n_cols), self.out_dt, "hbm", name="gathered")
        row = self.q * self.n_cols
        self.rows = b.hbm_view(table, (self.e * self.p, row), (row, 1), name="table_rows")
        self.ids_all = b.hbm_view(ids, (self.p, self.n), (0, 1), name="ids_bcast")
        self.a_rows = b.hbm_view(a, (self.na * self.m, self.k), (self.k, 1), name="a_rows")
        self.y_rows = b.hbm_view(self.y, (self.n * self.m, self.n_cols), (self.n_cols, 1), name="y_rows")

    def index_columns(self):
        """[P, n] int32: column s holds ids[s]·P + p (the table row partition p reads)."""
        b, p, n = self.b, self.p, self.n
        raw = b.alloc((p, n), self.idt, name="ids")
        b.dma_copy(dst=_acc(raw, (0, p), (0, n)), src=_acc(self.ids_all, (0, p), (0, n)))
        f = b.alloc((p, n), float32, name="ids_f32")
        b.tensor_copy(dst=_acc(f, (0, p), (0, n)), src=_acc(raw, (0, p), (0, n)))
        part = b.alloc((p, n), float32, name="partition")
        b.iota(dst=part, pattern=[[0, n]], channel_multiplier=1)
        whole = ((0, p), (0, n))
        rows = b.alloc((p, n), float32, name="rows_f32")
        b.tensor_scalar(dst=_acc(rows, *whole), data=_acc(f, *whole), op0="multiply", operand0=float(p))
        rows2 = b.alloc((p, n), float32, name="rows_f32")
        b.tensor_tensor(dst=_acc(rows2, *whole), data1=_acc(rows, *whole), data2=_acc(part, *whole), op="add")
        idx = b.alloc((p, n), self.idt, name="row_index")
        b.tensor_copy(dst=_acc(idx, *whole), src=_acc(rows2, *whole))
        return idx

    def stage_a(self):
        """[P, q·na·M]: column j·na·M + r holds row r of ``a`` (as (na·M, K)) at p·q + j on
        partition p."""
        b, p, q, na, k = self.b, self.p, self.q, self.na * self.m, self.k
        at = b.alloc((p, q * na), self.dt, name="a_t")
        for r0 in range(0, na, P):
            nr = min(P, na - r0)
            nat = b.alloc((P, k), self.dt, name="a_nat")
            b.dma_copy(dst=_acc(nat, (0, nr), (0, k)), src=_acc(self.a_rows, (r0, nr), (0, k)))
            for j in range(q):
                ps = b.alloc((P, P), self.dt, "psum", name="ps_a")
                b.nc_transpose(dst=_acc(ps, (0, p), (0, nr)), data=_acc(nat, (0, nr), _ds(j, p, q)))
                b.tensor_copy(dst=_acc(at, (0, p), (j * na + r0, nr)), src=_acc(ps, (0, p), (0, nr)))
        return at

    def build(self):
        b, g, n_cols = self.b, self.group, self.n_cols
        idx = self.index_columns()
        blocks = blocks_apply(self, MAX_STAGED_BYTES)
        at = self.stage_a() if self.m == 1 or self.na == 1 or blocks else None  # else per row, in the loop
        chunks = -(-n_cols // P)
        if blocks:
            selection_blocks(self, idx, at)
        elif self.m > 1:
            self.selection_rows(idx, at, chunks)
        else:
            rows_per_group = _group_rows(g, chunks)
            for r0 in range(0, self.na, rows_per_group):
                nr = min(rows_per_group, self.na - r0)
                self.selection_group(idx, at, r0, nr, chunks)
        b.set_outputs({"y": self.y})
        insert_deallocs(b.graph.body)
        return b.graph

    def selection_group(self, idx, at, r0: int, nr: int, chunks: int) -> None:
        """Rows [r0, r0 + nr) of ``a``, i.e. selections [r0·group, (r0 + nr)·group)."""
        b, g, n_cols = self.b, self.group, self.n_cols
        ns, s0 = nr * g, r0 * g
        per_bank = BANK_F32 // ns
        n_banks = -(-chunks // per_bank)
        banks = [b.alloc((P, per_bank * ns), float32, "psum", name="acc") for _ in range(n_banks)]
        with _loop(b, nr) as r, _loop(b, g) as j:
            self.selection(idx, at, banks, r0, r, r * g + j, ns, per_bank, chunks)
        out = b.alloc((P, n_cols), self.out_dt, name="y_rows")
        for c in range(chunks):
            c0, nc = c * P, min(P, n_cols - c * P)
            bank, cc = divmod(c, per_bank)
            rounded = b.alloc((P, ns), self.round_dt, name="y_t")
            b.tensor_copy(dst=_acc(rounded, (0, nc), (0, ns)), src=_acc(banks[bank], (0, nc), (cc * ns, ns)))
            ps = b.alloc((P, P), self.round_dt, "psum", name="ps_y")
            b.nc_transpose(dst=_acc(ps, (0, ns), (0, nc)), data=_acc(rounded, (0, nc), (0, ns)))
            b.tensor_copy(dst=_acc(out, (0, ns), (c0, nc)), src=_acc(ps, (0, ns), (0, nc)), engine="scalar")
        b.dma_copy(dst=_acc(self.y_rows, (s0, ns), (0, n_cols)), src=_acc(out, (0, ns), (0, n_cols)))

    def gather(self, idx, sl: Affine):
        """The matrix of selection ``sl`` as a [P, q·N] tile (row p·q + j of the matrix at
        columns j·N …)."""
        b, p, row = self.b, self.p, self.q * self.n_cols
        w = b.alloc((p, row), self.dt, name="w_sel")
        b.dma_gather(
            dst=_acc(w, (0, p), (0, row)),
            src=_acc(self.rows, (0, self.e * p), (0, row)),
            index=_acc(idx, (0, p), DimSlice(sl, 1, 1)),
        )
        return w

    def stage_row(self, r: Affine):
        """[P, q·M]: column j·M + i holds row i of ``a[r]`` at p·q + j on partition p (one
        natural load of the M rows, q TensorE transposes)."""
        b, p, q, m, k = self.b, self.p, self.q, self.m, self.k
        nat = b.alloc((m, k), self.dt, name="a_nat")
        b.dma_copy(dst=_acc(nat, (0, m), (0, k)), src=_acc(self.a_rows, DimSlice(r * m, m, 1), (0, k)))
        at = b.alloc((p, q * m), self.dt, name="a_t")
        for j in range(q):
            ps = b.alloc((P, P), self.dt, "psum", name="ps_a")
            b.nc_transpose(dst=_acc(ps, (0, p), (0, m)), data=_acc(nat, (0, m), _ds(j, p, q)))
            b.tensor_copy(dst=_acc(at, (0, p), (j * m, m)), src=_acc(ps, (0, p), (0, m)))
        return at

    def selection_rows(self, idx, at, chunks: int) -> None:
        """M > 1: per selection, its M result rows: q matmuls per 128-column chunk into PSUM
        ([chunk columns, M]), rounded, transposed back and stored (M, N) by one DMA. ``at``:
        ``a`` staged once (one row block shared by all selections), or None: each row block is
        staged in the loop, after its first selection's gather is issued."""
        b, p, q, g, m, n_cols = self.b, self.p, self.q, self.group, self.m, self.n_cols
        per_bank = _bank_split(m, chunks)

        def one(w, at_r, col) -> None:
            banks = [
                b.alloc((P, per_bank * m), float32, "psum", name="acc") for _ in range(-(-chunks // per_bank))
            ]
            for c in range(chunks):
                c0, nc = c * P, min(P, n_cols - c * P)
                bank, cc = divmod(c, per_bank)
                for j in range(q):
                    b.nc_matmul(
                        dst=_acc(banks[bank], (0, nc), (cc * m, m)),
                        stationary=_acc(w, (0, p), (j * n_cols + c0, nc)),
                        moving=_acc(at_r, (0, p), DimSlice(col(j), m, 1)),
                        accumulate=j > 0,
                    )
            return banks

        def finish(banks, sl: Affine) -> None:
            out = b.alloc((m, n_cols), self.out_dt, name="y_rows")
            for c in range(chunks):
                c0, nc = c * P, min(P, n_cols - c * P)
                bank, cc = divmod(c, per_bank)
                rounded = b.alloc((P, m), self.round_dt, name="y_t")
                b.tensor_copy(dst=_acc(rounded, (0, nc), (0, m)), src=_acc(banks[bank], (0, nc), (cc * m, m)))
                ps = b.alloc((P, P), self.round_dt, "psum", name="ps_y")
                b.nc_transpose(dst=_acc(ps, (0, m), (0, nc)), data=_acc(rounded, (0, nc), (0, m)))
                b.tensor_copy(dst=_acc(out, (0, m), (c0, nc)), src=_acc(ps, (0, m), (0, nc)), engine="scalar")
            b.dma_copy(
                dst=_acc(self.y_rows, DimSlice(sl * m, m, 1), (0, n_cols)), src=_acc(out, (0, m), (0, n_cols))
            )

        with _loop(b, self.na) as r:
            if at is None and g == 1:
                w = self.gather(idx, r)
                at_r = self.stage_row(r)
                finish(one(w, at_r, lambda j: Affine.of(j * m)), r)
                return
            if at is None:
                at_r, col = self.stage_row(r), (lambda j: Affine.of(j * m))
            else:
                at_r, col = at, (lambda j: r * m + j * self.na * m)
            with _loop(b, g) as j:
                sl = r * g + j
                finish(one(self.gather(idx, sl), at_r, col), sl)

    def selection(self, idx, at, banks, r0: int, r: Affine, sl: Affine, ns: int, per_bank: int, chunks: int):
        """Selection ``s0 + sl`` (row ``r0 + r`` of ``a``): its matrix gathered into SBUF, then
        q matmuls per 128-column chunk into its PSUM column."""
        b, p, q, n_cols = self.b, self.p, self.q, self.n_cols
        w = self.gather(idx, sl + r0 * self.group)
        for c in range(chunks):
            c0, nc = c * P, min(P, n_cols - c * P)
            bank, cc = divmod(c, per_bank)
            for j in range(q):
                b.nc_matmul(
                    dst=_acc(banks[bank], (0, nc), DimSlice(sl + cc * ns, 1, 1)),
                    stationary=_acc(w, (0, p), (j * n_cols + c0, nc)),
                    moving=_acc(at, (0, p), DimSlice(r + (j * self.na + r0), 1, 1)),
                    accumulate=j > 0,
                )


def gathered_matmul_body(types, attrs):
    """The NKI kernel of one ``tensor.gathered_matmul`` with operand types ``types``."""
    if not supported(types, attrs):
        shapes = ", ".join(f"{n} {t}" for n, t in zip(("a", "table", "ids"), types))
        raise BuildError(
            f"tensor.gathered_matmul ({shapes}, group {attrs.get('group')}): the kernel takes a "
            f"(na, M <= {P}, K) and table (E, K, N) of one dtype ({'/'.join(DTYPES)}), ids "
            f"(na·group,) int32 / uint32, group <= {P} when M = 1, K with a divisor in [32, 128], "
            f"one matrix at most {MAX_ROW_BYTES} B per partition, one selection's results within "
            f"{MAX_BANKS} PSUM banks"
        )
    return _Kernel(types, attrs).build()


register_composite_lowering(GatheredMatmulOp, gathered_matmul_body, takes=supported)
