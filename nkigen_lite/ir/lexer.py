"""On-demand tokenizer for the IR text format (positions are 1-based line:column)."""

from __future__ import annotations

import re
from typing import NamedTuple

from .errors import ParseError

PUNCT = set("(){}[]<>,:=?*+-")
DIGITS = frozenset("0123456789")
LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
WORD_CHARS = LETTERS | DIGITS | {"_"}

# Every scan below is one regular-expression match, so the lexer's cost per token does not
# depend on how long the token is (a dense constant's hex string is read in one call).
_SPACE = re.compile(r"(?:[ \t\r\n]+|//[^\n]*)*")
_WORD = re.compile(r"[A-Za-z0-9_]*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_PLAIN_STRING = re.compile(r'"([^"\\\n]*)"')
_IN_STRING = re.compile(r'["\\]')


class Token(NamedTuple):
    """One token: kind is value, symbol, ident, int, float, string, punct or eof."""

    kind: str
    text: str
    line: int
    col: int
    value: object = None


class Lexer:
    """Produces tokens on request so a type body can be read raw between ``<`` and ``>``."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.line = 1
        self.line_start = 0

    def _advance(self, n: int) -> None:
        t, pos = self.text, self.pos
        nl = t.count("\n", pos, pos + n)
        if nl:
            self.line += nl
            self.line_start = t.rfind("\n", pos, pos + n) + 1
        self.pos = pos + n

    def _skip_space(self) -> None:
        end = _SPACE.match(self.text, self.pos).end()
        if end != self.pos:
            self._advance(end - self.pos)

    @property
    def col(self) -> int:
        return self.pos - self.line_start + 1

    def error(self, msg: str) -> ParseError:
        return ParseError(msg, self.line, self.col)

    def next(self) -> Token:
        self._skip_space()
        t, start, line = self.text, self.pos, self.line
        col = start - self.line_start + 1
        if start >= len(t):
            return Token("eof", "", line, col)
        c = t[start]
        if c in "%@":
            end = _WORD.match(t, start + 1).end()
            if end == start + 1:
                raise self.error(f"expected a name after {c!r}")
            self.pos = end
            return Token("value" if c == "%" else "symbol", t[start + 1 : end], line, col)
        if c in LETTERS or c == "_":
            end = _IDENT.match(t, start).end()
            self.pos = end
            return Token("ident", t[start:end], line, col)
        if c in DIGITS or (c == "-" and start + 1 < len(t) and t[start + 1] in DIGITS):
            m = _NUMBER.match(t, start)
            text = m.group()
            self.pos = m.end()
            if m.group(1) or m.group(2):
                return Token("float", text, line, col, float(text))
            return Token("int", text, line, col, int(text))
        if c == '"':
            m = _PLAIN_STRING.match(t, start)
            if m is not None:
                self.pos = m.end()
                return Token("string", m.group(), line, col, m.group(1))
            return self._string(start, line, col)
        if t.startswith("->", start):
            self.pos = start + 2
            return Token("punct", "->", line, col)
        if c in PUNCT:
            self.pos = start + 1
            return Token("punct", c, line, col)
        raise self.error(f"unexpected character {c!r}")

    def _string(self, start: int, line: int, col: int) -> Token:
        t = self.text
        out, i = [], start + 1
        escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
        while True:
            if i >= len(t) or t[i] == "\n":
                raise ParseError("unterminated string", line, col)
            ch = t[i]
            if ch == '"':
                break
            if ch == "\\":
                nxt = t[i + 1] if i + 1 < len(t) else ""
                if nxt in escapes:
                    out.append(escapes[nxt])
                    i += 2
                    continue
                if nxt == "x" and i + 3 < len(t):
                    try:
                        out.append(chr(int(t[i + 2 : i + 4], 16)))
                    except ValueError:
                        raise ParseError("bad \\x escape in string", line, col) from None
                    i += 4
                    continue
                raise ParseError(f"unknown escape \\{nxt} in string", line, col)
            out.append(ch)
            i += 1
        self._advance(i + 1 - start)
        return Token("string", t[start : i + 1], line, col, "".join(out))

    def read_raw_until_close(self, open_ch: str = "<", close_ch: str = ">") -> str:
        """Return the raw text up to the matching ``close_ch`` (consumed, not returned); strings
        inside it (with ``\\`` escapes) are skipped whole."""
        depth, start = 1, self.pos
        line, col = self.line, self.col
        t = self.text
        stops = re.compile('["\\n' + re.escape(open_ch + close_ch) + "]")
        i = start
        while True:
            m = stops.search(t, i)
            if m is None or m.group() == "\n":
                break
            c, i = m.group(), m.start()
            if c == '"':
                i = self._skip_string_body(i + 1)
                if i < 0:
                    break
                continue
            depth += 1 if c == open_ch else -1
            if depth == 0:
                self._advance(i + 1 - start)
                return t[start:i]
            i += 1
        self._advance((len(t) if m is None else m.start()) - start)
        raise ParseError(f"missing {close_ch!r} to close {open_ch!r}", line, col)

    def _skip_string_body(self, i: int) -> int:
        """Position after the closing quote of a string whose body starts at ``i`` (-1 if none)."""
        t = self.text
        while True:
            m = _IN_STRING.search(t, i)
            if m is None:
                return -1
            if m.group() == '"':
                return m.end()
            i = m.end() + 1  # a backslash escapes the next character
