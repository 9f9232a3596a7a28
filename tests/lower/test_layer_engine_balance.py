"""Engines of a decoder layer's movable elementwise instructions chosen against the scheduled
estimate (engine_balance.searched: kernels with matmuls above MAX_INSTRUCTIONS static
instructions). Counts on the NKI IR of the Qwen3-0.6B layer of benchmarks/model_targets.py;
results bit for bit equal to the kernel without the moves on the NKI interpreter (a moved
instruction computes the same bits on every engine it may run on)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import ForiLoopOp
from nkigen_lite.transforms.lower import deallocs, engine_balance

from .qwen3_kernels import qwen3_layer_kernel


def _qwen(seq):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from model_targets import _qwen

    return _qwen(seq)


def _engines(kern) -> dict:
    """Executed instructions per engine (loops multiplied out)."""
    out: dict = {}

    def walk(block, mult):
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.body, mult * op.trip_count)
            elif getattr(op, "engine", None):
                out[op.engine] = out.get(op.engine, 0) + mult

    walk(kern.nki.body, 1)
    return out


def assert_same_outputs(g, k, plain) -> None:
    """``k`` and ``plain`` (two compiles of ``g``) give bit-identical outputs on the NKI
    interpreter for bf16 inputs of N(0, 0.05)."""
    rng = np.random.default_rng(0)
    ins = {
        n: (rng.standard_normal(v.type.shape) * 0.05).astype(ml_dtypes.bfloat16)
        for n, v in zip(g.input_names, g.inputs)
    }
    (name,) = list(g.outputs)
    np.testing.assert_array_equal(k.run(ins)[name], plain.run(ins)[name])


def test_layer_engines_are_searched_and_the_schedule_is_shorter(monkeypatch):
    """seq 128: some elementwise instructions move between VectorE, GpSimd and ScalarE; the
    executed instructions, DMA bytes and TensorE work are unchanged, the schedule shorter, and
    the outputs bit for bit those of the unmoved kernel."""
    g = _qwen(128)
    k = qwen3_layer_kernel(128)  # the session's default compile of g
    monkeypatch.setattr(deallocs, "balance_engines", lambda *a, **kw: 0)
    plain = nk.compile(g)
    assert k.stats().instructions_dynamic == plain.stats().instructions_dynamic
    assert k.stats().dma_bytes == plain.stats().dma_bytes
    ek, ep = _engines(k), _engines(plain)
    assert ek["tensor"] == ep["tensor"] and ek != ep
    assert k.estimate().scheduled_ns < plain.estimate().scheduled_ns
    assert_same_outputs(g, k, plain)


def test_small_matmul_kernels_keep_their_engines():
    """A kernel with matmuls of at most MAX_INSTRUCTIONS static instructions (one matmul
    1024x4096x1024 bf16: 312) is not searched; the layer at seq 128 (718) is."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from model_targets import TARGETS

    build = dict(TARGETS)["matmul 1024x4096x1024 bf16"]
    for graph, want in ((build(), False), (None, True)):  # the layer: the session's seq-128 kernel
        instrs: list = []
        kern = qwen3_layer_kernel(128) if want else nk.compile(graph)
        engine_balance._instructions(kern.nki.body, instrs)
        assert not engine_balance.elementwise_kernel(instrs)
        assert engine_balance.searched(instrs, staged=True) is want, len(instrs)
        assert not engine_balance.searched(instrs)  # the straight-line kernels' search: no
