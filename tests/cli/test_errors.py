"""Every CLI error is one line `nkigen-lite: error: [FILE:LINE:COL: ]message`, exit code 1."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from nkigen_lite.cli import main

LINE = re.compile(r"^nkigen-lite: error: .+$")


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and LINE.match(lines[0]), err
    assert "Traceback" not in err
    return lines[0]


def test_trace_error_points_at_the_users_line(user_py, capsys):
    assert main(["compile", f"{user_py}:uses_cumprod", "-i", "x=64:f32"]) == 1
    line = _one_error(capsys)
    assert f"{user_py}:15:" in line and "numpy.cumprod is not supported" in line


def test_python_error_in_user_code_is_located_and_not_called_internal(user_py, capsys):
    assert main(["compile", f"{user_py}:raises_python_error", "-i", "x=4"]) == 1
    line = _one_error(capsys)
    assert f"{user_py}:19:" in line and "NameError" in line and "internal" not in line


def test_syntax_error_in_user_file(tmp_path, capsys):
    p = tmp_path / "broken.py"
    p.write_text("def f(x):\n    return x +\n")
    assert main(["compile", f"{p}:f", "-i", "x=4"]) == 1
    assert f"{p}:2:" in _one_error(capsys)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["compile", "{py}:softmax"], "needs --input for x"),
        (["compile", "{py}:softmax", "-i", "x=4", "-i", "z=4"], "z: softmax(x) has no such parameter"),
        (["compile", "{py}:nope", "-i", "x=4"], "no function 'nope' here (it defines:"),
        (["compile", "{py}:softmax", "-i", "x=4x0"], "is not dimensions like 256x512"),
        (["compile", "{py}:softmax", "-i", "x=4:f99"], "unknown dtype 'f99'"),
        (["compile", "{py}:softmax", "-i", "x=4", "--stage", "bogus"], "stages: input, canonicalize"),
        (["compile", "{ir}", "--knobs", "{{"], "--knobs is not valid JSON"),
        (["compile"], "give FILE.py:function, an IR file"),
        (["compile", "{tmp}/missing.mlir"], "missing.mlir: no such file"),
        (["demo", "no_such_workload"], "unknown workload"),
    ],
)
def test_bad_arguments_give_one_line(argv, needle, user_py, tensor_ir, tmp_path, capsys):
    argv = [a.format(py=user_py, ir=tensor_ir, tmp=tmp_path) for a in argv]
    assert main(argv) == 1
    assert needle in _one_error(capsys)


def test_parse_error_has_file_line_col(tmp_path, capsys):
    f = tmp_path / "bad.mlir"
    f.write_text("graph @g(%x: tensor<4xf32>) {\n  %y = tensor.nope %x : tensor<4xf32>\n}\n")
    assert main(["compile", str(f)]) == 1
    assert f"{f}:2:8: unknown op 'tensor.nope'" in _one_error(capsys)


def test_non_utf8_file_names_the_byte(tmp_path, capsys):
    f = tmp_path / "bin.mlir"
    f.write_bytes(b"graph @g(\n  \xff\xfe)")
    assert main(["verify", str(f)]) == 1
    assert f"{f}:2:3: not UTF-8 text (byte 0xff" in _one_error(capsys)


def test_debug_shows_the_traceback(tmp_path):
    f = tmp_path / "bad.mlir"
    f.write_text("graph @g(%x: tensor<4xf32>) {\n  %y = tensor.nope %x : tensor<4xf32>\n}\n")
    r = subprocess.run(
        [sys.executable, "-m", "nkigen_lite", "compile", str(f), "--debug"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1 and "Traceback" in r.stderr and "ParseError" in r.stderr


def test_no_silent_wait_on_stdin(tmp_path):
    """`compile` without a file is an error at once; `-` reads stdin (here: closed, empty)."""
    r = subprocess.run(
        [sys.executable, "-m", "nkigen_lite", "compile"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 1 and "give FILE.py:function" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "nkigen_lite", "verify", "-"],
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1 and r.stderr.startswith("nkigen-lite: error: <stdin>:1:1:")
