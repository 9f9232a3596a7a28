"""``nkigen-lite opt``: run named passes on IR text, as mlir-opt / xdsl-opt do.

``--split-input-file`` cuts the input at lines ``// -----`` and runs each chunk on its own
(line numbers stay those of the whole file). ``--verify-diagnostics`` checks that the errors
the chunks raise are exactly the ones announced by comments in the input::

    %y = tensor.nope %x : tensor<4xf32>   // expected-error {{unknown op 'tensor.nope'}}
    // expected-error@+1 {{...}}          (the error is on the next line; @-2, @above, @below)
    // expected-error@unknown {{...}}     (an error without a source location)

The text in ``{{...}}`` must occur in the error message. Exit 0 when every chunk raised the
errors it expected and no others.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from ..ir.errors import NkError
from .errors import CliError, describe
from .sources import parse_ir, parse_knobs, read_text, write_output

SPLIT = re.compile(r"^// -----\s*$", re.M)
EXPECT = re.compile(r"//\s*expected-(error|warning|remark|note)(@\S+?)?\s*\{\{(.*?)\}\}")


@dataclass
class Expectation:
    kind: str
    line: int | None  # None: @unknown
    text: str
    at: int  # the comment's own line
    seen: bool = False


def split_chunks(text: str, split: bool) -> list[tuple[int, str]]:
    """``(first line number, chunk text)``; one chunk unless ``split``."""
    if not split:
        return [(1, text)]
    chunks, start, line = [], 0, 1
    for m in SPLIT.finditer(text):
        chunks.append((line, text[start : m.start()]))
        line += text.count("\n", start, m.end()) + 1
        start = m.end() + 1
    chunks.append((line, text[start:]))
    return chunks


def expectations(chunk: str, first_line: int, source: str) -> list[Expectation]:
    out = []
    for i, ln in enumerate(chunk.splitlines()):
        here = first_line + i
        for m in EXPECT.finditer(ln):
            kind, at, msg = m.groups()
            if at is None:
                target = here
            elif at == "@unknown":
                target = None
            elif at == "@above":
                target = here - 1
            elif at == "@below":
                target = here + 1
            elif re.fullmatch(r"@[+-]\d+", at):
                target = here + int(at[1:])
            else:
                raise CliError(
                    f"bad expected-{kind} location {at!r} (use @+N, @-N, @above, @below or @unknown)",
                    f"{source}:{here}:{m.start() + 1}",
                )
            out.append(Expectation(kind, target, msg, here))
    return out


def _error_line(exc: BaseException, positions: dict) -> tuple[int | None, str]:
    """The 1-based line an error is located at (None: unknown) and its one-line text."""
    text = describe(exc)
    if getattr(exc, "line", 0):
        return exc.line, exc.reason
    op = getattr(exc, "op", None)
    if op is not None and op in positions:
        return positions[op][0], text
    return None, text


def run_chunk(chunk: str, first_line: int, source: str, args, knobs: dict):
    """Parse and run the passes on one chunk; returns ``(graph or None, error or None, positions)``."""
    from ..ir.passes import PassContext
    from ..nki.target import TRN2
    from ..transforms.lower import passes as _lower  # noqa: F401  (registers lower, deallocs)
    from ..transforms.pipeline import tensor_pipeline

    padded = "\n" * (first_line - 1) + chunk
    names = [n.strip() for n in args.passes.split(",") if n.strip()]

    def after(name: str, ir: str) -> None:
        print(f"// -----// IR Dump After {name} //----- //\n{ir}", end="", file=sys.stderr)

    positions: dict = {}
    try:
        pipe = tensor_pipeline(names, print_after="all" if args.print_after_all else (), print_fn=after)
        g, positions = parse_ir(padded, source)
        result = pipe.run(g, PassContext(target=TRN2, knobs=knobs))
    except NkError as e:
        return None, e, getattr(e, "positions", positions), None
    return result.graph, None, positions, result


def cmd_opt(args) -> int:
    text = read_text(args.file)
    source = "<stdin>" if args.file == "-" else args.file
    args.source = source
    knobs = parse_knobs(args.knobs)
    outputs, failed = [], False
    for first_line, chunk in split_chunks(text, args.split_input_file):
        expected = expectations(chunk, first_line, source) if args.verify_diagnostics else []
        graph, err, positions, result = run_chunk(chunk, first_line, source, args, knobs)
        if err is not None:
            line, msg = _error_line(err, positions)
            match = next(
                (
                    x
                    for x in expected
                    if x.kind == "error" and not x.seen and x.line == line and x.text in msg
                ),
                None,
            )
            if match is not None:
                match.seen = True
            else:
                failed = True
                where = f"{source}:{line}" if line else source
                what = "unexpected error" if args.verify_diagnostics else "error"
                print(
                    f"nkigen-lite: error: {where}: {what}: {describe(err)}"
                    if args.verify_diagnostics
                    else f"nkigen-lite: error: {describe(err, source, positions)}",
                    file=sys.stderr,
                )
        for x in expected:
            if not x.seen:
                failed = True
                where = f"line {x.line}" if x.line else "an unknown location"
                print(
                    f"nkigen-lite: error: {source}:{x.at}: expected {x.kind} at {where} was "
                    f"not produced: {{{{{x.text}}}}}",
                    file=sys.stderr,
                )
        if graph is not None:
            out = str(graph)
            if args.print_layout:
                from ..transforms.layout import LayoutAnalysis

                layout = result.ctx.get(LayoutAnalysis)
                if layout is None:
                    raise CliError("--print-layout needs the layout pass in -p")
                out += "".join(f"// {line}\n" for line in str(layout).splitlines())
            outputs.append(out)
            if args.timing:
                for rec in result.records:
                    print(f"// timing: {rec.name} {rec.seconds * 1e3:.3f} ms", file=sys.stderr)
    write_output("// -----\n".join(outputs), args.output)
    return 1 if failed else 0
