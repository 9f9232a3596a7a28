"""The ``nkigen-lite`` command line (see ``main.py`` and docs/cli.md)."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
