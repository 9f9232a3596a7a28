"""Fixtures for CLI tests: a user's Python file with kernels, small IR files."""

import textwrap

import pytest

USER_PY = textwrap.dedent("""\
    import numpy as np


    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


    def scaled(x, w):
        return np.tanh(x @ w) * 0.5


    def uses_cumprod(x):
        y = x * 2
        return np.cumprod(y)


    def raises_python_error(x):
        return x + undefined_name  # noqa: F821
    """)

TENSOR_IR = (
    "graph @g(%x: tensor<300x70xf32>) {\n  %e = tensor.exp %x : tensor<300x70xf32>\n  return y = %e\n}\n"
)


@pytest.fixture
def user_py(tmp_path):
    p = tmp_path / "kernels.py"
    p.write_text(USER_PY)
    return p


@pytest.fixture
def tensor_ir(tmp_path):
    p = tmp_path / "g.mlir"
    p.write_text(TENSOR_IR)
    return p
