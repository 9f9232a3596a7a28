"""Registry completeness: every NKI op has an NKI-source rule, a simulator implementation of
what that rule writes, and a Kernel Builder rule; every operator / activation name the NKI
IR offers exists in the simulator and in the Kernel Builder table."""

from nkigen_lite.emit import kb_table
from nkigen_lite.emit.kb_rules import KB_RULES
from nkigen_lite.emit.nki_source import NL_DTYPES
from nkigen_lite.emit.source_rules import SOURCE_RULES
from nkigen_lite.ir.dtypes import ALL_DTYPES
from nkigen_lite.nki.ops import ALL_OPS, ENGINES, TransposeOp
from nkigen_lite.nki.ops.alu import ACTIVATION_FUNCS, ALU_OPS, COMPARE_OPS, REDUCE_OPS
from nkigen_lite.nki_sim.install import simulator_modules
from nkigen_lite.nki_sim.operators import ActivationFunction, AluOp

SIM = simulator_modules()
MODULES = {"nl": SIM["nki.language"], "nisa": SIM["nki.isa"], "ncc": SIM["nki.collectives"]}


def test_every_nki_op_has_a_source_rule_and_a_kernel_builder_rule():
    assert set(SOURCE_RULES) == set(ALL_OPS)
    assert set(KB_RULES) == set(ALL_OPS)


def test_everything_a_source_rule_writes_exists_in_the_simulator():
    for op_cls, rule in SOURCE_RULES.items():
        for call in rule.calls:
            module, attr = call.split(".")
            assert hasattr(MODULES[module], attr), f"{op_cls.name}: {call} is not simulated"


def test_every_operator_and_activation_function_is_simulated():
    nl = MODULES["nl"]
    for name in set(ALU_OPS) | set(REDUCE_OPS) | set(COMPARE_OPS):
        assert isinstance(getattr(nl, name, None), AluOp), name
    for name in REDUCE_OPS:
        assert getattr(nl, name).can_reduce, name
    for name in ACTIVATION_FUNCS:
        assert isinstance(getattr(nl, name, None), ActivationFunction), name


def test_every_engine_and_dtype_has_a_name_on_both_paths():
    engine = MODULES["nisa"].engine
    for e in ENGINES:
        assert hasattr(engine, e) and e in kb_table.ENGINES
    assert set(TransposeOp.engines) == set(kb_table.TRANSPOSE)
    for name in NL_DTYPES.values():
        assert hasattr(MODULES["nl"], name), name
    assert {d.numpy_name for d in ALL_DTYPES} <= set(kb_table.DTYPES)


def test_every_alu_kind_has_kernel_builder_instructions():
    for op in ALU_OPS:
        kind = kb_table.alu_kind(op)
        assert kind in kb_table.TENSOR_TENSOR and kind in kb_table.TENSOR_SCALAR
    for op in REDUCE_OPS:
        assert kb_table.alu_kind(op) in kb_table.TENSOR_REDUCE
    assert kb_table.camel("bitwise_and") == "BitwiseAnd"
