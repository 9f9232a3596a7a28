"""What the CLI reads: IR text files (UTF-8, or stdin with a notice on a terminal), a user's
Python function (``FILE.py:function``), ``--input`` specs and arrays, ``--knobs`` JSON."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass

import numpy as np

from ..ir.dtypes import get_dtype
from ..ir.errors import BuildError
from ..ir.graph import Graph
from .errors import CliError


def read_text(path: str) -> str:
    """The file's text (``-``: stdin). Decoding errors name the byte's line and column."""
    if path == "-":
        if sys.stdin is None:
            raise CliError("no input: give a file name (stdin is closed)")
        if sys.stdin.isatty():
            print(
                "nkigen-lite: reading IR from stdin (end with Ctrl-D; pass a FILE to avoid this)",
                file=sys.stderr,
            )
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        source = "<stdin>"
    else:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise CliError("no such file", path) from None
        except IsADirectoryError:
            raise CliError("is a directory, not a file", path) from None
        except OSError as e:
            raise CliError(f"cannot read: {e.strerror}", path) from None
        source = path
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise CliError(
            f"not UTF-8 text (byte 0x{data[e.start]:02x} cannot be decoded)", f"{source}:{line}:{col}"
        ) from None


def parse_ir(text: str, _source: str, verify: bool = True) -> tuple[Graph, dict]:
    """Parse IR text; returns the graph and ``{op: (line, col)}`` for located diagnostics."""
    from ..ir.parser import Parser

    p = Parser(text)
    try:
        g = p.parse_graph()
        if verify:
            g.verify()
    except Exception as e:  # noqa: BLE001 - annotated and re-raised
        e.positions = p.positions  # type: ignore[attr-defined]
        raise
    return g, p.positions


def is_python_target(target: str) -> bool:
    """True for ``FILE.py:function`` (or ``FILE.py``)."""
    path = target.rsplit(":", 1)[0] if re.search(r"\.py:[A-Za-z_]\w*$", target) else target
    return path.endswith(".py")


def load_function(target: str):
    """The function ``FILE.py:function`` names, imported from the file (as ``nk.trace`` wraps)."""
    m = re.fullmatch(r"(.+\.py)(?::([A-Za-z_][\w.]*))?", target)
    if not m:
        raise CliError(f"expected FILE.py:function, got {target!r}")
    path, fname = m.group(1), m.group(2)
    if not os.path.isfile(path):
        raise CliError("no such file", path)
    read_text(path)  # the same UTF-8 check as IR files
    mod_name = "_nkigen_user_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    if fname is None:
        funcs = [
            n
            for n, v in vars(module).items()
            if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == mod_name
        ]
        traced = [n for n, v in vars(module).items() if type(v).__name__ == "TracedFunction"]
        choices = traced or funcs
        if len(choices) != 1:
            raise CliError(
                f"name the function to compile as {path}:NAME (it defines "
                f"{', '.join(sorted(choices)) or 'no functions'})",
                path,
            )
        fname = choices[0]
    obj = module
    for part in fname.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
            raise CliError(
                f"no function {fname!r} here (it defines: {', '.join(names) or 'nothing callable'})", path
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise CliError(f"{fname!r} is a {type(obj).__name__}, not a function", path)
    return obj, path


_SPEC = re.compile(r"([A-Za-z_]\w*)=(.*)")


@dataclass(frozen=True)
class InputSpec:
    """``name=256x512:bf16``: a graph input's shape and dtype (``name=scalar:f32`` for 0-d)."""

    name: str
    shape: tuple[int, ...]
    dtype: object


def parse_input_spec(text: str) -> InputSpec:
    m = _SPEC.fullmatch(text)
    if not m:
        raise CliError(f"--input {text!r}: expected NAME=SHAPE[:DTYPE], e.g. x=256x512:bf16")
    name, rest = m.groups()
    shape_s, _, dtype_s = rest.partition(":")
    try:
        if shape_s in ("", "scalar"):
            shape = ()
        else:
            shape = tuple(int(d) for d in shape_s.lower().split("x"))
            if any(d <= 0 for d in shape):
                raise ValueError
    except ValueError:
        raise CliError(
            f"--input {text!r}: shape {shape_s!r} is not dimensions like 256x512 "
            "(positive integers joined by 'x')"
        ) from None
    try:
        dtype = get_dtype(dtype_s or "f32")
    except (BuildError, KeyError, TypeError) as e:
        raise CliError(f"--input {text!r}: {e}") from None
    return InputSpec(name, shape, dtype)


def parse_input_array(text: str) -> tuple[str, np.ndarray]:
    """``name=a.npy``: an input array from a .npy file."""
    m = _SPEC.fullmatch(text)
    if not m:
        raise CliError(f"--input {text!r}: expected NAME=FILE.npy")
    name, path = m.groups()
    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CliError("no such file", path) from None
    except (OSError, ValueError) as e:
        raise CliError(f"not a .npy array file: {e}", path) from None
    if not isinstance(arr, np.ndarray):
        raise CliError("holds several arrays (.npz); give one .npy file per input", path)
    return name, arr


def parse_knobs(text: str | None) -> dict:
    if not text:
        return {}
    try:
        knobs = json.loads(text)
    except ValueError as e:
        raise CliError(f"--knobs is not valid JSON: {e}") from None
    if not isinstance(knobs, dict):
        raise CliError(f"--knobs must be a JSON object, got {text!r}")
    return knobs


def trace_function(fn, specs: list[InputSpec], fname: str) -> Graph:
    """Trace ``fn`` with the ``--input`` specs as keyword example arguments."""
    import inspect

    from ..tensor.trace import TracedFunction, trace
    from ..tensor.types import TensorType

    tf = fn if isinstance(fn, TracedFunction) else trace(fn)
    params = tf.signature.parameters
    given = {s.name for s in specs}
    if len(given) != len(specs):
        raise CliError("an --input name is given twice")
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [n for n in given if n not in params and not var_kw]
    if unknown:
        raise CliError(f"--input {', '.join(sorted(unknown))}: {fname}{tf.signature} has no such parameter")
    missing = [
        n
        for n, p in params.items()
        if n not in given and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if missing:
        raise CliError(
            f"{fname}{tf.signature} needs --input for {', '.join(missing)} "
            "(e.g. --input " + f"{missing[0]}=128x512:f32)"
        )
    kwargs = {s.name: TensorType(s.shape, s.dtype) for s in specs}
    return tf.trace(**kwargs)


def write_output(text: str, out: str | None) -> None:
    """An artifact to ``-o FILE`` (written whole, atomically) or stdout."""
    if out is None or out == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    tmp = f"{out}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, out)
    except OSError as e:
        raise CliError(f"cannot write: {e.strerror}", out) from None
