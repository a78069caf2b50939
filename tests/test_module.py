"""Tests of the modules (every row's: the function's bits; GELU's against nn.GELU, its repr and
arguments), replace_gelu, and the package surface (lazy import, CLI). The family's own module
arguments and replace_activations: test_family_api.py."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from conftest import APPROXIMATES, BACKWARDS, ROOT, assert_same_bits, subprocess_env
from op_rows import ROWS
from torch import nn

import turbogelu

OPS = torch.ops.turbogelu
MODULE_ROWS = [r for r in ROWS if r.op.module]  # every row but exp2


# ------------------------------------------------------------------ turbogelu.GELU


@pytest.mark.parametrize("approximate", APPROXIMATES)
def test_module_matches_nn_gelu(approximate):
    x = torch.cat([torch.linspace(-10, 10, 200_001), torch.randn(10_000) * 3])
    ours = turbogelu.GELU(approximate)(x)
    theirs = nn.GELU(approximate)(x)
    assert ours.dtype == torch.float32 and ours.shape == x.shape
    assert (ours - theirs).abs().max().item() <= 3e-5
    # in float64 too (the same polynomial, evaluated in double)
    xd = x.double()
    err = (turbogelu.GELU(approximate)(xd) - nn.GELU(approximate)(xd)).abs().max().item()
    assert err <= 3e-5


@pytest.mark.parametrize("backward", BACKWARDS)
@pytest.mark.parametrize("row", MODULE_ROWS, ids=str)
def test_module_is_the_function(row, backward):
    """Every row's module (GELU's two forms, Sigmoid, Tanh, SiLU, Softcap, SwiGLU splitting
    its input in two, Softplus) gives its function's bits, forward and through autograd."""
    x = (torch.randn(3, 28) * 3).requires_grad_()
    m = row.module(backward=backward)
    assert m.backward == backward
    if backward != "default":
        assert f"backward='{backward}'" in repr(m)
    y = m(x)
    xf = x.detach().clone().requires_grad_()
    want = row.function(*(xf.chunk(2, -1) if row.gated else (xf,)), backward=backward)
    assert_same_bits(y.detach(), want.detach())
    g = torch.randn_like(y)
    y.backward(g)
    want.backward(g)
    assert_same_bits(x.grad, xf.grad)


def test_module_repr_and_defaults():
    m = turbogelu.GELU()
    assert m.approximate == "none" and m.backward == "default"
    assert "approximate='none'" in repr(m)
    assert "approximate='tanh'" in repr(turbogelu.GELU("tanh"))
    assert "backward='matched'" in repr(turbogelu.GELU(backward="matched"))
    assert list(m.parameters()) == [] and m.state_dict() == {}


def test_module_rejects_bad_arguments():
    with pytest.raises(ValueError, match="approximate"):
        turbogelu.GELU("exact")
    with pytest.raises(ValueError, match="backward"):
        turbogelu.GELU("tanh", backward="fast")


# ------------------------------------------------------------------ replace_gelu


class _Net(nn.Module):
    """nn.GELU at several depths: a Sequential inside a ModuleList, a direct child, and a
    Sequential of Sequentials."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(
            [
                nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8)),
                nn.Sequential(nn.Linear(8, 16), nn.GELU(approximate="tanh"), nn.Linear(16, 8)),
            ]
        )
        self.act = nn.GELU()
        self.head = nn.Sequential(nn.Sequential(nn.Linear(8, 8), nn.GELU("tanh")), nn.Linear(8, 2))

    def forward(self, x):
        for b in self.blocks:
            x = x + b(x)
        return self.head(self.act(x))


def _gelus(model):
    return [(name, m) for name, m in model.named_modules() if isinstance(m, nn.GELU)]


def _ours(model):
    return [(name, m) for name, m in model.named_modules() if isinstance(m, turbogelu.GELU)]


def test_replace_gelu_nested():
    torch.manual_seed(0)
    model = _Net()
    x = torch.randn(5, 8)
    before = model(x)
    keys = set(model.state_dict())
    modes = {name: m.approximate for name, m in _gelus(model)}
    assert len(modes) == 4

    assert turbogelu.replace_gelu(model) == 4
    assert _gelus(model) == []
    replaced = dict(_ours(model))
    assert set(replaced) == set(modes)
    for name, m in replaced.items():
        assert m.approximate == modes[name]  # 'tanh' kept where it was
        assert m.backward == "default"
    assert set(model.state_dict()) == keys  # parameters untouched
    after = model(x)
    torch.testing.assert_close(after, before, rtol=0, atol=1e-4)
    assert not torch.equal(after, before)  # the polynomial is in use
    after.sum().backward()  # and trains
    assert all(p.grad is not None for p in model.parameters())

    assert turbogelu.replace_gelu(model) == 0  # nothing left to replace


def test_replace_gelu_reaches_a_module_registered_under_two_names():
    """named_children() skips an instance's second name: the alias stayed torch's."""
    m = nn.Sequential(nn.Linear(2, 2), nn.GELU())
    m.add_module("again", m[1])
    shared = nn.GELU("tanh")
    m.add_module("inner", nn.Sequential(shared, nn.ReLU(), shared))
    assert turbogelu.replace_gelu(m) == 2  # two distinct modules, four places
    assert isinstance(m[1], turbogelu.GELU) and m.again is m[1]
    assert isinstance(m.inner[0], turbogelu.GELU) and m.inner[2] is m.inner[0]
    assert m.inner[0].approximate == "tanh"
    assert _gelus(m) == []


def test_replace_gelu_passes_backward():
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU("tanh"))
    assert turbogelu.replace_gelu(model, backward="matched") == 1
    assert model[1].backward == "matched" and model[1].approximate == "tanh"
    with pytest.raises(ValueError, match="backward"):
        turbogelu.replace_gelu(nn.Sequential(nn.GELU()), backward="bogus")


def test_replace_gelu_without_gelu_and_non_modules():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Sequential(nn.Tanh()))
    assert turbogelu.replace_gelu(model) == 0
    assert isinstance(model[1], nn.ReLU)
    # a model that *is* an nn.GELU cannot be replaced in place (documented): 0
    assert turbogelu.replace_gelu(nn.GELU()) == 0
    for bad in (None, [nn.GELU()], nn.GELU, "model", lambda x: x):
        with pytest.raises(TypeError, match="nn.Module"):
            turbogelu.replace_gelu(bad)


# ------------------------------------------------------------------ package surface


def _run(*args, **env):
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=subprocess_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_is_lazy():
    code = (
        "import sys, turbogelu\n"
        "print('torch' in sys.modules, 'turbogelu._C' in sys.modules, 'turbogelu.ops' in "
        "sys.modules)\n"
        "print(turbogelu.__version__, 'gelu' in dir(turbogelu), 'GELU' in turbogelu.__all__)\n"
    )
    r = _run("-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "False", turbogelu.__version__, "True", "True"]


def test_submodules_are_reachable_without_importing_them():
    """The README writes turbogelu.ops.use_cpu_kernel after a bare `import turbogelu`."""
    code = (
        "import sys, turbogelu\n"
        "print('turbogelu.ops' in sys.modules, 'ops' in dir(turbogelu))\n"
        "turbogelu.approx.spec\n"  # the torch-free lab stays torch-free
        "print('torch' in sys.modules)\n"
        "print(callable(turbogelu.ops.use_cpu_kernel), turbogelu.modules.GELU is turbogelu.GELU)\n"
    )
    r = _run("-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "False", "True", "True"]


def test_the_product_never_imports_the_harness():
    """One arrow between the two packages: experiments/ (the research harness) imports
    turbogelu (the product), never the reverse; checked on every import statement of the
    product's source."""
    import ast

    offenders = []
    for path in sorted((ROOT / "turbogelu").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                          if n.split(".")[0] == "experiments"]  # fmt: skip
    assert offenders == []
    # and at run time: the product's modules and CLI load without the harness
    code = "import sys, turbogelu.ops, turbogelu.modules, turbogelu.cli, turbogelu.approx.spec\n"
    code += "print(sorted(m for m in sys.modules if m.split('.')[0] == 'experiments'))"
    r = _run("-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_first_use_loads_torch_and_the_extension():
    code = (
        "import sys, turbogelu\n"
        "f = turbogelu.gelu\n"
        "print('torch' in sys.modules, 'turbogelu._C' in sys.modules)\n"
    )
    r = _run("-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]


def test_cli_fit_help():
    r = _run("-m", "turbogelu", "fit", "--help")
    assert r.returncode == 0, r.stderr
    assert "usage" in r.stdout and "--degree" in r.stdout and "--gelu-mode" in r.stdout


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="does_not_exist"):
        turbogelu.does_not_exist  # noqa: B018
    assert not hasattr(turbogelu, "_C_missing")
    for name in turbogelu.__all__:
        assert getattr(turbogelu, name) is not None
