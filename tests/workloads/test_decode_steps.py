"""Consecutive Qwen3 decode steps (reduced instance of nkigen_lite/workloads/qwen3_decode.py):
the caches one step returns (updated in place) are the next step's inputs, as a generation
loop uses them. Three steps at positions 5, 6, 7 on the NKI interpreter and the simulator
match the float64 reference chained the same way; step 2 attends over the rows steps 0 and 1
appended. Tolerance: bf16, rtol 2e-2, atol 2e-2 · max(1, max|reference|)."""

import numpy as np

import nkigen_lite as nk
from nkigen_lite.testing.tolerance import assert_close
from nkigen_lite.workloads import get_workload

W = get_workload("qwen3_decode")
SMALL = {"hidden": 256, "heads": 4, "kv_heads": 2, "head_dim": 64, "inter": 512, "max_seq": 128}


def test_three_steps_chain_their_caches():
    g = W.graph(**SMALL)
    k = nk.compile(g)
    ins = W.inputs(g, seed=11)
    x = [(np.random.default_rng(i).standard_normal((1, 256))).astype(ins["x"].dtype) for i in range(3)]
    state = {how: {"k_cache": ins["k_cache"], "v_cache": ins["v_cache"]} for how in ("ref", "run", "sim")}
    for step in range(3):
        pos = np.asarray(5 + step, np.int32)
        outs = {}
        for how, run in (("ref", W.reference), ("run", k.run), ("sim", lambda **a: nk.simulate(k, a))):
            a = {**ins, "x": x[step], "pos": pos, **state[how]}
            outs[how] = run(**a) if how != "run" else run(a)
            state[how] = {"k_cache": outs[how]["k_cache_out"], "v_cache": outs[how]["v_cache_out"]}
            if how == "ref":  # the reference chain carries bf16 caches, as the kernel does
                state[how] = {n: c.astype(ins["k_cache"].dtype) for n, c in state[how].items()}
        for how in ("run", "sim"):
            for name in ("y", "k_cache_out", "v_cache_out"):
                ref = outs["ref"][name]
                scale = max(1.0, float(np.abs(ref).max()))
                assert_close(
                    outs[how][name],
                    ref,
                    nk.bfloat16,
                    what=f"step {step} {name} ({how})",
                    rtol=2e-2,
                    atol=2e-2 * scale,
                )
    # rows 5..7 now hold the three steps' keys; the others are the original cache
    for how in ("run", "sim"):
        kc = state[how]["k_cache"]
        np.testing.assert_array_equal(kc[:, :5], ins["k_cache"][:, :5])
        np.testing.assert_array_equal(kc[:, 8:], ins["k_cache"][:, 8:])
        assert not np.array_equal(kc[:, 5:8], ins["k_cache"][:, 5:8])
