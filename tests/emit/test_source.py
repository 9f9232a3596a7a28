"""The emitted module: its format, determinism, readability (comments, no dead code), names
that cannot collide or inject code, constants, 0-d tensors, and nk.simulate's contract."""

import ast
import builtins
import keyword

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import emit_nki_source, load_module
from nkigen_lite.emit.names import comment, identifier
from nkigen_lite.nki import ops as K
from nkigen_lite.workloads import get_workload

from .helpers import three_way


def _kernel(name="rmsnorm", **opts):
    w = get_workload(name)
    return nk.compile(w.graph(**opts))


def _calls(tree, prefix):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).startswith(prefix)]


def test_module_layout_follows_the_current_nki_api():
    k = _kernel("rmsnorm")
    src = k.nki_source()
    tree = ast.parse(src)
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imports == ["import nki", "import nki.isa as nisa", "import nki.language as nl"]
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert len(funcs) == 1 and [ast.unparse(d) for d in funcs[0].decorator_list] == ["nki.jit"]
    assert [a.arg for a in funcs[0].args.args] == ["x", "w"]
    consts = {t.targets[0].id: ast.literal_eval(t.value) for t in tree.body if isinstance(t, ast.Assign)}
    assert consts == {
        "INPUT_NAMES": ("x", "w"),
        "OUTPUT_NAMES": ("y",),
        "INPUT_SPECS": {"x": ((128, 1024), "float32"), "w": ((1024,), "float32")},
    }
    for call in _calls(tree, "nisa."):
        assert not call.args and call.keywords[0].arg == "dst", ast.unparse(call)
    buffers = {
        ast.unparse(kw.value) for c in _calls(tree, "nl.ndarray") for kw in c.keywords if kw.arg == "buffer"
    }
    assert buffers == {"nl.shared_hbm", "nl.sbuf", "nl.psum"}
    assert ast.unparse(funcs[0].body[-1]) == "return y"


def test_emission_is_deterministic():
    a = _kernel("attention").nki_source()
    b = _kernel("attention").nki_source()
    assert a == b
    assert a == emit_nki_source(_kernel("attention").nki)


def test_comments_name_the_tensor_op_of_each_block():
    k = _kernel("rmsnorm")
    src = k.nki_source()
    for loc in {op.loc for op in k.nki.walk() if op.loc and not isinstance(op, K.HbmViewOp)}:
        assert f"# {loc}" in src
    lines = src.splitlines()
    at = lines.index("    # tensor.rsqrt %rsqrt")
    assert lines[at + 2].strip().startswith("nisa.activation(dst=rsqrt, op=nl.rsqrt, data=reduce")


@pytest.mark.parametrize("name", ["matmul", "attention", "rope"])
def test_every_variable_is_used_and_every_dealloc_is_a_release(name):
    k = _kernel(name)
    tree = ast.parse(k.nki_source())
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
    released = [
        n.targets[0].id for n in assigns if isinstance(n.value, ast.Constant) and n.value.value is None
    ]
    assigned = {t.id for n in assigns for t in n.targets if isinstance(t, ast.Name)}
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert assigned - {"INPUT_NAMES", "OUTPUT_NAMES", "INPUT_SPECS"} <= loaded
    assert not any(isinstance(n, ast.Delete) for n in ast.walk(tree))
    assert len(released) == sum(isinstance(op, K.DeallocOp) for op in k.nki.walk())


def test_unused_views_are_not_emitted():
    b = nk.nki.Builder("views")
    x = b.add_input("x", (64, 32), nk.float32)
    y = b.alloc((64, 32), nk.float32, "hbm", name="y")
    b.hbm_view(x, (32, 64), (1, 32), name="unused_t")  # transpose, never accessed
    b.hbm_view(x, (2048,), (1,), name="unused_flat")  # reshape, never accessed
    flat = b.hbm_view(y, (2048,), (1,), name="flat")
    t = b.alloc((64, 32), name="t")
    b.dma_copy(dst=t, src=x)
    b.dma_copy(dst=flat, src=t)
    b.dealloc(t)
    b.set_outputs({"y": y})
    src = emit_nki_source(b.graph)
    assert "unused" not in src and "flat = y.reshape((2048,))" in src
    xv = np.arange(2048, dtype=np.float32).reshape(64, 32)
    np.testing.assert_array_equal(nk.simulate(src, {"x": xv})["y"], xv)


def test_an_empty_loop_is_not_emitted():
    b = nk.nki.Builder("empty")
    x = b.add_input("x", (128, 8), nk.float32)
    y = b.alloc((128, 8), nk.float32, "hbm", name="y")
    with b.fori_loop(0, 3):
        pass
    t = b.alloc((128, 8), name="t")
    b.dma_copy(dst=t, src=x)
    b.dma_copy(dst=y, src=t)
    b.dealloc(t)
    b.set_outputs({"y": y})
    src = emit_nki_source(b.graph)
    assert not any(line.strip().startswith("for ") for line in src.splitlines())
    xv = np.ones((128, 8), np.float32)
    np.testing.assert_array_equal(nk.simulate(src, {"x": xv})["y"], xv)


def test_names_avoid_keywords_builtins_and_module_names():
    b = nk.Builder("class")
    names = ["lambda", "nl", "nisa", "range", "OUTPUT_NAMES", "np", "nki"]
    vals = [b.add_input(n, (4, 8), nk.float32) for n in names]
    acc = vals[0]
    for v in vals[1:]:
        acc = acc + v
    b.set_outputs({"def": acc, "print": vals[0] * 2.0})
    g = b.graph
    k = nk.compile(g)
    src = k.nki_source()
    tree = ast.parse(src)
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    params = [a.arg for a in func.args.args]
    for p in params + [func.name]:
        assert not keyword.iskeyword(p) and not hasattr(builtins, p)
        assert p not in ("nki", "nl", "nisa", "np", "OUTPUT_NAMES", "INPUT_NAMES", "INPUT_SPECS")
    assert len(set(params)) == len(params)
    assert ast.literal_eval(
        ast.unparse(
            next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "INPUT_NAMES")
        )
    ) == tuple(names)
    x = {n: np.full((4, 8), i + 1, np.float32) for i, n in enumerate(names)}
    three_way(g, x, k)


def test_hostile_names_and_locations_cannot_inject_code():
    k = _kernel("softmax")
    x = get_workload("softmax").inputs(get_workload("softmax").graph())["x"]
    want = k.run({"x": x})["y"]
    g = k.nki
    g.input_names[0] = "x; import os"
    g.name = "k(): pass\nimport os\ndef f"
    first = next(op for op in g.walk() if op.loc)
    first.loc = "evil\nimport os\u2028os.system('true')"
    g.return_op.attrs = {"names": ("y'); import os; ('",)}  # bypasses the verifier on purpose
    src = emit_nki_source(g)
    tree = ast.parse(src)
    imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imports == ["import nki", "import nki.isa as nisa", "import nki.language as nl"]
    assert not any(isinstance(n, ast.Call) and ast.unparse(n.func) == "os.system" for n in ast.walk(tree))
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    assert func.name == "k_pass_import_os_def_f" and func.args.args[0].arg == "x_import_os"
    got = nk.simulate(src, {"x; import os": x})["y'); import os; ('"]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_identifier_and_comment_helpers():
    assert identifier("x; import os") == "x_import_os"
    assert identifier("0abc") == "v0abc"
    assert identifier(";;") == "v"
    assert comment("a\nb\r\x00c\u2028d") == "a b c d"
    assert len(comment("x" * 500)) <= 96


@pytest.mark.parametrize("dtype", [nk.float32, nk.bfloat16, nk.int32])
def test_dense_constants_travel_in_the_module(dtype):
    b = nk.Builder("consts")
    x = b.add_input("x", (3, 5), dtype)
    c = np.array([[1, -2, 3, -4, 5], [0, 7, -8, 9, 2], [4, 4, -1, 6, 3]]).astype(dtype.np_dtype)
    b.set_outputs({"y": x * b.constant(c)})
    g = b.graph
    k = nk.compile(g)
    assert k.constants, "the lowering should pass the dense constant as an input"
    src = k.nki_source()
    assert "CONSTANTS = {" in src and ("import ml_dtypes" in src) == (dtype is nk.bfloat16)
    xv = np.arange(15).reshape(3, 5).astype(dtype.np_dtype)
    three_way(g, {"x": xv}, k)
    module = load_module(src)
    for name, arr in k.constants.items():
        np.testing.assert_array_equal(module.CONSTANTS[name], arr)
        assert module.CONSTANTS[name].dtype == arr.dtype


def test_zero_dim_tensors_are_one_element_tensors_in_the_kernel():
    b = nk.Builder("scalar")
    s = b.add_input("s", (), nk.float32)
    v = b.add_input("v", (4,), nk.float32)
    b.set_outputs({"y": b.sum(v * s), "z": s * 2.0})
    g = b.graph
    k = nk.compile(g)
    assert "'s': ((1,), 'float32')" in k.nki_source()
    three_way(g, {"s": np.array(3.0, np.float32), "v": np.arange(4, dtype=np.float32)}, k)


def test_simulate_reports_wrong_inputs():
    k = _kernel("rmsnorm")
    x = get_workload("rmsnorm").inputs(get_workload("rmsnorm").graph())
    # the same check and wording as Kernel.run and nk.run (tests/test_run_paths.py)
    with pytest.raises(nk.InterpretError, match=r"missing \['w'\].*unexpected \['q'\]"):
        nk.simulate(k, {"x": x["x"], "q": x["w"]})
    with pytest.raises(
        nk.InterpretError,
        match=r"input 'x' has shape \(128, 512\), expected "
        r"\(128, 1024\)",
    ):
        nk.simulate(k, {"x": x["x"][:, :512], "w": x["w"]})
    with pytest.raises(
        nk.InterpretError,
        match=r"input 'x' has shape \(128, 512\), expected "
        r"\(128, 1024\)",
    ):
        nk.simulate(k.nki_source(), {"x": x["x"][:, :512], "w": x["w"]})
    with pytest.raises(nk.BuildError, match="NKI source text or a Kernel"):
        nk.simulate(k.nki, x)
    with pytest.raises(nk.BuildError, match="no INPUT_NAMES"):
        nk.simulate("import nki\n", x)
