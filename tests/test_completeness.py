"""Every dispatch layer an op reaches has a rule for it; a miss names the op and the file to edit.

Tensor ops (every class registered in the tensor dialect, including ones other modules add):
tensor interpreter, layout, decompose (native on trn2 or rewritten by a decomposition), the
docs. NKI ops (what tensor ops lower to): NKI interpreter, hardware verifier, NKI-source
emitter, Kernel Builder emitter, simulator (what the source rule writes), cost model. The
lowering is checked by tests/lower/test_lower_completeness.py (an instance of every op class compiles).
"""

from __future__ import annotations

import pytest

import nkigen_lite as nk
import nkigen_lite.transforms  # noqa: F401  (registers tensor.layout_convert)
from nkigen_lite.emit.kb_rules import KB_RULES
from nkigen_lite.emit.source_rules import SOURCE_RULES
from nkigen_lite.ir.graph import ReturnOp
from nkigen_lite.nki import ops as N
from nkigen_lite.nki.interpret import NkiInterpreter
from nkigen_lite.nki.verify_ops import OP_RULES
from nkigen_lite.nki_sim.install import simulator_modules
from nkigen_lite.perf.instruction_cost import COST_RULES, FREE_OPS
from nkigen_lite.tensor import op_docs
from nkigen_lite.tensor import ops as T
from nkigen_lite.tensor.interpret import TensorInterpreter
from nkigen_lite.transforms.capabilities import capabilities
from nkigen_lite.transforms.decomposition import all_pattern_classes
from nkigen_lite.transforms.layout.constraints import rule_for as layout_rule_for

TENSOR_OPS = list(T.TENSOR_OPS.values())
NOT_LOWERED = [c for c in TENSOR_OPS if getattr(c, "not_lowered", "")]
"""Ops nk.compile refuses with their ``not_lowered`` reason instead of lowering them (none today:
the collectives, the last such ops, are lowered since issue 17)."""
NKI_OPS = list(N.ALL_OPS)
_ids = {"ids": lambda c: c.name}


@pytest.mark.parametrize("cls", TENSOR_OPS, **_ids)
def test_tensor_interpreter_has_a_rule(cls):
    assert TensorInterpreter.rule_for(cls) is not None, (
        f"{cls.name} has no tensor interpreter rule: add @TensorInterpreter.impl({cls.__name__}) "
        "in nkigen_lite/tensor/interpret.py (or inherit a family's rule)"
    )


def test_the_not_lowered_list_is_the_documented_one():
    assert NOT_LOWERED == []


def test_compile_refuses_an_op_marked_not_lowered_naming_it():
    from nkigen_lite.ir.registry import scratch_tables

    with scratch_tables():

        class Unlowered(T.TensorOp):
            """An op with no lowering yet."""

            name = "tensor.unlowered_probe"
            not_lowered = "no lowering rule written yet"

            @classmethod
            def infer(cls, types, _attrs):
                return [types[0]]

        b = nk.Builder("g")
        x = b.add_input("x", (4,), nk.float32)
        b.set_outputs({"y": b.emit(Unlowered, [x])})
        with pytest.raises(nk.BuildError, match=r"tensor\.unlowered_probe cannot be compiled: no lowering"):
            nk.compile(b.graph)


@pytest.mark.parametrize("cls", [c for c in TENSOR_OPS if c not in NOT_LOWERED], **_ids)
def test_layout_has_a_rule(cls):
    assert layout_rule_for(cls) is not None, (
        f"{cls.name} has no layout rule: add @layout_rule({cls.__name__}) in "
        "nkigen_lite/transforms/layout/constraints.py"
    )


def _decomposition_roots() -> set[type]:
    roots: set[type] = set()
    for p in all_pattern_classes():
        r = p.root
        roots |= set(r) if isinstance(r, tuple) else {r}
    return roots


@pytest.mark.parametrize("cls", TENSOR_OPS, **_ids)
def test_decompose_handles_every_op_trn2_lacks(cls):
    caps = capabilities()
    if caps.has(cls.needs) or cls in NOT_LOWERED:  # not-lowered ops: checked above
        return
    covered = any(issubclass(cls, r) for r in _decomposition_roots() if r is not None)
    assert covered, (
        f"{cls.name} needs {cls.needs}, which trn2 lacks, and no decomposition pattern has it "
        "as root: add one in nkigen_lite/transforms/decomposition/ (PATTERN_CLASSES or "
        "@decomposition)"
    )


def test_decompose_leaves_only_native_ops_for_an_instance_of_every_op():
    from tests.tensor.test_registry import _one_of_each

    b = nk.Builder("every_op")
    b.set_outputs(_one_of_each(b))
    g = b.graph
    nk.transforms.decompose(g)  # raises naming any op left without a lowering
    caps = capabilities()
    left = sorted({op.name for op in g.walk() if isinstance(op, T.TensorOp) and not caps.native(op)})
    assert left == [], f"{left} survive decompose on trn2 (nkigen_lite/transforms/decomposition/)"


def test_decompose_names_an_op_that_nothing_can_lower():
    class Poor:
        name = "poor"
        activation_functions = frozenset()

    b = nk.Builder("g")
    x = b.add_input("x", (4,), nk.float32)
    b.set_outputs({"y": b.exp(x)})
    with pytest.raises(nk.BuildError, match=r"tensor\.exp is not native on poor .*act:exp"):
        nk.transforms.decompose(b.graph, Poor())


def test_layout_names_a_tensor_op_without_a_rule():
    from nkigen_lite.ir.registry import scratch_tables
    from nkigen_lite.transforms.layout.constraints import op_constraints

    with scratch_tables():

        class NoLayoutOp(T.TensorOp):
            """An op nobody gave a layout rule."""

            name = "tensor.no_layout_probe"

            @classmethod
            def infer(cls, types, _attrs):
                return [types[0]]

        b = nk.Builder("g")
        x = b.add_input("x", (4,), nk.float32)
        op = b.emit(NoLayoutOp, [x]).owner
        with pytest.raises(
            nk.BuildError,
            match=r"tensor\.no_layout_probe has no layout rule.*"
            r"layout/constraints\.py",
        ):
            op_constraints(op)
    assert "tensor.no_layout_probe" not in T.TENSOR_OPS


@pytest.mark.parametrize("cls", T.ALL_TENSOR_OPS, **_ids)
def test_docs_list_every_op(cls):
    table = op_docs.op_table()
    assert f"`{cls.name}`" in table and f"`{cls.name}`" in op_docs.DOC.read_text(), (
        f"{cls.name} is missing from docs/tensor_ops.md: run `uv run python -m nkigen_lite.tensor.op_docs`"
    )


# ---- NKI ops ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", NKI_OPS, **_ids)
def test_nki_interpreter_has_a_rule(cls):
    assert NkiInterpreter.rule_for(cls) is not None, (
        f"{cls.name} has no NKI interpreter rule: add @NkiInterpreter.impl({cls.__name__}) in "
        "nkigen_lite/nki/interpret.py or nki/interpret_compute.py"
    )


STRUCTURAL = (N.AllocOp, N.DeallocOp, N.HbmViewOp, N.ForiLoopOp, ReturnOp, N.ProgramIdOp)


@pytest.mark.parametrize("cls", NKI_OPS, **_ids)
def test_hardware_verifier_has_a_rule(cls):
    assert cls in STRUCTURAL or cls in OP_RULES, (
        f"{cls.name} has no hardware legality rule: add @rule({cls.__name__}) in "
        "nkigen_lite/nki/verify_ops.py"
    )


@pytest.mark.parametrize("cls", NKI_OPS, **_ids)
def test_nki_source_emitter_has_a_rule(cls):
    assert cls in SOURCE_RULES, (
        f"{cls.name} has no NKI-source rule: add one in nkigen_lite/emit/source_rules.py"
    )


@pytest.mark.parametrize("cls", NKI_OPS, **_ids)
def test_kernel_builder_emitter_has_a_rule(cls):
    assert cls in KB_RULES, f"{cls.name} has no Kernel Builder rule: add one in nkigen_lite/emit/kb_rules.py"


@pytest.mark.parametrize("cls", NKI_OPS, **_ids)
def test_simulator_implements_what_the_source_rule_writes(cls):
    modules = simulator_modules()
    short = {"nl": modules["nki.language"], "nisa": modules["nki.isa"], "ncc": modules["nki.collectives"]}
    for call in SOURCE_RULES[cls].calls:
        module, attr = call.split(".")
        assert hasattr(short[module], attr), (
            f"{cls.name}: the emitter writes {call}, which the simulator lacks: add it under "
            "nkigen_lite/nki_sim/ (language.py or isa_*.py)"
        )


@pytest.mark.parametrize("cls", NKI_OPS, **_ids)
def test_cost_model_has_a_rule(cls):
    assert (cls in COST_RULES) + (cls in FREE_OPS) + (cls is N.ForiLoopOp) == 1, (
        f"{cls.name} has no cost rule: add one to COST_RULES (or FREE_OPS) in "
        "nkigen_lite/perf/instruction_cost.py"
    )
