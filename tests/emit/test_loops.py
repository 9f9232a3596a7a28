"""Loops are emitted as plain ``range`` loops (NKI 0.6); a loop where an iteration touches what
another one wrote carries a "sequential" comment, the others none; every kernel here also runs
on the simulator ≡ the NKI interpreter."""

import re

import numpy as np

import nkigen_lite as nk
from nkigen_lite.emit import emit_nki_source, simulate
from nkigen_lite.nki import ds

X = np.arange(512 * 8, dtype=np.float32).reshape(512, 8) / 100


def _kinds(g) -> dict[str, str]:
    """{loop variable: range kind} of the emitted module, after checking it runs right."""
    nk.nki.verify(g)
    src = emit_nki_source(g)
    got, want = simulate(src, {"x": X}), nk.nki.run(g, {"x": X})
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-6, err_msg=n)
    return {
        v: ("sequential" if note else "affine")
        for v, note in re.findall(r"for (\w+) in range\([^)]*\):(  # sequential)?", src)
    }


def _kernel(body, out_shape=(512, 8)):
    b = nk.nki.Builder("loops")
    x = b.add_input("x", (512, 8), nk.float32)
    y = b.alloc(out_shape, nk.float32, "hbm", name="y")
    body(b, x, y)
    b.set_outputs({"y": y})
    return b.graph


def test_disjoint_tile_stores_are_affine():
    def body(b, x, y):
        with b.fori_loop(0, 4) as i:
            t = b.alloc((128, 8), name="t")
            b.dma_copy(dst=t, src=x[ds(i * 128, 128), 0:8])
            b.dma_copy(dst=y[ds(i * 128, 128), 0:8], src=t)
            b.dealloc(t)

    assert _kinds(_kernel(body)) == {"i": "affine"}


def test_a_running_sum_in_a_tile_from_outside_is_sequential():
    def body(b, x, y):
        acc = b.alloc((128, 8), name="acc")
        b.memset(dst=acc, value=0.0)
        with b.fori_loop(0, 4) as i:
            t = b.alloc((128, 8), name="t")
            b.dma_copy(dst=t, src=x[ds(i * 128, 128), 0:8])
            b.tensor_tensor(dst=acc, data1=acc, data2=t, op="add")
            b.dealloc(t)
        b.dma_copy(dst=y, src=acc)
        b.dealloc(acc)

    assert _kinds(_kernel(body, (128, 8))) == {"i": "sequential"}


def test_disjoint_slices_of_an_outside_tile_are_affine_and_neighbours_are_not():
    def body(b, x, y, shift):
        t = b.alloc((128, 4, 8), name="t")
        with b.fori_loop(0, 4, name="j") as j:
            b.dma_copy(dst=t[0:128, ds(j, 1), 0:8], src=x[ds(j * 128, 128), 0:8])
        u = b.alloc((128, 4, 8), name="u")
        b.memset(dst=u, value=1.0)
        with b.fori_loop(0, 3, name="k") as k:
            # reads slice k + shift, writes slice k: another iteration's element when shift != 0
            b.tensor_tensor(
                dst=u[0:128, ds(k, 1), 0:8],
                data1=u[0:128, ds(k + shift, 1), 0:8],
                data2=t[0:128, ds(k, 1), 0:8],
                op="add",
            )
        b.dma_copy(dst=y, src=u)
        b.dealloc(t)
        b.dealloc(u)

    same = _kinds(_kernel(lambda b, x, y: body(b, x, y, 0), (128, 32)))
    assert same == {"j": "affine", "k": "affine"}
    shifted = _kinds(_kernel(lambda b, x, y: body(b, x, y, 1), (128, 32)))
    assert shifted == {"j": "affine", "k": "sequential"}


def test_hbm_views_are_compared_on_the_flat_storage():
    def body(b, x, y, first_row, rows):
        # y (512, 8) written through a (4096,) reshape view and through y itself
        flat = b.hbm_view(y, (4096,), (1,), name="flat")
        with b.fori_loop(0, 4) as i:
            t = b.alloc((128, 8), name="t")
            b.dma_copy(dst=t, src=x[ds(i * 128, 128), 0:8])
            b.dma_copy(dst=flat[ds(i * 1024, 1024)], src=t)
            b.dma_copy(dst=y[ds(i * rows + first_row, rows), 0:8], src=t[0:rows, 0:8])
            b.dealloc(t)

    # each iteration re-writes rows of its own tile: no element crosses iterations
    assert _kinds(_kernel(lambda b, x, y: body(b, x, y, 0, 128))) == {"i": "affine"}
    # rows 32 + 96 i ... overlap the tile another iteration stores through the flat view
    assert _kinds(_kernel(lambda b, x, y: body(b, x, y, 32, 96))) == {"i": "sequential"}


def test_nested_loops_are_classified_separately():
    def body(b, x, y):
        with b.fori_loop(0, 2) as i:
            acc = b.alloc((128, 8), name="acc")
            b.memset(dst=acc, value=0.0)
            with b.fori_loop(0, 2) as j:
                t = b.alloc((128, 8), name="t")
                b.dma_copy(dst=t, src=x[ds(i * 256 + j * 128, 128), 0:8])
                b.tensor_tensor(dst=acc, data1=acc, data2=t, op="maximum")
                b.dealloc(t)
            b.dma_copy(dst=y[ds(i * 128, 128), 0:8], src=acc)
            b.dealloc(acc)

    assert _kinds(_kernel(body, (256, 8))) == {"i": "affine", "j": "sequential"}
