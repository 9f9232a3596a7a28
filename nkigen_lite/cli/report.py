"""``nkigen-lite report``: compile like ``compile`` and write the kernel's HTML explorer."""

from __future__ import annotations

import sys

from .commands import load_graph
from .sources import parse_knobs, write_output


def cmd_report(args) -> int:
    from ..compiler import compile as nk_compile
    from ..report import report_html

    g = load_graph(args)
    k = nk_compile(g, knobs=parse_knobs(args.knobs), verbose=args.verbose)
    paths = [args.user_file] if args.user_file else []
    write_output(report_html(k, paths), args.output)
    if args.output and args.output != "-" and not args.quiet:
        print(f"nkigen-lite: wrote {args.output} (report of kernel {k.name})", file=sys.stderr)
    return 0
