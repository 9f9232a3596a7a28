"""nkigen_lite: NumPy-style tensor programs to NKI kernels for AWS Trainium2 (NeuronCore-v3).

Public API (stable names; see docs/architecture.md §8)::

    import nkigen_lite as nk
    b = nk.Builder("softmax"); x = b.add_input("x", (256, 512), nk.float32)
    ...
    nk.run(graph, {"x": a})      # tensor interpreter
    nk.parse(text), str(graph)  # text round trip
    k = nk.compile(graph); k.run(inputs); nk.simulate(k.nki_source(), inputs)
    k = nk.compile(f, x_example); y = k(x)      # a NumPy function, traced with examples
    f_fast = nk.jit(f); y = f_fast(x)           # traced, compiled and cached per signature
"""

# nk.nki: the NKI dialect (run / verify / Builder); nk.ops: composite ops (softmax, ...) on
# NumPy arrays, traced arrays and Builder Values
from . import nki, ops
from .compiler import Kernel, compile  # noqa: A004
from .custom import CustomCheck, check_custom  # custom NKI kernels (installs the body check)
from .emit import NeuronSdkMissing, simulate  # emitted NKI module -> NumPy NKI simulator
from .ir.dtypes import (
    ALL_DTYPES,
    DType,
    bfloat16,
    bool_,
    float8_e3m4,
    float8_e4m3,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    float32,
    get_dtype,
    int8,
    int16,
    int32,
    tfloat32,
    uint8,
    uint16,
    uint32,
)
from .ir.errors import (
    BuildError,
    IndexOutOfRange,
    InterpretError,
    NkError,
    NkWarning,
    ParseError,
    VerifyError,
)
from .ir.graph import Graph
from .ir.parser import parse
from .ir.passes import Pass, PassContext, Pipeline, get_pass
from .ir.printer import print_graph
from .ir.value import Value
from .jit import jit
from .lnc import split_cores
from .nki.target import TRN2, Target
from .nki_sim.errors import NkiSimError
from .ops import topk
from .parallel import run_ranks, shard
from .perf.costmodel import Estimate
from .perf.stats import KernelStats
from .rank_kernels import compile_ranks, run_kernel_ranks, simulate_ranks
from .tensor.builder import Builder
from .tensor.interpret import run
from .tensor.ops.composite import define_op
from .tensor.ops.custom import register_custom_reference
from .tensor.trace import trace
from .tensor.trace_array import TraceError
from .tensor.types import TensorType
from .transforms.lower.custom import register_composite_lowering

__version__ = "0.1.0"

__all__ = [
    "ALL_DTYPES",
    "DType",
    "bfloat16",
    "bool_",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3fn",
    "float8_e5m2",
    "float16",
    "float32",
    "get_dtype",
    "int8",
    "int16",
    "int32",
    "tfloat32",
    "uint8",
    "uint16",
    "uint32",
    "BuildError",
    "IndexOutOfRange",
    "InterpretError",
    "NkError",
    "ParseError",
    "VerifyError",
    "Graph",
    "parse",
    "Pass",
    "PassContext",
    "Pipeline",
    "get_pass",
    "print_graph",
    "Value",
    "Builder",
    "run",
    "TensorType",
    "Kernel",
    "compile",
    "KernelStats",
    "nki",
    "simulate",
    "trace",
    "ops",
    "define_op",
    "check_custom",
    "CustomCheck",
    "register_custom_reference",
    "register_composite_lowering",
    "topk",
    "run_ranks",
    "compile_ranks",
    "run_kernel_ranks",
    "simulate_ranks",
    "split_cores",
    "shard",
    "jit",
    "TraceError",
    "NkiSimError",
    "NeuronSdkMissing",
    "NkWarning",
    "TRN2",
    "Target",
    "Estimate",
]
