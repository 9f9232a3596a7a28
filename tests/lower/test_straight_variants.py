"""straight_variants.best_variant: the shortest subset of moves whose kernel passes the verifier
wins, and the verifier is asked only about a trial that would win (a slower trial is never
verified; a faster illegal one is skipped). Moves here tag the trial graph's name so that the
stand-in makespan and verifier can tell the subsets apart."""

import numpy as np

import nkigen_lite as nk
from nkigen_lite.ir.errors import VerifyError
from nkigen_lite.transforms.lower import straight_variants


def _move(k):
    def move(block, _target):
        block.parent.parent.name += f"_m{k}"
        return True

    return move


def test_only_a_trial_that_would_win_is_verified(monkeypatch):
    g = nk.compile(lambda x: x * 2.0, np.zeros((128, 64), np.float32)).nki
    base = g.name
    # (): 10, (0,): 12 (slower: never verified), (1,): 8 but illegal, (0, 1): 9 legal
    times = {base: 10.0, f"{base}_m0": 12.0, f"{base}_m1": 8.0, f"{base}_m0_m1": 9.0}
    verified = []

    def fake_verify(trial, _target):
        verified.append(trial.name)
        if trial.name == f"{base}_m1":
            raise VerifyError("too large for SBUF")

    monkeypatch.setattr(straight_variants, "_qualifies", lambda graph: True)
    monkeypatch.setattr(straight_variants, "verify", fake_verify)
    chosen = straight_variants.best_variant(
        g, nk.TRN2, [_move(0), _move(1)], lambda graph: None, lambda graph: times[graph.name]
    )
    assert chosen == (0, 1)
    assert g.name == f"{base}_m0_m1"
    assert verified == [f"{base}_m1", f"{base}_m0_m1"]
