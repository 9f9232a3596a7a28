"""``nk.compile``: run the default pipeline and package the result as a Kernel.

Pipeline: ``transforms/pipeline.py::DEFAULT_STAGES`` (canonicalize → decompose → canonicalize
(cleanup) → layout → lower → deallocs), then the hardware verifier. The input graph is never
modified: compilation works on a structural copy (``ir/clone.py``) whose values belong to no
builder, so compiler code never adds ops to the user's builder. ``verify=True`` makes the copy
by printing and re-parsing instead and checks that the IR after every stage prints, parses and
prints back identically.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .gc_budget import fewer_collections
from .ir.clone import clone_graph
from .ir.errors import BuildError, IndexOutOfRange, InterpretError, VerifyError
from .ir.graph import Graph
from .ir.parser import parse
from .ir.passes import PassContext, Pipeline, get_pass
from .kernel_io import KernelIO
from .nki.interpret import run as nki_run
from .nki.target import TRN2, Target
from .nki.verify import verify as nki_verify
from .perf.stats import KernelStats, kernel_stats
from .tensor.index_bounds import check_index_inputs, index_bounds
from .transforms.layout.analysis import LayoutAnalysis
from .transforms.lower import passes as _lower_passes  # noqa: F401  (registers lower, deallocs)
from .transforms.lower.passes import KernelExtras
from .transforms.pipeline import DEFAULT_STAGES

STAGES = ("input", *(stage for stage, _ in DEFAULT_STAGES))


@dataclass
class Kernel:
    """A compiled kernel: its NKI graph, the IR after every stage, and ways to run and measure it."""

    name: str
    nki: Graph
    target: Target
    constants: dict[str, np.ndarray]
    input_names: list[str]
    output_names: list[str]
    stage_ir: dict[str, str]
    timings: dict[str, float]
    layout: object = None
    empty_outputs: dict = field(default_factory=dict)
    input_types: dict = field(default_factory=dict)  # input name -> TensorType (the signature)
    io: KernelIO | None = None  # inputs, outputs and aliases under the graph's names
    _stats: KernelStats | None = field(default=None, repr=False)
    _source: Graph | None = field(default=None, repr=False)
    _knobs: dict = field(default_factory=dict, repr=False)
    _derived: dict = field(default_factory=dict, repr=False)  # results derived on first use

    def check_inputs(self, inputs) -> dict[str, np.ndarray]:
        """Validate ``{input name: array}`` against the signature (the same check and wording
        as ``nk.run`` and ``nk.simulate``); returns the arrays."""
        from .ir.interpreter import check_signature

        return check_signature(
            self.name, self.input_names, [self.input_types[n] for n in self.input_names], inputs
        )

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the kernel on the NKI interpreter; returns ``{output name: array}``."""
        arrays = self.kernel_inputs(inputs)
        out = {}
        if self.nki.outputs:  # none when every graph output is empty
            try:
                out = nki_run(self.nki, {**arrays, **self.constants}, self.target, verify=False)
            except IndexOutOfRange as e:
                raise self.index_error(inputs, e) from e
        return self.with_empty_outputs(out)

    def index_error(self, inputs, err: IndexOutOfRange) -> IndexOutOfRange:
        """The tensor-level error for an index the kernel computed out of range (its DMA's
        bounds check raised ``err``, in the lowering's terms): the source graph run on the
        tensor interpreter names the tensor op, the index and its position, un-flattened;
        ``err`` itself when the source is not kept or runs (it never should)."""
        if self._source is None:
            return err
        from .tensor.interpret import run as tensor_run

        try:
            tensor_run(self._source, inputs)
        except IndexOutOfRange as e:
            return e  # raised from err: the traceback keeps the DMA's own report
        return err

    @property
    def empty_inputs(self) -> dict:
        """Inputs with a zero-size dim: read by nothing the kernel computes, not kernel inputs."""
        return {n: t for n, t in self.input_types.items() if t.size == 0}

    def kernel_inputs(self, inputs) -> dict[str, np.ndarray]:
        """``inputs`` checked against the signature, without the empty ones the kernel does
        not take."""
        arrays = self.check_inputs(inputs)
        check_index_inputs(self.index_bounds(), arrays)
        return {k: a for k, a in arrays.items() if k not in self.empty_inputs}

    def index_bounds(self) -> tuple:
        """The index inputs and the range each must be in (tensor/index_bounds.py): checked in
        NumPy before the kernel runs, so a bad index is reported in the user's terms."""
        if "index_bounds" not in self._derived:
            src = self._source
            if src is None and "input" in self.stage_ir:
                src = parse(self.stage_ir["input"])
            self._derived["index_bounds"] = index_bounds(src) if src is not None else ()
        return self._derived["index_bounds"]

    def with_empty_outputs(self, out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The kernel's outputs plus the empty ones it does not compute, in output order."""
        out = dict(out)
        for name, t in self.empty_outputs.items():
            out[name] = np.zeros(t.shape, t.dtype.np_dtype)
        return {n: out[n] for n in self.output_names}

    def __call__(self, *arrays):
        """``k(x, w)``: run on the NKI interpreter with the inputs in order; returns the output
        (one output ``y``), a tuple (``y0, y1, ...``) or a dict (named outputs)."""
        if len(arrays) == 1 and isinstance(arrays[0], dict):
            raise BuildError(
                f"{self.name}(...) takes arrays in order ({', '.join(self.input_names)}); "
                "for a dict of inputs use kernel.run(inputs)"
            )
        if len(arrays) != len(self.input_names):
            raise InterpretError(
                f"graph @{self.name} takes {len(self.input_names)} arrays "
                f"({', '.join(self.input_names)}), got {len(arrays)}"
            )
        return pack_outputs(self.run(dict(zip(self.input_names, arrays))))

    def __repr__(self) -> str:
        def sig(names, types):
            return ", ".join(f"{n}: {_type_text(types.get(n))}" for n in names)

        outs = {n: v.type for n, v in self.nki.outputs.items()}
        return (
            f"<Kernel {self.name}({sig(self.input_names, self.input_types)}) -> "
            f"{sig(self.output_names, outs)} for {self.target.name}, "
            f"{sum(1 for _ in self.nki.walk())} NKI ops>"
        )

    def ir(self, stage: str = "lower") -> str:
        """IR text after a stage: one of input, canonicalize, decompose, cleanup, layout, lower,
        deallocs (``"nki"`` is the final kernel). Printed on first request: the earlier stages
        by re-running the (deterministic) pipeline on the copy of the input the kernel keeps."""
        if stage == "nki":
            stage = "deallocs"
        if stage not in STAGES:
            raise BuildError(f"Kernel.ir: unknown stage {stage!r}; stages: {', '.join(STAGES)}, nki")
        if stage not in self.stage_ir:
            if stage == STAGES[-1]:
                self.stage_ir[stage] = str(self.nki)
            elif stage == "input" and self._source is not None:
                self.stage_ir[stage] = str(self._source)
            elif self._source is not None:
                _run_stages(clone_graph(self._source), self.target, self._knobs, self.stage_ir, stop=stage)
            else:
                raise BuildError(f"Kernel.ir: the IR after {stage!r} was not kept")
        return self.stage_ir[stage]

    def stats(self) -> KernelStats:
        """Static/dynamic instruction counts, DMA traffic and peak on-chip memory."""
        if self._stats is None:
            self._stats = kernel_stats(self.nki, self.target, self.read_bytes(), self.written_bytes())
        return self._stats

    def read_bytes(self) -> dict | None:
        """{input name: bytes the source program must read of it} (slices select, gathers
        count their rows: perf/read_footprint.py); None when the source graph was not kept."""
        if self._source is None:
            return None
        from .perf.read_footprint import input_read_bytes

        return input_read_bytes(self._source)

    def written_bytes(self) -> dict | None:
        """{aliased input name: bytes its pure in-place update writes} (a KV-cache row write:
        perf/inplace_footprint.py); None when the source graph was not kept."""
        if self._source is None:
            return None
        from .perf.inplace_footprint import inplace_written_bytes

        return inplace_written_bytes(self._source)

    def nki_source(self) -> str:
        """The kernel as a standalone ``@nki.jit`` Python module (docs/emit.md); run it with
        ``nk.simulate(source, inputs)`` or under the Neuron SDK."""
        from .emit.nki_source import emit_nki_source

        names = [n for n in self.input_names if n not in self.empty_inputs]
        return emit_nki_source(self.nki, self.constants, names)

    def custom_call(self) -> dict:
        """A framework-neutral, JSON-serialisable description of a call of this kernel: target
        name, operands and results (shapes, dtypes, layouts), aliases, grid and the emitted
        source (nkigen_lite/emit/custom_call.py, docs/extending.md)."""
        from .emit.custom_call import describe

        return describe(self)

    def custom_call_json(self) -> str:
        """``custom_call()`` as canonical JSON text: the same bytes for the same graph."""
        from .emit.custom_call import describe, dumps

        return dumps(describe(self))

    def build_kb(self, target: str = "trn2", unroll: bool = True):
        """The NISA MLIR module from the Neuron SDK's Kernel Builder (raises NeuronSdkMissing,
        an ImportError, when the SDK is not installed). ``unroll`` (default True, the
        workaround for a neuronx-cc rolled-loop bug; docs/emit.md) goes to every fori_loop."""
        from .emit.kernel_builder import build_kb

        return build_kb(self.nki, target, unroll=unroll)

    def estimate(self):
        """Estimated trn2 execution time from the cost model (see perf/costmodel.py)."""
        from .perf.costmodel import estimate

        return estimate(self.nki, self.target, self.read_bytes(), self.written_bytes())

    def report(self, path=None) -> str:
        """The HTML explorer of this kernel (docs/report.md): one self-contained file with the
        IR after every stage, each NKI instruction linked to its tensor op and Python line, a
        per-op table, SBUF/PSUM occupancy and the engine timeline (SVG), and the performance
        warnings. Written to ``path`` when given; returns the HTML text."""
        from .report import report_html, write_report

        if path is None:
            return report_html(self)
        write_report(self, path)
        with open(path, encoding="utf-8") as f:
            return f.read()

    def warnings(self) -> list:
        """Performance warnings (``PerfWarning``: op, reason) when the scheduled estimate exceeds
        3x the roofline or HBM traffic 2x the minimum (see perf/perf_warnings.py)."""
        from .perf.perf_warnings import kernel_warnings

        return kernel_warnings(self.nki, self.target, self.estimate(), self.stats())


class _Progress:
    """Per-stage progress on stderr, shown only once a compile has taken over a second."""

    def __init__(self, name: str, verbose: bool, after: float = 1.0):
        self.name, self.verbose, self.after = name, verbose, after
        self.t0 = self.last = time.perf_counter()
        self.pending: list[str] = []

    def stage(self, stage: str) -> None:
        if not self.verbose:
            return
        now = time.perf_counter()
        self.pending.append(
            f"nkigen-lite: {self.name}: {stage:12s} {(now - self.last) * 1e3:9.1f} ms"
            f" (total {now - self.t0:.2f} s)"
        )
        self.last = now
        if now - self.t0 >= self.after:
            print("\n".join(self.pending), file=sys.stderr, flush=True)
            self.pending.clear()


@fewer_collections()
def compile(
    graph,
    *examples,
    target: Target = TRN2,
    knobs: dict | None = None,  # noqa: A001
    verbose: bool = False,
    verify: bool = False,
) -> Kernel:
    """Compile a tensor graph (or a NumPy function) to an NKI kernel for ``target`` (trn2).

    Forms::

        nk.compile(graph)                    # a tensor Graph (nk.Builder, nk.trace(f).trace(...))
        nk.compile(f, x_example, w_example)  # a NumPy function, traced with example arrays

    ``knobs`` seed the layout solver and the group tiling: ``{value name: {"partition_dim": d,
    "tile_size": t}}`` (docs/lowering.md, "Knobs"); any other key is rejected by name.
    ``verbose=True`` prints per-stage progress to stderr once a compile has taken over a second.
    ``verify=True`` also checks the text round trip of the input and of the IR after every
    stage (slower; by default a stage's IR is printed only when ``Kernel.ir`` asks for it).
    Returns a ``Kernel``: ``k(x, w)`` / ``k.run({...})`` run it, ``k.ir(stage)``, ``k.stats()``,
    ``k.estimate()``, ``k.nki_source()``.
    """
    if not isinstance(graph, Graph):
        if callable(graph):
            from .tensor.trace import TracedFunction, trace

            tf = graph if isinstance(graph, TracedFunction) else trace(graph)
            graph = tf.trace(*examples)
        else:
            raise BuildError(f"compile takes a tensor Graph or a NumPy function, got {type(graph).__name__}")
    elif examples:
        raise BuildError(
            "compile(graph) takes no example arguments (they are for a function: "
            "nk.compile(f, *examples)); pass target= and knobs= by keyword"
        )
    for op in graph.walk():  # ops with no lowering yet say so (collectives: nkigen_lite/parallel)
        if getattr(type(op), "not_lowered", ""):
            raise BuildError(f"{op.name} cannot be compiled: {type(op).not_lowered}")
    progress = _Progress(graph.name, verbose)
    knobs = dict(knobs or {})
    t0 = time.perf_counter()
    stage_ir: dict[str, str] = {}
    if verify:
        text = str(graph)
        work = parse(text)
        _check_round_trip("input", text, work)
        stage_ir["input"] = text
    else:
        work = clone_graph(graph)
        work.verify()
    source = clone_graph(work)
    timings = {"copy": time.perf_counter() - t0}
    final, ctx = _run_stages(
        work, target, knobs, stage_ir if verify else None, timings=timings, on_stage=progress.stage
    )
    if verify:
        for name in STAGES[1:]:
            _check_round_trip(name, stage_ir[name])
    t1 = time.perf_counter()
    nki_verify(final, target, structure=False)  # _run_stages verified the structure after the last stage
    timings["verify"] = time.perf_counter() - t1
    progress.stage("verify")
    return Kernel(
        name=graph.name,
        nki=final,
        target=target,
        constants=(ctx.get(KernelExtras) or KernelExtras()).constants,
        input_names=list(graph.input_names),
        output_names=list(graph.outputs),
        stage_ir=stage_ir,
        timings=timings,
        layout=ctx.get(LayoutAnalysis),
        empty_outputs=(ctx.get(KernelExtras) or KernelExtras()).empty_outputs,
        input_types={n: v.type for n, v in zip(graph.input_names, graph.inputs)},
        io=KernelIO.of_graph(graph),
        _source=source,
        _knobs=knobs,
    )


@fewer_collections()
def _run_stages(
    work: Graph,
    target: Target,
    knobs: dict,
    stage_ir: dict | None,
    stop: str | None = None,
    timings: dict | None = None,
    on_stage=None,
    analyses: tuple = (),
):
    """Run the default pipeline on ``work`` (up to and including stage ``stop``), verifying
    after each pass; records each stage's IR text into ``stage_ir`` when given, its seconds
    into ``timings``, and calls ``on_stage(pass name)`` after it. ``analyses`` are recorded in
    the pass context first (e.g. ``LoweringCores``). Returns (graph, context)."""
    if stage_ir is not None and "input" not in stage_ir:
        stage_ir["input"] = str(work)
    ctx = PassContext(target=target, knobs=dict(knobs))
    for a in analyses:
        ctx.record(a)
    graph = work
    for name, pass_name in DEFAULT_STAGES:
        p = get_pass(pass_name)
        res = Pipeline([p], verify_each=True, print_after="all" if stage_ir is not None else ()).run(
            graph, ctx
        )
        graph, rec = res.graph, res.records[0]
        if timings is not None:
            timings[name] = rec.seconds
        if stage_ir is not None:
            stage_ir[name] = rec.ir
        if on_stage is not None:
            on_stage(p.name)
        if name == stop:
            break
    return graph, ctx


def _check_round_trip(stage: str, text: str, parsed: Graph | None = None) -> None:
    """The IR text of ``stage`` parses back to a graph that prints identically."""
    again = str(parsed if parsed is not None else parse(text))
    if again != text:
        raise VerifyError(f"the IR after {stage!r} does not print back identically after parsing")


def pack_outputs(out: dict):
    """One output ``y`` -> the array; ``y0, y1, ...`` -> a tuple; other names -> the dict."""
    names = list(out)
    if names == ["y"]:
        return out["y"]
    if names == [f"y{i}" for i in range(len(names))]:
        return tuple(out[n] for n in names)
    return out


def _type_text(t) -> str:
    if t is None:
        return "?"
    shape = "x".join(str(d) for d in t.shape) or "scalar"
    return f"{shape} {t.dtype}"
