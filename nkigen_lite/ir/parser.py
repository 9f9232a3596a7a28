"""Parser for the text format written by ``printer.py``; it never evaluates input as Python.

Each op sits on one line (its regions follow in braces), so op bodies end at the line end.
Errors are ``ParseError`` with line:column and what was expected.
"""

from __future__ import annotations

import re

from .attrs import ELIDED, DenseLiteral, Ident
from .dtypes import get_dtype
from .errors import BuildError, ParseError
from .graph import Block, Graph, Region
from .lexer import Lexer, Token
from .op import OP_REGISTRY
from .types import TYPE_REGISTRY, parse_shape_and_rest
from .value import Value

_INT_LIST_REST = re.compile(r"\s*(-?[0-9]+(?:\s*,\s*-?[0-9]+)*)?\s*\]")
MAX_NESTING = 64  # attribute lists and regions nest at most this deep (bounds the recursion)


class Parser:
    """Recursive-descent parser; op classes use its helpers in their ``parse_body``."""

    def __init__(self, text: str):
        self.lex = Lexer(text)
        self._peeked: Token | None = None
        self.scopes: list[dict[str, Value]] = []
        self.defined: set[str] = set()
        self.op_line = 0
        self.depth = 0
        self.positions: dict = {}  # op -> (line, col) of its name, for located diagnostics

    # ---- token helpers ------------------------------------------------------------------------
    def peek(self) -> Token:
        if self._peeked is None:
            self._peeked = self.lex.next()
        return self._peeked

    def take(self) -> Token:
        tok = self.peek()
        self._peeked = None
        return tok

    def error(self, msg: str, tok: Token | None = None) -> ParseError:
        tok = tok or self.peek()
        return ParseError(msg, tok.line, tok.col)

    @staticmethod
    def describe(tok: Token) -> str:
        return "end of input" if tok.kind == "eof" else repr(tok.text)

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok.kind in ("punct", "ident") and tok.text == text

    def at_line_end(self) -> bool:
        tok = self.peek()
        return tok.kind == "eof" or tok.line != self.op_line

    def at_on_line(self, text: str) -> bool:
        return not self.at_line_end() and self.at(text)

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.take()
            return True
        return False

    def expect(self, text: str) -> Token:
        if not self.at(text):
            tok = self.peek()
            raise self.error(f"expected {text!r}, found {self.describe(tok)}", tok)
        return self.take()

    def expect_ident(self) -> str:
        tok = self.peek()
        if tok.kind != "ident":
            raise self.error(f"expected an identifier, found {self.describe(tok)}", tok)
        return self.take().text

    def parse_int(self) -> int:
        tok = self.peek()
        if tok.kind != "int":
            raise self.error(f"expected an integer, found {self.describe(tok)}", tok)
        return self.take().value

    def enter(self, tok: Token) -> None:
        """Open one nesting level (a list or a region); fails cleanly when nested too deep."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"nesting deeper than {MAX_NESTING} levels", tok)

    # ---- values -------------------------------------------------------------------------------
    def lookup(self, name: str, tok: Token) -> Value:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise self.error(f"use of undefined value %{name}", tok)

    def parse_value_ref(self) -> Value:
        tok = self.peek()
        if tok.kind != "value":
            raise self.error(f"expected a value like %x, found {self.describe(tok)}", tok)
        self.take()
        return self.lookup(tok.text, tok)

    def define(self, name: str, v: Value, tok: Token) -> None:
        if name in self.defined:
            raise self.error(f"redefinition of %{name}", tok)
        self.defined.add(name)
        self.scopes[-1][name] = v
        v.name_hint = name if not name.isdigit() else None

    # ---- types and attributes -------------------------------------------------------------------
    def parse_type(self):
        tok = self.peek()
        if tok.kind != "ident":
            raise self.error(f"expected a type, found {self.describe(tok)}", tok)
        self.take()
        cls = TYPE_REGISTRY.get(tok.text)
        if cls is None:
            known = ", ".join(sorted(TYPE_REGISTRY))
            raise self.error(f"unknown type {tok.text!r} (known: {known})", tok)
        body = ""
        if cls.has_body:
            self.expect("<")
            body = self.lex.read_raw_until_close("<", ">")
        try:
            return cls.from_body(body)
        except (ValueError, BuildError) as e:
            raise self.error(f"bad {tok.text} type: {e}", tok) from None

    def parse_attr_value(self):
        tok = self.peek()
        if tok.kind in ("int", "float"):
            return self.take().value
        if tok.kind == "string":
            return self.take().value
        if self.at("-"):
            self.take()
            nxt = self.peek()
            if nxt.kind == "ident" and nxt.text == "inf":
                self.take()
                return float("-inf")
            raise self.error("expected a number after '-'", nxt)
        if self.at("["):
            self.enter(self.take())
            lex = self.lex
            m = _INT_LIST_REST.match(lex.text, lex.pos)
            if m is not None:  # a flat list of integers (shapes, perms, ...): one regex match
                lex._advance(m.end() - lex.pos)
                self.depth -= 1
                return tuple(int(x) for x in m.group(1).split(",")) if m.group(1) else ()
            items = []
            if not self.at("]"):
                while True:
                    items.append(self.parse_attr_value())
                    if not self.accept(","):
                        break
            self.expect("]")
            self.depth -= 1
            return tuple(items)
        if tok.kind == "ident":
            self.take()
            if tok.text == "dense" and self.at("<"):
                self.take()
                return self._dense_literal(self.lex.read_raw_until_close("<", ">"), tok)
            return Ident(tok.text)
        raise self.error(f"expected an attribute value, found {self.describe(tok)}", tok)

    def _dense_literal(self, raw: str, tok: Token) -> DenseLiteral:
        head, sep, data = raw.partition(",")
        data = data.strip()
        if data == ELIDED:
            raise self.error(
                "this dense constant was elided when printed for reading "
                "(Graph.format); str(graph) prints the form that parses",
                tok,
            )
        if not sep or len(data) < 2 or data[0] != '"' or data[-1] != '"':
            raise self.error('expected dense<SHAPExDTYPE, "hex">', tok)
        try:
            shape, dt = parse_shape_and_rest(head)
            dtype = get_dtype(dt.strip())
            raw = bytes.fromhex(data[1:-1])
        except (ValueError, BuildError) as e:
            raise self.error(f"bad dense literal: {e}", tok) from None
        return DenseLiteral(shape, dtype, raw)

    def parse_attr_dict(self) -> dict:
        self.expect("{")
        out: dict = {}
        if not self.at("}"):
            while True:
                tok = self.peek()
                key = self.expect_ident()
                if key in out:
                    raise self.error(f"attribute {key!r} given twice", tok)
                self.expect("=")
                out[key] = self.parse_attr_value()
                if not self.accept(","):
                    break
        self.expect("}")
        return out

    def parse_generic_body(self):
        """``%a, %b {attrs}`` (both parts optional, on the op's line)."""
        operands = []
        if not self.at_line_end() and self.peek().kind == "value":
            while True:
                operands.append(self.parse_value_ref())
                if not self.accept(","):
                    break
        attrs = self.parse_attr_dict() if self.at_on_line("{") else {}
        return operands, attrs

    # ---- structure ---------------------------------------------------------------------------
    def parse_graph(self) -> Graph:
        self.expect("graph")
        tok = self.peek()
        if tok.kind != "symbol":
            raise self.error(f"expected a graph name like @main, found {self.describe(tok)}", tok)
        self.take()
        try:
            graph = Graph(tok.text)
        except BuildError as e:
            raise self.error(str(e), tok) from None
        self.scopes.append({})
        self.expect("(")
        if not self.at(")"):
            while True:
                vt = self.peek()
                if vt.kind != "value":
                    raise self.error(f"expected an input like %x, found {self.describe(vt)}", vt)
                self.take()
                self.expect(":")
                ty = self.parse_type()
                try:
                    v = graph.add_input(vt.text, ty)
                except BuildError as e:
                    raise self.error(str(e), vt) from None
                self.define(vt.text, v, vt)
                if not self.accept(","):
                    break
        self.expect(")")
        self.expect("{")
        while not self.at("}"):
            if self.peek().kind == "eof":
                raise self.error("expected '}' to close the graph")
            self.parse_op(graph.body)
        self.expect("}")
        tok = self.peek()
        if tok.kind != "eof":
            raise self.error(f"unexpected {self.describe(tok)} after the graph", tok)
        self.scopes.pop()
        return graph

    def parse_region(self) -> Region:
        self.enter(self.expect("("))
        arg_toks, types = [], []
        if not self.at(")"):
            while True:
                vt = self.peek()
                if vt.kind != "value":
                    raise self.error(f"expected a block argument like %i, found {self.describe(vt)}", vt)
                self.take()
                self.expect(":")
                arg_toks.append(vt)
                types.append(self.parse_type())
                if not self.accept(","):
                    break
        self.expect(")")
        self.expect("{")
        block = Block(types)
        self.scopes.append({})
        for vt, a in zip(arg_toks, block.args):
            self.define(vt.text, a, vt)
        while not self.at("}"):
            if self.peek().kind == "eof":
                raise self.error("expected '}' to close the region")
            self.parse_op(block)
        self._close_line = self.expect("}").line
        self.scopes.pop()
        self.depth -= 1
        return Region([block])

    def parse_loc(self) -> str | None:
        """An optional ``loc("...")`` on the op's line."""
        if not self.at_on_line("loc"):
            return None
        self.take()
        self.expect("(")
        tok = self.peek()
        if tok.kind != "string":
            raise self.error(f"expected a location string, found {self.describe(tok)}", tok)
        loc = self.take().value
        self.expect(")")
        return loc

    def parse_op(self, block: Block) -> None:
        first = self.peek()
        self.op_line = first.line
        result_toks = []
        if first.kind == "value":
            while True:
                vt = self.peek()
                if vt.kind != "value":
                    raise self.error(f"expected a result name, found {self.describe(vt)}", vt)
                result_toks.append(self.take())
                if not self.accept(","):
                    break
            self.expect("=")
        name_tok = self.peek()
        if name_tok.kind != "ident":
            raise self.error(f"expected an op name, found {self.describe(name_tok)}", name_tok)
        self.take()
        cls = OP_REGISTRY.get(name_tok.text)
        if cls is None:
            raise self.error(f"unknown op {name_tok.text!r}", name_tok)
        operands, attrs = cls.parse_body(self)
        types = []
        if self.at_on_line(":"):
            self.take()
            while True:
                types.append(self.parse_type())
                if not self.accept(","):
                    break
        if len(types) != len(result_toks):
            raise self.error(
                f"{cls.name}: {len(result_toks)} result names but {len(types)} result types",
                name_tok,
            )
        loc = self.parse_loc()
        line = self.op_line
        regions = []
        while self.peek().line == line and self.at("("):
            regions.append(self.parse_region())
            line = self.op_line = self._close_line
        try:
            op = cls(operands, attrs, types, regions)
        except BuildError as e:
            raise self.error(str(e), name_tok) from None
        op.loc = loc
        self.positions[op] = (name_tok.line, name_tok.col)
        for vt, r in zip(result_toks, op.results):
            self.define(vt.text, r, vt)
        block.append(op)


def parse(text: str, verify: bool = True) -> Graph:
    """Parse IR text into a Graph (any registered dialect) and verify it."""
    if not isinstance(text, str):
        hint = " (decode bytes first: data.decode())" if isinstance(text, (bytes, bytearray)) else ""
        raise ParseError(f"parse takes IR text (str), got {type(text).__name__}{hint}")
    graph = Parser(text).parse_graph()
    if verify:
        graph.verify()
    return graph
