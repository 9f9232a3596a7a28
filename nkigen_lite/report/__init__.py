"""The HTML explorer of a compiled kernel (``Kernel.report(path)``, ``nkigen-lite report``).

One self-contained HTML file (inline CSS and SVG, no script, no network): the IR after every
stage, each NKI instruction linked to the tensor op it came from and to the user's Python line,
a per-op table (instructions, DMA bytes, modelled time), SBUF/PSUM occupancy over program order
and the cost model's engine timeline as SVG, and the kernel's performance warnings.
"""

from .page import report_html, write_report

__all__ = ["report_html", "write_report"]
