"""Per-instruction cost rules against the facts sheet formulas (§1.7, §7.2), recomputed here
with the sheet's literal constants: clocks TensorE 2.4, VectorE 0.96, ScalarE / GpSimd 1.2 GHz;
MIN_II 64 cycles; MM_INIT 64 cycles; GPSIMD_START 150 cycles; fp32 matmul x4. Every expected
value is exact arithmetic on those numbers, so the tolerance is 1e-9 relative."""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ComputeOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.instruction_cost import instruction_cost

T, V, S, G = 2.4, 0.96, 1.2, 1.2  # GHz = cycles per ns
BF, F32 = nk.bfloat16, nk.float32


def cost(build):
    """Cost of the last compute op that ``build(b)`` appends to a fresh builder."""
    b = nk.nki.Builder("k")
    build(b)
    op = [o for o in b.graph.walk() if isinstance(o, ComputeOp)][-1]
    return instruction_cost(op, TRN2)


def tiles(b, *specs):
    return [b.alloc(shape, dt, space) for shape, dt, space in specs]


def matmul(n, dt):
    def build(b):
        ps, st, mv = tiles(b, ((128, n), F32, "psum"), ((128, 128), dt, "sbuf"), ((128, n), dt, "sbuf"))
        b.nc_matmul(ps, st, mv)

    return build


def transpose(p, f, engine="tensor", dtype=F32):
    def build(b):
        space = "psum" if engine == "tensor" else "sbuf"
        dst, src = tiles(b, ((f, p), dtype, space), ((p, f), dtype, "sbuf"))
        b.nc_transpose(dst, src, engine=engine)

    return build


def activation(n, reduce=False):
    def build(b):
        d, x, r = tiles(b, ((128, n), F32, "sbuf"), ((128, n), F32, "sbuf"), ((128, 1), F32, "sbuf"))
        b.activation(d, "exp", x, reduce_res=r if reduce else None)

    return build


def tensor_tensor(dt, space2="sbuf", engine="vector", n=512):
    def build(b):
        d, x, y = tiles(b, ((128, n), dt, "sbuf"), ((128, n), dt, "sbuf"), ((128, n), dt, space2))
        b.tensor_tensor(d, x, y, "add", engine=engine)

    return build


def tensor_scalar(dt, engine="vector", strided=False):
    def build(b):
        d, x = tiles(b, ((128, 512), dt, "sbuf"), ((128, 1024), dt, "sbuf"))
        b.tensor_scalar(d, x[:, 0:1024:2] if strided else x[:, 0:512], "multiply", 2.0, engine=engine)

    return build


def tensor_copy(src_dt, src_space, dst_dt, engine="vector"):
    def build(b):
        d, x = tiles(b, ((128, 512), dst_dt, "sbuf"), ((128, 512), src_dt, src_space))
        b.tensor_copy(d, x, engine=engine)

    return build


def reduce(in_dt, out_dt, op="add"):
    def build(b):
        d, x = tiles(b, ((128, 1), out_dt, "sbuf"), ((128, 512), in_dt, "sbuf"))
        b.tensor_reduce(d, op, x, axis=1)

    return build


def memset(dt, value, engine="vector"):
    def build(b):
        (d,) = tiles(b, ((128, 512), dt, "sbuf"))
        b.memset(d, value, engine=engine)

    return build


def iota(b):
    (d,) = tiles(b, ((128, 512), nk.int32, "sbuf"))
    b.iota(d, [[1, 512]])


def affine_select(b):
    d, x = tiles(b, ((128, 512), F32, "sbuf"), ((128, 512), F32, "sbuf"))
    b.affine_select(d, [[1, 512]], -1, x, 0.0, cmp_op="greater_equal")


def select(on_true_space="sbuf", on_false_tile=False, reduce=False):
    def build(b):
        d, p, x, y, r = tiles(
            b,
            ((128, 512), F32, "sbuf"),
            ((128, 512), nk.uint8, "sbuf"),
            ((128, 512), F32, on_true_space),
            ((128, 512), F32, "sbuf"),
            ((128, 1), F32, "sbuf"),
        )
        b.select(d, p, x, y if on_false_tile else 0.0, reduce_res=r if reduce else None)

    return build


CASES = [
    # TensorE matmul: max(N_moving, 64) cycles, x4 for fp32 (§7.2: N=512 -> 213 ns)
    ("matmul bf16 N=512", matmul(512, BF), 512 / T),
    ("matmul bf16 N=32", matmul(32, BF), 64 / T),
    ("matmul fp32 N=512", matmul(512, F32), 4 * 512 / T),
    # TensorE transpose: max(P, min(64, F)); fp32 in trn2's transpose mode at 2x the bf16
    # cycles, half the fp32 matmul rate (facts §1.7 trn2 deltas)
    ("transpose 128x64", transpose(128, 64), 2 * 128 / T),
    ("transpose 32x128", transpose(32, 128), 2 * 64 / T),
    ("transpose 16x16", transpose(16, 16), 2 * 16 / T),
    ("transpose bf16 128x64", transpose(128, 64, dtype=nk.bfloat16), 128 / T),
    ("transpose bf16 32x128", transpose(32, 128, dtype=nk.bfloat16), 64 / T),
    ("transpose vector 32x32", transpose(32, 32, "vector"), 64 / V),
    # ScalarE activation: max(64, N) at 1.2 GHz (§7.2: 128x512 ≈ 427 ns); + MIN_II for reduce_res
    ("activation N=512", activation(512), 512 / S),
    ("activation N=16", activation(16), 64 / S),
    ("activation + reduce_res", activation(512, True), (512 + 64) / S),
    # VectorE tensor_tensor: 2N; N for all-16-bit SBUF inputs or one input in PSUM
    ("tensor_tensor fp32 SBUF", tensor_tensor(F32), 1024 / V),
    ("tensor_tensor bf16 SBUF", tensor_tensor(BF), 512 / V),
    ("tensor_tensor fp32 one PSUM", tensor_tensor(F32, "psum"), 512 / V),
    ("tensor_tensor N=8", tensor_tensor(F32, n=8), 64 / V),
    ("tensor_tensor gpsimd", tensor_tensor(F32, engine="gpsimd"), (150 + 2 * 512) / G),
    # tensor_scalar: VectorE N·c with perf mode c = 1/4 (bf16 SBUF unit stride), 1/2 (strided)
    ("tensor_scalar vector fp32", tensor_scalar(F32), 512 / V),
    ("tensor_scalar vector bf16", tensor_scalar(BF), 128 / V),
    ("tensor_scalar vector bf16 strided", tensor_scalar(BF, strided=True), 256 / V),
    ("tensor_scalar scalar", tensor_scalar(F32, "scalar"), 512 / S),
    # tensor_copy
    ("tensor_copy PSUM fp32 -> bf16", tensor_copy(F32, "psum", BF), 512 / V),
    ("tensor_copy PSUM bf16 -> bf16", tensor_copy(BF, "psum", BF), 256 / V),
    ("tensor_copy SBUF bf16 -> bf16", tensor_copy(BF, "sbuf", BF), 128 / V),
    ("tensor_copy scalar", tensor_copy(F32, "psum", F32, "scalar"), 512 / S),
    ("tensor_copy gpsimd", tensor_copy(F32, "sbuf", F32, "gpsimd"), (150 + 512) / G),
    # tensor_reduce: N/2 for bf16 in and out with add or max, else N
    ("tensor_reduce fp32 add", reduce(F32, F32), 512 / V),
    ("tensor_reduce bf16 add", reduce(BF, BF), 256 / V),
    ("tensor_reduce bf16 max", reduce(BF, BF, "maximum"), 256 / V),
    ("tensor_reduce bf16 multiply", reduce(BF, BF, "multiply"), 512 / V),
    ("tensor_reduce bf16 -> fp32", reduce(BF, F32), 512 / V),
    # memset: N/2 for zero into 16-bit floats
    ("memset bf16 0", memset(BF, 0.0), 256 / V),
    ("memset bf16 1", memset(BF, 1.0), 512 / V),
    ("memset fp32 0", memset(F32, 0.0), 512 / V),
    ("memset gpsimd", memset(F32, 0.0, "gpsimd"), (150 + 512) / G),
    # GpSimd: GPSIMD_START + N
    ("iota", iota, (150 + 512) / G),
    ("affine_select", affine_select, (150 + 512) / G),
    # select: one pass per input stream in the same memory (2N), N when split SBUF / PSUM
    ("select", select(), 1024 / V),
    ("select on_true in PSUM", select("psum"), 512 / V),
    ("select with on_false tile", select(on_false_tile=True), 1536 / V),
    # select_reduce's max: the accumulator read-out adds MIN_II, as activation's reduce_res
    ("select with reduce_res", select(reduce=True), (1024 + 64) / V),
]


@pytest.mark.parametrize("build,expected_ns", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_instruction_cost_matches_the_formula(build, expected_ns):
    assert cost(build).ns == pytest.approx(expected_ns, rel=1e-9)


def test_matmul_reports_flops_and_the_peak_of_its_dtype():
    c16, c32 = cost(matmul(512, BF)), cost(matmul(512, F32))
    assert c16.flops == c32.flops == 2 * 128 * 128 * 512
    assert c16.peak_flops_per_s == pytest.approx(78.6e12, rel=1e-3)
    assert c32.peak_flops_per_s == pytest.approx(19.7e12, rel=3e-3)
    # at the full 128 x 128 x 512 shape the matmul runs exactly at peak
    assert c16.flops / c16.peak_flops_per_s * 1e9 == pytest.approx(c16.ns, rel=1e-12)
