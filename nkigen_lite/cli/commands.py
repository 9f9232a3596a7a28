"""The CLI's commands: demo, compile, verify, run, workloads (opt and report live apart)."""

from __future__ import annotations

import sys

import numpy as np

from ..ir.graph import Graph
from .errors import CliError
from .sources import (
    is_python_target,
    load_function,
    parse_input_array,
    parse_input_spec,
    parse_ir,
    parse_knobs,
    read_text,
    trace_function,
    write_output,
)


def _max_rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    return float(np.max(np.abs(got - ref))) / scale


def _report_errors(label: str, got: dict, ref: dict) -> None:
    for name, r in ref.items():
        print(
            f"# {label} vs float64 NumPy: output {name!r} "
            f"max |err| / max |ref| = {_max_rel_error(got[name], r):.3e}"
        )


def is_nki(g: Graph) -> bool:
    """True when ``g`` is in the NKI dialect (its ops are ``nki.*``)."""
    return any(op.name.startswith("nki.") for op in g.walk())


def cmd_demo(args) -> int:
    from ..compiler import compile as nk_compile
    from ..emit.simulate import simulate
    from ..tensor.interpret import run
    from ..workloads import get_workload

    w = get_workload(args.workload)
    g = w.graph()
    print(f"# workload {w.name}: {w.description}")
    print("# tensor IR")
    print(g)
    k = nk_compile(g, verbose=args.verbose)
    print("# NKI IR (after canonicalize, decompose, layout, lower, deallocs; hardware-verified)")
    print(k.ir("nki"))
    print("# stats")
    for line in k.stats().summary().splitlines():
        print(f"#   {line}")
    for line in k.estimate().summary().splitlines():
        print(f"#   {line}")
    for warning in k.warnings():  # performance warnings on stderr
        print(warning, file=sys.stderr)
    inputs = w.inputs(g, seed=0)
    ref = w.reference(**inputs)
    _report_errors("tensor interpreter         ", run(g, inputs), ref)
    _report_errors("NKI interpreter            ", k.run(inputs), ref)
    _report_errors("emitted module on simulator", simulate(k, inputs), ref)
    print("# (`nkigen-lite compile --workload NAME --emit` prints the @nki.jit module)")
    return 0


def load_graph(args) -> Graph:
    """The tensor graph a command works on: ``--workload``, ``FILE.py:function`` traced with the
    ``--input`` specs, or IR text (a file, ``-`` for stdin)."""
    if getattr(args, "workload", None):
        from ..workloads import get_workload

        return get_workload(args.workload).graph()
    if args.file is None:
        raise CliError("give FILE.py:function, an IR file (- for stdin) or --workload NAME")
    if is_python_target(args.file):
        fn, path = load_function(args.file)
        args.user_file = path
        specs = [parse_input_spec(s) for s in args.input or []]
        return trace_function(fn, specs, getattr(fn, "__name__", args.file))
    if args.input:
        raise CliError(
            "--input gives the shapes of a Python function's arguments; IR text already declares its inputs"
        )
    text = read_text(args.file)
    args.source = "<stdin>" if args.file == "-" else args.file
    g, args.positions = parse_ir(text, args.source)
    if is_nki(g):
        raise CliError("this is NKI IR (already compiled); use `nkigen-lite verify` or `run`", args.source)
    return g


def cmd_compile(args) -> int:
    from ..compiler import STAGES
    from ..compiler import compile as nk_compile

    g = load_graph(args)
    knobs = parse_knobs(args.knobs)
    if args.passes:
        if args.emit not in (None, "ir"):
            raise CliError(
                f"-p runs passes and prints IR; --emit {args.emit} needs the full compile (drop -p)"
            )
        from ..ir.passes import PassContext, Pipeline, get_pass
        from ..nki.target import TRN2
        from ..transforms import pipeline as _tensor  # noqa: F401  (registers passes)
        from ..transforms.lower import passes as _lower  # noqa: F401

        names = [n.strip() for n in args.passes.split(",") if n.strip()]
        res = Pipeline([get_pass(n) for n in names]).run(g, PassContext(TRN2, knobs))
        write_output(str(res.graph), args.output)
        _timings(args, res.timings())
        return 0
    stage = args.stage
    if stage != "nki" and stage not in STAGES:
        raise CliError(f"--stage {stage!r} is not a stage; stages: {', '.join(STAGES)}, nki")
    k = nk_compile(g, knobs=knobs, verbose=args.verbose)
    for warning in k.warnings():  # performance warnings on stderr
        print(warning, file=sys.stderr)
    emit = args.emit or ("nki" if (args.output or "").endswith(".py") else "ir")
    if emit == "nki":
        artifact = k.nki_source()
    elif emit == "stats":
        artifact = k.stats().summary() + "\n" + k.estimate().summary() + "\n"
    elif emit == "io":
        import json

        artifact = json.dumps(k.io.to_dict(), indent=1) + "\n"
    else:
        artifact = k.ir(stage)
    write_output(artifact, args.output)
    if args.stats:
        print(k.stats().summary(), file=sys.stderr)
    _timings(args, k.timings)
    if args.output and args.output != "-" and not args.quiet:
        print(
            f"nkigen-lite: wrote {args.output} ({emit}, kernel {k.name}{k.io})",
            file=sys.stderr,
        )
    return 0


def _timings(args, timings: dict) -> None:
    if args.timing:
        for name, secs in timings.items():
            print(f"# {name:14s} {secs * 1e3:8.2f} ms", file=sys.stderr)


def cmd_verify(args) -> int:
    from ..nki.target import TRN2
    from ..nki.verify import verify as nki_verify

    text = read_text(args.file)
    args.source = "<stdin>" if args.file == "-" else args.file
    g, args.positions = parse_ir(text, args.source)
    nki = is_nki(g)
    if nki:
        peaks = nki_verify(g, TRN2)
    if args.print:
        write_output(str(g), args.output)
    else:
        what = (
            f"NKI kernel @{g.name} passes the trn2 hardware verifier "
            f"(peak SBUF {peaks.sbuf_bytes:,} B/partition, PSUM {peaks.psum_banks} banks)"
            if nki
            else f"tensor graph @{g.name} verifies"
        )
        write_output(f"ok: {what}, {sum(1 for _ in g.walk())} ops\n", args.output)
    return 0


def cmd_run(args) -> int:
    arrays = dict(parse_input_array(s) for s in args.input or [])
    if is_python_target(args.file):
        from ..compiler import compile as nk_compile
        from ..tensor.trace import TracedFunction, trace

        fn, path = load_function(args.file)
        args.user_file = path
        tf = fn if isinstance(fn, TracedFunction) else trace(fn)
        g = tf.trace(**arrays)
        if args.backend == "tensor":
            from ..tensor.interpret import run

            out = run(g, arrays)
        else:
            from ..emit.simulate import simulate

            k = nk_compile(g, verbose=args.verbose)
            out = k.run(arrays) if args.backend == "nki" else simulate(k, arrays)
    else:
        text = read_text(args.file)
        args.source = "<stdin>" if args.file == "-" else args.file
        g, args.positions = parse_ir(text, args.source)
        if is_nki(g):
            from ..nki.interpret import run as nki_run

            out = nki_run(g, arrays)
        else:
            from ..tensor.interpret import run

            out = run(g, arrays)
    _write_arrays(out, args.output)
    return 0


def _write_arrays(out: dict, path: str | None) -> None:
    if path is None or path == "-":
        with np.printoptions(threshold=20, edgeitems=3, precision=6):
            for name, a in out.items():
                print(f"{name}: {a.shape} {a.dtype}\n{np.asarray(a)}")
        return
    try:
        if path.endswith(".npy"):
            if len(out) != 1:
                raise CliError(
                    f"{len(out)} outputs ({', '.join(out)}) do not fit one .npy file; write a .npz", path
                )
            np.save(path, next(iter(out.values())))
        else:
            np.savez(path, **out)
    except OSError as e:
        raise CliError(f"cannot write: {e.strerror}", path) from None
    print(
        f"nkigen-lite: wrote {path} ({', '.join(f'{n} {a.shape} {a.dtype}' for n, a in out.items())})",
        file=sys.stderr,
    )


def cmd_workloads(_args) -> int:
    from ..workloads.registry import WORKLOADS, _load_all

    _load_all()
    for name in sorted(WORKLOADS):
        print(f"{name:12s} {WORKLOADS[name].description}")
    return 0
