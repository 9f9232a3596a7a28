"""Kernel Builder path.

- SURFACE CHECK (not a compile): the emitter drives a recording stand-in of the documented
  ``nki.compiler.kernel_builder`` call surface (tests/emit/kb_standin.py) for every workload;
  the recorded call sequence, argument shapes and enum members must match what the NKI IR
  says, op by op (the expected calls are derived here from the IR with this file's own table).
- Without the SDK, ``Kernel.build_kb`` raises an ImportError naming the package and how to
  install it.
- Tests marked ``neuron`` use the real SDK; they are skipped when it does not import.
"""

import os
import sys

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import NeuronSdkMissing, emit_kb
from nkigen_lite.emit.names import kernel_names
from nkigen_lite.nki import ops as K
from nkigen_lite.nki.types import HbmType
from nkigen_lite.nki_sim import installed
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.registry import WORKLOADS, _load_all

from ..workload_kernels import workload_kernel
from .helpers import close
from .kb_standin import DsSlice, FakeKernelBuilder, FakeTensor, Sym, Token

_load_all()
NAMES = sorted(WORKLOADS)
BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}

# NKI IR op -> (nb.isa call, {IR access attribute: builder keyword}); this file's own table.
EXPECTED = {
    K.DmaCopyOp: ("dma_copy", {"dst": "dst", "src": "src"}),
    # indirect DMAs: the HBM side is an .ap over the whole tensor (P rows, not its N)
    K.DmaGatherOp: ("dma_copy", {"dst": "dst"}),
    K.DmaScatterOp: ("dma_copy", {"src": "src"}),
    K.TensorCopyOp: ("tensor_copy", {"dst": "dst", "src": "src"}),
    K.DmaTransposeOp: ("dma_transpose", {"dst": "dst", "src": "src"}),
    K.MemsetOp: ("memset", {"dst": "dst"}),
    K.IotaOp: ("iota", {"dst": "dst"}),
    K.MatmulOp: ("matmul", {"dst": "dst", "stationary": "stationary", "moving": "moving"}),
    K.TransposeOp: (None, {"dst": "dst", "data": "src"}),
    K.ActivationOp: (
        "activation",
        {"dst": "dst", "data": "src", "bias": "bias", "scale": "scale", "reduce_res": "reduce_res"},
    ),
    K.TensorTensorOp: ("tensor_tensor", {"dst": "dst", "data1": "lhs", "data2": "rhs"}),
    K.TensorScalarOp: (
        "tensor_scalar",
        {"dst": "dst", "data": "src", "operand0": "operand0", "operand1": "operand1"},
    ),
    K.TensorReduceOp: ("tensor_reduce", {"dst": "dst", "data": "src"}),
    K.SelectOp: (
        "select_reduce",
        {"dst": "dst", "predicate": "predicate", "on_true": "on_true", "on_false": "on_false"},
    ),
    K.AffineSelectOp: ("affine_select", {"dst": "dst", "on_true_tile": "on_true_tile"}),
    K.Max8Op: ("max8", {"dst": "dst", "src": "src"}),
    K.FindIndex8Op: ("nc_find_index8", {"dst": "dst", "data": "data", "vals": "vals"}),
    K.MatchReplace8Op: ("nc_match_replace8", {"dst": "dst", "data": "data", "vals": "vals"}),
    K.BnStatsOp: ("bn_stats", {"dst": "dst", "data": "data"}),
    K.BnAggrOp: ("bn_aggr", {"dst": "dst", "data": "data"}),
}


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def _isa_name(op):
    base, _ = EXPECTED[type(op)]
    if isinstance(op, K.TransposeOp):
        return "transpose" if op.engine == "tensor" else "stream_transpose"
    if base in ("tensor_tensor", "tensor_scalar", "tensor_reduce"):
        alu = op.attrs["op0" if base == "tensor_scalar" else "op"]
        return f"{base}_{'bitvec' if alu in BITWISE else 'arith'}"
    return base


def _expected(block, names, outputs, views, loops, out):
    """(call name, detail) per builder call the IR implies, in program order (loops traced once)."""
    for op in block:
        if isinstance(op, K.AllocOp):
            t = op.result.type
            if op.result in outputs:
                continue
            out.append(
                ("ndarray", (t.shape or (1,), "hbm"))
                if isinstance(t, HbmType)
                else ("compiler.alloc", (t.shape, t.space.value))
            )
        elif isinstance(op, K.DeallocOp):
            out.append(("compiler.release", names[op.operand(0)]))
        elif isinstance(op, K.HbmViewOp):
            views[op.result] = op.operand(0)
        elif isinstance(op, K.ForiLoopOp):
            loops[op.index] = op
            out.append(("fori_loop", op.trip_count))
            _expected(op.body, names, outputs, views, loops, out)
            out.append(("end_loop", None))
        elif isinstance(op, K.NkiOp):
            out.append(("isa." + _isa_name(op), op))
    return out


def _check_start(start, offset, loops, where):
    """A window start the builder got equals the IR's affine offset, with each loop index
    traced as lower + step * k."""
    const = offset.const + sum(c * loops[v].attrs["lower"] for v, c in offset.terms)
    coeffs = sorted(c * loops[v].attrs["step"] for v, c in offset.terms)
    if not coeffs:
        assert start == const, where
        return
    assert isinstance(start, Sym), where
    assert sorted(start.terms.values()) == coeffs and start.const == const, (where, start)


def _check_call(call, op, names, views, loops):
    _, keywords = EXPECTED[type(op)]
    for attr, kw in keywords.items():
        acc = op.access(attr)
        if acc is None:
            continue
        got = call.kwargs[kw]
        assert isinstance(got, FakeTensor), (op.name, kw)
        root = views.get(acc.tensor, acc.tensor)
        assert got.root == names[root], (op.name, kw, got.root)
        assert got.shape == (acc.shape or (1,)), (op.name, kw, got.shape, acc.shape)
        for d, key in zip(acc.dims, got.index):  # windows made by indexing (not .ap patterns)
            start = key.start
            _check_start(start, d.offset, loops, (op.name, kw))
    if isinstance(op, K.ActivationOp):
        assert call.kwargs["op"] == Token("activation_function", op.attrs["op"])
        if op.access("reduce_res") is not None:
            assert call.kwargs["reduce_cmd"] == Token("reduce_cmd", "ResetReduce")
    if isinstance(op, K.TensorTensorOp):
        enum = "bitvec_op" if op.attrs["op"] in BITWISE else "arith_op"
        assert call.kwargs["op"] == Token(enum, _camel(op.attrs["op"]))
    if isinstance(op, K.MatmulOp):
        assert call.kwargs["accum"] is op.attrs["accumulate"]
    if "engine" in call.kwargs:
        assert call.kwargs["engine"] == Token("engine", _camel(op.engine))


@pytest.mark.parametrize("name", NAMES)
def test_kernel_builder_surface_check(name):
    """SURFACE CHECK against a recording stand-in; it does not compile anything."""
    k = workload_kernel(name)
    nb = FakeKernelBuilder()
    result = emit_kb(k.nki, nb, target="trn2")
    assert result == ("module", nb.rec)
    calls = nb.rec.calls
    build = calls[0]
    assert build.name == "build_kernel" and build.kwargs["target"] == "trn2"
    _, names = kernel_names(k.nki)
    assert list(build.kwargs["input_specs"]) == [names[v] for v in k.nki.inputs]
    # an output aliasing an input is that input's parameter (updated in place): no spec of its own
    own = [v for v in k.nki.outputs.values() if v not in set(k.nki.inputs)]
    assert list(build.kwargs["output_specs"]) == [names[v] for v in own]
    for v in k.nki.inputs:
        spec = build.kwargs["input_specs"][names[v]]
        shape = v.type.shape or (1,)  # a 0-d input (a runtime position) is a 1-element tensor
        assert spec[1] == shape and spec[2] == Token("dtype", v.type.dtype.numpy_name)
    views, loops = {}, {}
    expected = _expected(k.nki.body, names, set(k.nki.outputs.values()), views, loops, [])
    assert [c.name for c in calls[1:]] == [e[0] for e in expected]
    for call, (kind, detail) in zip(calls[1:], expected):
        if kind == "compiler.alloc":
            assert call.args[0] == detail[0] and call.kwargs["space"] == Token("memspace", detail[1])
        elif kind == "compiler.release":
            assert call.args == (detail,)
        elif kind == "fori_loop":
            assert call.args == (detail,) and call.kwargs == {"unroll": True}  # the default
        elif kind.startswith("isa."):
            _check_call(call, detail, names, views, loops)
    assert any(isinstance(c.kwargs.get("dst"), FakeTensor) for c in calls)


@pytest.mark.parametrize("unroll", [True, False])
def test_unroll_option_reaches_every_fori_loop(unroll):
    """``unroll=`` (default True: the neuronx-cc rolled-loop workaround) on every nb.fori_loop."""
    k = nk.compile(get_workload("softmax").graph(shape=(2048, 512)))  # 16 row tiles: a loop
    nb = FakeKernelBuilder()
    emit_kb(k.nki, nb, unroll=unroll)
    loops = [c for c in nb.rec.calls if c.name == "fori_loop"]
    assert loops and all(c.kwargs == {"unroll": unroll} for c in loops)


def test_unroll_must_be_a_bool():
    k = nk.compile(get_workload("softmax").graph(shape=(256, 512)))
    with pytest.raises(nk.BuildError, match="unroll must be True or False, got 'yes'"):
        emit_kb(k.nki, FakeKernelBuilder(), unroll="yes")


def test_loop_offsets_reach_the_builder_as_traced_index_arithmetic():
    """A loop window like x[ds(i*384 + 128, 128), 0:512] (a software-pipelined row loop running
    3 row tiles per trip, the next tile's load ahead, docs/lowering.md) arrives as
    nb.ds(<traced 384*k + 128>, 128)."""
    k = nk.compile(get_workload("softmax").graph(shape=(2048, 512)))
    nb = FakeKernelBuilder()
    emit_kb(k.nki, nb)
    loads = [
        c.kwargs["src"] for c in nb.rec.calls if c.name == "isa.dma_copy" and c.kwargs["src"].root == "x"
    ]
    rows = [t.index[0] for t in loads if t.index and isinstance(t.index[0].start, Sym)]
    assert rows and all(isinstance(r, DsSlice) and r.size == 128 for r in rows)
    assert all(list(r.start.terms.values()) == [384] for r in rows)
    assert {r.start.const for r in rows} == {128, 256, 384}


def test_without_the_sdk_build_kb_names_the_package_and_the_install_command(monkeypatch):
    k = nk.compile(get_workload("softmax").graph())
    monkeypatch.setitem(sys.modules, "nki", None)  # an uninstalled package
    with pytest.raises(NeuronSdkMissing) as info:
        k.build_kb()
    msg = str(info.value)
    assert isinstance(info.value, ImportError)
    assert "'nki'" in msg and "nki.compiler.kernel_builder" in msg
    assert "pip install --extra-index-url https://pip.repos.neuron.amazonaws.com nki neuronx-cc" in msg


def test_the_simulator_never_passes_for_the_sdk():
    k = nk.compile(get_workload("softmax").graph())
    with installed(), pytest.raises(NeuronSdkMissing):
        k.build_kb()


# ---- the real Neuron SDK (skipped when it does not import) ----------------------------------


@pytest.mark.neuron
@pytest.mark.parametrize("name", NAMES)
def test_real_kernel_builder_builds_a_nisa_module(name):
    pytest.importorskip("nki.compiler.kernel_builder", reason="the Neuron SDK is not installed")
    k = nk.compile(get_workload(name).graph())
    module = k.build_kb(target="trn2")
    text = module.operation.get_asm(print_generic_op_form=True)
    assert "nisa." in text


@pytest.mark.neuron
@pytest.mark.parametrize("name", NAMES)
def test_real_nki_simulator_runs_the_emitted_module(name):
    nki = pytest.importorskip("nki", reason="the Neuron SDK is not installed")
    if not hasattr(nki, "simulate"):
        pytest.skip("the installed 'nki' is not the Neuron SDK (no nki.simulate)")
    os.environ.setdefault("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    w = get_workload(name)
    g = w.graph()
    k = nk.compile(g)
    namespace = {}
    exec(compile(k.nki_source(), f"<{name}>", "exec"), namespace)  # imports the real nki
    kernel = namespace[kernel_names(k.nki)[0]]
    x = w.inputs(g)
    args = [x[n] for n in namespace["INPUT_NAMES"]] + list(namespace.get("CONSTANTS", {}).values())
    outs = nki.simulate(kernel)(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    want = k.run(x)
    for n, got in zip(namespace["OUTPUT_NAMES"], outs):
        close(np.asarray(got), want[n], g.outputs[n].type.dtype, f"{name}.{n}: real nki.simulate")


def test_collectives_and_the_program_id_reach_the_builder_surface():
    """SURFACE CHECK (recording stand-in): a rank kernel's all_reduce and an LNC=2 kernel's
    program id, with the keywords kb_table assumes."""
    b = nk.Builder("tp")
    x = b.add_input("x", (256, 64), nk.float32)
    b.set_outputs({"y": b.all_reduce(b.exp(x), world=2)})
    nb = FakeKernelBuilder()
    emit_kb(nk.compile(b.graph).nki, nb, target="trn2")
    (ar,) = [c for c in nb.rec.calls if c.name == "isa.all_reduce"]
    assert ar.kwargs["replica_group"] == [[0, 1]]
    assert ar.kwargs["op"] == Token("arith_op", "Add")
    assert len(ar.kwargs["srcs"]) == len(ar.kwargs["dsts"]) == 1
    from tests.nki.test_lnc import softmax

    nb = FakeKernelBuilder()
    emit_kb(nk.split_cores(nk.compile(softmax(512, 256)), 2).nki, nb, target="trn2")
    assert [c.args for c in nb.rec.calls if c.name == "program_id"] == [(0,)]
