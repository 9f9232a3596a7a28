"""The on-disk kernel cache: hits across JitFunctions and processes, atomic writes, corrupt
entries recompiled (never trusted), keys that change with the knobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite import cache


def _fn(x):
    return np.exp(x) * 2


X = np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64)
REF = np.exp(X.astype(np.float64)) * 2  # f32 exp: rtol 1e-6 below


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("NKIGEN_LITE_CACHE", str(d))
    return d


def _entries(d):
    return sorted(p for p in os.listdir(d) if p.endswith(".npz"))


def test_second_jit_function_loads_from_disk(cache_dir):
    a = nk.jit(_fn)
    np.testing.assert_allclose(a(X), REF, rtol=1e-6)
    assert a.counts["compiles"] == 1 and len(_entries(cache_dir)) == 1
    b = nk.jit(_fn)
    np.testing.assert_allclose(b(X), REF, rtol=1e-6)
    assert b.counts == {"traces": 1, "compiles": 0, "disk_hits": 1, "memory_hits": 0}
    assert not [p for p in os.listdir(cache_dir) if p.endswith(".tmp")]


def test_knobs_and_cache_off_change_what_is_used(cache_dir, monkeypatch):
    nk.jit(_fn)(X)
    k = nk.jit(_fn, knobs={"x": {"tile_size": 32}})
    k(X)
    assert k.counts["compiles"] == 1 and len(_entries(cache_dir)) == 2
    monkeypatch.setenv("NKIGEN_LITE_CACHE", "off")
    off = nk.jit(_fn)
    off(X)
    assert off.counts["compiles"] == 1 and len(_entries(cache_dir)) == 2


def _corrupt_truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_flip(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))


def _corrupt_garbage(path):
    path.write_bytes(b"not a zip file at all")


def _corrupt_consistent_but_illegal(path):
    """A well-formed entry (right checksum) whose NKI IR breaks a hardware rule: the loader
    must re-verify, not trust the checksum."""
    with np.load(path) as z:
        meta = json.loads(bytes(z["meta"]).decode())
    ir = meta["stage_ir"]["deallocs"]
    i = ir.index("tile<")
    j = ir.index("x", i)
    meta["stage_ir"]["deallocs"] = ir[: i + 5] + "256" + ir[j:]
    text = json.dumps(meta, sort_keys=True)
    digest = cache._digest(text, {})
    np.savez(
        path, meta=np.frombuffer(text.encode(), np.uint8), digest=np.frombuffer(digest.encode(), np.uint8)
    )


@pytest.mark.parametrize(
    "corrupt", [_corrupt_truncate, _corrupt_flip, _corrupt_garbage, _corrupt_consistent_but_illegal]
)
def test_corrupt_entry_is_recompiled_and_replaced(corrupt, cache_dir):
    nk.jit(_fn)(X)
    (name,) = _entries(cache_dir)
    path = cache_dir / name
    corrupt(path)
    f = nk.jit(_fn)
    with pytest.warns(nk.NkWarning, match="ignoring corrupt cache entry"):
        y = f(X)
    np.testing.assert_allclose(y, REF, rtol=1e-6)
    assert f.counts["compiles"] == 1 and f.counts["disk_hits"] == 0
    g = nk.jit(_fn)  # the entry was rewritten whole
    g(X)
    assert g.counts["disk_hits"] == 1


def test_key_depends_on_graph_compiler_and_knobs():
    k1 = cache.cache_key("graph A", "trn2", None)
    assert k1 == cache.cache_key("graph A", "trn2", {})
    assert (
        len(
            {
                k1,
                cache.cache_key("graph B", "trn2", None),
                cache.cache_key("graph A", "trn2", {"x": {"tile_size": 64}}),
            }
        )
        == 3
    )
    assert cache.compiler_fingerprint().startswith(nk.__version__ + "+")


SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import nkigen_lite as nk

    def f(x):
        return np.exp(x) * 2

    x = np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64)
    j = nk.jit(f)
    y = j(x)
    ok = np.allclose(y, np.exp(x.astype(np.float64)) * 2, rtol=1e-6, atol=0)
    print(ok, j.counts["compiles"], j.counts["disk_hits"])
""")


def test_processes_sharing_the_cache(tmp_path):
    """Three processes compile the same kernel at once into one directory: every one gets a
    correct result, and the directory holds one whole entry (no temporary files left)."""
    d = tmp_path / "shared"
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "NKIGEN_LITE_CACHE": str(d)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert all(o[0].split()[0] == "True" for o in outs), outs
    assert sorted(os.listdir(d)) == _entries(d) and len(_entries(d)) == 1
    again = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert again.stdout.split() == ["True", "0", "1"]  # loaded, not compiled
