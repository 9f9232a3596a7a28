"""The ``nkigen-lite`` command line (docs/cli.md): compile a Python function or IR text to an NKI
kernel, run passes (opt), verify, run on arrays, list workloads, demo.

Artifacts go to stdout or ``-o FILE``; statistics, timings and progress go to stderr. Errors
are one line ``nkigen-lite: error: FILE:LINE:COL: message`` (exit code 1); ``--debug`` shows the
traceback instead.
"""

from __future__ import annotations

import argparse
import sys

from ..ir.errors import NkError
from ..transforms.pipeline import DEFAULT_STAGES, DEFAULT_TENSOR_PASSES
from .errors import describe

STAGES_HELP = ", ".join(("input", *(s for s, _ in DEFAULT_STAGES), "nki (default)"))
OPT_PASSES = ",".join(DEFAULT_TENSOR_PASSES)


def _common() -> argparse.ArgumentParser:
    c = argparse.ArgumentParser(add_help=False)
    c.add_argument("--debug", action="store_true", help="show a traceback on errors")
    c.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="per-stage progress on stderr for compiles that take over a second",
    )
    c.add_argument("-q", "--quiet", action="store_true", help="no status lines on stderr")
    return c


def _inputs(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--input",
        "-i",
        action="append",
        metavar="NAME=" + what,
        help="an input of the function (repeat for each input)",
    )


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = argparse.ArgumentParser(
        prog="nkigen-lite", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--version", action="version", version=f"nkigen-lite {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    common = [_common()]

    c = sub.add_parser(
        "compile", parents=common, help="compile FILE.py:function, IR text or a workload to an NKI kernel"
    )
    c.add_argument("file", nargs="?", metavar="FILE.py:function | FILE | -")
    _inputs(c, "SHAPE[:DTYPE]")
    c.add_argument("--workload", help="compile a built-in workload instead of a file")
    c.add_argument("--knobs", help='layout knobs as JSON, e.g. \'{"x": {"partition_dim": 0}}\'')
    c.add_argument(
        "-p", "--passes", help="run these comma-separated passes instead of the compiler and print the IR"
    )
    c.add_argument(
        "--emit",
        nargs="?",
        const="nki",
        choices=("nki", "ir", "stats", "io"),
        help="what to write: nki (the @nki.jit module; the default of a bare --emit), "
        "ir (IR at --stage; the default without --emit), stats, io (Kernel.io as JSON: "
        "inputs, outputs, aliases)",
    )
    c.add_argument("--stage", default="nki", help=f"IR stage for --emit ir: {STAGES_HELP}")
    c.add_argument("-o", "--output", help="write the artifact here instead of stdout")
    c.add_argument("--stats", action="store_true", help="instruction / DMA statistics to stderr")
    c.add_argument("--timing", action="store_true", help="the time of every stage to stderr")
    c.set_defaults(fn="commands:cmd_compile")

    o = sub.add_parser("opt", parents=common, help="run passes on IR text (as mlir-opt)")
    o.add_argument("file", metavar="FILE | -")
    o.add_argument(
        "-p", "--passes", default=OPT_PASSES, help=f"comma-separated pass names (default: {OPT_PASSES})"
    )
    o.add_argument("--knobs", help="layout knobs as JSON")
    o.add_argument(
        "--print-ir-after-all",
        "--print-after-all",
        dest="print_after_all",
        action="store_true",
        help="print the IR after every pass (to stderr)",
    )
    o.add_argument(
        "--split-input-file", action="store_true", help="run each chunk between '// -----' lines on its own"
    )
    o.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check errors against '// expected-error {{...}}' comments",
    )
    o.add_argument(
        "--print-layout", action="store_true", help="print the layout analysis after the IR (as // comments)"
    )
    o.add_argument("--timing", action="store_true", help="pass timings to stderr")
    o.add_argument("-o", "--output", help="write the IR here instead of stdout")
    o.set_defaults(fn="opt:cmd_opt")

    v = sub.add_parser(
        "verify", parents=common, help="verify IR text; NKI IR also gets the trn2 hardware verifier"
    )
    v.add_argument("file", metavar="FILE | -")
    v.add_argument("--print", action="store_true", help="print the normalised IR")
    v.add_argument("-o", "--output", help="write to this file instead of stdout")
    v.set_defaults(fn="commands:cmd_verify")

    r = sub.add_parser("run", parents=common, help="run tensor IR, NKI IR or FILE.py:function on .npy arrays")
    r.add_argument("file", metavar="FILE.py:function | FILE | -")
    _inputs(r, "FILE.npy")
    r.add_argument(
        "--backend",
        choices=("nki", "sim", "tensor"),
        default="nki",
        help="for a Python function: NKI interpreter (default), the emitted module on "
        "the simulator, or the tensor interpreter",
    )
    r.add_argument("-o", "--output", help="write outputs to a .npz (or .npy for one output)")
    r.set_defaults(fn="commands:cmd_run")

    rp = sub.add_parser(
        "report", parents=common, help="compile, then write the HTML explorer of the kernel (docs/report.md)"
    )
    rp.add_argument("file", nargs="?", metavar="FILE.py:function | FILE | -")
    _inputs(rp, "SHAPE[:DTYPE]")
    rp.add_argument("--workload", help="report on a built-in workload instead of a file")
    rp.add_argument("--knobs", help="layout knobs as JSON")
    rp.add_argument("-o", "--output", help="write the HTML here instead of stdout")
    rp.set_defaults(fn="report:cmd_report")

    d = sub.add_parser(
        "demo", parents=common, help="build a workload, print its IR, run it, report the error"
    )
    d.add_argument("workload", nargs="?", default="softmax")
    d.set_defaults(fn="commands:cmd_demo")

    w = sub.add_parser("workloads", parents=common, help="list the built-in workloads")
    w.set_defaults(fn="commands:cmd_workloads")
    return p


def _command(spec: str):
    import importlib

    mod, fn = spec.split(":")
    return getattr(importlib.import_module(f"{__package__}.{mod}"), fn)


def main(argv=None) -> int:
    """Entry point; returns the exit code (0 ok, 1 error, 2 usage error, 130 interrupted)."""
    args = build_parser().parse_args(argv)
    args.source = args.positions = args.user_file = None
    try:
        return _command(args.fn)(args)
    except KeyboardInterrupt:
        print("nkigen-lite: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as e:  # noqa: BLE001 - every error becomes one line (traceback with --debug)
        if args.debug:
            raise
        positions = args.positions or getattr(e, "positions", None)
        line = describe(e, args.source, positions, args.user_file)
        if not isinstance(e, NkError) and not _raised_in(e, args.user_file):
            line += " (internal error; --debug shows the traceback)"
        print(f"nkigen-lite: error: {line}", file=sys.stderr)
        return 1


def _raised_in(exc: BaseException, path: str | None) -> bool:
    import os
    import traceback

    if path is None:
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and os.path.abspath(frames[-1].filename) == os.path.abspath(path)
