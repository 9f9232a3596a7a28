"""Imports go one way: each subpackage imports only the layers below it (docs/architecture.md).

ir is the core; the tensor and NKI dialects and the simulator stand on it alone; the cost model
reads NKI; transforms go from tensor (and parallel, whose collective tensor ops they lower) to
NKI, consulting the cost model where a lowering orders instructions by it; emit turns NKI into
source for the simulator.
The front door (compiler, cli, package ``__init__``) may import anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nkigen_lite

ROOT = Path(nkigen_lite.__file__).parent
ALLOWED = {
    "ir": set(),
    "tensor": {"ir"},
    "nki": {"ir"},
    "nki_sim": {"ir"},
    "perf": {"ir", "nki"},
    # parallel: the collective tensor ops; perf: the cost model orders straight-line kernels
    # (transforms/lower/emit_order.py)
    "transforms": {"ir", "tensor", "nki", "parallel", "perf"},
    "emit": {"ir", "nki", "nki_sim"},
    "testing": {"ir", "tensor"},
    "workloads": {"ir", "tensor"},
    "parallel": {"ir", "tensor"},
}


def imported_subpackages(source: str, rel: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, nkigen_lite subpackage) for every import in ``source``, the text of the file at
    ``rel`` (its path parts under nkigen_lite/) that reaches the package root."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            parts = (node.module or "").split(".")
            if parts[0] == "nkigen_lite" and len(parts) > 1:
                out.append((node.lineno, parts[1]))
        elif node.level >= len(rel):  # the dots climb to nkigen_lite/ itself
            names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            out += [(node.lineno, n) for n in names]
    return out


def test_subpackages_import_only_the_layers_below_them():
    wrong = []
    for pkg, allowed in ALLOWED.items():
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).parts
            for line, target in imported_subpackages(path.read_text(), rel):
                internal = (ROOT / target).is_dir() or (ROOT / f"{target}.py").is_file()
                if target != pkg and internal and target not in allowed:
                    wrong.append(f"nkigen_lite/{'/'.join(rel)}:{line} imports {target}")
    assert wrong == [], (
        f"imports against the layering (allowed: {ALLOWED}); move the shared "
        "code down a layer:\n" + "\n".join(wrong)
    )


def test_the_checker_sees_wrong_way_imports():
    src = (
        "from ...tensor.ops import TensorOp\nfrom ..types import X\n"
        "from nkigen_lite.compiler import Kernel\nfrom ... import emit\n"
    )
    assert imported_subpackages(src, ("nki", "ops", "base.py")) == [
        (1, "tensor"),
        (3, "compiler"),
        (4, "emit"),
    ]
    assert imported_subpackages("from ..ir import x\n", ("nki", "verify.py")) == [(1, "ir")]
