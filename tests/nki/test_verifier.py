"""One negative test per hardware-verifier rule; each error names the op, the rule and numbers."""

import dataclasses

import pytest

import nkigen_lite as nk
from nkigen_lite.nki import TRN2, ds, ts

F32, BF16, I32, U8, F8 = nk.float32, nk.bfloat16, nk.int32, nk.uint8, nk.float8_e4m3


def _t(b, shape=(128, 512), dtype=F32, space="sbuf"):
    return b.alloc(shape, dtype, space)


# Each case builds an otherwise-legal kernel body around one violation. `x` is an HBM input
# (256, 512) f32; `y` an HBM output (128, 512) f32.
CASES = {
    # ---- engines, memory spaces, dtypes, partitions (every compute op) ----
    "engine": (
        lambda b, x, y: b.tensor_tensor(dst=_t(b), data1=_t(b), data2=_t(b), op="add", engine="scalar"),
        r"cannot run on the scalar engine \(legal: vector, gpsimd\)",
    ),
    "compute_reads_hbm": (
        lambda b, x, y: b.tensor_copy(dst=_t(b), src=x[0:128, :]),
        "src is in HBM; compute engines only read SBUF/PSUM",
    ),
    "gpsimd_psum": (
        lambda b, x, y: b.memset(dst=_t(b, (128, 512), F32, "psum"), value=0.0, engine="gpsimd"),
        "GpSimd engine cannot access PSUM",
    ),
    "engine_dtype": (
        lambda b, x, y: b.nc_transpose(dst=_t(b, (128, 128), I32, "psum"), data=_t(b, (128, 128), I32)),
        "dtype i32 is not supported by the tensor engine",
    ),
    "partition_start_big": (
        lambda b, x, y: b.tensor_copy(dst=_t(b)[32:128], src=_t(b)[32:128]),
        "covers 96 partitions starting at 32..32; .* must start at 0",
    ),
    "partition_start_quadrant": (
        lambda b, x, y: b.tensor_copy(dst=_t(b)[16:48], src=_t(b)[16:48]),
        "must start at a multiple of 32",
    ),
    "dst_broadcast": (
        lambda b, x, y: b.tensor_copy(dst=_t(b)[:, ds(0, 4, 0)], src=_t(b)[:, 0:4]),
        "dst dim 1 has stride 0: a write cannot broadcast",
    ),
    "pf_mismatch": (
        lambda b, x, y: b.tensor_copy(dst=_t(b)[:, 0:256], src=_t(b)),
        "dst has 128 partitions x 256 elements but src has 128 x 512",
    ),
    "partition_shift": (
        lambda b, x, y: b.tensor_copy(dst=_t(b)[0:32], src=_t(b)[32:64]),
        "start at different partitions",
    ),
    # ---- DMA ----
    "dma_psum": (
        lambda b, x, y: b.dma_copy(dst=_t(b, (128, 512), F32, "psum"), src=x[0:128, :]),
        "dma_copy dst is in PSUM; DMA cannot touch PSUM",
    ),
    "dma_count": (
        lambda b, x, y: b.dma_copy(dst=_t(b), src=x[0:128, 0:256]),
        "moves 32,768 elements from src into a dst window of 65,536",
    ),
    # ---- memset / iota / affine_select ----
    "memset_int_value": (
        lambda b, x, y: b.memset(dst=_t(b, dtype=I32), value=1.5),
        r"memset value 1.5 is not a i32 integer",
    ),
    "memset_int_range": (
        lambda b, x, y: b.memset(dst=_t(b, dtype=U8), value=300),
        r"memset value 300 is not a u8 integer in \[0, 255\]",
    ),
    "iota_pattern_size": (
        lambda b, x, y: b.iota(dst=_t(b, dtype=I32), pattern=[[1, 100]]),
        "pattern covers 100 elements per partition but dst has 512",
    ),
    "iota_pattern_dims": (
        lambda b, x, y: b.iota(dst=_t(b, (128, 32), I32), pattern=[[1, 2]] * 5),
        "pattern has 5 dims > 4",
    ),
    "affine_select_pattern": (
        lambda b, x, y: b.affine_select(
            dst=_t(b), pattern=[[1, 64]], channel_multiplier=1, on_true_tile=_t(b), on_false_value=0.0
        ),
        "pattern covers 64 elements per partition but dst has 512",
    ),
    # ---- matmul ----
    "matmul_dst_space": (
        lambda b, x, y: b.nc_matmul(dst=_t(b), stationary=_t(b, (128, 128)), moving=_t(b)),
        "dst is in SBUF; nki.nc_matmul needs PSUM",
    ),
    "matmul_input_space": (
        lambda b, x, y: b.nc_matmul(
            dst=_t(b, space="psum"), stationary=_t(b, (128, 128), space="psum"), moving=_t(b)
        ),
        "stationary is in PSUM; nki.nc_matmul needs SBUF",
    ),
    "matmul_k_mismatch": (
        lambda b, x, y: b.nc_matmul(
            dst=_t(b, space="psum"), stationary=_t(b, (128, 128))[0:64], moving=_t(b)
        ),
        "contraction mismatch: stationary has 64 partitions, moving 128",
    ),
    "matmul_m": (
        lambda b, x, y: b.nc_matmul(dst=_t(b, space="psum"), stationary=_t(b, (128, 256)), moving=_t(b)),
        "stationary free size M = 256 > 128",
    ),
    "matmul_n": (
        lambda b, x, y: b.nc_matmul(
            dst=_t(b, (128, 512), space="psum"), stationary=_t(b, (128, 128)), moving=_t(b, (128, 1024))
        ),
        "moving free size N = 1,024 > 512",
    ),
    "matmul_dst_shape": (
        lambda b, x, y: b.nc_matmul(
            dst=_t(b, space="psum")[:, 0:256], stationary=_t(b, (128, 128)), moving=_t(b)
        ),
        r"dst is 128 x 256 but stationary\^T @ moving is 128 x 512",
    ),
    "matmul_dst_dtype": (
        lambda b, x, y: b.nc_matmul(
            dst=_t(b, (128, 512), BF16, "psum"), stationary=_t(b, (128, 128), BF16), moving=_t(b, dtype=BF16)
        ),
        "nc_matmul dst must be f32 in PSUM, got bf16",
    ),
    "matmul_fp32_pairing": (
        lambda b, x, y: b.nc_matmul(
            dst=_t(b, space="psum"), stationary=_t(b, (128, 128)), moving=_t(b, dtype=BF16)
        ),
        "fp32/tf32 pair only with fp32/tf32",
    ),
    # ---- transpose ----
    "transpose_src_space": (
        lambda b, x, y: b.nc_transpose(
            dst=_t(b, (128, 128), space="psum"), data=_t(b, (128, 128), space="psum")
        ),
        "data is in PSUM; nki.nc_transpose needs SBUF",
    ),
    "transpose_dst_space": (
        lambda b, x, y: b.nc_transpose(dst=_t(b, (128, 128)), data=_t(b, (128, 128))),
        "dst is in SBUF; nki.nc_transpose needs PSUM",
    ),
    "transpose_fp8": (
        lambda b, x, y: b.nc_transpose(dst=_t(b, (128, 128), F8, "psum"), data=_t(b, (128, 128), F8)),
        "fp8/8-bit Tensor-engine transposes",
    ),
    "transpose_size": (
        lambda b, x, y: b.nc_transpose(dst=_t(b, (128, 128), space="psum"), data=_t(b, (128, 256))),
        "tensor transpose input 128 x 256 exceeds 128 x 128",
    ),
    "transpose_vector_size": (
        lambda b, x, y: b.nc_transpose(dst=_t(b, (64, 64)), data=_t(b, (64, 64)), engine="vector"),
        "vector transpose input 64 x 64 exceeds 32 x 32",
    ),
    "transpose_dst_shape": (
        lambda b, x, y: b.nc_transpose(
            dst=_t(b, (128, 128), space="psum")[0:64, :], data=_t(b, (128, 64))[0:128, 0:32]
        ),
        "dst is 64 x 128, transpose of 128 x 32 is 32 x 128",
    ),
    "transpose_dtype": (
        lambda b, x, y: b.nc_transpose(dst=_t(b, (128, 128), BF16, "psum"), data=_t(b, (128, 128))),
        "transpose keeps the dtype: data f32, dst bf16",
    ),
    # ---- activation ----
    "activation_bias_shape": (
        lambda b, x, y: b.activation(dst=_t(b), op="exp", data=_t(b), bias=_t(b, (128, 2))),
        r"bias must be a \(128, 1\) per-partition column, got 128 partitions x 2",
    ),
    "activation_bias_dtype": (
        lambda b, x, y: b.activation(dst=_t(b), op="exp", data=_t(b), bias=_t(b, (128, 1), BF16)),
        "bias must be f32, got bf16",
    ),
    "activation_scale_dtype": (
        lambda b, x, y: b.activation(dst=_t(b), op="exp", data=_t(b), scale=_t(b, (128, 1), BF16)),
        "scale must be f32, got bf16",
    ),
    "activation_reduce_dtype": (
        lambda b, x, y: b.activation(dst=_t(b), op="exp", data=_t(b), reduce_res=_t(b, (128, 1), I32)),
        "reduce_res must be a float tile, got i32",
    ),
    # ---- tensor_tensor ----
    "tt_both_psum": (
        lambda b, x, y: b.tensor_tensor(
            dst=_t(b), data1=_t(b, space="psum"), data2=_t(b, space="psum"), op="add"
        ),
        "data1 and data2 are both in PSUM",
    ),
    "tt_bitvec_float": (
        lambda b, x, y: b.tensor_tensor(dst=_t(b), data1=_t(b), data2=_t(b), op="bitwise_and"),
        "bitwise op bitwise_and needs integer operands; dst is f32",
    ),
    "tt_power_engine": (
        lambda b, x, y: b.tensor_tensor(dst=_t(b), data1=_t(b), data2=_t(b), op="power"),
        "power runs on the gpsimd engine only",
    ),
    # ---- tensor_scalar ----
    "ts_mixed_kinds": (
        lambda b, x, y: b.tensor_scalar(
            dst=_t(b, dtype=I32), data=_t(b, dtype=I32), op0="bitwise_and", operand0=1, op1="add", operand1=1
        ),
        "mix bitwise and arithmetic operators",
    ),
    "ts_bitvec_engine": (
        lambda b, x, y: b.tensor_scalar(
            dst=_t(b, dtype=I32), data=_t(b, dtype=I32), op0="left_shift", operand0=1, engine="scalar"
        ),
        "bitwise tensor_scalar \\(left_shift\\) runs on the vector engine only",
    ),
    "ts_bitvec_float_imm": (
        lambda b, x, y: b.tensor_scalar(
            dst=_t(b, dtype=I32), data=_t(b, dtype=I32), op0="bitwise_or", operand0=1.0
        ),
        "operand0 of bitwise op bitwise_or must be an integer",
    ),
    "ts_scalar_engine_chain": (
        lambda b, x, y: b.tensor_scalar(dst=_t(b), data=_t(b), op0="subtract", operand0=1.0, engine="scalar"),
        r"scalar engine's tensor_scalar supports only .* got \['subtract'\]",
    ),
    "ts_operand_column": (
        lambda b, x, y: b.tensor_scalar(dst=_t(b), data=_t(b), op0="add", operand0=_t(b, (128, 4))),
        r"operand0 must be a \(128, 1\) per-partition column",
    ),
    # ---- tensor_reduce / select ----
    "reduce_axis": (
        lambda b, x, y: b.tensor_reduce(dst=_t(b, (128, 4)), op="add", data=_t(b, (128, 4, 8)), axis=1),
        r"axis \[1\] must be trailing free axes of the rank-3 data",
    ),
    "reduce_partition_axis": (
        lambda b, x, y: b.tensor_reduce(dst=_t(b, (128, 1)), op="add", data=_t(b), axis=(0, 1)),
        "must be trailing free axes",
    ),
    "reduce_dst_shape": (
        lambda b, x, y: b.tensor_reduce(dst=_t(b, (128, 2)), op="add", data=_t(b, (128, 4, 8)), axis=2),
        "dst is 128 x 2 but the reduction gives 128 x 4",
    ),
    "reduce_bitvec_float": (
        lambda b, x, y: b.tensor_reduce(dst=_t(b, (128, 1)), op="bitwise_or", data=_t(b), axis=1),
        "bitwise op bitwise_or needs integer operands",
    ),
    "matmul_operand_not_2d": (
        lambda b, x, y: b.nc_matmul(
            dst=_t(b, (16, 64), F32, "psum"),
            stationary=_t(b, (128, 4, 32))[:, :, 0:4],
            moving=_t(b, (128, 64)),
        ),
        r"stationary free dims \[4, 4\] do not collapse",
    ),
    "select_on_true_int32": (
        lambda b, x, y: b.select(
            dst=_t(b, dtype=I32), predicate=_t(b, dtype=U8), on_true=_t(b, dtype=I32), on_false=0.0
        ),
        "on_true may not be i32",
    ),
    "select_on_false_tile": (
        lambda b, x, y: b.select(dst=_t(b), predicate=_t(b, dtype=U8), on_true=_t(b), on_false=_t(b)),
        r"on_false must be a \(128, 1\) per-partition column",
    ),
    "select_on_false_int": (
        lambda b, x, y: b.select(dst=_t(b), predicate=_t(b, dtype=U8), on_true=_t(b), on_false=3),
        "scalar on_false must be an fp32 number, got 3",
    ),
    "select_bool_predicate": (
        lambda b, x, y: b.select(dst=_t(b), predicate=_t(b, dtype=nk.bool_), on_true=_t(b), on_false=0.0),
        "predicate must be int8/uint8/int16/uint16, got bool",
    ),
    "select_both_psum": (
        lambda b, x, y: b.select(
            dst=_t(b), predicate=_t(b, dtype=U8, space="psum"), on_true=_t(b, space="psum"), on_false=0.0
        ),
        "predicate and on_true are both in PSUM",
    ),
    "select_predicate": (
        lambda b, x, y: b.select(dst=_t(b), predicate=_t(b), on_true=_t(b), on_false=0.0),
        "predicate must be int8/uint8/int16/uint16, got f32",
    ),
}


def _kernel(build):
    b = nk.nki.Builder("k")
    x = b.add_input("x", (256, 512), F32)
    y = b.alloc((128, 512), F32, "hbm", name="y")
    out = build(b, x, y)
    b.set_outputs(out if isinstance(out, dict) else {"y": y})
    return b.graph


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_rule(case):
    build, match = CASES[case]
    with pytest.raises(nk.VerifyError, match=match) as e:
        nk.nki.verify(_kernel(build))
    assert "\n  at: nki." in str(e.value)  # the op is printed


def test_matmul_contraction_limit_comes_from_the_target():
    tgt = dataclasses.replace(TRN2, gemm_contraction_max=64)
    g = _kernel(
        lambda b, x, y: b.nc_matmul(dst=_t(b, space="psum"), stationary=_t(b, (128, 128)), moving=_t(b))
    )
    with pytest.raises(nk.VerifyError, match="contraction K = 128 > 64 partitions"):
        nk.nki.verify(g, tgt)


# ---- program-wide rules -------------------------------------------------------------------


def _sbuf_overflow(b, x, y):
    for _ in range(5):
        _t(b, (128, 12_000))  # 48,000 B/partition each


def _psum_banks(b, x, y):
    for _ in range(9):
        _t(b, (128, 512), F32, "psum")


def _hbm_in_loop(b, x, y):
    with b.fori_loop(0, 2):
        b.alloc((4, 4), F32, "hbm")


def _dealloc_other_block(b, x, y):
    t = _t(b)
    with b.fori_loop(0, 2):
        b.dealloc(t)


def _double_dealloc(b, x, y):
    t = _t(b)
    b.dealloc(t)
    b.dealloc(t)


def _use_after_dealloc(b, x, y):
    t = _t(b)
    b.dma_copy(dst=t, src=x[0:128, :])
    b.dealloc(t)
    b.dma_copy(dst=y, src=t)


def _leak(b, x, y):
    t = _t(b)
    b.dma_copy(dst=t, src=x[0:128, :])


def _leak_in_loop(b, x, y):
    with b.fori_loop(0, 2):
        _t(b)


def _view_of_view(b, x, y):
    v = b.hbm_view(x, (512, 256), (1, 512))
    b.hbm_view(v, (4,), (1,))


def _view_extent(b, x, y):
    b.hbm_view(x, (256, 513), (512, 1))


def _oob_loop(b, x, y):
    with b.fori_loop(0, 3) as i:
        t = _t(b)
        b.dma_copy(dst=t, src=x[ts(i, 128), :])
        b.dealloc(t)


def _negative_start(b, x, y):
    with b.fori_loop(0, 2) as i:
        t = _t(b)
        b.dma_copy(dst=t, src=x[ds(i * 128 - 1, 128), :])
        b.dealloc(t)


def _partition_stride(b, x, y):
    t = _t(b)
    b.dma_copy(dst=t[ds(0, 64, 2), :], src=x[0:64, :])


def _write_input(b, x, y):
    t = _t(b)
    b.memset(dst=t, value=0.0)
    b.dma_copy(dst=x[0:128, :], src=t)


def _write_input_view(b, x, y):
    t = _t(b)
    b.memset(dst=t, value=0.0)
    b.dma_copy(dst=b.hbm_view(x, (128, 512), (512, 1)), src=t)


def _write_overlapping_view(b, x, y):
    t = _t(b, (2, 512))
    b.memset(dst=t, value=0.0)
    b.dma_copy(dst=b.hbm_view(y, (2, 512), (0, 1)), src=t)


PROGRAM_CASES = {
    "sbuf_capacity": (_sbuf_overflow, "SBUF peak 240,000 B/partition > 212,984"),
    "psum_tile_bank": (
        lambda b, x, y: _t(b, (128, 1024), F32, "psum"),
        "PSUM tile uses 4,096 B/partition > one bank of 2,048 B",
    ),
    "psum_banks": (_psum_banks, r"PSUM peak 9 banks \(18,432 B/partition\) > 8 banks \(16,384\)"),
    "partitions": (lambda b, x, y: _t(b, (256, 4)), "tile has 256 partitions > 128"),
    "free_dims": (lambda b, x, y: _t(b, (128, 2, 2, 2, 2, 2)), "tile has 5 free dims > 4"),
    "hbm_alloc_in_loop": (_hbm_in_loop, "HBM tensors are allocated at the kernel's top level"),
    "dealloc_other_block": (_dealloc_other_block, "must be deallocated in the block that allocates it"),
    "double_dealloc": (_double_dealloc, r"%t is deallocated twice \(first by nki.dealloc %t\)"),
    "use_after_dealloc": (_use_after_dealloc, r"%t is used after its dealloc \(nki.dealloc %t\)"),
    "leak": (_leak, r"%t is never deallocated \(leaked at kernel end\)"),
    "leak_in_loop": (_leak_in_loop, "allocated in a loop body but not deallocated there"),
    "view_of_view": (_view_of_view, "is not a kernel input or an HBM alloc"),
    "view_extent": (_view_extent, "view reaches flat element 131,072 but %x has 131,072 elements"),
    "oob": (_oob_loop, r"src dim 0 window \[256, 384\) is out of bounds for %x of size 256 \(at %i = 2\)"),
    "negative_start": (_negative_start, r"src dim 0 starts at -1 < 0 \(at %i = 0\)"),
    "partition_stride": (_partition_stride, r"dst strides the partition dim \(2\)"),
    "write_input": (_write_input, "dst writes kernel input %x; inputs are read-only"),
    "write_input_view": (_write_input_view, "dst writes kernel input %x"),
    "write_overlapping_view": (_write_overlapping_view, "a view whose elements overlap"),
    "output_not_alloc": (lambda b, x, y: {"y": x}, "output y = %x must be an HBM tensor made by nki.alloc"),
    "output_twice": (lambda b, x, y: {"y": y, "z": y}, "output z = %y is returned twice"),
}


@pytest.mark.parametrize("case", sorted(PROGRAM_CASES))
def test_program_rule(case):
    build, match = PROGRAM_CASES[case]
    with pytest.raises(nk.VerifyError, match=match):
        nk.nki.verify(_kernel(build))


def test_loop_partition_offsets_are_checked_for_every_iteration():
    def build(b, x, y):
        with b.fori_loop(0, 2) as i:
            t = _t(b)
            b.tensor_copy(dst=t[ds(i * 16, 32)], src=t[ds(i * 16, 32)])
            b.dealloc(t)

    with pytest.raises(nk.VerifyError, match="must start at a multiple of 32"):
        nk.nki.verify(_kernel(build))


def test_verify_reports_peaks_and_counts_loop_bodies_once():
    def build(b, x, y):
        keep = _t(b, (128, 1000))  # 4,000 B
        with b.fori_loop(0, 8):
            t = _t(b, (128, 2000))  # 8,000 B, freed each iteration
            ps = _t(b, (128, 512), F32, "psum")
            b.dealloc(t)
            b.dealloc(ps)
        b.dealloc(keep)

    peaks = nk.nki.verify(_kernel(build))
    assert (peaks.sbuf_bytes, peaks.psum_banks) == (12_000, 1)


@pytest.mark.parametrize("arg", ["%i: index", "%t: tile<128x4xf32, sbuf>"])
def test_kernel_inputs_are_hbm_tensors(arg):
    g = nk.parse(f"graph @k({arg}) {{\n  return\n}}\n")
    with pytest.raises(nk.VerifyError, match="kernel inputs are HBM tensors"):
        nk.nki.verify(g)
    with pytest.raises(nk.InterpretError, match="kernel inputs are HBM tensors"):
        nk.nki.run(g, {}, verify=False)
