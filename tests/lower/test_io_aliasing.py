"""IO aliasing: an output that updates an input's buffer in place.

References are NumPy updates of copies of the inputs (exact: every aliased output here is a
copy of existing bytes, so the comparisons are bit-exact); the one float computation (the
``y`` of the traced step, an f32 sum over 16 terms) uses the f32 tolerance of
``nkigen_lite.testing.tolerance`` (1e-5).
"""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import BuildError, VerifyError
from nkigen_lite.testing.tolerance import assert_close

BF16 = ml_dtypes.bfloat16


def _kv_graph(shape=(8, 64, 128), pos=5, dtype=nk.bfloat16) -> nk.Graph:
    """cache_out = cache with row ``pos`` of axis 1 replaced by k (the static KV-cache write)."""
    h, s, d = shape
    b = nk.Builder("kv")
    cache = b.add_input("cache", shape, dtype)
    k = b.add_input("k", (h, 1, d), dtype)
    new = b.concat([cache[:, :pos], k, cache[:, pos + 1 :]], axis=1)
    b.set_outputs({"cache_out": new}, aliases={"cache_out": "cache"})
    return b.graph


def _kv_inputs(shape=(8, 64, 128), seed=0):
    rng = np.random.default_rng(seed)
    cache = rng.standard_normal(shape).astype(BF16)
    k = rng.standard_normal((shape[0], 1, shape[2])).astype(BF16)
    return cache, k


def test_aliases_print_parse_and_verify():
    g = _kv_graph()
    text = str(g)
    assert "return cache_out = %concat (aliases cache)" in text
    again = nk.parse(text)
    assert str(again) == text
    assert again.aliases == {"cache_out": "cache"}
    again.verify()
    assert g.clone().aliases == {"cache_out": "cache"}


def test_kv_cache_write_in_place_moves_only_the_new_row():
    """The (8, 4096, 128) bf16 cache: the kernel writes k into the cache buffer and moves only
    k's bytes (8 x 128 x 2 = 2 KiB), not the 8 MiB cache."""
    shape = (8, 4096, 128)
    k = nk.compile(_kv_graph(shape, pos=1234))
    cache, kk = _kv_inputs(shape)
    before = cache.copy()
    ref = cache.copy()
    ref[:, 1234:1235] = kk
    stats = k.stats()
    assert stats.dma_bytes == kk.nbytes == 2048
    assert stats.dma_count == 1
    assert stats.min_hbm_bytes == cache.nbytes + kk.nbytes  # the aliased buffer counts once
    assert k.nki.aliases == {"cache_out": "cache"}
    assert k.nki.outputs["cache_out"] is k.nki.input("cache")  # the input buffer itself
    for out in (k.run({"cache": cache, "k": kk}), nk.simulate(k, {"cache": cache, "k": kk})):
        assert out["cache_out"].dtype == BF16
        assert np.array_equal(out["cache_out"].view(np.uint16), ref.view(np.uint16))
    assert np.array_equal(cache.view(np.uint16), before.view(np.uint16))  # caller's array kept
    tensor = nk.run(_kv_graph(shape, pos=1234), {"cache": cache, "k": kk})
    assert np.array_equal(tensor["cache_out"].view(np.uint16), ref.view(np.uint16))


def test_kernel_io_custom_call_module_and_cli_record_the_alias():
    k = nk.compile(_kv_graph())
    io = k.io
    assert io.input_names == ["cache", "k"] and io.output_names == ["cache_out"]
    assert io.aliases == {"cache_out": "cache"} and io.alias_of("cache_out") == "cache"
    assert io.inputs[0].shape == (8, 64, 128) and io.inputs[0].dtype is nk.bfloat16
    assert "cache_out: 8x64x128 bf16 (in place of cache)" in str(io)
    d = k.custom_call()
    assert d["aliases"] == [{"result": 0, "operand": 0}]
    assert d["io"]["aliases"] == [{"output": "cache_out", "input": "cache"}]
    json.dumps(d)  # serialisable
    src = k.nki_source()
    assert "ALIASES = {'cache_out': 'cache'}" in src
    assert "return cache" in src


def test_alias_of_a_full_rewrite_is_copied_after_the_reads():
    """x_out = x * 2 aliased to x (not an update of blocks) and y reading x: computed aside,
    then copied into x's buffer after every read, so y sees the old x."""
    b = nk.Builder("scale")
    x = b.add_input("x", (256, 64), nk.float32)
    b.set_outputs({"y": b.sum(x, axis=1), "x_out": x * 2.0}, aliases={"x_out": "x"})
    k = nk.compile(b.graph)
    xv = np.random.default_rng(1).standard_normal((256, 64)).astype(np.float32)
    before = xv.copy()
    for out in (k.run({"x": xv}), nk.simulate(k, {"x": xv})):
        assert np.array_equal(out["x_out"], before * 2)
        assert_close(out["y"], before.astype(np.float64).sum(1), nk.float32, what="y")
    assert np.array_equal(xv, before)
    assert k.nki.outputs["x_out"] is k.nki.input("x")


def test_update_read_elsewhere_is_not_done_in_place_but_stays_correct():
    """cache is also read by another output: the write cannot go first, so the update is
    computed aside and copied in last; the other output sees the old cache."""
    b = nk.Builder("kv2")
    cache = b.add_input("cache", (4, 16, 32), nk.float32)
    k = b.add_input("k", (4, 1, 32), nk.float32)
    new = b.concat([cache[:, :3], k, cache[:, 4:]], axis=1)
    b.set_outputs({"old_row": cache[:, 3:4] + 0.0, "cache_out": new}, aliases={"cache_out": "cache"})
    kern = nk.compile(b.graph)
    rng = np.random.default_rng(2)
    cv = rng.standard_normal((4, 16, 32)).astype(np.float32)
    kv = rng.standard_normal((4, 1, 32)).astype(np.float32)
    ref = cv.copy()
    ref[:, 3:4] = kv
    for out in (kern.run({"cache": cv, "k": kv}), nk.simulate(kern, {"cache": cv, "k": kv})):
        assert np.array_equal(out["cache_out"], ref)
        assert np.array_equal(out["old_row"], cv[:, 3:4])


@pytest.mark.parametrize(
    "outputs, aliases, message",
    [
        ({"c": "new"}, {"c": "nope"}, "'nope', which is not an input of @bad"),
        ({"c": "new"}, {"d": "x"}, "'d' is not an output of @bad"),
        ({"c": "half"}, {"c": "x"}, "output 'c' (16x8 f16) cannot alias input 'x' (16x8 f32)"),
        ({"c": "row"}, {"c": "x"}, "output 'c' (1x8 f32) cannot alias input 'x' (16x8 f32)"),
        ({"c": "new", "d": "new2"}, {"c": "x", "d": "x"}, "input 'x' is aliased by two outputs"),
        ({"c": "new", "d": "x"}, {"c": "x"}, "output 'd' returns input 'x' unchanged"),
    ],
)
def test_alias_rule_violations_name_the_values(outputs, aliases, message):
    b = nk.Builder("bad")
    x = b.add_input("x", (16, 8), nk.float32)
    vals = {"new": x + 1.0, "new2": x * 3.0, "half": b.cast(x, nk.float16), "row": x[0:1], "x": x}
    with pytest.raises(BuildError, match=message.replace("(", r"\(").replace(")", r"\)")):
        b.set_outputs({n: vals[v] for n, v in outputs.items()}, aliases=aliases)


def test_parsed_alias_to_a_missing_input_is_a_verify_error():
    text = "graph @g(%x: tensor<4xf32>) {\n  return y = %x (aliases z)\n}\n"
    with pytest.raises(VerifyError, match="'z', which is not an input of @g"):
        nk.parse(text).verify()


def test_nki_verifier_inputs_are_writable_only_when_aliased():
    def kernel(aliased: bool):
        b = nk.nki.Builder("inc")
        x = b.add_input("x", (128, 64), nk.float32)
        t = b.alloc((128, 64))
        b.dma_copy(dst=t, src=x)
        b.tensor_scalar(dst=t, data=t, op0="add", operand0=1.0, engine="vector")
        b.dma_copy(dst=x, src=t)
        b.dealloc(t)
        b.set_outputs({"x_out": x}, aliases={"x_out": "x"} if aliased else None)
        return b.graph

    xv = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    out = nk.nki.run(kernel(True), {"x": xv})
    assert np.array_equal(out["x_out"], xv + 1)
    assert xv[0, 0] == 0  # the caller's array is not modified
    with pytest.raises(VerifyError, match="inputs are read-only unless an output aliases them"):
        nk.nki.verify(kernel(False))


def test_nki_aliased_output_must_be_its_input():
    b = nk.nki.Builder("wrong")
    x = b.add_input("x", (128, 4), nk.float32)
    y = b.alloc((128, 4), nk.float32, "hbm", name="y")
    b.dma_copy(dst=y, src=x)
    b.set_outputs({"y": y}, aliases={"y": "x"})
    with pytest.raises(VerifyError, match="output y aliases input x, so it must be that kernel input"):
        nk.nki.verify(b.graph)


# ---- @trace: mutating an argument makes an aliased output -------------------------------------


def _step(cache, k):
    cache[:, 5] = k
    return (cache * 2.0).sum(axis=1)


def test_trace_mutation_of_an_argument_becomes_an_alias():
    cache = np.random.default_rng(3).standard_normal((4, 16, 32)).astype(np.float32)
    k = np.ones((4, 32), np.float32)
    g = nk.trace(_step).trace(cache, k)
    assert list(g.outputs) == ["y", "cache_out"]
    assert g.aliases == {"cache_out": "cache"}
    kern = nk.compile(g)
    ref = cache.copy()
    _step(ref, k)  # NumPy mutates ref
    for out in (kern.run({"cache": cache, "k": k}), nk.simulate(kern, {"cache": cache, "k": k})):
        assert np.array_equal(out["cache_out"], ref)
        assert_close(out["y"], (ref.astype(np.float64) * 2).sum(1), nk.float32, what="y")
    assert kern.stats().dma_bytes < cache.nbytes * 2  # the update itself moves one row


def test_trace_returning_the_mutated_argument_aliases_that_output():
    def f(x, v):
        x[0] = v
        return x

    g = nk.trace(f).trace(np.zeros((4, 8), np.float32), np.ones(8, np.float32))
    assert list(g.outputs) == ["y"] and g.aliases == {"y": "x"}


def test_jit_writes_the_update_back_into_the_callers_array():
    f = nk.jit(_step, cache=False)
    cache = np.random.default_rng(4).standard_normal((4, 16, 32)).astype(np.float32)
    k = np.full((4, 32), 3.0, np.float32)
    ref = cache.copy()
    y_ref = _step(ref, k)
    y = f(cache, k)  # returns only what the function returns, as NumPy
    assert isinstance(y, np.ndarray)
    assert_close(y, y_ref.astype(np.float64), nk.float32, what="y")
    assert np.array_equal(cache, ref)  # updated in place, as NumPy would


def test_cli_emits_the_kernel_io_as_json(tmp_path, capsys):
    from nkigen_lite.cli import main

    ir = tmp_path / "kv.nkir"
    ir.write_text(str(_kv_graph((4, 16, 32), pos=2)))
    assert main(["compile", str(ir), "--emit", "io"]) == 0
    io = json.loads(capsys.readouterr().out)
    assert io["aliases"] == [{"output": "cache_out", "input": "cache"}]
    assert io["inputs"][0] == {"name": "cache", "shape": [4, 16, 32], "dtype": "bfloat16"}
    assert [o["name"] for o in io["outputs"]] == ["cache_out"]


def test_jit_kernel_loaded_from_the_disk_cache_keeps_the_alias(tmp_path, monkeypatch):
    monkeypatch.setenv("NKIGEN_LITE_CACHE", str(tmp_path / "cache"))
    cache = np.random.default_rng(5).standard_normal((4, 16, 32)).astype(np.float32)
    k = np.full((4, 32), 2.0, np.float32)
    nk.jit(_step)(cache.copy(), k)  # compiles and stores
    f = nk.jit(_step)
    ref = cache.copy()
    y_ref = _step(ref, k)
    y = f(cache, k)
    assert f.counts["disk_hits"] == 1
    assert f.kernel(cache, k).io.aliases == {"cache_out": "cache"}
    assert np.array_equal(cache, ref)
    assert_close(y, y_ref.astype(np.float64), nk.float32, what="y")


def test_loop_over_an_aliased_input_keeps_it_in_the_input_buffer():
    """A for_loop whose initial value is the aliased cache, step i writing k + i into row 2 with
    a block update (concat of slices of the carried value): the loop's state is the cache
    buffer itself and every step stores only its new row (exact: small integers added)."""
    shape = (4, 64, 32)
    b = nk.Builder("loop_kv")
    cache = b.add_input("cache", shape, nk.float32)
    k = b.add_input("k", (4, 1, 32), nk.float32)

    def step(i, c):
        return b.concat([c[:, :2], k + b.cast(i, nk.float32), c[:, 3:]], axis=1)

    b.set_outputs({"cache_out": b.for_loop(3, cache, step)}, aliases={"cache_out": "cache"})
    kern = nk.compile(b.graph)
    rng = np.random.default_rng(7)
    cv = rng.standard_normal(shape).astype(np.float32)
    kv = rng.standard_normal((4, 1, 32)).astype(np.float32)
    ref = cv.copy()
    ref[:, 2:3] = kv + 2
    ins = {"cache": cv, "k": kv}
    for out in (nk.run(b.graph, ins), kern.run(ins), nk.simulate(kern, ins)):
        assert np.array_equal(out["cache_out"], ref)
    assert kern.nki.outputs["cache_out"] is kern.nki.input("cache")
    assert kern.stats().dma_bytes < cv.nbytes // 4  # the cache is never copied


def test_loop_yielding_a_block_update_writes_the_state_buffer_in_place():
    """The same update without an aliased output: the loop result lives in its own buffer (one
    copy of the cache in), and each step writes only the new row into it (no per-step copy)."""
    shape = (4, 64, 32)
    b = nk.Builder("loop_upd")
    cache = b.add_input("cache", shape, nk.float32)
    k = b.add_input("k", (4, 1, 32), nk.float32)
    out = b.for_loop(4, cache, lambda i, c: b.concat([c[:, :5], k, c[:, 6:]], axis=1))
    b.set_outputs({"y": out})
    kern = nk.compile(b.graph)
    cv = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    kv = -np.ones((4, 1, 32), np.float32)
    ref = cv.copy()
    ref[:, 5:6] = kv
    for got in (kern.run({"cache": cv, "k": kv}), nk.simulate(kern, {"cache": cv, "k": kv})):
        assert np.array_equal(got["y"], ref)
    # one copy of the cache into the loop state, then 4 steps of one 512-byte row each
    assert kern.stats().dma_bytes == cv.nbytes + 4 * kv.nbytes


def test_dynamic_update_slice_at_a_runtime_position_scatters_in_place():
    """The decode KV-cache write: dynamic_update_slice(cache, k, [0, pos, 0]) aliased to the
    (8, 4096, 128) bf16 cache scatters k's 8 rows into the cache buffer: the 8 MiB cache is
    neither read nor copied (k's 2 KiB are loaded and scattered: 4 KiB, plus the row ids)."""
    shape = (8, 4096, 128)
    b = nk.Builder("kv_dus")
    cache = b.add_input("cache", shape, nk.bfloat16)
    k = b.add_input("k", (8, 1, 128), nk.bfloat16)
    pos = b.add_input("pos", (), nk.int32)
    zero = b.zeros((), nk.int32)
    b.set_outputs(
        {"cache_out": b.dynamic_update_slice(cache, k, [zero, pos, zero])}, aliases={"cache_out": "cache"}
    )
    kern = nk.compile(b.graph)
    stats = kern.stats()
    assert 2 * 2048 <= stats.dma_bytes < 2 * 2048 + 512
    assert kern.nki.outputs["cache_out"] is kern.nki.input("cache")
    cv, kv = _kv_inputs(shape)
    for p in (0, 1234, 4095):
        ins = {"cache": cv, "k": kv, "pos": np.array(p, np.int32)}
        ref = cv.copy()
        ref[:, p : p + 1] = kv
        for out in (kern.run(ins), nk.simulate(kern, ins)):
            assert np.array_equal(out["cache_out"].view(np.uint16), ref.view(np.uint16))
