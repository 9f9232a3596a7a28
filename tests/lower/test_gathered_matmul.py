"""``tensor.gathered_matmul`` (tensor/composites_gathered_matmul.py), its lowering
(transforms/lower/gathered_matmul.py: each selected matrix gathered straight into SBUF) and the
canonical rewrite that forms it or the dense form (transforms/canonical/gathered_matmul.py).

Numerics: the NKI interpreter and the simulator against float64 NumPy written here
(``np.repeat(a, group, 0) @ table[ids]``, the MoE block's own reference), bf16 tolerance 1e-2
relative with the absolute part scaled by max|reference| (tests/emit/helpers.py), f32 1e-5.
Traffic: count-based, from the kernel's DMAs (perf/traffic.py)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.tensor.types import TensorType
from nkigen_lite.transforms.lower.gathered_matmul import gathered_matmul_body, k_split, supported
from nkigen_lite.workloads.moe import build_moe, moe_inputs, moe_reference

from ..emit.helpers import close


def _op_graph(na, group, e, k, n_cols, dt, ids_dt=nk.int32, m=1):
    b = nk.Builder("gm")
    a = b.add_input("a", (na, m, k), dt)
    t = b.add_input("table", (e, k, n_cols), dt)
    i = b.add_input("ids", (na * group,), ids_dt)
    b.set_outputs({"y": b.composite("gathered_matmul", a, t, i, group=group)})
    return b.graph


def _inputs(na, group, e, k, n_cols, dt, ids, seed=0, m=1):
    rng = np.random.default_rng(seed)
    return {
        "a": rng.standard_normal((na, m, k)).astype(dt.np_dtype),
        "table": (rng.standard_normal((e, k, n_cols)) / np.sqrt(k)).astype(dt.np_dtype),
        "ids": np.asarray(ids, np.int32),
    }


def _want(ins, group):
    a = np.repeat(ins["a"].astype(np.float64), group, axis=0)
    return a @ ins["table"].astype(np.float64)[ins["ids"]]


CASES = [
    # (na, group, experts, K, N, dtype, ids[, M])
    (4, 2, 6, 256, 160, nk.bfloat16, [0, 5, 2, 2, 1, 3, 4, 0]),  # a row per token, repeats
    (3, 1, 5, 96, 300, nk.float32, [4, 4, 4]),  # K < 128 (P = 96), N not a multiple of 128
    (2, 3, 4, 192, 128, nk.bfloat16, [3, 3, 3, 3, 3, 3]),  # P = 96, q = 2; one matrix for all
    (40, 4, 9, 128, 64, nk.bfloat16, None),  # 160 selections: two selection groups
    (130, 1, 7, 64, 96, nk.float32, None),  # 130 rows of a: two 128-row stagings, two groups
    # M > 1 rows per selection: a staged once (na = 1, the dense form's tokens) or per row
    (1, 5, 5, 256, 160, nk.bfloat16, [4, 3, 2, 1, 0], 16),  # every matrix once, all rows
    (3, 1, 4, 96, 300, nk.float32, [1, 1, 3], 7),  # a row block per selection, staged in the loop
    (2, 2, 3, 128, 1100, nk.bfloat16, [2, 0, 0, 2], 64),  # N = 1100: 9 chunks over 2 PSUM banks
]


@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: f"{c[0]}x{c[1]}_E{c[2]}_K{c[3]}_N{c[4]}_{c[5]}_M{c[7:] or 1}"
)
def test_kernel_matches_float64_numpy_on_interpreter_and_simulator(case):
    na, g, e, k, n_cols, dt, ids = case[:7]
    m = case[7] if len(case) > 7 else 1
    if ids is None:
        ids = np.random.default_rng(1).integers(0, e, na * g)
    g_ = _op_graph(na, g, e, k, n_cols, dt, m=m)
    ins = _inputs(na, g, e, k, n_cols, dt, ids, m=m)
    want = _want(ins, g)
    kern = nk.compile(g_)
    for what, got in (("Kernel.run", kern.run(ins)["y"]), ("nk.simulate", nk.simulate(kern, ins)["y"])):
        assert got.shape == (na * g, m, n_cols) and got.dtype == dt.np_dtype, what
        close(got, want, dt, f"gathered_matmul {case[:5]}: {what}")
    # the expansion (nk.run) agrees too: the op means what its definition says
    close(nk.run(g_, ins, mode="float64")["y"], want, dt, "nk.run float64")


def test_widened_results_are_the_matmuls_rounding_then_the_cast():
    """astype="float32": the bf16-rounded products, widened exactly (NumPy's
    ``(a @ t[ids]).astype(np.float32)``)."""
    b = nk.Builder("gm_f32")
    a = b.add_input("a", (4, 1, 256), nk.bfloat16)
    t = b.add_input("table", (6, 256, 160), nk.bfloat16)
    i = b.add_input("ids", (8,), nk.int32)
    b.set_outputs({"y": b.composite("gathered_matmul", a, t, i, group=2, astype="float32")})
    ins = _inputs(4, 2, 6, 256, 160, nk.bfloat16, [0, 5, 2, 2, 1, 3, 4, 0])
    want = _want(ins, 2)
    kern = nk.compile(b.graph)
    for what, got in (("Kernel.run", kern.run(ins)["y"]), ("nk.simulate", nk.simulate(kern, ins)["y"])):
        assert got.dtype == np.float32, what
        np.testing.assert_array_equal(got, got.astype(nk.bfloat16.np_dtype).astype(np.float32), what)
        close(got, want, nk.bfloat16, f"widened gathered_matmul: {what}")


def test_each_selection_reads_its_matrix_once_and_nothing_goes_through_hbm_scratch():
    na, g, e, k, n_cols = 4, 2, 6, 256, 160
    kern = nk.compile(_op_graph(na, g, e, k, n_cols, nk.bfloat16))
    t = bytes_by_tensor(kern.nki)
    matrix = k * n_cols * 2
    assert t["table"] == {"read": na * g * matrix, "write": 0}
    assert t["a"] == {"read": na * k * 2, "write": 0}
    p, _ = k_split(k)
    assert t["ids"] == {"read": p * na * g * 4, "write": 0}  # the ids on every partition
    assert t["y"] == {"read": 0, "write": na * g * n_cols * 2}
    assert set(t) == {"table", "a", "ids", "y"}  # no scratch buffer


def test_wrong_ids_give_another_answer():
    """The count test is not vacuous: the kernel really reads the rows the ids name."""
    case = (4, 2, 6, 256, 160, nk.bfloat16)
    kern = nk.compile(_op_graph(*case))
    ins = _inputs(*case, [0, 5, 2, 2, 1, 3, 4, 0])
    other = dict(ins, ids=np.array([1, 5, 2, 2, 1, 3, 4, 0], np.int32))
    got, want = kern.run(ins)["y"], _want(other, 2)
    assert np.abs(got[0].astype(np.float64) - want[0]).max() > 0.1 * np.abs(want).max()


def test_unsupported_shapes_are_refused_with_one_error_naming_the_op():
    bf = nk.bfloat16
    types = [TensorType((2, 129, 64), bf), TensorType((4, 64, 32), bf), TensorType((2,), nk.int32)]
    assert not supported(types, {"group": 1})  # M = 129 rows per selection
    with pytest.raises(BuildError, match=r"tensor.gathered_matmul .*\(na, M <= 128, K\)"):
        gathered_matmul_body(types, {"group": 1})
    mixed = [TensorType((2, 1, 64), nk.float32), TensorType((4, 64, 32), bf), TensorType((2,), nk.int32)]
    assert not supported(mixed, {"group": 1})
    wide = [TensorType((2, 1, 128), bf), TensorType((4, 128, 65536), bf), TensorType((2,), nk.int32)]
    assert not supported(wide, {"group": 1})  # one matrix would take 128 KiB per partition


# ---- the canonical rewrite ---------------------------------------------------------------------

SMALL = {"hidden": 256, "experts": 16, "inter": 128}


def _canonical_ops(g) -> list[str]:
    text = nk.compile(g).ir("canonicalize")
    return [line.split("=", 1)[1].split()[0] for line in text.splitlines() if " = tensor." in line]


def test_few_selections_become_gathered_matmuls_and_many_the_dense_form():
    few = _canonical_ops(build_moe(tokens=2, **SMALL))  # 16 selections of 16 experts
    assert few.count("tensor.gathered_matmul") == 3 and "tensor.gather_rows" not in few
    # the casts to f32 after the three projections are folded into them (astype = "float32")
    text = nk.compile(build_moe(tokens=2, **SMALL)).ir("canonicalize")
    assert text.count('astype = "float32"') == 3
    many = _canonical_ops(build_moe(tokens=4, **SMALL))  # 32 selections of 16 experts
    # every table read once by a gathered_matmul over ids 0 … E-1 (all tokens per expert); the
    # selections' rows picked from the dense results
    assert many.count("tensor.gathered_matmul") == 3
    assert many.count("tensor.gather_rows") == 3 and many.count("tensor.scatter_rows") == 1


def test_more_selections_than_matrices_without_topk_ids_are_left_alone():
    """The dense form needs distinct ids per token (a topk's); other ids keep the plain gather."""
    b = nk.Builder("g")
    x = b.add_input("x", (8, 1, 32), nk.float32)
    t = b.add_input("t", (4, 32, 16), nk.float32)
    ids = b.add_input("ids", (8,), nk.int32)
    b.set_outputs({"y": x @ b.gather_rows(t, ids)})
    ops = _canonical_ops(b.graph)
    assert "tensor.gather_rows" in ops and "tensor.gathered_matmul" not in ops
    rng = np.random.default_rng(0)
    ins = {
        "x": rng.standard_normal((8, 1, 32)).astype(np.float32),
        "t": rng.standard_normal((4, 32, 16)).astype(np.float32),
        "ids": np.array([3, 3, 0, 1, 3, 2, 0, 0], np.int32),
    }
    want = ins["x"].astype(np.float64) @ ins["t"].astype(np.float64)[ins["ids"]]
    close(nk.compile(b.graph).run(ins)["y"], want, nk.float32, "plain gather, repeated ids")


def _shared_routing_inputs(g, seed):
    """MoE inputs where tokens 0 and 1 are equal (they select the same experts: duplicates
    across tokens) and two router columns are equal (a tie between two experts' probabilities,
    broken towards the lower id by both the kernel's topk and the reference)."""
    ins = moe_inputs(g, seed=seed)
    ins["x"][1] = ins["x"][0]
    ins["w_router"][:, 5] = ins["w_router"][:, 2]
    return ins


@pytest.mark.parametrize("tokens", [2, 4], ids=["gathered", "dense"])
def test_moe_with_duplicate_selections_and_ties_matches_the_reference(tokens):
    g = build_moe(tokens=tokens, **SMALL)
    ins = _shared_routing_inputs(g, seed=7)
    want = moe_reference(**ins)["y"]
    assert np.array_equal(want[0], want[1])  # the duplicate tokens really route the same way
    kern = nk.compile(g)
    for what, got in (("Kernel.run", kern.run(ins)["y"]), ("nk.simulate", nk.simulate(kern, ins)["y"])):
        close(got, want, nk.bfloat16, f"moe tokens={tokens} with shared routing: {what}")
        assert np.array_equal(got[0], got[1]), what


def test_compiling_twice_gives_identical_kernels():
    a = nk.compile(build_moe(tokens=2, **SMALL)).nki_source()
    b = nk.compile(build_moe(tokens=2, **SMALL)).nki_source()
    assert a == b
    assert a.count("vector_offset=") == 3  # one indirect DMA per projection, in a loop
