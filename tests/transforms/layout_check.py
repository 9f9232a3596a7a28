"""An independent check that a LayoutAnalysis satisfies every op's constraints."""

from __future__ import annotations

from nkigen_lite.ir.graph import ReturnOp
from nkigen_lite.tensor import ops as T
from nkigen_lite.transforms.layout.constraints import op_constraints
from nkigen_lite.transforms.layout.solver import merge_roles


def assert_layout_consistent(graph, analysis, partitions: int = 128) -> None:
    """Every value has one role per dim; every op's links and requirements hold (reshapes
    either map their groups or are recorded boundaries); tiles fit the partitions. The analysis
    covers the graph's top block: a tensor.for_loop body is laid out when it is lowered."""
    values = list(graph.inputs) + [r for op in graph.body for r in op.results]
    for v in values:
        roles = analysis.roles_of(v)
        assert len(roles) == v.ndim and set(roles) <= {"I", "P", "F"}, (v, roles)
        assert 1 <= analysis.partition_tile[v] <= partitions
    for op in graph.body:
        if isinstance(op, ReturnOp):
            continue
        c = op_constraints(op)
        res = analysis.roles_of(op.results[0]) if op.results else ()
        for d, role in c.results:
            assert res[d] == role, f"{op!r}: result dim {d} is {res[d]}, needs {role}"
        for i, cons in enumerate(c.operands):
            mine = analysis.roles_of(op.operand(i))
            for item in cons:
                kind, d = item[0], item[1]
                if kind == "req":
                    assert mine[d] == item[2], f"{op!r}: operand {i} dim {d} is {mine[d]}"
                elif kind == "res":
                    assert mine[d] == res[item[2]], f"{op!r}: operand {i} dim {d} vs result"
                else:
                    other = analysis.roles_of(op.operand(item[2]))[item[3]]
                    assert mine[d] == other, f"{op!r}: operand {i} dim {d} vs operand {item[2]}"
        if isinstance(op, T.ReshapeOp) and op not in analysis.boundaries:
            src, dst = analysis.roles_of(op.operand(0)), res
            for gi, gj in c.reshape_groups:
                one, many = (
                    (src[gi[0]], [dst[d] for d in gj]) if len(gi) == 1 else (dst[gj[0]], [src[d] for d in gi])
                )
                assert merge_roles(many) == one, f"{op!r}: group {gi} -> {gj}"
    for conv in analysis.conversions:
        assert conv.parent is graph.body
        assert analysis.roles_of(conv.operand(0)) != analysis.roles_of(conv.result), conv
