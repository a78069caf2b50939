"""What every result of the harness is written with: the machine it ran on, the git revision,
JSON and JSON-lines files, quantiles of timings, figures.

One rule for every file the harness writes: values made JSON-safe first (numpy numbers and
arrays to Python, ``Path`` to text, non-finite floats to ``null``: JSON has no NaN, and a file
with a bare ``NaN`` is not JSON to most readers), then the whole text written to a temporary
file beside the target and renamed over it (``os.replace``), so that a reader (a resumed
sweep, ``compare``, a notebook) never sees half a file and a value that cannot be written
leaves the old file as it was. JSON is indented by one space and ends with a newline; a
JSON-lines file has one object per line.

Importing this module imports neither torch nor numpy (``machine_info`` imports torch when
called).
"""

from __future__ import annotations

import errno
import json
import math
import os
import platform
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------- machine


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_mhz() -> float | None:
    """The current clock of CPU 0 (cpufreq, else /proc/cpuinfo; a VM may report its host's
    nominal clock), or None."""
    try:
        khz = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq").read_text()
        return int(khz) / 1000
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    return None


_SC_CACHES = (("L1d", 188), ("L2", 191), ("L3", 194), ("L4", 197))  # glibc's _SC_LEVEL*


def cpu_caches() -> dict[str, int]:
    """The data caches the CPU reports, in bytes ({"L1d", "L2", "L3"}; a level it does not
    report is left out), as the CPU kernels' store rule reads them (kernels/cpu/dispatch.cpp,
    ``cache_bytes``): Linux's /sys/devices/system/cpu/cpu0/cache (each cache as one core sees
    it), else glibc's ``sysconf(_SC_LEVEL*_CACHE_SIZE)``, which can report more than a core
    has (an AMD EPYC's whole socket of L3, not its CCX's). Empty where neither tells."""
    import ctypes

    out: dict[str, int] = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction" or not size:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1].upper(), 1)
        try:
            v = int(size.rstrip("KMGkmg")) * mult
        except ValueError:
            continue
        out["L1d" if level == "1" else f"L{level}"] = v
    if out:
        return out
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.sysconf.restype = ctypes.c_long
        for name, code in _SC_CACHES:
            v = int(libc.sysconf(code))
            if v > 0:
                out[name] = v
    except (OSError, AttributeError):
        pass
    return out


def logical_cpus() -> int | None:
    """The CPUs this process may run on (its affinity where the platform tells it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def machine() -> dict:
    """The machine a result was measured on, without importing torch (notebooks, reference
    folders, tolerances)."""
    return {
        "cpu": cpu_model(),
        "logical_cpus": logical_cpus(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def machine_info(device: str = "cpu") -> dict:
    """The machine and the software a timing or a training run depends on: the CPU, the
    instruction set turbogelu runs now and those it could, torch's threads and parallel
    backend, oneDNN, the versions and the git revision, and the GPU for ``device``."""
    import torch

    import turbogelu
    import turbogelu.ops  # noqa: F401  (loads the extension)

    backend = next(
        (
            line.split(":", 1)[1].strip()
            for line in torch.__config__.parallel_info().splitlines()
            if line.startswith("ATen parallel backend")
        ),
        "?",
    )
    info = {
        "cpu": cpu_model(),
        "cpu_mhz": cpu_mhz(),
        "logical_cpus": logical_cpus(),
        "isa": torch.ops.turbogelu._cpu_isa(),
        "isas": list(torch.ops.turbogelu._cpu_isas()),
        "torch": torch.__version__,
        "turbogelu": turbogelu.__version__,
        "git": git_describe(),
        "threads": torch.get_num_threads(),
        "parallel_backend": backend,
        "onednn": bool(torch.backends.mkldnn.is_available()),
        "onednn_enabled": bool(torch.backends.mkldnn.is_available())
        and bool(torch.backends.mkldnn.enabled),
        "python": platform.python_version(),
        "device": device,
    }
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
        info["cuda"] = torch.version.cuda
    elif device == "mps":
        info["gpu"] = "Apple MPS"
    return info


def describe_machine(info: dict) -> str:
    """One line of ``machine_info``'s dict, as the benchmark and the notebooks print it."""
    mhz = f", {info['cpu_mhz']:.0f} MHz" if info.get("cpu_mhz") else ""
    gpu = f" | GPU: {info['gpu']}" if info.get("gpu") else ""
    onednn = ("on" if info["onednn_enabled"] else "off") if info["onednn"] else "not available"
    return (
        f"CPU: {info['cpu']} ({info['logical_cpus']} logical CPUs{mhz}){gpu}"
        f" | turbogelu ISA: {info['isa']} (available: {', '.join(info['isas'])})"
        f" | torch {info['torch']} | turbogelu {info['turbogelu']} ({info['git'] or 'no git'})"
        f" | threads: {info['threads']} ({info['parallel_backend']}) | oneDNN: {onednn}"
    )


# ---------------------------------------------------------------- git revision


def _git(*args: str) -> str | None:
    """``git args`` run in the checkout: its stdout stripped, or None where git fails (no git,
    not a checkout)."""
    try:
        r = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def git_describe() -> str | None:
    """The checkout's short revision with ``-dirty`` when tracked files differ from it (``git
    describe --always --dirty``): the benchmark rows' ``git``."""
    return _git("describe", "--always", "--dirty") or None


def git_commit() -> str | None:
    """The checkout's full commit hash, with ``+dirty`` when tracked files differ from it: the
    MNIST results' ``git_commit``."""
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return commit + ("+dirty" if status else "")


# ---------------------------------------------------------------- JSON and JSON lines


def jsonable(v):
    """A JSON-safe copy of ``v``: numpy scalars and arrays to Python, non-finite floats to
    None, paths to text, mapping keys to text."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [jsonable(x) for x in v]
    if hasattr(v, "tolist"):  # numpy scalar or array
        return jsonable(v.tolist())
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Path):
        return str(v)
    return v


def write_atomic(path: str | Path, content: str | bytes) -> Path:
    """Write ``content`` (text or bytes) to ``path`` through a temporary file beside it (the
    module docstring's rule; folders created). The temporary name is unique to this process
    and thread, so two writers never share one; the last rename wins."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        if isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            tmp.write_text(content)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | Path, data) -> Path:
    """Write ``data`` to ``path`` as JSON (the module docstring's rule). Returns the path."""
    return write_atomic(path, json.dumps(jsonable(data), indent=1) + "\n")


def write_jsonl(
    path: str | Path, records: Sequence[dict], common: dict | None = None, *, append: bool = True
) -> Path:
    """Write ``records`` to ``path`` as JSON lines, each merged with ``common`` (``common``'s
    fields win over a record's), after the lines already there (``append``) or instead of
    them. The whole file is rewritten through a temporary one (the module docstring's rule):
    the harness's JSON-lines files hold a few thousand rows, and one writer appends at a
    time (two benchmarks timed at once would disturb each other's timings anyway)."""
    path = Path(path)
    common = common or {}
    new = "".join(json.dumps(jsonable({**r, **common})) + "\n" for r in records)
    old = path.read_text() if append and path.is_file() else ""
    return write_atomic(path, old + new)


def read_json(path: str | Path):
    """The JSON value in ``path``; a missing, unreadable or malformed file is an error that
    names it (a FileNotFoundError, or a ValueError with the parser's line and column)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path)) from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None


def read_jsonl(path: str | Path) -> list:
    """The values of a JSON-lines file (blank lines skipped); a bad line is a ValueError
    naming the file and the line."""
    path = Path(path)
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON ({exc})") from None
    return rows


# ---------------------------------------------------------------- statistics and figures


def quantile(xs: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` by linear interpolation between order statistics (numpy's
    default), without numpy."""
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def save_png(fig, path: str | Path | None):
    """Lay ``fig`` out and, when ``path`` is given, save it there as PNG: the product's
    ``turbogelu.approx.report.save_png``, so that the lab's figures and the harness's are
    saved alike. Imported when called: the caller has drawn a figure, so matplotlib and numpy
    are loaded already."""
    from turbogelu.approx.report import save_png as _save_png

    return _save_png(fig, path)
