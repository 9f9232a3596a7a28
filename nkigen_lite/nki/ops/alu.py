"""Names of the NKI ALU operators and ScalarE activation functions (facts §2.5) by category."""

ARITH_OPS = ("add", "subtract", "multiply", "maximum", "minimum", "power", "abs_max", "abs_min")
COMPARE_OPS = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")
LOGICAL_OPS = ("logical_and", "logical_or", "logical_xor")
BITVEC_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")

# Every binary ALU operator; there is no divide instruction (use reciprocal and multiply).
ALU_OPS = ARITH_OPS + COMPARE_OPS + LOGICAL_OPS + BITVEC_OPS

# Operators a free-axis reduction may use.
REDUCE_OPS = (
    "add",
    "multiply",
    "maximum",
    "minimum",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "logical_and",
    "logical_or",
    "logical_xor",
)

# ScalarE activation functions (piece-wise polynomial on the chip). prelu and the
# gelu_apprx_sigmoid derivative, which take extra parameters or have no stated formula, are
# not offered.
ACTIVATION_FUNCS = (
    "copy",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "tanh",
    "sigmoid",
    "silu",
    "silu_dx",
    "gelu",
    "gelu_dx",
    "gelu_apprx_tanh",
    "gelu_apprx_sigmoid",
    "relu",
    "square",
    "erf",
    "erf_dx",
    "softplus",
    "mish",
    "sin",
    "arctan",
    "sign",
    "abs",
)


def op_kind(op: str) -> str:
    """'arith', 'compare', 'logical' or 'bitvec'."""
    if op in BITVEC_OPS:
        return "bitvec"
    if op in COMPARE_OPS:
        return "compare"
    if op in LOGICAL_OPS:
        return "logical"
    return "arith"
