"""The Python lines the kernel's ops came from, found by file name (tracing records only the
file's base name): paths the caller knows, loaded modules, then the current directory. A file
not found is listed with its line numbers only."""

from __future__ import annotations

import linecache
import os
import sys


def find_source(file: str, paths=()) -> list[str] | None:
    """The lines of the file named ``file`` (a base name): one of ``paths`` first, or None."""
    for path in paths:
        if os.path.basename(path) == file and os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.readlines()
    for mod in list(sys.modules.values()):
        path = getattr(mod, "__file__", None)
        if path and os.path.basename(path) == file:
            lines = linecache.getlines(path)
            if lines:
                return lines
    if os.path.isfile(file):
        with open(file, encoding="utf-8", errors="replace") as f:
            return f.readlines()
    return None
