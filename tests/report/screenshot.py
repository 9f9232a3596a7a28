"""Render a report page with headless Chromium (Debian's ``chromium``) to a PNG.

``uv run python -m tests.report.screenshot`` rewrites docs/report.png, the screenshot the README
shows (the report of examples/tutorial_kernel.py's first version, ``gelu_t``, with its
performance cliff).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html_path: Path, png_path: Path, width: int = 1200, height: int = 1400) -> None:
    exe = browser()
    if exe is None:
        raise RuntimeError(f"no headless browser found (tried {', '.join(BROWSERS)})")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                f"--screenshot={png_path}",
                Path(html_path).resolve().as_uri(),
            ],
            capture_output=True,
            timeout=180,
            check=True,
        )


if __name__ == "__main__":
    import sys

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "examples"))
    import numpy as np
    import tutorial_kernel as tk

    import nkigen_lite as nk

    x = np.zeros(tk.SHAPE, np.float32)
    k = nk.compile(tk.gelu_t, x)
    with tempfile.TemporaryDirectory() as d:
        page = Path(d) / "report.html"
        k.report(page)
        screenshot(page, root / "docs" / "report.png")
