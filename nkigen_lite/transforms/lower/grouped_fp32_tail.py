"""How many of a 16-bit ``tensor.grouped_attention`` kernel's last unit groups run ``Pᵀ V`` as one
fp32 matmul instead of the hi / lo pair of 16-bit matmuls: the count whose kernel the cost model
schedules shortest.

The hi / lo split (grouped_attention.py ``evacuate_pt``) halves a unit's TensorE time for
``Pᵀ V`` but adds a VectorE subtract reading PSUM after the hi copy -- one more pass on the
PSUM-reading engines and one more cross-engine step in the unit's chain (Pᵀ -> hi -> lo ->
``P V``). The last units' chains end the kernel (their ``O · 1/l`` and the store's fixed DMA
cost follow them), and by then TensorE has time to spare: an fp32 product (4x the cycles, V
widened on GpSimd once per V tile, exact) for those units shortens the tail. Each count in
``FP32_TAILS`` builds the kernel once; the shortest scheduled estimate (perf/schedule.py) wins,
ties to the smaller count, so the result is never slower under the model than all hi / lo.
Numerics: the fp32 product is the one the hi / lo pair approximates (an error <= 2^-16 of P).
"""

from __future__ import annotations

from ...nki.target import TRN2
from ...perf.schedule import Scheduler

# unit groups at the end with an fp32 Pᵀ V, tried in turn (issue 12's causal GQA, 16 / 8 heads
# s128 d128 bf16, with 0 / 1 / 2 / 3 / 4 / 5: 13.56 / 13.69 / 13.49 / 13.37 / 13.37 / 13.41 us)
FP32_TAILS = (0, 1, 2, 3)


def scheduled_ns(graph) -> float:
    """The scheduled estimate of a kernel graph on trn2 (ns)."""
    sched = Scheduler(TRN2)
    sched.run(graph.body)
    return sched.makespan


def build_shortest(kernel_cls, types, attrs):
    """The kernel graph of ``kernel_cls(types, attrs, fp32_tail=t)`` for the ``t`` in
    ``FP32_TAILS`` the cost model schedules shortest (only 0 when the kernel has no hi / lo
    split: f32)."""
    best = None
    for tail in FP32_TAILS:
        kern = kernel_cls(types, attrs, fp32_tail=tail)
        if tail and not kern.fp32_tail:
            break
        graph = kern.build()
        t = scheduled_ns(graph)
        if best is None or t < best[0]:
            best = (t, graph)
    return best[1]
