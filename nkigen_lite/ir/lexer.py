"""On-demand tokenizer for the IR text format (positions are 1-based line:column)."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ParseError

PUNCT = set("(){}[]<>,:=?*+-")
DIGITS = frozenset("0123456789")
LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
WORD_CHARS = LETTERS | DIGITS | {"_"}


@dataclass(frozen=True)
class Token:
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
        for _ in range(n):
            if self.text[self.pos] == "\n":
                self.line += 1
                self.line_start = self.pos + 1
            self.pos += 1

    def _skip_space(self) -> None:
        t = self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c in " \t\r\n":
                self._advance(1)
            elif t.startswith("//", self.pos):
                while self.pos < len(t) and t[self.pos] != "\n":
                    self.pos += 1
            else:
                break

    @property
    def col(self) -> int:
        return self.pos - self.line_start + 1

    def error(self, msg: str) -> ParseError:
        return ParseError(msg, self.line, self.col)

    def next(self) -> Token:
        self._skip_space()
        t, start, line, col = self.text, self.pos, self.line, self.col
        if start >= len(t):
            return Token("eof", "", line, col)
        c = t[start]
        if c in "%@":
            end = start + 1
            while end < len(t) and t[end] in WORD_CHARS:
                end += 1
            if end == start + 1:
                raise self.error(f"expected a name after {c!r}")
            self._advance(end - start)
            return Token("value" if c == "%" else "symbol", t[start + 1:end], line, col)
        if c in LETTERS or c == "_":
            end = start + 1
            while end < len(t) and (t[end] in WORD_CHARS or t[end] == "."):
                end += 1
            self._advance(end - start)
            return Token("ident", t[start:end], line, col)
        if c in DIGITS or (c == "-" and start + 1 < len(t) and t[start + 1] in DIGITS):
            return self._number(start, line, col)
        if c == '"':
            return self._string(start, line, col)
        if t.startswith("->", start):
            self._advance(2)
            return Token("punct", "->", line, col)
        if c in PUNCT:
            self._advance(1)
            return Token("punct", c, line, col)
        raise self.error(f"unexpected character {c!r}")

    def _number(self, start: int, line: int, col: int) -> Token:
        t = self.text
        end = start + 1 if t[start] == "-" else start
        while end < len(t) and t[end] in DIGITS:
            end += 1
        is_float = False
        if end < len(t) and t[end] == "." and end + 1 < len(t) and t[end + 1] in DIGITS:
            is_float = True
            end += 1
            while end < len(t) and t[end] in DIGITS:
                end += 1
        if end < len(t) and t[end] in "eE":
            j = end + 1
            if j < len(t) and t[j] in "+-":
                j += 1
            if j < len(t) and t[j] in DIGITS:
                is_float = True
                end = j
                while end < len(t) and t[end] in DIGITS:
                    end += 1
        text = t[start:end]
        self._advance(end - start)
        return Token("float" if is_float else "int", text, line, col,
                     float(text) if is_float else int(text))

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
                        out.append(chr(int(t[i + 2:i + 4], 16)))
                    except ValueError:
                        raise ParseError("bad \\x escape in string", line, col) from None
                    i += 4
                    continue
                raise ParseError(f"unknown escape \\{nxt} in string", line, col)
            out.append(ch)
            i += 1
        self._advance(i + 1 - start)
        return Token("string", t[start:i + 1], line, col, "".join(out))

    def read_raw_until_close(self, open_ch: str = "<", close_ch: str = ">") -> str:
        """Return the raw text up to the matching ``close_ch`` (consumed, not returned)."""
        depth, start = 1, self.pos
        line, col = self.line, self.col
        in_str = False
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if in_str:
                if c == "\\":
                    self._advance(1)
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == open_ch:
                depth += 1
            elif c == close_ch:
                depth -= 1
                if depth == 0:
                    raw = self.text[start:self.pos]
                    self._advance(1)
                    return raw
            elif c == "\n":
                break
            self._advance(1)
        raise ParseError(f"missing {close_ch!r} to close {open_ch!r}", line, col)
