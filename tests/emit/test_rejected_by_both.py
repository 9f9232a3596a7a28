"""A kernel that breaks a documented instruction rule is rejected by the hardware verifier (so by
the NKI interpreter, which verifies first) and, emitted as NKI source, by the NumPy simulator.

Each case initialises its tiles, then issues one illegal instruction. The case names are the rule
keys of docs/nki_rules.md, which gives each rule's documentation source (tests/emit/
test_nki_rules_doc.py checks the table and these cases name the same rules)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import emit_nki_source
from nkigen_lite.nki_sim.errors import NkiSimError

F32, I32, U8, BF16, U32 = nk.float32, nk.int32, nk.uint8, nk.bfloat16, nk.uint32


def _tile(b, made, shape=(128, 64), dtype=F32, space="sbuf"):
    t = b.alloc(shape, dtype, space)
    if space == "psum":
        b.memset(dst=t, value=0.0 if dtype.is_float else 0)
    else:
        b.memset(dst=t, value=1.0 if dtype.is_float else 1)
    made.append(t)
    return t


T = _tile
PSUM = {"space": "psum"}

# rule key: (one illegal instruction, verifier message, simulator message)
CASES = {
    # ---- data movement -------------------------------------------------------------------------
    "dma_copy.no_psum": (
        lambda b, m: b.dma_copy(dst=T(b, m), src=T(b, m, **PSUM)),
        "DMA cannot touch PSUM",
        "is in PSUM; DMA moves",
    ),
    "dma_copy.equal_elements": (
        lambda b, m: b.dma_copy(dst=T(b, m), src=T(b, m, (128, 32))),
        "moves 4,096 elements from src into a dst window of 8,192",
        "has 8192 elements but src",
    ),
    "tensor_copy.same_shape": (
        lambda b, m: b.tensor_copy(dst=T(b, m), src=T(b, m, (128, 32))),
        "dst has 128 partitions x 64 elements but src has 128 x 32",
        r"elements per partition \(32 vs 64\)",
    ),
    "tensor_copy.paired_free_dims": (
        lambda b, m: b.tensor_copy(dst=T(b, m, (128, 2, 32)), src=T(b, m, (128, 32, 2))),
        r"tensor_copy: src access shape \[128, 32, 2\] does not pair with dst access shape \[128, 2, 32\]",
        r"src .* has shape \[128, 32, 2\] but dst .* has shape \[128, 2, 32\]; they pair element by element",
    ),
    "activation.paired_free_dims": (
        lambda b, m: b.activation(dst=T(b, m), op="exp", data=T(b, m, (128, 8, 8))),
        r"activation: data access shape \[128, 8, 8\] does not pair with dst access shape \[128, 64\]",
        r"data .* has shape \[128, 8, 8\] but dst .* has shape \[128, 64\]; they pair element by element",
    ),
    "tensor_scalar.paired_free_dims": (
        lambda b, m: b.tensor_scalar(dst=T(b, m, (128, 8, 8)), data=T(b, m), op0="add", operand0=1.0),
        r"tensor_scalar: data access shape \[128, 64\] does not pair with dst access shape \[128, 8, 8\]",
        r"data .* has shape \[128, 64\] but dst .* has shape \[128, 8, 8\]; they pair element by element",
    ),
    "engine.gpsimd_no_psum": (
        lambda b, m: b.tensor_copy(dst=T(b, m), src=T(b, m, **PSUM), engine="gpsimd"),
        "the GpSimd engine cannot access PSUM",
        "runs on GpSimd, which cannot access PSUM",
    ),
    "engine.partition_start": (
        lambda b, m: b.tensor_copy(dst=T(b, m)[8:24, :], src=T(b, m)[8:24, :]),
        "an access of 16 partitions must start at a multiple of 32",
        "an engine access of 16 partitions must start at a multiple of 32",
    ),
    "memset.int_value": (
        lambda b, m: b.memset(dst=T(b, m, dtype=I32), value=1.5),
        "memset value 1.5 is not a i32 integer",
        "value 1.5 must be an int for int32 dst",
    ),
    "iota.sbuf_only": (
        lambda b, m: b.iota(dst=T(b, m, **PSUM), pattern=[[1, 64]]),
        "the GpSimd engine cannot access PSUM",
        r"must be in SBUF \(GpSimd\)",
    ),
    "affine_select.sbuf_only": (
        lambda b, m: b.affine_select(
            dst=T(b, m, **PSUM),
            on_true_tile=T(b, m, **PSUM),
            pattern=[[1, 64]],
            channel_multiplier=0,
            on_false_value=0.0,
        ),
        "the GpSimd engine cannot access PSUM",
        r"must be in SBUF \(GpSimd\)",
    ),
    # ---- select_reduce -------------------------------------------------------------------------
    "select.predicate_dtype": (
        lambda b, m: b.select(dst=T(b, m), predicate=T(b, m, dtype=nk.bool_), on_true=T(b, m), on_false=0.0),
        "predicate must be int8/uint8/int16/uint16",
        "predicate dtype must be int8",
    ),
    "select.same_access_shape": (
        lambda b, m: b.select(
            dst=T(b, m, (43, 1, 3)),
            predicate=T(b, m, (43, 1, 3), dtype=U8),
            on_true=T(b, m, (43, 3, 1)),
            on_false=0.0,
        ),
        r"select: on_true access shape \[43, 3, 1\] differs from dst access shape \[43, 1, 3\]",
        r"on_true .* has shape \[43, 3, 1\] but dst .* has shape \[43, 1, 3\]",
    ),
    "select.predicate_same_access_shape": (
        lambda b, m: b.select(
            dst=T(b, m, (43, 1, 3)),
            predicate=T(b, m, (43, 3, 1), dtype=U8),
            on_true=T(b, m, (43, 1, 3)),
            on_false=0.0,
        ),
        r"predicate access shape \[43, 3, 1\] differs from dst access shape \[43, 1, 3\]",
        r"predicate .* has shape \[43, 3, 1\] but dst .* has shape \[43, 1, 3\]",
    ),
    "select.predicate_not_float": (
        lambda b, m: b.select(dst=T(b, m), predicate=T(b, m), on_true=T(b, m), on_false=0.0),
        "predicate must be int8/uint8/int16/uint16",
        "predicate dtype must be int8",
    ),
    "select.on_true_dtype": (
        lambda b, m: b.select(
            dst=T(b, m, dtype=I32), predicate=T(b, m, dtype=U8), on_true=T(b, m, dtype=I32), on_false=0.0
        ),
        "on_true may not be i32",
        "on_true may not be int32",
    ),
    "select.on_false_column": (
        lambda b, m: b.select(dst=T(b, m), predicate=T(b, m, dtype=U8), on_true=T(b, m), on_false=T(b, m)),
        r"on_false must be a \(128, 1\) per-partition column",
        r"must be a scalar or a \(128, 1\)",
    ),
    "select.reduce_res_float": (
        lambda b, m: b.select(
            dst=T(b, m),
            predicate=T(b, m, dtype=U8),
            on_true=T(b, m),
            on_false=0.0,
            reduce_res=T(b, m, (128, 1), dtype=I32),
        ),
        "select_reduce reduce_res must be a float tile",
        "reduce_res dtype must be a float type",
    ),
    "select.on_false_fp32": (
        lambda b, m: b.select(dst=T(b, m), predicate=T(b, m, dtype=U8), on_true=T(b, m), on_false=3),
        "scalar on_false must be an fp32 number",
        "scalar on_false must be a float number",
    ),
    "select.one_psum_input": (
        lambda b, m: b.select(
            dst=T(b, m), predicate=T(b, m, dtype=U8, **PSUM), on_true=T(b, m, **PSUM), on_false=0.0
        ),
        "predicate and on_true are both in PSUM",
        "predicate and on_true are both in PSUM",
    ),
    # ---- TensorE -------------------------------------------------------------------------------
    "nc_matmul.two_d": (
        lambda b, m: b.nc_matmul(
            dst=T(b, m, (16, 64), **PSUM), stationary=T(b, m, (128, 4, 32))[:, :, 0:4], moving=T(b, m)
        ),
        "do not collapse into one contiguous run",
        "must be a 2-D tile view",
    ),
    "nc_matmul.dst_psum": (
        lambda b, m: b.nc_matmul(dst=T(b, m, (64, 64)), stationary=T(b, m), moving=T(b, m)),
        "dst is in SBUF; nki.nc_matmul needs PSUM",
        r"must be in PSUM \(TensorE writes only PSUM\)",
    ),
    "nc_matmul.inputs_sbuf": (
        lambda b, m: b.nc_matmul(dst=T(b, m, (64, 64), **PSUM), stationary=T(b, m), moving=T(b, m, **PSUM)),
        "moving is in PSUM; nki.nc_matmul needs SBUF",
        r"must be in SBUF \(TensorE reads only SBUF\)",
    ),
    "nc_matmul.contraction": (
        lambda b, m: b.nc_matmul(dst=T(b, m, (64, 64), **PSUM), stationary=T(b, m), moving=T(b, m, (64, 64))),
        "contraction mismatch: stationary has 128 partitions, moving 64",
        "stationary has K=128 partitions but moving has 64",
    ),
    "nc_matmul.fp32_pairing": (
        lambda b, m: b.nc_matmul(
            dst=T(b, m, (64, 64), **PSUM), stationary=T(b, m), moving=T(b, m, dtype=BF16)
        ),
        "fp32/tf32 pair only with fp32/tf32",
        "fp32/tf32 inputs must pair with fp32/tf32",
    ),
    "nc_matmul.dst_fp32": (
        lambda b, m: b.nc_matmul(
            dst=T(b, m, (64, 64), BF16, **PSUM), stationary=T(b, m, dtype=BF16), moving=T(b, m, dtype=BF16)
        ),
        "nc_matmul dst must be f32 in PSUM, got bf16",
        "dst must be float32 on trn2, got bfloat16",
    ),
    "alloc.psum_bank": (
        lambda b, m: T(b, m, (64, 1024), **PSUM),
        "PSUM tile uses 4,096 B/partition > one bank of 2,048 B",
        "needs 4096 B per partition > one 2048 B bank",
    ),
    "nc_transpose.vector_32": (
        lambda b, m: b.nc_transpose(dst=T(b, m, (64, 64)), data=T(b, m, (64, 64)), engine="vector"),
        "vector transpose input 64 x 64 exceeds 32 x 32",
        "the vector engine transposes at most 32x32",
    ),
    "nc_transpose.same_dtype": (
        lambda b, m: b.nc_transpose(dst=T(b, m, (64, 64), **PSUM), data=T(b, m, (64, 64), BF16)),
        "transpose keeps the dtype: data bf16, dst f32",
        "transpose keeps the dtype: data is bfloat16, dst float32",
    ),
    "nc_transpose.tensor_sbuf_to_psum": (
        lambda b, m: b.nc_transpose(dst=T(b, m, (64, 64)), data=T(b, m, (64, 64))),
        "dst is in SBUF; nki.nc_transpose needs PSUM",
        "a TensorE transpose reads SBUF and writes PSUM",
    ),
    # ---- ScalarE -------------------------------------------------------------------------------
    "activation.bias_column": (
        lambda b, m: b.activation(dst=T(b, m), op="exp", data=T(b, m), bias=T(b, m)),
        r"bias must be a \(128, 1\) per-partition column",
        r"bias view .* must be a scalar or a \(128, 1\) tile",
    ),
    "activation.scale_fp32": (
        lambda b, m: b.activation(dst=T(b, m), op="exp", data=T(b, m), scale=2),
        "scale must be an fp32 number, got 2",
        "scale must be a float32 number, got 2",
    ),
    "activation.reduce_res_column": (
        lambda b, m: b.activation(dst=T(b, m), op="exp", data=T(b, m), reduce_res=T(b, m)),
        r"reduce_res must be a \(128, 1\) per-partition column",
        r"reduce_res view .* must be \(128, 1\)",
    ),
    # ---- VectorE / GpSimd ALU ------------------------------------------------------------------
    "tensor_tensor.same_shape": (
        lambda b, m: b.tensor_tensor(dst=T(b, m), data1=T(b, m), data2=T(b, m, (128, 32)), op="add"),
        "dst has 128 partitions x 64 elements but data2 has 128 x 32",
        r"elements per partition \(32 vs 64\)",
    ),
    "tensor_tensor.same_access_shape": (
        lambda b, m: b.tensor_tensor(
            dst=T(b, m, (43, 1, 3)), data1=T(b, m, (43, 1, 3)), data2=T(b, m, (43, 3, 1)), op="add"
        ),
        r"tensor_tensor: data2 access shape \[43, 3, 1\] differs from dst access shape \[43, 1, 3\]",
        r"data2 .* has shape \[43, 3, 1\] but dst .* has shape \[43, 1, 3\]",
    ),
    "tensor_tensor.same_access_shape_rank": (
        lambda b, m: b.tensor_tensor(
            dst=T(b, m, (64, 2, 32)), data1=T(b, m, (64, 64)), data2=T(b, m, (64, 2, 32)), op="multiply"
        ),
        r"data1 access shape \[64, 64\] differs from dst access shape \[64, 2, 32\]",
        r"data1 .* has shape \[64, 64\] but dst .* has shape \[64, 2, 32\]",
    ),
    "tensor_tensor.one_psum_input": (
        lambda b, m: b.tensor_tensor(dst=T(b, m), data1=T(b, m, **PSUM), data2=T(b, m, **PSUM), op="add"),
        "data1 and data2 are both in PSUM",
        "data1 and data2 are both in PSUM",
    ),
    "tensor_tensor.power_gpsimd": (
        lambda b, m: b.tensor_tensor(dst=T(b, m), data1=T(b, m), data2=T(b, m), op="power", engine="vector"),
        "power runs on the gpsimd engine only",
        "nl.power runs on the GpSimd engine only",
    ),
    "alu.bitvec_integers": (
        lambda b, m: b.tensor_tensor(dst=T(b, m), data1=T(b, m), data2=T(b, m), op="bitwise_and"),
        "bitwise op bitwise_and needs integer operands",
        "bit-vector op nl.bitwise_and needs integer dtypes",
    ),
    "alu.no_abs_max_on_trn2": (
        lambda b, m: b.tensor_tensor(dst=T(b, m), data1=T(b, m), data2=T(b, m), op="abs_max"),
        "ALU operator abs_max is not available on trn2",
        "nl.abs_max is NeuronCore-v4 only",
    ),
    "tensor_scalar.no_gpsimd": (
        lambda b, m: b.tensor_scalar(dst=T(b, m), data=T(b, m), op0="add", operand0=1.0, engine="gpsimd"),
        "tensor_scalar on the gpsimd engine is documented only for rsqrt",
        "on the GpSimd engine tensor_scalar is documented only for rsqrt",
    ),
    "tensor_scalar.no_abs_min_on_trn2": (
        lambda b, m: b.tensor_scalar(dst=T(b, m), data=T(b, m), op0="abs_min", operand0=0.0),
        "ALU operator abs_min is not available on trn2",
        "nl.abs_min is NeuronCore-v4 only",
    ),
    "tensor_scalar.fp32_immediate": (
        lambda b, m: b.tensor_scalar(dst=T(b, m), data=T(b, m), op0="add", operand0=3),
        "operand0 must be an fp32 number, got 3",
        "operand0 must be a float32 number, got 3",
    ),
    "tensor_scalar.fp32_column": (
        lambda b, m: b.tensor_scalar(dst=T(b, m), data=T(b, m), op0="add", operand0=T(b, m, (128, 1), I32)),
        "operand0 must be f32, got i32",
        "operand0 tile must be float32, got int32",
    ),
    "tensor_scalar.scalar_engine_ops": (
        lambda b, m: b.tensor_scalar(dst=T(b, m), data=T(b, m), op0="maximum", operand0=0.0, engine="scalar"),
        "the scalar engine's tensor_scalar supports only",
        "on the Scalar engine trn2 supports only",
    ),
    "tensor_scalar.bitvec_vector_only": (
        lambda b, m: b.tensor_scalar(
            dst=T(b, m, dtype=I32), data=T(b, m, dtype=I32), op0="bitwise_and", operand0=1, engine="scalar"
        ),
        r"bitwise tensor_scalar \(bitwise_and\) runs on the vector engine only",
        "bit-vector ops run only on the Vector engine",
    ),
    "tensor_scalar.bitvec_int_operand": (
        lambda b, m: b.tensor_scalar(
            dst=T(b, m, dtype=I32), data=T(b, m, dtype=I32), op0="bitwise_and", operand0=1.0
        ),
        "operand0 of bitwise op bitwise_and must be an integer",
        "operand0 must be a tensor",
    ),
    "tensor_scalar.same_op_class": (
        lambda b, m: b.tensor_scalar(
            dst=T(b, m, dtype=I32),
            data=T(b, m, dtype=I32),
            op0="bitwise_and",
            operand0=1,
            op1="add",
            operand1=1.0,
        ),
        "mix bitwise and arithmetic operators",
        "op0 and op1 must both be bit-vector or both arithmetic",
    ),
    "tensor_reduce.trailing_axes": (
        lambda b, m: b.tensor_reduce(dst=T(b, m, (128, 4)), op="add", data=T(b, m, (128, 4, 16)), axis=(1,)),
        "must be trailing free axes of the rank-3 data",
        "must be trailing free axes of",
    ),
    "tensor_reduce.negate_arithmetic": (
        lambda b, m: b.tensor_reduce(
            dst=T(b, m, (128, 1), I32), op="bitwise_or", data=T(b, m, dtype=I32), axis=(1,), negate=True
        ),
        "negate applies to arithmetic reductions only",
        "negate is meaningless for bit-vector op",
    ),
    # ---- top-8 instructions (max8, nc_find_index8, nc_match_replace8) ---------------------------
    "max8.dst_width": (
        lambda b, m: b.max8(dst=T(b, m, (128, 16)), src=T(b, m)),
        "dst must hold exactly 8 elements per partition, got 16",
        r"dst .* must be 128 partitions x 8 elements",
    ),
    "max8.free_range": (
        lambda b, m: b.max8(dst=T(b, m, (128, 8)), src=T(b, m, (128, 4))),
        r"src has 4 elements per partition; nki.max8 reads 8 \.\.\. 16,384",
        "has 4 elements per partition; it reads 8 to 16384",
    ),
    "find_index8.dst_dtype": (
        lambda b, m: b.find_index8(dst=T(b, m, (128, 8), I32), data=T(b, m), vals=T(b, m, (128, 8))),
        "find_index8 dst must be uint16 or uint32, got i32",
        "dst must be uint16 or uint32, got int32",
    ),
    "find_index8.vals_width": (
        lambda b, m: b.find_index8(dst=T(b, m, (128, 8), U32), data=T(b, m), vals=T(b, m, (128, 4))),
        "vals must hold exactly 8 elements per partition, got 4",
        r"vals .* must be 128 partitions x 8 elements",
    ),
    "match_replace8.same_shape": (
        lambda b, m: b.match_replace8(dst=T(b, m, (128, 32)), data=T(b, m), vals=T(b, m, (128, 8)), imm=0.0),
        "dst has 128 partitions x 32 elements but data has 128 x 64",
        "must have the shape of data",
    ),
    "match_replace8.free_max": (
        lambda b, m: b.match_replace8(
            dst=T(b, m, (128, 16392)), data=T(b, m, (128, 16392)), vals=T(b, m, (128, 8)), imm=0.0
        ),
        "data has 16,392 elements per partition; nki.match_replace8 reads at most 16,384",
        "has 16392 elements per partition; it reads at most 16384",
    ),
    # ---- batch-norm statistics (bn_stats, bn_aggr) ----------------------------------------------
    "bn_stats.free_range": (
        lambda b, m: b.bn_stats(dst=T(b, m, (128, 6)), data=T(b, m, (128, 1024))),
        r"data has 1,024 elements per partition; bn_stats reads 2 \.\.\. 512",
        "has 1024 elements per partition; it reads 2 to 512",
    ),
    "bn_stats.dst_width": (
        lambda b, m: b.bn_stats(dst=T(b, m, (128, 2)), data=T(b, m)),
        "dst must hold exactly 6 elements per partition, got 2",
        r"dst .* must hold 6 elements per partition",
    ),
    "bn_stats.dst_fp32": (
        lambda b, m: b.bn_stats(dst=T(b, m, (128, 6), BF16), data=T(b, m)),
        "dst must be f32, got bf16",
        "dst must be float32, got bfloat16",
    ),
    "bn_stats.same_partitions": (
        lambda b, m: b.bn_stats(dst=T(b, m, (64, 6)), data=T(b, m)),
        "dst covers 64 partitions but data covers 128",
        "must cover the same partitions",
    ),
    "bn_aggr.triples": (
        lambda b, m: b.bn_aggr(dst=T(b, m, (128, 2)), data=T(b, m, (128, 8))),
        "data has 8 elements per partition, not a multiple of 3",
        "has 8 elements per partition, not a multiple of 3",
    ),
    "bn_aggr.dst_width": (
        lambda b, m: b.bn_aggr(dst=T(b, m, (128, 3)), data=T(b, m, (128, 6))),
        "dst must hold exactly 2 elements per partition, got 3",
        r"dst .* must hold 2 elements per partition",
    ),
}


def _kernel(bad):
    b = nk.nki.Builder("bad")
    x = b.add_input("x", (128, 64), F32)
    y = b.alloc((128, 64), F32, "hbm", name="y")
    made = []
    t = _tile(b, made)
    b.dma_copy(dst=t, src=x)
    bad(b, made)
    b.dma_copy(dst=y, src=t)
    for u in made:
        b.dealloc(u)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected_by_verifier_interpreter_and_simulator(case):
    bad, verifier_msg, sim_msg = CASES[case]
    g = _kernel(bad)
    x = np.ones((128, 64), np.float32)
    with pytest.raises(nk.VerifyError, match=verifier_msg):
        nk.nki.verify(g)
    with pytest.raises(nk.VerifyError, match=verifier_msg):
        nk.nki.run(g, {"x": x})
    with pytest.raises(NkiSimError, match=sim_msg):
        nk.simulate(emit_nki_source(g), {"x": x})


def test_the_legal_variant_runs_on_all_three():
    """Control: the same frame with a legal select passes everywhere (so the cases above fail
    for their rule, not for the frame)."""

    def good(b, m):
        b.select(dst=T(b, m), predicate=T(b, m, dtype=U8), on_true=T(b, m), on_false=T(b, m, (128, 1)))

    g = _kernel(good)
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    nk.nki.verify(g)
    np.testing.assert_array_equal(nk.nki.run(g, {"x": x})["y"], x)
    np.testing.assert_array_equal(nk.simulate(emit_nki_source(g), {"x": x})["y"], x)
