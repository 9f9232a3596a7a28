"""docs/adding_an_op.md runs as written, inside a scratch registry: its toy ops are complete in
every tensor-level dispatch layer while they exist, and gone afterwards."""

from __future__ import annotations

import re
from pathlib import Path

from nkigen_lite.ir import OP_REGISTRY
from nkigen_lite.ir.registry import scratch_tables
from nkigen_lite.tensor import op_docs
from nkigen_lite.tensor import ops as T
from nkigen_lite.tensor.builder import Builder
from nkigen_lite.tensor.interpret import TensorInterpreter
from nkigen_lite.transforms.capabilities import capabilities
from nkigen_lite.transforms.decomposition import all_pattern_classes
from nkigen_lite.transforms.layout.constraints import LAYOUT_RULES
from nkigen_lite.transforms.layout.constraints import rule_for as layout_rule_for

DOC = Path(__file__).resolve().parents[1] / "docs" / "adding_an_op.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def _snapshot() -> dict:
    return {
        "ops": dict(OP_REGISTRY),
        "tensor": dict(T.TENSOR_OPS),
        "unary": dict(T.UNARY_OPS),
        "interp": dict(TensorInterpreter.rules),
        "layout": dict(LAYOUT_RULES),
        "patterns": all_pattern_classes(),
        "builder": set(vars(Builder)),
    }


def test_the_doc_adds_two_complete_ops_and_leaves_the_registries_untouched():
    blocks = _blocks()
    assert len(blocks) >= 8, "docs/adding_an_op.md lost its code blocks"
    before = _snapshot()
    ns: dict = {}
    try:
        _run_doc(blocks, ns)
    finally:
        if "reverse" in vars(Builder) and "reverse" not in before["builder"]:
            delattr(Builder, "reverse")  # the doc's step 4 sets a class attribute (a package edit)
    after = _snapshot()
    assert after == before
    assert "tensor.cube" not in OP_REGISTRY and "tensor.reverse" not in OP_REGISTRY


def _run_doc(blocks: list[str], ns: dict) -> None:
    with scratch_tables():
        for i, code in enumerate(blocks):
            exec(compile(code, f"{DOC}:block{i + 1}", "exec"), ns)  # noqa: S102 (our own doc)
        cube, reverse = ns["CubeOp"], ns["ReverseOp"]
        assert T.TENSOR_OPS["tensor.cube"] is cube and T.UNARY_OPS["cube"] is cube
        assert T.TENSOR_OPS["tensor.reverse"] is reverse
        caps = capabilities()
        roots = {p.root for p in all_pattern_classes()}
        for cls in (cube, reverse):
            assert TensorInterpreter.rule_for(cls) is not None, cls.name
            assert layout_rule_for(cls) is not None, cls.name
            assert caps.has(cls.needs) or cls in roots, cls.name
            assert f"`{cls.name}`" in op_docs.op_table([cls]), cls.name
            for name in cls.builder_names:
                assert callable(getattr(Builder("probe"), name, None)), name
