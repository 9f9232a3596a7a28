"""The NKI IR -> ``nki.compiler.kernel_builder`` name table, in one place.

Kernel Builder has no public reference documentation; these names come from AWS's own and
third-party code that uses it (facts sheet §4) and are unstable between SDK builds. Names
marked "assumed" were not seen in any source and follow the pattern of their neighbours.
Edit here, and only here, when a real SDK disagrees.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..nki.ops.alu import BITVEC_OPS

# Builder entry points and memory spaces (module ``nb`` = nki.compiler.kernel_builder).
BUILD_KERNEL = "build_kernel"  # nb.build_kernel(fn, input_specs=, output_specs=, target=)
TENSOR_SPEC = "Tensor"  # nb.Tensor(shape, dtype)
HBM_ALLOC = "ndarray"  # nb.ndarray(shape, dtype, memspace=nb.hbm)
TILE_ALLOC = ("compiler", "alloc")  # nb.compiler.alloc(shape, dtype, space=nb.sbuf | nb.psum)
TILE_RELEASE = ("compiler", "release")  # nb.compiler.release(t)
FORI_LOOP = "fori_loop"  # nb.fori_loop(n, body_fn, unroll=)
FORI_LOOP_UNROLL = "unroll"  # keyword seen in NKIPy's use (fori_loop(unroll=True)); undocumented
DS = "ds"  # nb.ds(start, size)
MEMSPACE = {"sbuf": "sbuf", "psum": "psum", "hbm": "hbm"}

# NISA instructions (``nb.isa.<name>``).
DMA_COPY = "dma_copy"
DMA_TRANSPOSE = "dma_transpose"  # dma_transpose(dst, src, permutation) [NKIPY-KB]
TENSOR_COPY = "tensor_copy"
MEMSET = "memset"
IOTA = "iota"  # assumed keyword names: pattern, offset, channel_multiplier
MATMUL = "matmul"  # accum= flag
TRANSPOSE = {
    "tensor": "transpose",  # assumed: the PE transpose of nc_transpose(engine=tensor)
    "vector": "stream_transpose",
}
ACTIVATION = "activation"
TENSOR_TENSOR = {"arith": "tensor_tensor_arith", "bitvec": "tensor_tensor_bitvec"}
TENSOR_SCALAR = {"arith": "tensor_scalar_arith", "bitvec": "tensor_scalar_bitvec"}
TENSOR_REDUCE = {"arith": "tensor_reduce_arith", "bitvec": "tensor_reduce_bitvec"}  # bitvec: assumed
SELECT = "select_reduce"
AFFINE_SELECT = "affine_select"  # assumed
MAX8 = "max8"  # assumed: the nki.isa name (top-8 instructions, kb_top8.py)
FIND_INDEX8 = "nc_find_index8"  # assumed: the nki.isa name
MATCH_REPLACE8 = "nc_match_replace8"  # assumed: the nki.isa name
TENSOR_TENSOR_SCAN = "tensor_tensor_scan"  # assumed: the nki.isa name (kb_scan.py)
STREAM_SHUFFLE = "nc_stream_shuffle"  # assumed: the nki.isa name (kb_shuffle.py)
BN_STATS = "bn_stats"  # assumed: the nki.isa name (batch-norm statistics, kb_bn.py)
BN_AGGR = "bn_aggr"  # assumed: the nki.isa name
PROGRAM_ID = "program_id"  # assumed: nb.program_id(axis), as nl.program_id in NKI
# Collectives: the names are in facts §4's list of Kernel Builder calls; the keywords are
# assumed to be those of the documented nki.collectives functions (srcs, dsts, replica_group,
# collective_dim, op), with the replica group as a list of rank lists.
COLLECTIVES = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "all_to_all": "all_to_all",
}


@dataclass(frozen=True)
class Signature:
    """The keywords one ``nb.isa`` call may take, and where they were seen."""

    keywords: frozenset
    source: str


def _sig(keywords: str, source: str) -> Signature:
    return Signature(frozenset(keywords.split()), source)


# The signature table the Kernel Builder surface tests check every emitted call against. There is
# no public Kernel Builder reference (docs/emit.md lists what was searched); SEEN = keyword
# names used by AWS's NKIPy code and third-party code (facts sheet §4, [NKIPY-KB] [3rd-FA]);
# "assumed" = not seen anywhere, following the neighbouring calls.
SEEN = "facts §4: NKIPy / third-party usage"
ISA_SIGNATURES = {
    DMA_COPY: _sig("dst src engine", SEEN),
    DMA_TRANSPOSE: _sig("dst src permutation", SEEN),
    TENSOR_COPY: _sig("dst src engine", SEEN + " (engine= assumed)"),
    MEMSET: _sig("dst value engine", "assumed (the name is seen, keywords are not)"),
    IOTA: _sig("dst pattern offset channel_multiplier", "assumed (the name is seen, keywords are not)"),
    MATMUL: _sig("dst stationary moving accum", SEEN),
    TRANSPOSE["tensor"]: _sig("dst src", "assumed"),
    TRANSPOSE["vector"]: _sig("dst src", SEEN + " (name only; keywords assumed)"),
    ACTIVATION: _sig("dst src bias scale op reduce_op reduce_res reduce_cmd", SEEN),
    TENSOR_TENSOR["arith"]: _sig("dst lhs rhs op engine", SEEN + " (engine= assumed)"),
    TENSOR_TENSOR["bitvec"]: _sig("dst lhs rhs op engine", SEEN + " (name only; keywords as arith)"),
    TENSOR_SCALAR["arith"]: _sig(
        "dst src op0 operand0 reverse0 op1 operand1 reverse1 engine", SEEN + " (name only; keywords assumed)"
    ),
    TENSOR_SCALAR["bitvec"]: _sig(
        "dst src op0 operand0 reverse0 op1 operand1 reverse1 engine", SEEN + " (name only; keywords assumed)"
    ),
    TENSOR_REDUCE["arith"]: _sig("dst src op num_r_dim negated", SEEN),
    TENSOR_REDUCE["bitvec"]: _sig("dst src op num_r_dim negated", "assumed (as tensor_reduce_arith)"),
    SELECT: _sig(
        "dst predicate on_true on_false reverse_pred reduce_res reduce_cmd",
        SEEN + " (name only; keywords as nki.isa)",
    ),
    AFFINE_SELECT: _sig(
        "dst on_true_tile pattern channel_multiplier offset cmp_op on_false_value", "assumed (as nki.isa)"
    ),
    MAX8: _sig("dst src", "assumed (as nki.isa.max8)"),
    FIND_INDEX8: _sig("dst data vals", "assumed (as nki.isa.nc_find_index8)"),
    MATCH_REPLACE8: _sig("dst data vals imm", "assumed (as nki.isa.nc_match_replace8)"),
    TENSOR_TENSOR_SCAN: _sig(
        "dst data0 data1 initial op0 op1 reverse0 reverse1", "assumed (as nki.isa.tensor_tensor_scan)"
    ),
    STREAM_SHUFFLE: _sig("dst src shuffle_mask", "assumed (as nki.isa.nc_stream_shuffle)"),
    BN_STATS: _sig("dst data", "assumed (as nki.isa.bn_stats)"),
    BN_AGGR: _sig("dst data", "assumed (as nki.isa.bn_aggr)"),
    COLLECTIVES["all_reduce"]: _sig(
        "srcs dsts replica_group op", "facts §4 (name); keywords as nki.collectives"
    ),
    COLLECTIVES["all_gather"]: _sig(
        "srcs dsts replica_group collective_dim", "facts §4 (name); keywords as nki.collectives"
    ),
    COLLECTIVES["reduce_scatter"]: _sig(
        "srcs dsts replica_group collective_dim op", "facts §4 (name); keywords as nki.collectives"
    ),
    COLLECTIVES["all_to_all"]: _sig(
        "srcs dsts replica_group collective_dim", "facts §4 (name); keywords as nki.collectives"
    ),
}

# Enumerations (``nb.isa.<enum>.<member>``).
ENGINE_ENUM = "engine"
ENGINES = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "Gpsimd"}
ARITH_ENUM = "arith_op"
BITVEC_ENUM = "bitvec_op"
ACTIVATION_ENUM = "activation_function"  # members keep the NKI function names (exp, rsqrt, ...)
ACT_REDUCE_ENUM, ACT_REDUCE_ADD = "activation_reduce_op", "Add"
REDUCE_CMD_ENUM, RESET_REDUCE = "reduce_cmd", "ResetReduce"

# nb dtype attribute per DType name (bool_ is a uint8 tensor on the chip).
DTYPES = {
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "tfloat32": "tfloat32",
    "float8_e4m3": "float8_e4m3",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e3m4": "float8_e3m4",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "bool_": "uint8",
}


def camel(name: str) -> str:
    """``bitwise_and`` -> ``BitwiseAnd`` (the enum member style of the NISA bindings)."""
    return "".join(part.capitalize() for part in name.split("_"))


def alu_kind(op: str) -> str:
    """'bitvec' for bitwise operators, else 'arith' (compare and logical ops are arith_op)."""
    return "bitvec" if op in BITVEC_OPS else "arith"


def resolve(root, path):
    """``root.a.b`` for a path ``("a", "b")`` (or a single attribute name)."""
    for part in (path,) if isinstance(path, str) else path:
        root = getattr(root, part)
    return root
