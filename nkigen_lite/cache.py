"""The on-disk kernel cache of ``nk.jit``: one ``.npz`` file per compiled kernel.

Key: SHA-256 of the tensor graph's text, the compiler fingerprint (version + a hash of the
package's sources, so an edited compiler never reuses old kernels), the target and the knobs.
Directory: ``$NKIGEN_LITE_CACHE``, else ``$XDG_CACHE_HOME/nkigen_lite``, else
``~/.cache/nkigen_lite``; ``NKIGEN_LITE_CACHE=off`` disables it.

Several processes may share the directory: an entry is written to a unique temporary file and
renamed into place (atomic on POSIX), so a reader sees a whole entry or none. An entry is
never trusted: it carries a SHA-256 of its contents, is loaded without pickle, and its NKI IR
is parsed and run through the hardware verifier again; anything wrong makes ``load`` return
None (with an ``NkWarning``) and the caller recompiles and overwrites it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import warnings
import zipfile
from functools import lru_cache

import numpy as np

from .ir.errors import NkError, NkWarning

FORMAT = 1


def cache_dir() -> str | None:
    """The cache directory, or None when disabled (``NKIGEN_LITE_CACHE=off``)."""
    d = os.environ.get("NKIGEN_LITE_CACHE")
    if d is not None:
        return None if d.strip().lower() in ("", "off", "0", "none") else d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nkigen_lite")


@lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """``version+sha`` of every .py file of the package (the compiler that made a kernel)."""
    from . import __version__

    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for dirpath, dirnames, files in os.walk(root):
        dirnames.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as fh:
                    h.update(fh.read())
    return f"{__version__}+{h.hexdigest()[:16]}"


def cache_key(graph_text: str, target_name: str, knobs: dict | None) -> str:
    h = hashlib.sha256()
    for part in (
        f"format {FORMAT}",
        compiler_fingerprint(),
        target_name,
        json.dumps(knobs or {}, sort_keys=True, default=str),
        graph_text,
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _digest(meta_text: str, constants: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256(meta_text.encode())
    for name in sorted(constants):
        a = np.ascontiguousarray(constants[name])
        h.update(f"{name} {a.dtype.str} {a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def store(directory: str, key: str, kernel) -> str | None:
    """Write ``kernel`` under ``key`` atomically; returns the path (None if not writable)."""
    from .compiler import STAGES  # every stage's IR is kept (Kernel.ir prints them on request)

    meta = {
        "format": FORMAT,
        "key": key,
        "name": kernel.name,
        "target": kernel.target.name,
        "input_names": kernel.input_names,
        "output_names": kernel.output_names,
        "stage_ir": {s: kernel.ir(s) for s in STAGES},
        "timings": kernel.timings,
        "input_types": {n: [list(t.shape), t.dtype.name] for n, t in kernel.input_types.items()},
        "empty_outputs": {n: [list(t.shape), t.dtype.name] for n, t in kernel.empty_outputs.items()},
        "constants": sorted(kernel.constants),
    }
    meta_text = json.dumps(meta, sort_keys=True)
    digest = _digest(meta_text, kernel.constants)
    buf = io.BytesIO()
    arrays = {f"c_{i}": np.asarray(kernel.constants[n]) for i, n in enumerate(meta["constants"])}
    np.savez(
        buf,
        meta=np.frombuffer(meta_text.encode(), np.uint8),
        digest=np.frombuffer(digest.encode(), np.uint8),
        **arrays,
    )
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getvalue())
        path = os.path.join(directory, f"{key}.npz")
        os.replace(tmp, path)
        return path
    except OSError as e:
        warnings.warn(f"nk.jit: cannot write the kernel cache in {directory}: {e}", NkWarning, stacklevel=3)
        return None


def load(directory: str, key: str, target):
    """The Kernel stored under ``key``, or None (missing, or corrupt: then an NkWarning)."""
    path = os.path.join(directory, f"{key}.npz")
    if not os.path.exists(path):
        return None
    try:
        return _load(path, key, target)
    except (
        OSError,
        ValueError,
        KeyError,
        zipfile.BadZipFile,
        EOFError,
        NkError,
        UnicodeDecodeError,
        TypeError,
    ) as e:
        warnings.warn(
            f"nk.jit: ignoring corrupt cache entry {path} ({type(e).__name__}: "
            f"{str(e).splitlines()[0] if str(e) else ''}); recompiling",
            NkWarning,
            stacklevel=3,
        )
        return None


def _load(path: str, key: str, target):
    from .compiler import Kernel
    from .ir.dtypes import get_dtype
    from .ir.parser import parse
    from .kernel_io import KernelIO
    from .nki.verify import verify
    from .tensor.types import TensorType

    with np.load(path, allow_pickle=False) as z:
        meta_text = bytes(z["meta"]).decode()
        digest = bytes(z["digest"]).decode()
        meta = json.loads(meta_text)
        constants = {n: z[f"c_{i}"] for i, n in enumerate(meta["constants"])}
    if _digest(meta_text, constants) != digest:
        raise ValueError("checksum mismatch")
    if meta.get("format") != FORMAT or meta.get("key") != key or meta["target"] != target.name:
        raise ValueError("entry written for another key, format or target")
    nki = parse(meta["stage_ir"]["deallocs"])
    verify(nki, target)

    def types(d):
        return {n: TensorType(tuple(s), get_dtype(dt)) for n, (s, dt) in d.items()}

    return Kernel(
        name=meta["name"],
        nki=nki,
        target=target,
        constants=constants,
        input_names=meta["input_names"],
        output_names=meta["output_names"],
        stage_ir=meta["stage_ir"],
        timings=meta["timings"],
        empty_outputs=types(meta["empty_outputs"]),
        input_types=types(meta["input_types"]),
        io=KernelIO.of_graph(parse(meta["stage_ir"]["input"])),
    )
