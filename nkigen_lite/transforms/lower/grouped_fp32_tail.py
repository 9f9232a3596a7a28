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

The same search picks how many unit groups take their row sums from ``Pᵀ V`` (grouped_attention.py
``sum_tail``): the exp's accumulated row sum costs ScalarE 64 cycles per exp (a third of a
128-key exp), while a column of ones appended to V makes the value product also give each row's
sum at no TensorE cost (129 moving columns instead of 128); but 1/l then waits for the product,
one more step in the unit's chain, so the last ``sum_tail`` groups keep the exp's sum.
"""

from __future__ import annotations

from ...nki.target import TRN2
from ...perf.schedule import Scheduler

# (fp32 tail, sum tail) pairs tried in turn: unit groups at the end with an fp32 Pᵀ V, and at the
# end keeping the exp's row sum (None: every group keeps it). Issue 12's causal GQA (16 / 8 heads,
# s128 d128 bf16): fp32 tails 0-3 with the exp's sums 13.57 / 13.39 / 13.36 / 13.31 us; with
# the sums from Pᵀ V but for the last 3 groups, fp32 tails 3 / 4 / 5: 13.34 / 13.48 / 13.15 us
# (sum tails 0-8 x fp32 tails 0-7 span 13.15-14.08 us; 0: 13.61-14.08)
TAIL_VARIANTS = ((0, None), (1, None), (2, None), (3, None), (3, 3), (4, 3), (5, 3))


def scheduled_ns(graph) -> float:
    """The scheduled estimate of a kernel graph on trn2 (ns)."""
    sched = Scheduler(TRN2)
    sched.run(graph.body)
    return sched.makespan


def build_shortest(kernel_cls, types, attrs):
    """The kernel graph of ``kernel_cls(types, attrs, fp32_tail=t, sum_tail=u)`` for the ``(t, u)``
    in ``TAIL_VARIANTS`` the cost model schedules shortest, ties to the earlier (f32 kernels,
    which have no hi / lo split, build once)."""
    best = None
    for tail, sums in TAIL_VARIANTS:
        kern = kernel_cls(types, attrs, fp32_tail=tail, sum_tail=sums)
        if (tail and not kern.fp32_tail) or (sums is not None and kern.sum_tail is None):
            continue
        graph = kern.build()
        t = scheduled_ns(graph)
        if best is None or t < best[0]:
            best = (t, graph)
    return best[1]
