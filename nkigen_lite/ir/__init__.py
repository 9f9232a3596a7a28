"""Dialect-agnostic SSA core: dtypes, values, ops, graphs, text format, rewriting, passes."""

from . import dtypes
from .attrs import (
    BOOL,
    DENSE,
    DTYPE,
    FLOAT,
    INT,
    INT_TUPLE,
    SCALAR,
    STR,
    Attr,
    EnumAttr,
    FrozenArray,
    OptionalOf,
    TupleOf,
)
from .dtypes import DType, get_dtype, promote_types
from .errors import BuildError, InterpretError, NkError, ParseError, VerifyError
from .graph import Block, Graph, Region, ReturnOp
from .interpreter import Interpreter
from .op import OP_REGISTRY, Op
from .parser import Parser, parse
from .passes import PASS_REGISTRY, Pass, PassContext, Pipeline, get_pass
from .printer import Printer, format_op, print_graph
from .rewrite import RewritePattern, Rewriter, apply_patterns
from .types import TYPE_REGISTRY, Type
from .value import Use, Value
from .verifier import verify_graph

__all__ = [
    "dtypes",
    "Attr",
    "EnumAttr",
    "FrozenArray",
    "OptionalOf",
    "TupleOf",
    "BOOL",
    "DENSE",
    "DTYPE",
    "FLOAT",
    "INT",
    "INT_TUPLE",
    "SCALAR",
    "STR",
    "DType",
    "get_dtype",
    "promote_types",
    "BuildError",
    "InterpretError",
    "NkError",
    "ParseError",
    "VerifyError",
    "Block",
    "Graph",
    "Region",
    "ReturnOp",
    "Interpreter",
    "OP_REGISTRY",
    "Op",
    "Parser",
    "parse",
    "PASS_REGISTRY",
    "Pass",
    "PassContext",
    "Pipeline",
    "get_pass",
    "Printer",
    "format_op",
    "print_graph",
    "RewritePattern",
    "Rewriter",
    "apply_patterns",
    "TYPE_REGISTRY",
    "Type",
    "Use",
    "Value",
    "verify_graph",
]
