"""The product outside the checkout: a wheel built from this tree, installed into a scratch
virtual environment that reuses the pinned torch, runs the ops, reads its specs and Metal
source (every row of the kernels' table) from package data and registers the MPS kernels (run
against a fake ``compile_shader``, as tests/test_mps.py does) from a
directory that is not the checkout, with no research harness importable.

The wheel is built with pip from this tree as a user would, without the benchmark's probes
(TURBOGELU_BENCH_PROBES=0; the extension's objects from `make build` are reused: build/ is
ninja's, so only the link differs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
import torch
from conftest import ROOT, subprocess_env

import turbogelu
from turbogelu.approx import spec

# Run inside the scratch environment, from an empty directory: prints one JSON line.
PROBE = r"""
import json, sys
from pathlib import Path
import torch
import turbogelu
from turbogelu import mps, ops
from turbogelu.approx import spec

out = {"file": turbogelu.__file__, "spec_dir": str(spec.SPEC_DIR),
       "family_metal": str(mps.FAMILY_SOURCE)}
x = torch.linspace(-6, 6, 1001)
with ops.use_cpu_kernel("poly"):
    out["gelu"] = turbogelu.gelu(x).tolist()
    out["backward"] = turbogelu.gelu_backward_op(torch.ones_like(x), x).tolist()
out["specs"] = sorted(p.name for p in spec.SPEC_DIR.rglob("*.json"))
out["exact_range"] = spec.load(spec.spec_path("none"))["settings"]["range"]

# The MPS kernels against a fake compile_shader whose kernels, <row>_<tier>_forward_<type>,
# call the CPU op (GELU's exact form, sigmoid's forward in either tier).
class Kernel:
    def __init__(self, name):
        self.name = name
    def __call__(self, *args, threads):
        x, o, n = args
        if self.name == "gelu_none_accurate_forward_float":
            o.copy_(torch.ops.turbogelu.gelu(x, "none"))
        elif self.name in ("sigmoid_accurate_forward_float", "sigmoid_paper_forward_float"):
            o.copy_(torch.ops.turbogelu.sigmoid(x, tier=self.name.split("_")[1]))
        else:
            raise AssertionError(self.name)

class Library:
    def __getattr__(self, name):
        return Kernel(name)

sources = []
torch.mps.compile_shader = lambda src: sources.append(src) or Library()
mps.DEVICE = "cpu"
with ops.use_cpu_kernel("poly"):
    out["mps_gelu"] = mps.gelu(x).tolist()
out["metal_compiled"] = sources == [mps.FAMILY_SOURCE.read_text()]
out["default_backward"] = mps.default_backward()
with ops.use_cpu_kernel("poly"):  # the program Metal runs, on any CPU
    out["sigmoid"] = turbogelu.sigmoid(x).tolist()
    out["mps_sigmoid"] = mps.FAMILY_OPS_MPS["sigmoid"](x).tolist()
    out["sigmoid_paper"] = turbogelu.sigmoid(x, tier="paper").tolist()
    out["mps_sigmoid_paper"] = mps.FAMILY_OPS_MPS["sigmoid"](x, tier="paper").tolist()
out["family_metal_compiled"] = sources == [mps.FAMILY_SOURCE.read_text()]  # (once)
out["family_default_backward"] = mps.family_default_backward()
out["family_default_backward_paper"] = mps.family_default_backward("paper")
out["bench_probes"] = hasattr(torch.ops.turbogelu_bench, "_stream_copy")
try:
    import experiments  # noqa: F401
    out["harness"] = "importable"
except ImportError:
    out["harness"] = "absent"
print(json.dumps(out))
"""


# The ops without the lab: scipy blocked (an import of it raises ImportError), every function,
# backward and module run, and no module of the lab (turbogelu.approx) loaded on the way.
PROBE_WITHOUT_LAB = r"""
import sys
sys.modules["scipy"] = None
import json
import torch
import turbogelu

x = torch.linspace(-6, 6, 102, requires_grad=True)
y = sum(
    f(x).sum()
    for f in (
        turbogelu.gelu, turbogelu.sigmoid, turbogelu.tanh, turbogelu.silu, turbogelu.exp2,
        lambda t: turbogelu.softcap(t, 30.0), lambda t: turbogelu.swiglu(t, t),
        lambda t: turbogelu.softmax(t.reshape(1, -1)), turbogelu.GELU(), turbogelu.Sigmoid(),
        turbogelu.Tanh(), turbogelu.SiLU(), turbogelu.Softcap(5.0), turbogelu.SwiGLU(dim=0),
    )
)
y.backward()
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU(), torch.nn.SiLU())
replaced = sum(turbogelu.replace_activations(model).values())
lab = sorted(m for m, v in sys.modules.items() if v is not None and m.split(".")[0] == "scipy")
lab += sorted(m for m in sys.modules if m.startswith("turbogelu.approx"))
print(json.dumps({"grad_finite": bool(torch.isfinite(x.grad).all()), "replaced": replaced,
                  "lab_modules": lab}))
"""
# python -m turbogelu report with scipy blocked: one line naming the extra, exit 2.
REPORT_WITHOUT_LAB = (
    "import runpy, sys; sys.modules['scipy'] = None; sys.argv = ['turbogelu', 'report']; "
    "runpy.run_module('turbogelu', run_name='__main__', alter_sys=True)"
)


def _outside_env() -> dict:
    """This environment without a PYTHONPATH that could lead back into the checkout."""
    env = subprocess_env()
    env.pop("PYTHONPATH", None)
    return env


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{cmd} failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """(python of a scratch venv with the wheel installed, an empty directory to run in)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # The extension as `make build` built it: CUDA on or off alike (TURBOGELU_CUDA unset
    # autodetects the same way), so ninja finds its objects up to date.
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
         "--wheel-dir", str(tmp / "dist"), str(ROOT)],
        cwd=ROOT, env=subprocess_env(TURBOGELU_BENCH_PROBES="0"), timeout=1500,
    )  # fmt: skip
    (wheel,) = (tmp / "dist").glob("turbogelu-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=300)  # pip from ensurepip, offline
    py = venv / "bin" / "python"
    _run(
        [str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        cwd=tmp, env=_outside_env(), timeout=300,
    )  # fmt: skip
    # Then reuse this environment's packages (the pinned torch) through a .pth line: a plain
    # path, so the editable checkout's own .pth finder there is not run and turbogelu comes
    # only from the wheel (added after the install, or pip would see the editable one).
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    (site / "reuse_pinned_torch.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run_dir = tmp / "elsewhere"
    run_dir.mkdir()
    return py, run_dir


def test_the_wheel_runs_outside_the_checkout(scratch):
    py, run_dir = scratch
    env = _outside_env()
    r = _run([str(py), "-c", PROBE], cwd=run_dir, env=env, timeout=300)
    got = json.loads(r.stdout.strip().splitlines()[-1])
    # turbogelu from the installed wheel, its data inside it, not from the checkout
    for key in ("file", "spec_dir", "family_metal"):
        assert not Path(got[key]).is_relative_to(ROOT), (key, got[key])
        assert "site-packages" in got[key], (key, got[key])
    assert got["specs"] == sorted(p.name for p in (ROOT / "data" / "specs").rglob("*.json"))
    assert got["exact_range"] == spec.DEFAULTS["exact"].range
    # the same bits as this checkout's build
    x = torch.linspace(-6, 6, 1001)
    with turbogelu.ops.use_cpu_kernel("poly"):
        assert got["gelu"] == turbogelu.gelu(x).tolist()
        assert got["backward"] == turbogelu.gelu_backward_op(torch.ones_like(x), x).tolist()
    assert got["mps_gelu"] == got["gelu"] and got["metal_compiled"] is True
    assert got["default_backward"] == turbogelu.mps.default_backward()
    with turbogelu.ops.use_cpu_kernel("poly"):  # the default differs between ISAs
        assert got["sigmoid"] == turbogelu.sigmoid(x).tolist()
        assert got["sigmoid_paper"] == turbogelu.sigmoid(x, tier="paper").tolist()
    assert got["mps_sigmoid"] == got["sigmoid"] and got["family_metal_compiled"] is True
    assert got["mps_sigmoid_paper"] == got["sigmoid_paper"] != got["sigmoid"]
    assert got["family_default_backward"] == turbogelu.mps.family_default_backward()
    paper = turbogelu.mps.family_default_backward("paper")
    assert got["family_default_backward_paper"] == paper
    assert got["harness"] == "absent"  # the research harness stays in the checkout
    assert got["bench_probes"] is False  # and the benchmark's probes are not in the wheel
    # the product's CLI works there too, its default spec from the package's data
    r = _run([str(py), "-m", "turbogelu", "report"], cwd=run_dir, env=env, timeout=600)
    assert "Error report: gelu_exact.json:forward" in r.stdout
    assert os.listdir(run_dir) == []  # and wrote nothing where it ran


def test_the_ops_need_no_lab(scratch):
    py, run_dir = scratch
    env = _outside_env()
    r = _run([str(py), "-c", PROBE_WITHOUT_LAB], cwd=run_dir, env=env, timeout=300)
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == {"grad_finite": True, "replaced": 2, "lab_modules": []}
    r = subprocess.run(
        [str(py), "-c", REPORT_WITHOUT_LAB],
        cwd=run_dir, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "needs scipy: pip install 'turbogelu[lab]'" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_wheel_declares_the_lab_as_an_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0].split("=")[0] for d in project["dependencies"]] == ["torch"]
    assert set(project["optional-dependencies"]["lab"]) >= {"scipy", "mpmath", "numpy"}
