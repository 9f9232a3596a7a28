"""The ``nkigen-lite`` command line: demo, verify/format IR text, run passes (opt), list workloads."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .ir.errors import NkError


def _max_rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    return float(np.max(np.abs(got - ref))) / scale


def _report_errors(label: str, got: dict, ref: dict) -> None:
    for name, r in ref.items():
        print(f"# {label} vs float64 NumPy: output {name!r} "
              f"max |err| / max |ref| = {_max_rel_error(got[name], r):.3e}")


def cmd_demo(args) -> int:
    from .compiler import compile as nk_compile
    from .tensor.interpret import run
    from .workloads import get_workload

    w = get_workload(args.workload)
    g = w.graph()
    print(f"# workload {w.name}: {w.description}")
    print("# tensor IR")
    print(g)
    k = nk_compile(g)
    print("# NKI IR (after canonicalize, decompose, layout, lower, deallocs; hardware-verified)")
    print(k.ir("nki"))
    print("# stats")
    for line in k.stats().summary().splitlines():
        print(f"#   {line}")
    for line in k.estimate().summary().splitlines():
        print(f"#   {line}")
    inputs = w.inputs(g, seed=0)
    ref = w.reference(**inputs)
    from .emit.simulate import simulate

    _report_errors("tensor interpreter         ", run(g, inputs), ref)
    _report_errors("NKI interpreter            ", k.run(inputs), ref)
    _report_errors("emitted module on simulator", simulate(k, inputs), ref)
    print("# (`nkigen-lite compile --workload NAME --emit` prints the @nki.jit module)")
    return 0


def cmd_compile(args) -> int:
    from .compiler import compile as nk_compile
    from .ir.parser import parse

    if args.workload:
        from .workloads import get_workload

        g = get_workload(args.workload).graph()
    else:
        text = open(args.file).read() if args.file != "-" else sys.stdin.read()
        g = parse(text)
    k = nk_compile(g)
    print(k.nki_source() if args.emit else k.ir(args.stage), end="")
    if args.stats:
        print(k.stats().summary())
    if args.timing:
        for name, secs in k.timings.items():
            print(f"# {name:14s} {secs * 1e3:8.2f} ms")
    return 0


def cmd_verify(args) -> int:
    from .ir.parser import parse

    text = open(args.file).read() if args.file != "-" else sys.stdin.read()
    g = parse(text)
    print(g, end="") if args.print else print(f"ok: graph @{g.name}, {len(list(g.walk()))} ops")
    return 0


def cmd_opt(args) -> int:
    import json

    from .ir.parser import parse
    from .ir.passes import PassContext
    from .transforms.pipeline import tensor_pipeline

    text = open(args.file).read() if args.file != "-" else sys.stdin.read()
    names = [n.strip() for n in args.passes.split(",") if n.strip()]
    try:
        knobs = json.loads(args.knobs) if args.knobs else {}
    except ValueError as e:
        raise NkError(f"--knobs is not valid JSON: {e}") from None
    if not isinstance(knobs, dict):
        raise NkError(f"--knobs must be a JSON object, got {args.knobs!r}")

    def after(name: str, ir: str) -> None:
        print(f"// ----- IR after {name} -----\n{ir}", end="", file=sys.stderr)

    pipe = tensor_pipeline(names, print_after="all" if args.print_after_all else (),
                           print_fn=after)
    result = pipe.run(parse(text), PassContext(knobs=knobs))
    print(result.graph, end="")
    if args.print_layout:
        layout = result.ctx.analyses.get("layout")
        if layout is None:
            raise NkError("--print-layout needs the layout pass in --passes")
        print("".join(f"// {line}\n" for line in str(layout).splitlines()), end="")
    if args.timing:
        for rec in result.records:
            print(f"// timing: {rec.name} {rec.seconds * 1e3:.3f} ms", file=sys.stderr)
    return 0


def cmd_workloads(args) -> int:
    from .workloads.registry import WORKLOADS, _load_all

    _load_all()
    for name in sorted(WORKLOADS):
        print(f"{name:12s} {WORKLOADS[name].description}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="nkigen-lite", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="build a workload, print its IR, run it, report the error")
    d.add_argument("workload", nargs="?", default="softmax")
    d.set_defaults(fn=cmd_demo)
    c = sub.add_parser("compile", help="compile tensor IR (file, - for stdin) or a workload to NKI IR")
    c.add_argument("file", nargs="?", default="-")
    c.add_argument("--workload", help="compile a built-in workload instead of a file")
    c.add_argument("--stage", default="nki", help="IR to print: input, canonicalize, decompose, "
                   "cleanup, layout, lower, nki (default)")
    c.add_argument("--emit", action="store_true",
                   help="print the standalone @nki.jit module instead of IR")
    c.add_argument("--stats", action="store_true", help="print instruction and DMA statistics")
    c.add_argument("--timing", action="store_true", help="print the time of every stage")
    c.set_defaults(fn=cmd_compile)
    v = sub.add_parser("verify", help="parse and verify IR text (file or - for stdin)")
    v.add_argument("file")
    v.add_argument("--print", action="store_true", help="print the normalised IR")
    v.set_defaults(fn=cmd_verify)
    o = sub.add_parser("opt", help="run tensor passes on IR text (file or - for stdin)")
    o.add_argument("file")
    o.add_argument("--passes", default="canonicalize,decompose,layout",
                   help="comma-separated pass names (default: canonicalize,decompose,layout)")
    o.add_argument("--knobs", default="", help='layout knobs as JSON, e.g. '
                   '\'{"x": {"partition_dim": 0, "tile_size": 64}}\'')
    o.add_argument("--print-layout", action="store_true",
                   help="print the layout analysis after the IR (as // comments)")
    o.add_argument("--print-after-all", action="store_true",
                   help="print the IR after every pass (to stderr)")
    o.add_argument("--timing", action="store_true", help="print pass timings (to stderr)")
    o.set_defaults(fn=cmd_opt)
    w = sub.add_parser("workloads", help="list the built-in workloads")
    w.set_defaults(fn=cmd_workloads)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except (NkError, OSError) as e:
        print(f"nkigen-lite: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
