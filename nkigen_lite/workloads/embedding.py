"""Token embedding lookup: rows of a (vocab, hidden) bf16 table picked by int32 token ids
(Qwen3: vocab 151,669 rows of 1,024). Lowered with indirect DMAs that move only the selected
rows: 128 ids read 128 rows (256 KiB) of the table, never the table."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import bfloat16, get_dtype, int32
from ..tensor.builder import Builder
from .registry import Workload, register


def build_embedding(vocab=151669, hidden=1024, tokens=128, dtype=bfloat16):
    b = Builder("embedding")
    table = b.add_input("table", (vocab, hidden), get_dtype(dtype))
    ids = b.add_input("ids", (tokens,), int32)
    b.set_outputs({"y": b.gather_rows(table, ids)})
    return b.graph


def embedding_reference(table, ids):
    return {"y": np.asarray(table, np.float64)[np.asarray(ids, np.int64)]}


class _Embedding(Workload):
    """Ids are drawn over the whole vocabulary (the default inputs draw small integers)."""

    def inputs(self, graph, seed: int = 0) -> dict[str, np.ndarray]:
        out = super().inputs(graph, seed)
        vocab = graph.inputs[0].type.shape[0]
        rng = np.random.default_rng(seed + 1)
        out["ids"] = rng.integers(0, vocab, out["ids"].shape).astype(np.int32)
        return out


EMBEDDING = register(
    _Embedding(
        "embedding",
        build_embedding,
        embedding_reference,
        {"vocab": 151669, "hidden": 1024, "tokens": 128},
        "token embedding gather: 128 ids from a (151669, 1024) bf16 table (indirect DMA)",
    )
)
