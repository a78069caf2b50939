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
and writes under ``<out_dir>_quick`` so quick and full results never mix. Each point's
notebook writes one JSON record to ``<out>/points/<id>.json`` (the parameter ``out_path``)
and its executed copy goes to ``<out>/notebooks/<id>.ipynb``.

The runner is resumable: a point whose record exists is not run again (the record is
written atomically, last, so it exists only for a point that finished), unless the record
was made by other code: the runner stamps each record it ran with ``code_version`` (a hash of
the point notebook, this file and the ``turbogelu`` package's Python sources) and runs a
point again whose record has another stamp or none. Points run in
parallel in a process pool (``--jobs``), each with its own kernel. Then ``aggregate`` reads
the records of the sweep's points into ``table.csv`` and ``table.md`` and draws the Pareto
front of max error against operation count (and against measured time where the points
were timed) into ``pareto.png``.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import itertools
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
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
    "max_abs_error",
    "window_error",
    "tail_error",
    "float32_replay_max_abs_error",
    "bf16_max_ulp",
    "ops_horner",
    "ops_estrin",
    "depth_horner",
    "depth_estrin",
    "time_us",
    "fit_seconds",
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
    for key, kind in (("fixed", dict), ("grid", dict), ("quick_grid", dict), ("name", str)):
        if key in data and not isinstance(data[key], kind):
            want = "an object {name: ...}" if kind is dict else "a string"
            raise ValueError(f"{path}: {key!r} must be {want}, got {json.dumps(data[key])}")
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
        for name, values in data.get(key, {}).items():
            if not isinstance(values, list) or not values:
                raise ValueError(f"{path}: {key}.{name} must be a non-empty list")
    data.setdefault("notebook", "notebooks/sweep_point.ipynb")
    data.setdefault("out_dir", f"results/sweeps/{data['name']}")
    data.setdefault("fixed", {})
    data.setdefault("quick_grid", {})
    both = sorted(set(data["fixed"]) & (set(data["grid"]) | set(data["quick_grid"])))
    if both:  # which would win is not for the file to leave open
        raise ValueError(f"{path}: {both} both fixed and in a grid; give each in one place")
    return data


def fix(sweep: dict, params: dict) -> dict:
    """The sweep with ``params`` (given on the command line: -p) fixed for every point: they
    win over the file's fixed values and over both grids, whose entries for them go."""
    out = dict(sweep)
    out["fixed"] = {**sweep.get("fixed", {}), **params}
    for key in ("grid", "quick_grid"):
        out[key] = {k: v for k, v in sweep.get(key, {}).items() if k not in params}
    return out


def points(sweep: dict, quick: bool = False) -> list[dict]:
    """The grid's points in a fixed order (the grid's key order, values as listed)."""
    grid = dict(sweep["grid"])
    if quick:
        grid.update(sweep.get("quick_grid", {}))
    names = list(grid)
    return [
        {**sweep.get("fixed", {}), **dict(zip(names, combo, strict=True))}
        for combo in itertools.product(*(grid[n] for n in names))
    ]


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


def time_spec(ps, size: int = 1 << 20, rounds: int = 20, calls: int = 10):
    """Median time per call (microseconds, float32, one thread) of ``ps`` through the
    compiled ops with run-time coefficients (``turbogelu.ops.poly_gelu``), and a note; None
    and the reason where that op is not in this build or cannot run the spec's form."""
    try:
        from turbogelu import ops

        from .bench_timing import Variant, time_interleaved
        from .bench_variants import make_inputs, num_threads
    except (ImportError, OSError) as exc:
        return None, f"not timed: the ops do not load ({exc})"
    if not hasattr(ops, "poly_gelu"):
        return None, "not timed: this build has no run-time-coefficient op (ops.poly_gelu)"
    if ps.tgt.reduction != "x/2 + even":
        return None, f"not timed: poly_gelu runs x/2 + even forms, not {ps.tgt.reduction}"
    try:
        ops.poly_args(ps)
    except ValueError as exc:
        return None, f"not timed: {exc}"
    if ps.degree not in ops.poly_degrees():
        return None, f"not timed: degree {ps.degree} has no compiled poly_gelu kernel"
    x, _ = make_inputs("float32", size)
    v = Variant("poly_gelu", lambda: ops.poly_gelu(x, ps))
    with num_threads(1):
        t = time_interleaved([v], rounds, calls)
    med = sorted(t.wall["poly_gelu"])[len(t.wall["poly_gelu"]) // 2]
    return med / 1e3, f"ops.poly_gelu, float32, {size} elements, 1 thread, median of {rounds}"


def measure_point(
    target: str,
    fit_range: float,
    degree: int,
    method: str,
    fmt: str,
    *,
    quick: bool = False,
    time_it: bool = True,
) -> dict:
    """Fit one spec (fit interval = clamp = ``fit_range``) and measure it: errors in real
    arithmetic and of the float32 replay, max ulp error over every bfloat16 input x >= -3
    (for targets with a correctly rounded reference), operation counts and dependency depth of
    both schemes, and (``time_it``, where possible) its time. Returns the point's record."""
    from turbogelu.approx import family_fit, polyspec, report, rounding

    base, _ = family_fit.split_method(method)
    opts = {k: v for k, v in QUICK_FIT.items() if k in family_fit.FIT_DEFAULTS[base]}
    t0 = time.perf_counter()
    ps = family_fit.fit_polyspec(
        target,
        degree=int(degree),
        fit_interval=float(fit_range),
        clamp=float(fit_range),
        fmt=fmt,
        method=method,
        replay=True,
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
    if target in rounding.FUNCTIONS:
        # x >= -3 only: further left the clamp's -0 and the cancellation of x/2 + r decide,
        # the same for every polynomial (notebook 04 shows that region).
        rep = report.exhaustive(
            lambda x: polyspec.replay(ps, x), target, "bfloat16", [("x >= -3", (-3.0, 1e300))]
        )
        rec["bf16_max_ulp"] = rep.max_ulp
    rec["time_us"], rec["time_note"] = (
        time_spec(ps, *((1 << 16, 5, 10) if quick else ())) if time_it else (None, "not asked")
    )
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


def _execute(notebook: str, out_nb: str, params: dict) -> str:
    notebooks.execute(notebook, out_nb, params)
    return out_nb


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


def run(
    path: str | Path = DEFAULT_SWEEP,
    *,
    jobs: int = 1,
    quick: bool = False,
    out: str | Path | None = None,
    log: Callable[[str], None] = print,
    params: dict | None = None,
) -> dict:
    """Run every point of the sweep file that has no record yet, then ``aggregate``;
    ``params`` fixed for every point (``fix``). Returns {"ran", "skipped", "failed" (ids),
    "out_dir", and aggregate's paths}."""
    sweep = fix(load(path), params or {})
    d = out_dir(sweep, quick, out)
    nb = notebooks.notebook_path(notebooks.REPO / sweep["notebook"])
    pts = points(sweep, quick)
    version = code_version(nb)
    with runner_lock(d):  # what is done is read under the lock: a runner that just ended counts
        todo, skipped, stale = [], [], 0
        for p in pts:
            pid = point_id(p)
            rec = d / "points" / f"{pid}.json"
            done = rec.is_file() and _stamp(rec) == version
            stale += rec.is_file() and not done
            (skipped if done else todo).append((pid, p, rec))
        log(
            f"sweep {sweep['name']}: {len(pts)} points, {len(skipped)} done, {len(todo)} to run"
            + (f" ({stale} made by other code)" if stale else "")
        )
        failed = _run_points(nb, d, todo, jobs, quick, log)
        ran = [pid for pid, _, _ in todo if pid not in failed]
        for pid, _, rec in todo:
            if pid in ran:
                records.write_json(rec, {**records.read_json(rec), "code_version": version})
        made = [d / "points" / f"{point_id(p)}.json" for p in pts]
        agg = aggregate([r for r in made if r.is_file()], d, title=sweep["name"])
    return {"ran": ran, "skipped": [s[0] for s in skipped], "failed": failed, "out_dir": d, **agg}


def _run_points(nb: Path, d: Path, todo: list, jobs: int, quick: bool, log) -> list[str]:
    """Execute the points in a process pool; returns the ids of those that failed."""
    notebooks.kernel_name()  # register the kernelspec before the workers start
    failed = []
    if todo:
        with ProcessPoolExecutor(
            max_workers=max(1, int(jobs)), initializer=_die_with_parent, initargs=(os.getpid(),)
        ) as pool:
            futures = {
                pool.submit(
                    _execute,
                    str(nb),
                    str(d / "notebooks" / f"{pid}.ipynb"),
                    {**p, "quick": quick, "out_path": str(rec)},
                ): pid
                for pid, p, rec in todo
            }
            for fut in as_completed(futures):
                pid = futures[fut]
                try:
                    fut.result()
                    log(f"  done {pid}")
                except Exception as exc:  # one failed point must not stop the others
                    failed.append(pid)
                    first = str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)
                    log(f"  FAILED {pid}: {first}")
    return failed


# ---------------------------------------------------------------- aggregating


def read_records(paths) -> list[dict]:
    rows = []
    for p in paths:
        rec = records.read_json(p)
        rec["id"] = Path(p).stem
        rows.append(rec)
    return rows


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


def plot_pareto(rows, path: str | Path, title: str = ""):
    """Max error against Horner operation count (and against time where measured), every
    point coloured by degree, the front drawn as a line."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from turbogelu.approx import search

    timed = [r for r in rows if r.get("time_us") is not None]
    axes_spec = [("ops_horner", "operations per element (Horner, FMA = 1)")]
    if timed:
        axes_spec.append(("time_us", "time per call, us (float32, 1 thread)"))
    fig = Figure(figsize=(6.5 * len(axes_spec), 4.2), dpi=110)
    FigureCanvasAgg(fig)
    degrees = sorted({r["degree"] for r in rows})
    for k, (key, label) in enumerate(axes_spec):
        ax = fig.add_subplot(1, len(axes_spec), k + 1)
        sel = rows if key == "ops_horner" else timed
        for d in degrees:
            pts = [r for r in sel if r["degree"] == d]
            ax.scatter(
                [r[key] for r in pts], [r["max_abs_error"] for r in pts], s=14, label=f"d{d}"
            )
        front = search.pareto_front(sel, x=key, y="max_abs_error")
        ax.plot([r[key] for r in front], [r["max_abs_error"] for r in front], "k-", lw=0.8)
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("max |error| (real arithmetic)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        if title:
            ax.set_title(f"{title}: Pareto front", fontsize=9)
    return records.save_png(fig, path)


def aggregate(paths, out: str | Path, title: str = "") -> dict:
    """Records -> ``table.csv``, ``table.md``, ``pareto.png`` (and ``front.json``) in ``out``."""
    from turbogelu.approx import search

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = read_records(paths)
    front = search.pareto_front(rows, x="ops_horner", y="max_abs_error")
    front_ids = {r["id"] for r in front}
    with open(out / "table.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c) for c in COLUMNS})
    (out / "table.md").write_text(render_markdown(rows, front_ids, title))
    records.write_json(
        out / "front.json",
        {"x": "ops_horner", "y": "max_abs_error", "front": [r["id"] for r in front]},
    )
    res = {"table_csv": out / "table.csv", "table_md": out / "table.md", "rows": len(rows)}
    if rows:
        plot_pareto(rows, out / "pareto.png", title)
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
    try:
        res = run(
            args.file,
            jobs=args.jobs,
            quick=args.quick,
            out=args.out,
            log=lambda m: print(m, file=sys.stderr, flush=True),
            params=params,
        )
    except Busy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(Path(res["table_md"]).read_text(), end="")
    for key in ("table_csv", "table_md", "plot"):
        if key in res:
            print(f"wrote {res[key]}", file=sys.stderr)
    if res["failed"]:
        print(f"{len(res['failed'])} point(s) failed: {res['failed']}", file=sys.stderr)
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
