"""Tensor parallelism and LNC=2, as the cost model sees them (docs/costmodel.md, docs/parallel.md).

Part 1, the Qwen3-0.6B layer (bf16, one sequence of S tokens) at TP = 1, 2, 4 (the Megatron plan
QWEN3_TP_PLAN; TP = 1 is the unsharded layer): per rank, the HBM traffic (bytes DMAs and
collectives read and write in HBM), the DMA bytes, the collectives and the bytes the rank sends
in them (communication volume), the modelled time, the part of it the collectives take (the
communication fraction) and the modelled speed-up over TP = 1.

Part 2, the Qwen3-30B-A3B MoE block (the ``moe`` workload: 128 experts, top-8, bf16, a few
tokens) at TP = 1, 2, 4 with MOE_TP_PLAN (experts split along their intermediate dimension,
router replicated, one all_reduce): the same columns plus the rank's stated minimum traffic
(its share of the selected experts' weights once per selection, the router, the activations).

Part 2b, the same block with expert parallelism, MOE_EP_PLAN (parallel/moe_ep.py: experts and
tokens sharded, all_gather + all_to_all dispatch, reduce_scatter combine) on the dense-combine
form of the block at EP = 2, 4; the EP = 1 row is the unsharded gathered block (the same row as
part 2's TP = 1), so the speed-ups of both plans are over the same single-rank kernel. The
stated minimum of an EP row is the rank's E/N experts' weights, the router and its tokens.
Part 2c, the decode variant MOE_EP_REPLICATED_PLAN (experts sharded, tokens replicated, one
all_reduce), which also runs one token.

Part 3, LNC=2 (``nk.split_cores``) for the softmax and rmsnorm of a 2048 x 4096 f32 tensor: DMA
bytes per core and the modelled time, against the one-core kernel.

Figures come from the cost model, never from wall-clock time. Run:

    uv run python benchmarks/tensor_parallel.py [--seq 128 512] [--moe-tokens 1 8 64] [--ep-tokens 8 64]
        [--ep-decode-tokens 1 8] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nkigen_lite as nk  # noqa: E402
from nkigen_lite.parallel.moe import MOE_TP_PLAN  # noqa: E402
from nkigen_lite.parallel.moe_ep import MOE_EP_PLAN, MOE_EP_REPLICATED_PLAN  # noqa: E402
from nkigen_lite.parallel.qwen3 import QWEN3_TP_PLAN, build_qwen3_layer  # noqa: E402
from nkigen_lite.workloads.moe import build_moe  # noqa: E402
from nkigen_lite.workloads.moe_dense import build_moe_dense  # noqa: E402


def tp_rows(seq: int, g=None, plan=QWEN3_TP_PLAN, sharded=None) -> list[dict]:
    """One row per TP degree for the Qwen3-0.6B layer of ``seq`` tokens (or graph ``g`` sharded
    by ``plan``; rank 0's kernel; every rank's kernel has the same shapes). ``sharded``: the
    graph to shard at TP > 1 when it is not ``g`` (``g`` is then only the TP = 1 row)."""
    g = build_qwen3_layer(seq=seq, dtype=nk.bfloat16) if g is None else g
    rows, base = [], None
    for tp in (1, 2, 4):
        graph = g if tp == 1 else nk.shard(sharded or g, world=tp, plan=plan).graphs[0]
        k = nk.compile(graph)
        s, e = k.stats(), k.estimate()
        comm = e.by_engine_ns.get("collective", 0.0)
        base = base or e.scheduled_ns
        rows.append(
            {
                "seq": seq,
                "tp": tp,
                "hbm_bytes": s.hbm_bytes,
                "min_hbm_bytes": s.min_hbm_bytes,
                "dma_bytes": s.dma_bytes,
                "collectives": s.collective_count,
                "comm_bytes": s.collective_bytes,
                "time_us": e.scheduled_ns / 1e3,
                "comm_us": comm / 1e3,
                "comm_fraction": comm / e.scheduled_ns,
                "speedup": base / e.scheduled_ns,
            }
        )
    return rows


def moe_rows(tokens: int) -> list[dict]:
    """One row per TP degree for the Qwen3-30B-A3B MoE block of ``tokens`` tokens (compiled
    only: the expert tables are never allocated)."""
    return tp_rows(tokens, build_moe(tokens=tokens), MOE_TP_PLAN)


def ep_rows(tokens: int, plan=MOE_EP_PLAN) -> list[dict]:
    """One row per EP degree for the MoE block of ``tokens`` tokens with ``plan`` (an expert
    parallel plan of parallel/moe_ep.py; EP = 1: the unsharded gathered block; compiled only)."""
    return tp_rows(tokens, build_moe(tokens=tokens), plan, build_moe_dense(tokens=tokens))


def _softmax(n, m):
    b = nk.Builder("softmax")
    x = b.add_input("x", (n, m), nk.float32)
    e = b.exp(x - b.max(x, axis=-1, keepdims=True))
    b.set_outputs({"y": e / b.sum(e, axis=-1, keepdims=True)})
    return b.graph


def _rmsnorm(n, m):
    b = nk.Builder("rmsnorm")
    x = b.add_input("x", (n, m), nk.float32)
    w = b.add_input("w", (m,), nk.float32)
    b.set_outputs({"y": x / b.sqrt(b.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w})
    return b.graph


def lnc_rows() -> list[dict]:
    rows = []
    for name, make in (("softmax", _softmax), ("rmsnorm", _rmsnorm)):
        k1 = nk.compile(make(2048, 4096))
        k2 = nk.split_cores(k1, 2)
        t1, t2 = k1.estimate().scheduled_ns, k2.estimate().scheduled_ns
        rows.append(
            {
                "kernel": f"{name} 2048x4096 f32",
                "bytes_lnc1": k1.stats().dma_bytes,
                "bytes_per_core_lnc2": k2.stats().dma_bytes,
                "time_lnc1_us": t1 / 1e3,
                "time_lnc2_us": t2 / 1e3,
                "ratio": t2 / t1,
            }
        )
    return rows


def _table(rows: list[dict], cols: list[tuple[str, str, str]]) -> list[str]:
    out = ["| " + " | ".join(h for h, _, _ in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(format(r[k], f) for _, k, f in cols) + " |")
    return out


TP_COLS = [
    ("S", "seq", "d"),
    ("TP", "tp", "d"),
    ("HBM traffic / rank (B)", "hbm_bytes", ",d"),
    ("DMA bytes / rank", "dma_bytes", ",d"),
    ("collectives", "collectives", "d"),
    ("comm volume sent / rank (B)", "comm_bytes", ",d"),
    ("modelled time (us)", "time_us", ",.1f"),
    ("comm time (us)", "comm_us", ",.1f"),
    ("comm fraction", "comm_fraction", ".3f"),
    ("speed-up vs TP=1", "speedup", ".2f"),
]
MOE_COLS = [
    ("tokens", "seq", "d"),
    *TP_COLS[1:3],
    ("stated minimum / rank (B)", "min_hbm_bytes", ",d"),
    *TP_COLS[3:],
]
LNC_COLS = [
    ("kernel", "kernel", "s"),
    ("DMA bytes, LNC=1", "bytes_lnc1", ",d"),
    ("DMA bytes per core, LNC=2", "bytes_per_core_lnc2", ",d"),
    ("modelled time LNC=1 (us)", "time_lnc1_us", ",.1f"),
    ("modelled time LNC=2 (us)", "time_lnc2_us", ",.1f"),
    ("LNC=2 / LNC=1", "ratio", ".3f"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", type=int, nargs="+", default=[128, 512])
    ap.add_argument("--moe-tokens", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--ep-tokens", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--ep-decode-tokens", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args()
    lines = ["Qwen3-0.6B layer, bf16, per rank:", ""]
    lines += _table([r for s in args.seq for r in tp_rows(s)], TP_COLS)
    lines += ["", "Qwen3-30B-A3B MoE block, bf16, per rank:", ""]
    lines += _table([r for t in args.moe_tokens for r in moe_rows(t)], MOE_COLS)
    lines += ["", "Qwen3-30B-A3B MoE block, expert parallel (MOE_EP_PLAN), bf16, per rank:", ""]
    ep_cols = [(h.replace("TP", "EP"), k, f) for h, k, f in MOE_COLS]
    lines += _table([r for t in args.ep_tokens for r in ep_rows(t)], ep_cols)
    lines += ["", "Qwen3-30B-A3B MoE block, expert parallel, tokens replicated (MOE_EP_REPLICATED_PLAN):", ""]
    decode = [r for t in args.ep_decode_tokens for r in ep_rows(t, MOE_EP_REPLICATED_PLAN)]
    lines += _table(decode, ep_cols)
    lines += ["", "LNC=2:", ""] + _table(lnc_rows(), LNC_COLS)
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
