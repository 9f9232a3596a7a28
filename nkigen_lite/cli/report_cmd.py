"""``nkigen-lite report``: compile, then write the HTML explorer (docs/cli.md)."""

from __future__ import annotations

import sys

from .commands import load_graph
from .sources import parse_knobs


def cmd_report(args) -> int:
    from ..compiler import compile as nk_compile

    g = load_graph(args)
    k = nk_compile(g, knobs=parse_knobs(args.knobs), verbose=args.verbose)
    k.report(args.output)
    if not args.quiet:
        print(f"nkigen-lite: wrote {args.output} (report of kernel {k.name})", file=sys.stderr)
    return 0
