"""Parse a report page with the standard library: ids, links, references, elements by class."""

from __future__ import annotations

from html.parser import HTMLParser


class Page(HTMLParser):
    """Collects every id, every href, every src-like attribute, the tags seen, and the text of
    each element carrying an id (up to its closing tag)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.hrefs: list[tuple[str, str]] = []  # (href, link class)
        self.srcs: list[str] = []
        self.tags: dict[str, int] = {}
        self.text_of: dict[str, str] = {}
        self._open: list[tuple[str, str | None]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if "id" in a:
            self.ids.append(a["id"])
            self.text_of[a["id"]] = ""
        if tag == "a" and "href" in a:
            self.hrefs.append((a["href"], a.get("class", "")))
        for key in ("src", "srcset", "data", "xlink:href"):
            if key in a:
                self.srcs.append(a[key])
        self._open.append((tag, a.get("id")))

    def handle_endtag(self, tag):
        while self._open:
            t, _ = self._open.pop()
            if t == tag:
                break

    def handle_data(self, data):
        for _, i in self._open:
            if i is not None:
                self.text_of[i] += data
