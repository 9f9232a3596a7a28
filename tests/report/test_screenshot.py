"""The report renders in a real browser: headless Chromium takes a screenshot of it (skipped
only when no Chromium is installed: ``apt-get install chromium``)."""

from __future__ import annotations

import struct
import zlib

import pytest

import nkigen_lite as nk
from tests.report.screenshot import browser, screenshot


def _png(path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    return size[0], size[1], zlib.decompress(idat)


@pytest.mark.skipif(browser() is None, reason="no Chromium installed (apt-get install chromium)")
def test_report_screenshot(tmp_path):
    b = nk.Builder("shot")
    x = b.add_input("x", (256, 512), nk.float32)
    b.set_outputs({"y": b.tanh(x) * 2.0})
    page = tmp_path / "r.html"
    nk.compile(b.graph).report(page)
    png = tmp_path / "r.png"
    screenshot(page, png, width=900, height=700)
    w, h, pixels = _png(png)
    assert (w, h) == (900, 700)
    # not a blank page: the rendered rows hold many different byte values (text, charts)
    assert len(set(pixels)) > 50
