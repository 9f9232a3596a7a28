"""nki.dma_gather / nki.dma_scatter: hardware verifier rules (one VerifyError naming the rule)
and the interpreter's run-time checks (index bounds, repeated scatter indices with differing
rows), on hand-built kernels."""

import numpy as np
import pytest

import nkigen_lite as nk


def _kernel(body, table_shape=(40, 6)):
    b = nk.nki.Builder("k")
    x = b.add_input("x", table_shape, nk.float32)
    ids = b.add_input("ids", (4, 1), nk.int32)
    y = b.alloc(table_shape, nk.float32, "hbm", name="y")
    b.dma_copy(dst=y, src=x)
    idx = b.alloc((4, 1), nk.int32, name="idx")
    b.dma_copy(dst=idx, src=ids)
    body(b, x, y, idx)
    b.dealloc(idx)
    b.set_outputs({"y": y})
    return b.graph


def _gather_scatter(b, x, y, idx):
    t = b.alloc((4, 6), nk.float32, name="t")
    b.dma_gather(dst=t, src=x, index=idx)
    b.tensor_scalar(dst=t, data=t, op0="multiply", operand0=-1.0)
    b.dma_scatter(dst=y, src=t, index=idx)
    b.dealloc(t)


def test_gather_and_scatter_run():
    x = np.arange(240, dtype=np.float32).reshape(40, 6)
    got = nk.nki.run(_kernel(_gather_scatter), {"x": x, "ids": np.array([[3], [0], [39], [3]], np.int32)})[
        "y"
    ]
    want = x.copy()
    want[[3, 0, 39]] *= -1
    np.testing.assert_array_equal(got, want)


def test_an_index_out_of_range_is_an_interpret_error():
    with pytest.raises(
        nk.InterpretError, match=r"nki\.dma_gather: index 40 \(partition 2\) is out of range \[0, 40\)"
    ):
        nk.nki.run(
            _kernel(_gather_scatter),
            {"x": np.zeros((40, 6), np.float32), "ids": np.array([[3], [0], [40], [1]], np.int32)},
        )


def test_repeated_scatter_indices_with_differing_rows_are_an_error():
    def body(b, x, y, idx):
        t = b.alloc((4, 6), nk.float32, name="t")
        b.dma_copy(dst=t, src=x[0:4, :])
        b.dma_scatter(dst=y, src=t, index=idx)
        b.dealloc(t)

    with pytest.raises(nk.InterpretError, match=r"index 2 appears more than once with differing rows"):
        nk.nki.run(
            _kernel(body),
            {
                "x": np.arange(240, dtype=np.float32).reshape(40, 6),
                "ids": np.array([[2], [1], [2], [0]], np.int32),
            },
        )


def _bad(make):
    def body(b, x, y, idx):
        make(b, x, y, idx)

    return body


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        (
            _bad(
                lambda b, x, y, idx: b.dma_gather(dst=b.alloc((4, 6), nk.float32, "psum"), src=x, index=idx)
            ),
            "dst is in PSUM",
        ),
        (
            _bad(
                lambda b, x, y, idx: b.dma_gather(dst=b.alloc((4, 6), nk.float32), src=x[0:20, :], index=idx)
            ),
            "must cover all 40 rows of dim 0",
        ),
        (
            _bad(lambda b, x, y, idx: b.dma_gather(dst=b.alloc((4, 3), nk.float32), src=x, index=idx)),
            "rows hold 6 elements but dst has 3",
        ),
        (
            _bad(lambda b, x, y, idx: b.dma_gather(dst=b.alloc((4, 6), nk.bfloat16), src=x, index=idx)),
            "moves raw rows",
        ),
        (
            _bad(
                lambda b, x, y, idx: b.dma_gather(
                    dst=b.alloc((4, 6), nk.float32),
                    src=b.hbm_view(x, (40, 6), (6, 1), offset=0),
                    index=b.alloc((4, 1), nk.float32),
                )
            ),
            "index must be int32 or uint32",
        ),
        (
            _bad(
                lambda b, x, y, idx: b.dma_gather(
                    dst=b.alloc((4, 6), nk.float32), src=b.hbm_view(x, (20, 6), (12, 1)), index=idx
                )
            ),
            "goes through a strided view",
        ),
        (
            _bad(lambda b, x, y, idx: b.dma_scatter(dst=x, src=b.alloc((4, 6), nk.float32), index=idx)),
            "writes kernel input",
        ),
        (  # vector_offset takes a 2-D (P, 1) tensor: a (4, 1, 1) tile is no column
            _bad(
                lambda b, x, y, idx: b.dma_gather(
                    dst=b.alloc((4, 6), nk.float32), src=x, index=b.alloc((4, 1, 1), nk.int32)
                )
            ),
            r"index must be an SBUF \(4, 1\) column, got 4 partitions x 1 elements in 2 free dims",
        ),
    ],
)
def test_the_verifier_names_the_broken_rule(body, rule):
    with pytest.raises((nk.VerifyError, nk.BuildError), match=rule):
        nk.nki.verify(_kernel(body))
