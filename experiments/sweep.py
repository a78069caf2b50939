"""Parameter sweeps: one notebook run per point of a grid, with papermill, then one table.

A sweep file (JSON, ``experiments/sweeps/*.json``) declares the grid::

    {
      "name": "default",
      "notebook": "notebooks/sweep_point.ipynb",
      "out_dir": "results/sweeps/default",
      "fixed": {"target": "gelu"},
      "grid": {"fit_range": [4.0, 4.389], "degree": [6, 8], "method": ["remez"],
               "fmt": ["float32"]},
      "quick_grid": {"fit_range": [4.389], "degree": [6, 8]}
    }

Every combination of the ``grid`` values (with ``fixed`` added) is one point; ``--quick``
passes ``quick=True`` to the notebook and replaces the grid's entries by ``quick_grid``'s,
and writes under ``<out_dir>_quick`` so quick and full results never mix. A point runs where
a worker is (``run_point``): its notebook writes its record into a temporary folder, and the
record (with the machine that ran it) and the executed notebook come back to the runner,
which writes them to ``<out>/points/<id>.json`` and ``<out>/notebooks/<id>.ipynb``: no
filesystem is shared with the workers.

The engine: a local process pool (``--jobs``, the default), or Dask's distributed scheduler:
``--cluster local[:N]`` starts a ``LocalCluster`` of N worker processes here, ``--scheduler
ADDRESS`` uses a running cluster (``dask scheduler`` on one machine, ``dask worker ADDRESS``
on each of the others, each with this repository at the runner's commit, built; on a batch
cluster ``dask-jobqueue`` starts the workers). Before a point runs, its worker checks that its
code is the runner's (``code_version``; a ``VersionMismatch`` otherwise). A point whose worker
dies is run once more, then recorded as failed; a point whose notebook fails is recorded as
failed at once, with its error; failed points are in the table and run again by the next
run. Ctrl-C cancels the points not finished and keeps the records written.

The runner is resumable: a point whose record exists is not run again (the record is
written atomically, as the point finishes), unless the record was made by other code or
failed: the runner stamps each record with ``code_version`` (a hash of the point notebook,
this file and the ``turbogelu`` package's Python sources) and runs a point again whose record
has another stamp or none. Then ``aggregate`` reads the records of the sweep's points into
``table.csv`` and ``table.md`` and draws the Pareto front of max error against operation
count (and against measured time where the points were timed, one front per kind of machine:
times of two kinds are not compared) into ``pareto.png``.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import itertools
import json
import math
import os
import re
import signal
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from . import notebooks, records

SWEEP_DIR = notebooks.REPO / "experiments" / "sweeps"
DEFAULT_SWEEP = SWEEP_DIR / "default.json"
KEYS = ("name", "notebook", "out_dir", "fixed", "grid", "quick_grid", "description")
COLUMNS = (
    "id",
    "target",
    "fit_range",
    "degree",
    "method",
    "fmt",
    "variable",
    "max_abs_error",
    "window_error",
    "tail_error",
    "float32_replay_max_abs_error",
    "bf16_max_ulp",
    "fp16_max_ulp",
    "ops_horner",
    "ops_estrin",
    "depth_horner",
    "depth_estrin",
    "time_us",
    "fit_seconds",
    "machine",
    "status",
    "error",
)


# ---------------------------------------------------------------- the sweep file


def load(path: str | Path) -> dict:
    """Read and check a sweep file; relative paths in it are relative to the repository.
    Every fault (missing, not JSON, a key of the wrong type) is a ValueError naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the sweep file ({exc.strerror})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a sweep file is a JSON object, got {type(data).__name__}")
    for key, kind in (("fixed", dict), ("name", str)):
        if key in data and not isinstance(data[key], kind):
            want = "an object {name: ...}" if kind is dict else "a string"
            raise ValueError(f"{path}: {key!r} must be {want}, got {json.dumps(data[key])}")
    for key in ("grid", "quick_grid"):  # an object, or a list of objects (blocks)
        v = data.get(key, {})
        if not (isinstance(v, dict) or (isinstance(v, list) and v and all(
                isinstance(b, dict) for b in v))):  # fmt: skip
            raise ValueError(
                f"{path}: {key!r} must be an object {{name: [values]}} or a non-empty list of "
                f"them, got {json.dumps(v)}"
            )
    for key in ("notebook", "out_dir", "description"):
        if key in data and not isinstance(data[key], str):
            raise ValueError(f"{path}: {key!r} must be a string, got {json.dumps(data[key])}")
    unknown = set(data) - set(KEYS)
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}; known: {list(KEYS)}")
    for key in ("name", "grid"):
        if key not in data:
            raise ValueError(f"{path}: missing {key!r}")
    for key in ("grid", "quick_grid"):
        for block in _blocks(data.get(key, {})):
            for name, values in block.items():
                if not isinstance(values, list) or not values:
                    raise ValueError(f"{path}: {key}.{name} must be a non-empty list")
    grids, quick = data["grid"] if "grid" in data else {}, data.get("quick_grid", {})
    if isinstance(quick, list) and len(quick) != len(_blocks(grids)):
        raise ValueError(
            f"{path}: a list quick_grid has one entry per block of grid "
            f"({len(_blocks(grids))}), got {len(quick)}"
        )
    data.setdefault("notebook", "notebooks/sweep_point.ipynb")
    data.setdefault("out_dir", f"results/sweeps/{data['name']}")
    data.setdefault("fixed", {})
    data.setdefault("quick_grid", {})
    swept = {k for key in ("grid", "quick_grid") for b in _blocks(data[key]) for k in b}
    both = sorted(set(data["fixed"]) & swept)
    if both:  # which would win is not for the file to leave open
        raise ValueError(f"{path}: {both} both fixed and in a grid; give each in one place")
    return data


def _blocks(grid) -> list[dict]:
    """A grid as its list of blocks (an object is one block)."""
    return list(grid) if isinstance(grid, list) else [grid]


def fix(sweep: dict, params: dict) -> dict:
    """The sweep with ``params`` (given on the command line: -p) fixed for every point: they
    win over the file's fixed values and over both grids, whose entries for them go."""
    out = dict(sweep)
    out["fixed"] = {**sweep.get("fixed", {}), **params}
    for key in ("grid", "quick_grid"):
        blocks = [
            {k: v for k, v in b.items() if k not in params} for b in _blocks(sweep.get(key, {}))
        ]
        out[key] = blocks if isinstance(sweep.get(key), list) else blocks[0]
    return out


def points(sweep: dict, quick: bool = False) -> list[dict]:
    """The grid's points in a fixed order: block by block (a grid may be a list of blocks,
    each a product of its own values: a family sweep gives each function its own ranges),
    in each the block's key order, values as listed; in quick mode each block's entries
    replaced by ``quick_grid``'s (one object for every block, or one per block). A point
    that two blocks both give is kept once."""
    blocks = _blocks(sweep["grid"])
    quick_grid = sweep.get("quick_grid", {})
    quicks = _blocks(quick_grid) if isinstance(quick_grid, list) else [quick_grid] * len(blocks)
    out, seen = [], set()
    for block, q in zip(blocks, quicks, strict=True):
        grid = {**block, **(q if quick else {})}
        names = list(grid)
        for combo in itertools.product(*(grid[n] for n in names)):
            p = {**sweep.get("fixed", {}), **dict(zip(names, combo, strict=True))}
            if point_id(p) not in seen:
                seen.add(point_id(p))
                out.append(p)
    return out


def point_id(params: dict) -> str:
    """A file name for a point: its parameters in key order, e.g.
    ``target-gelu_fit_range-4.389_degree-8_method-remez_fmt-float32``."""
    text = "_".join(f"{k}-{v}" for k, v in params.items())
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", text.replace("+", "plus"))


def out_dir(sweep: dict, quick: bool, override: str | Path | None = None) -> Path:
    if override is not None:
        return Path(override)
    base = Path(sweep["out_dir"])
    base = base if base.is_absolute() else notebooks.REPO / base
    return base.with_name(base.name + "_quick") if quick else base


# ---------------------------------------------------------------- one point


QUICK_FIT = {"points": 4000, "grid_points": 2049}


def _gelu_args(ps):
    """``ops.poly_args`` for the forward's forms only (x/2 + even: poly_gelu is GELU's
    forward; its "1/2 + odd" forms are the backward's, which poly_family runs as forwards)."""
    from turbogelu import ops

    if ps.tgt.reduction != "x/2 + even":
        raise ValueError(f"poly_gelu runs x/2 + even forms, not {ps.tgt.reduction}")
    return ops.poly_args(ps)


def time_spec(ps, size: int = 1 << 20, rounds: int = 20, calls: int = 10):
    """Median time per call (microseconds, float32, one thread) of ``ps``'s forward through
    the compiled ops with run-time coefficients: ``ops.poly_gelu`` for GELU's form
    (x/2 + x^2 P in x^2: GELU, SiLU), ``ops.poly_family`` for the family's other forms;
    and a note. None and the reason where neither op can run the spec (its form, its degree,
    or a build without them)."""
    try:
        from turbogelu import ops

        from .bench_timing import Variant, time_interleaved
        from .bench_variants import make_inputs, num_threads
    except (ImportError, OSError) as exc:
        return None, f"not timed: the ops do not load ({exc})"
    if not hasattr(ops, "poly_family"):
        return None, "not timed: this build has no run-time-coefficient ops (ops.poly_family)"
    if ps.degree not in ops.poly_degrees():
        return None, f"not timed: degree {ps.degree} has no compiled run-time kernel"
    reasons = []
    for name, args, run in (
        ("poly_gelu", _gelu_args, ops.poly_gelu),
        ("poly_family", ops.program_args, ops.poly_family),
    ):
        try:
            args(ps)
        except ValueError as exc:
            reasons.append(str(exc))
            continue
        x, _ = make_inputs("float32", size)
        v = Variant(name, lambda run=run, x=x: run(x, ps))
        with num_threads(1):
            t = time_interleaved([v], rounds, calls)
        med = sorted(t.wall[name])[len(t.wall[name]) // 2]
        return med / 1e3, f"ops.{name}, float32, {size} elements, 1 thread, median of {rounds}"
    return None, "not timed: no run-time kernel runs this form (" + "; ".join(reasons) + ")"


# The exhaustive 16-bit reports of a point: every input x >= -3 of each format (further left
# GELU's clamp to -0 and the cancellation of x/2 + r decide, the same for every polynomial;
# notebook 04 shows that region; the family's 16-bit rule is stated there too).
EXHAUSTIVE = {"bf16_max_ulp": "bfloat16", "fp16_max_ulp": "float16"}


def kernel_program(target: str, variable: str | None, factor: int | None) -> str:
    """The evaluation order the kernels run a spec of this form in: "turbogelu" for
    x/2 + x^2 P in |x| (x (1/2 + x P), which keeps silu(-0) = -0; codegen.family_form),
    "generic" for every other form."""
    from turbogelu.approx import targets

    tgt = targets.get(target)
    natural = (variable or ("u" if tgt.residual_parity == "none" else "y"),
               tgt.natural_factor if factor is None else int(factor))  # fmt: skip
    return "turbogelu" if tgt.reduction == "x/2 + even" and natural == ("u", 2) else "generic"


def measure_point(
    target: str,
    fit_range: float,
    degree: int,
    method: str,
    fmt: str,
    *,
    variable: str | None = None,
    factor: int | None = None,
    shift: bool | None = None,
    quick: bool = False,
    time_it: bool = True,
) -> dict:
    """Fit one spec of any target of the lab (``turbogelu.approx.targets``: fit interval =
    clamp = ``fit_range``, no clamp for a target without asymptote; the form of ``variable``,
    ``factor`` and ``shift`` (P in z = 2 v / L - 1, or in v itself as the exp2 kernels take
    it), the target's natural form where None; the kernels' evaluation order,
    ``kernel_program``) and measure it: errors in real arithmetic and of the float32 replay
    on the dense grid, max ulp error over every bfloat16 and float16 input x >= -3 (for targets
    with a correctly rounded reference), operation counts and dependency depth of both
    schemes, and (``time_it``, where a run-time kernel runs its form) its time. What it cannot
    compute for the target is in ``not_computed`` with the reason. Returns the point's record."""
    from turbogelu.approx import family_fit, polyspec, report, rounding, targets

    base, _ = family_fit.split_method(method)
    opts = {k: v for k, v in QUICK_FIT.items() if k in family_fit.FIT_DEFAULTS[base]}
    tgt = targets.get(target)
    form = {k: v for k, v in (("variable", variable), ("factor", factor), ("shift", shift))
            if v is not None}  # fmt: skip
    t0 = time.perf_counter()
    ps = family_fit.fit_polyspec(
        target,
        degree=int(degree),
        fit_interval=float(fit_range),
        clamp=float(fit_range) if tgt.asymptote_kind else math.inf,
        fmt=fmt,
        method=method,
        replay=True,
        program=kernel_program(target, variable, factor),
        **form,
        **(opts if quick else {}),
    )
    fit_seconds = time.perf_counter() - t0
    e = ps.meta["errors"]
    rec = {
        "target": target,
        "fit_range": float(fit_range),
        "degree": int(degree),
        "method": method,
        "fmt": ps.fmt,
        "variable": ps.variable,
        "factor": ps.factor,
        "program": ps.program,
        "shift": ps.shift,
        "form": ps.describe(),
        "quick": bool(quick),
        "max_abs_error": e["max_abs_error"],
        "window_error": e["window_error"],
        "tail_error": e["tail_error"],
        "float32_replay_max_abs_error": e.get("float32_replay_max_abs_error"),
        "ops_horner": ps.op_count("horner")["total"],
        "ops_estrin": ps.op_count("estrin")["total"],
        "depth_horner": ps.dependency_depth("horner"),
        "depth_estrin": ps.dependency_depth("estrin"),
        "fit_seconds": fit_seconds,
    }
    not_computed = {}
    for key, f16 in EXHAUSTIVE.items():
        if target in rounding.FUNCTIONS:
            rep = report.exhaustive(
                lambda x: polyspec.replay(ps, x), target, f16, [("x >= -3", (-3.0, 1e300))]
            )
            rec[key] = rep.max_ulp
        else:
            rec[key] = None
            not_computed[key] = (
                f"{target} has no correctly rounded {f16} reference (turbogelu.approx.rounding"
                ".FUNCTIONS): its programs are checked through the function they build"
            )
    if time_it:
        rec["time_us"], rec["time_note"] = time_spec(ps, *((1 << 16, 5, 10) if quick else ()))
    else:
        rec["time_us"], rec["time_note"] = None, "not asked"
    if rec["time_us"] is None:
        not_computed["time_us"] = rec["time_note"]
    rec["not_computed"] = not_computed
    rec["spec"] = ps.to_dict()
    return rec


def write_point(path: str | Path, record: dict) -> Path:
    return records.write_json(path, record)


# ---------------------------------------------------------------- running


LOCK_NAME = ".sweep.lock"


class Busy(RuntimeError):
    """Another runner holds the output folder."""


@contextlib.contextmanager
def runner_lock(d: Path):
    """One runner per output folder: a second one (say, a rerun started while a killed
    runner's workers still ran its queued points) would run points twice. The lock is an
    flock on ``<d>/.sweep.lock``: the kernel drops it when its holders die, so a crashed
    runner never leaves a stale lock; the pool's workers inherit it (fork) and hold it while
    they live. The file names the holder's pid and goes when the runner ends."""
    d.mkdir(parents=True, exist_ok=True)
    path = d / LOCK_NAME
    f = open(path, "a+")  # noqa: SIM115 (held for the block)
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "a process"
            raise Busy(
                f"{d}: another sweep runner ({holder}) is writing this folder; wait for it, "
                "or stop it (its workers stop with it)"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            path.unlink(missing_ok=True)
    finally:
        f.close()  # releases the flock (the workers have exited by now)


def _die_with_parent(parent: int) -> None:
    """Pool initializer: a worker ends when the runner does (Linux: PR_SET_PDEATHSIG), so a
    killed runner leaves no worker running its queued points."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the runner died before the line above
        os._exit(1)


def code_version(notebook: str | Path) -> str:
    """A hash of what a point's record depends on: the point notebook, this runner, the
    timing loop it times a point with (``bench_timing.py``: a change to how rows are timed
    must not leave older times in the table) and the ``turbogelu`` package's Python sources
    (the fits, the replays, the error reports). The compiled kernels only time a point, and
    a time is not compared."""
    repo = notebooks.REPO
    timing = Path(__file__).with_name("bench_timing.py")
    files = [Path(notebook), Path(__file__), timing, *sorted((repo / "turbogelu").rglob("*.py"))]
    h = hashlib.sha256()
    for f in files:
        h.update(f.resolve().relative_to(repo.resolve()).as_posix().encode() + b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _stamp(record: Path) -> str | None:
    try:
        return records.read_json(record).get("code_version")
    except (OSError, ValueError, AttributeError):
        return None  # unreadable or not an object: run the point again


class VersionMismatch(RuntimeError):
    """A worker's code is not the runner's: its records would not be the sweep's."""


def machine() -> dict:
    """The machine that ran a point, as its record names it: ``records.machine()``, the host,
    and its ``kind`` (the CPU model, marked " (AVX-512)" where it has AVX-512, as
    ``tolerances.this_machine``): the Pareto front against time compares one kind only."""
    import socket

    from .tolerances import this_machine

    here = this_machine()
    return {**records.machine(), "host": socket.gethostname(), "kind": here["cpu"]}


def run_point(notebook: str, params: dict, version: str, die_marker: str | None = None) -> dict:
    """One point, where a worker runs it (a process of the pool or a Dask worker, on any
    machine): check that this machine's code is the runner's (``version``: a
    ``VersionMismatch`` otherwise), execute the point notebook (``notebook``: relative to the
    repository) into a temporary folder, and return {"record": its record with the machine
    added, "notebook": the executed notebook's text}: the runner writes both, so no shared
    filesystem is assumed. ``die_marker`` (a test hook, ``run``'s ``die_once``): a path; the
    worker process exits at once, as a killed machine would, unless the file exists, which it
    writes first: so it dies the first time only (a deterministic fault, not a timer)."""
    import tempfile

    nb = notebooks.REPO / notebook
    here = code_version(nb)
    if here != version:
        raise VersionMismatch(
            f"this worker's code is {here} and the runner's {version}: install the runner's "
            "commit on every worker (git checkout, make build) and start it again"
        )
    if die_marker is not None:
        marker = Path(die_marker)
        if not marker.exists():
            marker.write_text(f"{os.getpid()}\n")
            os._exit(1)
    with tempfile.TemporaryDirectory(prefix="sweep_point_") as tmp:
        rec, out_nb = Path(tmp) / "record.json", Path(tmp) / "point.ipynb"
        notebooks.execute(nb, out_nb, {**params, "out_path": str(rec)})
        record, text = records.read_json(rec), out_nb.read_text()
    return {"record": {**record, "machine": machine()}, "notebook": text}


def run(
    path: str | Path = DEFAULT_SWEEP,
    *,
    jobs: int = 1,
    quick: bool = False,
    out: str | Path | None = None,
    log: Callable[[str], None] = print,
    params: dict | None = None,
    cluster: str | None = None,
    scheduler: str | None = None,
    progress: bool | None = None,
    die_once: tuple | None = None,
) -> dict:
    """Run every point of the sweep file that has no record of this code yet, then
    ``aggregate``; ``params`` fixed for every point (``fix``). The engine: a local process
    pool of ``jobs`` workers (the default), ``cluster`` "local" or "local:N" (a Dask
    ``LocalCluster`` of N workers, default ``jobs``), or ``scheduler`` (the address of a
    running Dask scheduler). Returns {"ran", "skipped", "failed" ({id: error}), "out_dir",
    and aggregate's paths}. A KeyboardInterrupt cancels the points not finished; the
    records written stay. ``die_once`` (tests): (point id, marker path): the worker that
    starts that point dies, the first time (``run_point``)."""
    if cluster is not None and scheduler is not None:
        raise ValueError("give --cluster or --scheduler, not both")
    workers = parse_cluster(cluster, jobs) if cluster is not None else None
    sweep = fix(load(path), params or {})
    d = out_dir(sweep, quick, out)
    nb = notebooks.notebook_path(notebooks.REPO / sweep["notebook"])
    nb_rel = nb.resolve().relative_to(notebooks.REPO.resolve()).as_posix()
    pts = points(sweep, quick)
    version = code_version(nb)
    with runner_lock(d):  # what is done is read under the lock: a runner that just ended counts
        todo, skipped, stale = [], [], 0
        for p in pts:
            pid = point_id(p)
            rec = d / "points" / f"{pid}.json"
            done = rec.is_file() and _finished(rec) == version
            stale += rec.is_file() and not done
            (skipped if done else todo).append((pid, p, rec))
        log(
            f"sweep {sweep['name']}: {len(pts)} points, {len(skipped)} done, {len(todo)} to run"
            + (f" ({stale} made by other code or failed)" if stale else "")
            + (f" on {engine_name(workers, scheduler, jobs)}" if todo else "")
        )

        def finished(pid: str, p: dict, result: dict | None, error: str | None) -> None:
            """Write a point's record as it arrives (or its failure, with the error)."""
            rec = d / "points" / f"{pid}.json"
            if result is not None:
                (d / "notebooks").mkdir(parents=True, exist_ok=True)
                (d / "notebooks" / f"{pid}.ipynb").write_text(result["notebook"])
                write_point(rec, {**result["record"], "code_version": version})
            else:
                write_point(rec, {**p, "status": "failed", "error": error,
                                  "code_version": version})  # fmt: skip

        bar = _bar(len(pts), len(skipped), f"sweep {sweep['name']}", progress)
        try:
            args = (nb_rel, todo, version, quick, finished, log, bar, die_once)
            if workers is None and scheduler is None:
                failed = _run_pool(*args, jobs=jobs)
            else:
                failed = _run_dask(*args, workers=workers, scheduler=scheduler)
        finally:
            bar.close()
        ran = [pid for pid, _, _ in todo if pid not in failed]
        made = [d / "points" / f"{point_id(p)}.json" for p in pts]
        agg = aggregate([r for r in made if r.is_file()], d, title=sweep["name"])
    return {"ran": ran, "skipped": [s[0] for s in skipped], "failed": failed, "out_dir": d, **agg}


def _finished(record: Path) -> str | None:
    """The code version of a finished point's record; None for a failed point (run again)."""
    try:
        rec = records.read_json(record)
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("status") == "failed":
        return None
    return rec.get("code_version")


def parse_cluster(text: str, jobs: int = 1) -> int:
    """``local`` (``jobs`` workers) or ``local:N`` -> N, the workers of a LocalCluster."""
    kind, sep, n = str(text).partition(":")
    if kind != "local" or (sep and not n.isdigit()) or (sep and int(n) < 1):
        raise ValueError(f"--cluster takes local or local:N (N >= 1), got {text!r}")
    return int(n) if sep else max(1, int(jobs))


def engine_name(workers: int | None, scheduler: str | None, jobs: int) -> str:
    if scheduler is not None:
        return f"the Dask scheduler at {scheduler}"
    if workers is not None:
        return f"a Dask LocalCluster of {workers} worker(s)"
    return f"a process pool of {max(1, int(jobs))}"


def _bar(total: int, initial: int, desc: str, progress: bool | None):
    """One progress bar over all the points, those done before counted from the start."""
    from tqdm.auto import tqdm

    show = sys.stderr.isatty() if progress is None else progress
    return tqdm(total=total, initial=initial, desc=desc, unit="point", disable=not show)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[-1] if text else ''}".rstrip(": ")


def _run_pool(nb_rel, todo, version, quick, finished, log, bar, die_once, *, jobs):
    """The points in a local process pool; returns {id: error} of those that failed."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    notebooks.kernel_name()  # register the kernelspec before the workers start
    failed: dict[str, str] = {}
    if not todo:
        return failed
    pool = ProcessPoolExecutor(
        max_workers=max(1, int(jobs)), initializer=_die_with_parent, initargs=(os.getpid(),)
    )
    try:
        futures = {
            pool.submit(
                run_point, nb_rel, {**p, "quick": quick}, version, _marker(pid, die_once)
            ): (pid, p)
            for pid, p, _ in todo
        }
        for fut in as_completed(futures):
            pid, p = futures[fut]
            _settle(pid, p, fut.result, finished, failed, log)
            bar.update()
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        log("interrupted: the points not finished are cancelled; the records written stay")
        raise
    pool.shutdown()
    return failed


def _marker(pid: str, die_once: tuple | None) -> str | None:
    """The test hook's marker for the point ``pid`` (``run``'s ``die_once``), else None."""
    return str(die_once[1]) if die_once is not None and die_once[0] == pid else None


def _settle(pid, p, result, finished, failed, log) -> bool:
    """Write a point's outcome (``result()``: its value or its exception); False on failure."""
    try:
        value = result()
    except Exception as exc:  # one failed point must not stop the others
        failed[pid] = _first_line(exc)
        finished(pid, p, None, failed[pid])
        log(f"  FAILED {pid}: {failed[pid]}")
        return False
    finished(pid, p, value, None)
    log(f"  done {pid}")
    return True


# A Dask worker that dies while running a point: the scheduler gives up on the task at once
# (allowed-failures 0, in a LocalCluster started here) and the runner submits it once more, so
# "retried once" holds whatever the scheduler; a remote scheduler with its default
# (allowed-failures 3) retries on its own first.
RETRIES_AFTER_DEATH = 1


def _run_dask(nb_rel, todo, version, quick, finished, log, bar, die_once, *, workers, scheduler):
    """The points on a Dask cluster (a LocalCluster of ``workers`` or the scheduler at
    ``scheduler``); each record comes back through its future. {id: error} of failures."""
    import dask
    from distributed import Client, KilledWorker, LocalCluster, as_completed

    failed: dict[str, str] = {}
    if not todo:
        return failed
    notebooks.kernel_name()  # the kernelspec of a LocalCluster's workers (this machine)
    with contextlib.ExitStack() as stack:
        if scheduler is None:
            stack.enter_context(dask.config.set({"distributed.scheduler.allowed-failures": 0}))
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    dashboard_address=None, silence_logs=40,
                )
            )  # fmt: skip
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(Client(scheduler, timeout=30))
        _check_workers(client, nb_rel, version)

        def submit(pid, p):
            fut = client.submit(
                run_point, nb_rel, {**p, "quick": quick}, version, _marker(pid, die_once),
                key=f"sweep-point-{pid}-{len(tries.get(pid, []))}", pure=False,
            )  # fmt: skip
            tries.setdefault(pid, []).append(fut)
            return fut

        tries: dict[str, list] = {}
        futures = {submit(pid, p): (pid, p) for pid, p, _ in todo}
        pending = as_completed(list(futures))
        try:
            for fut in pending:
                pid, p = futures.pop(fut)
                if fut.status == "error" and isinstance(fut.exception(), KilledWorker):
                    if len(tries[pid]) <= RETRIES_AFTER_DEATH:
                        log(f"  {pid}: its worker died; running it once more")
                        again = submit(pid, p)
                        futures[again] = (pid, p)
                        pending.add(again)
                        continue
                _settle(pid, p, fut.result, finished, failed, log)
                bar.update()
        except KeyboardInterrupt:
            client.cancel(list(futures))
            log("interrupted: the points not finished are cancelled; the records written stay")
            raise
    return failed


def _worker_version(nb_rel: str) -> str:
    """``code_version`` of the point notebook where a worker runs (its own repository)."""
    return code_version(notebooks.REPO / nb_rel)


def _check_workers(client, nb_rel: str, version: str) -> None:
    """Every worker's code is the runner's, before any point runs (each point checks again:
    a worker may join later)."""
    seen = client.run(_worker_version, nb_rel)
    if not seen:
        raise RuntimeError("the Dask cluster has no workers")
    wrong = {w: v for w, v in seen.items() if v != version}
    if wrong:
        raise VersionMismatch(
            f"the runner's code is {version}; worker(s) {sorted(wrong)} have "
            f"{sorted(set(wrong.values()))}: install the runner's commit on every worker"
        )


# ---------------------------------------------------------------- aggregating


def read_records(paths) -> list[dict]:
    """The points' records as table rows: ``id`` (the file's stem), ``status`` ("ok", or
    "failed" with its ``error``) and ``machine`` (the kind of machine that ran it, where the
    record names one)."""
    rows = []
    for p in paths:
        rec = records.read_json(p)
        m = rec.get("machine")
        rec["machine"] = m.get("kind") if isinstance(m, dict) else m
        rec["id"] = Path(p).stem
        rec.setdefault("status", "ok")
        rows.append(rec)
    return rows


def time_fronts(rows) -> dict[str, list[dict]]:
    """{machine kind: the Pareto front of max error against time of the points timed on
    it}: times from different kinds of machine are not compared."""
    from turbogelu.approx import search

    kinds: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("status", "ok") == "ok" and r.get("time_us") is not None:
            kinds.setdefault(str(r.get("machine")), []).append(r)
    return {k: search.pareto_front(rs, x="time_us", y="max_abs_error") for k, rs in kinds.items()}


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def render_markdown(rows, front_ids=(), title: str = "") -> str:
    cols = [c for c in COLUMNS if c != "id"]
    lines = [f"# Sweep {title}", ""] if title else []
    lines += ["| " + " | ".join(cols) + " | front |", "|---" * (len(cols) + 1) + "|"]
    for r in rows:
        mark = "*" if r["id"] in front_ids else ""
        lines.append("| " + " | ".join(_cell(r.get(c)) for c in cols) + f" | {mark} |")
    return "\n".join(lines) + "\n"


def _by_target(rows) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(str(r.get("target")), []).append(r)
    return out


def fronts(rows) -> dict[str, list[dict]]:
    """{target: its Pareto front of max error against Horner operations}: one per function
    (a sigmoid and a GELU program do not compete)."""
    from turbogelu.approx import search

    ok = [r for r in rows if r.get("status", "ok") == "ok"]
    return {
        t: search.pareto_front(rs, x="ops_horner", y="max_abs_error")
        for t, rs in _by_target(ok).items()
    }


def shipped_programs(targets) -> list[dict]:
    """The shipped forward programs of ``targets`` as the sweep measures a point: max error
    in real arithmetic (``family_fit.ErrorModel``, the whole program) and Horner operations,
    with the tier ("accurate", "paper"); marked on the Pareto plots. exp2's shipped programs
    are fits of 2^f on [-1/2, 1/2] by relative error, not exp2_frac PolySpecs: not marked."""
    import numpy as np

    from turbogelu.approx import family_programs, spec
    from turbogelu.approx.family_fit import ErrorModel
    from turbogelu.approx.polyspec import PolySpec

    def row(ps, tier):
        err = ErrorModel(ps).errors(np.array(ps.coefficients))["max_abs_error"]
        return {"target": ps.target, "tier": tier, "degree": ps.degree,
                "max_abs_error": err, "ops_horner": ps.op_count("horner")["total"]}  # fmt: skip

    out = []
    for t in dict.fromkeys(targets):
        mode = {"gelu": "none", "gelu_tanh": "tanh"}.get(t)
        if mode is not None:
            out.append(row(spec.turbogelu_form(mode, "forward"), "accurate"))
            paper = spec.load(spec.spec_path(f"gelu_{mode}", "paper"), "paper")
            out.append(row(PolySpec.from_dict(paper["forward"]), "paper"))
        elif t in family_programs.FUNCTIONS:
            for tier in family_programs.TIERS:
                try:
                    doc = family_programs.load(t, tier=tier)
                except (OSError, ValueError):
                    continue  # no program in that tier (softplus has no paper program)
                out.append(row(PolySpec.from_dict(doc["forward"]), tier))
    return out


def plot_pareto(rows, path: str | Path, title: str = "", shipped=()):
    """Per function (one row of panels each): max error against Horner operation count, and
    against time where measured (one panel per kind of machine: times of two kinds are not
    compared), every point coloured by degree, the function's front drawn as a line and its
    shipped programs (``shipped_programs``) marked on the operations panel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from turbogelu.approx import search

    rows = [r for r in rows if r.get("status", "ok") == "ok"]
    groups = _by_target(rows)
    kinds = sorted({str(r.get("machine")) for r in rows if r.get("time_us") is not None})
    ncols = 1 + len(kinds)
    fig = Figure(figsize=(6.0 * ncols, 3.6 * len(groups)), dpi=100)
    FigureCanvasAgg(fig)
    for i, (target, rs) in enumerate(groups.items()):
        panels = [("ops_horner", "operations per element (Horner, FMA = 1)", rs)]
        for kind in kinds:
            sel = [r for r in rs if r.get("time_us") is not None and str(r.get("machine")) == kind]
            panels.append(("time_us", f"time per call, us (float32, 1 thread)\n{kind}", sel))
        for k, (key, label, sel) in enumerate(panels):
            ax = fig.add_subplot(len(groups), ncols, i * ncols + k + 1)
            for d in sorted({r["degree"] for r in sel}):
                pts = [r for r in sel if r["degree"] == d]
                ax.scatter([r[key] for r in pts], [r["max_abs_error"] for r in pts], s=14,
                           label=f"d{d}")  # fmt: skip
            front = search.pareto_front(sel, x=key, y="max_abs_error") if sel else []
            ax.plot([r[key] for r in front], [r["max_abs_error"] for r in front], "k-", lw=0.8)
            if key == "ops_horner":
                for s in (s for s in shipped if s["target"] == target):
                    ax.scatter([s["ops_horner"]], [s["max_abs_error"]], marker="*", s=110,
                               c="red" if s["tier"] == "accurate" else "orange",
                               edgecolors="k", linewidths=0.5, zorder=5,
                               label=f"shipped {s['tier']} (d{s['degree']})")  # fmt: skip
            if not sel:  # a form no run-time kernel runs (exp2's fraction): say so, no axes
                why = next((r["not_computed"].get("time_us") for r in rs
                            if r.get("not_computed", {}).get("time_us")), "not timed")  # fmt: skip
                ax.text(0.5, 0.5, "\n".join(textwrap.wrap(why, 60)), ha="center", va="center",
                        fontsize=7, transform=ax.transAxes)  # fmt: skip
                ax.set_axis_off()
                ax.set_title(f"{title + ': ' if title else ''}{target}", fontsize=9)
                continue
            ax.set_yscale("log")
            ax.set_xlabel(label, fontsize=8)
            ax.set_ylabel("max |error| (real arithmetic)", fontsize=8)
            ax.grid(True, which="both", alpha=0.3)
            if sel:
                ax.legend(fontsize=6, ncol=2)
            ax.set_title(f"{title + ': ' if title else ''}{target}", fontsize=9)
    fig.tight_layout()
    return records.save_png(fig, path)


def aggregate(paths, out: str | Path, title: str = "") -> dict:
    """Records -> ``table.csv``, ``table.md``, ``pareto.png`` and ``front.json`` in ``out``:
    the fronts per function (``front``: their union, in the table's order), against time per
    function and kind of machine, the failed points, the shipped programs marked."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = read_records(paths)
    ok = [r for r in rows if r["status"] == "ok"]
    per_target = fronts(ok)
    front_ids = {r["id"] for f in per_target.values() for r in f}
    with open(out / "table.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c) for c in COLUMNS})
    (out / "table.md").write_text(render_markdown(rows, front_ids, title))
    shipped = shipped_programs(r["target"] for r in ok)
    records.write_json(
        out / "front.json",
        {
            "x": "ops_horner",
            "y": "max_abs_error",
            "front": [r["id"] for r in ok if r["id"] in front_ids],
            "fronts": {t: [r["id"] for r in f] for t, f in per_target.items()},
            "time_fronts": {
                t: {k: [r["id"] for r in f] for k, f in time_fronts(rs).items()}
                for t, rs in _by_target(ok).items()
            },
            "failed": [r["id"] for r in rows if r["status"] != "ok"],
            "shipped": shipped,
        },
    )
    res = {"table_csv": out / "table.csv", "table_md": out / "table.md", "rows": len(rows)}
    if ok:
        plot_pareto(ok, out / "pareto.png", title, shipped)
        res["plot"] = out / "pareto.png"
    return res


def parse_params(items, notebook: str | Path) -> dict:
    """-p KEY=VALUE items (VALUE as JSON: notebooks.parse_value) for the sweep's notebook,
    whose parameters cell must name each KEY."""
    defaults = notebooks.parameter_defaults(notebooks.notebook_path(notebook))
    known = list(defaults)
    params = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"-p needs KEY=VALUE, got {item!r}")
        if key == "quick" or key not in known:
            raise ValueError(f"-p {key}: not a point parameter of {notebook}; those: {known}")
        params[key] = notebooks.parse_value(key, value, defaults[key])
    return params


def main(args) -> int:
    params = parse_params(args.param, notebooks.REPO / load(args.file)["notebook"])
    from tqdm.auto import tqdm

    try:
        res = run(
            args.file,
            jobs=args.jobs,
            quick=args.quick,
            out=args.out,
            log=lambda m: tqdm.write(m, file=sys.stderr),
            params=params,
            cluster=args.cluster,
            scheduler=args.scheduler,
            progress=args.progress,
        )
    except (Busy, VersionMismatch, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sweep interrupted: run the same command again to resume", file=sys.stderr)
        return 130
    print(Path(res["table_md"]).read_text(), end="")
    for key in ("table_csv", "table_md", "plot"):
        if key in res:
            print(f"wrote {res[key]}", file=sys.stderr)
    if res["failed"]:
        print(f"{len(res['failed'])} point(s) failed (in the table with their errors): "
              f"{sorted(res['failed'])}", file=sys.stderr)  # fmt: skip
        return 1
    return 0


__all__ = [
    "DEFAULT_SWEEP",
    "aggregate",
    "load",
    "measure_point",
    "point_id",
    "points",
    "run",
    "time_spec",
    "write_point",
]
