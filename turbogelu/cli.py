"""The product's command line, ``python -m turbogelu COMMAND``: fit (a kernel spec, or one
PolySpec of any target), codegen (the generated header and Metal source) and report (the
exhaustive 16-bit and dense float32 error report of a spec). The research harness (bench,
sweep, notebooks, MNIST, the paper, search, Table 2) has its own, ``python -m experiments``,
which reuses the argument helpers below."""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

from ._spec_names import MODES, PARTS

# approx.family_fit.METHODS (not imported here: the parser stays free of numpy / scipy).
FIT_METHODS = ("ls", "irls", "endpoint-ls", "remez", "remez+search", "endpoint-ls+search")


def _cmd_fit(args) -> int:
    from .approx import spec

    with spec.fit_writes():  # the one command that writes committed specs
        if args.all or args.list:
            return _cmd_fit_all(args)
        if args.target is not None:
            return _cmd_fit_target(args)
        return _cmd_fit_gelu(args)


def _cmd_fit_gelu(args) -> int:
    from .approx import spec

    bad = [
        f"--{k.replace('_', '-')}"
        for k in (
            "method",
            "fit_interval",
            "clamp",
            "format",
            "variable",
            "factor",
            "shift",
            "radius",
        )
        if getattr(args, k) is not None
    ]
    if bad:
        print(f"{', '.join(bad)} need --target (a PolySpec fit)", file=sys.stderr)
        return 2
    gelu_mode = "exact" if args.gelu_mode is None else args.gelu_mode
    mode = "none" if gelu_mode in ("exact", "none") else gelu_mode
    # Unset settings: the shipped spec's of this form (spec.DEFAULTS; the file's generated_by
    # command records the values used).
    shipped = spec.defaults(mode)
    range_ = shipped.range if args.range is None else args.range
    iters = shipped.iters if args.iters is None else args.iters
    points = shipped.points if args.points is None else args.points
    degree = shipped.degree if args.degree is None else args.degree
    print(
        f"fit {spec.file_mode(mode)}: R {range_!r}, degree {degree}, {iters} IRLS iterations, "
        f"{points} points",
        file=sys.stderr,
    )
    s = spec.build_spec(range_, iters, points, degree, mode)
    text = spec.dumps(s)
    out = spec.spec_path(mode) if args.out is None else args.out
    if str(out) == "-":
        sys.stdout.write(text)
    else:
        try:
            outcome = spec.write_checked(out, text, force=args.force)
        except spec.Differs as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(spec.describe_write(out, outcome), file=sys.stderr)
    for name in spec.PARTS:
        e = s[name]["errors"]
        print(
            f"{name:17s} degree {s[name]['degree']}  float32 max |err| {e['max_abs_float32']:.3e}"
            f"  mean {e['mean_abs_float32_grid']:.3e}  float64 max {e['max_abs_float64']:.3e}",
            file=sys.stderr,
        )
    print(f"default backward: {s['default_backward']}", file=sys.stderr)
    return 0


def _cmd_fit_all(args) -> int:
    """--all: every committed spec refitted with its shipped settings, then codegen
    (approx/fit_all.py); --list: the files each step writes."""
    given = [
        f"--{k.replace('_', '-')}"
        for k, v in vars(args).items()
        if k not in ("command", "func", "all", "list", "force", "argv") and v is not None
    ]
    if given:
        print(f"--all and --list take only --force, not {', '.join(given)}", file=sys.stderr)
        return 2
    from .approx import fit_all

    return fit_all.run(force=args.force, list_only=args.list)


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1 (a count of elements, rounds, calls or
    threads), so that 0 or -5 is a usage error rather than a silent default or a traceback."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def finite_float(text: str) -> float:
    """An argparse type: a finite number (nan and inf are usage errors)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be finite, got {text}")
    return v


def write_text(text: str, out, force: bool = False) -> int:
    """Text to stdout (out None or "-") or to a file (parents created; a committed spec under
    data/specs only as spec.write_checked allows). Returns the exit status."""
    if out is None or str(out) == "-":
        sys.stdout.write(text)
        return 0
    from .approx import spec

    try:
        outcome = spec.write_checked(out, text, force=force)
    except spec.Differs as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(spec.describe_write(out, outcome), file=sys.stderr)
    return 0


def fit_opts(args) -> dict:
    """The fit / search settings given on the command line (unset ones: the defaults)."""
    opts = {}
    for name in ("points", "iters", "radius"):
        if getattr(args, name, None) is not None:
            opts[name] = getattr(args, name)
    return opts


def _cmd_fit_target(args) -> int:
    from .approx import family_fit

    bad = [
        f"--{k.replace('_', '-')}" for k in ("range", "gelu_mode") if getattr(args, k) is not None
    ]
    if bad:
        print(f"{', '.join(bad)} belong to the kernel spec fit (without --target)", file=sys.stderr)
        return 2
    if args.fit_interval is None:
        print("--target needs --fit-interval", file=sys.stderr)
        return 2
    ps = family_fit.fit_polyspec(
        args.target,
        args.variable,
        args.factor,
        3 if args.degree is None else args.degree,
        args.fit_interval,
        args.clamp,
        args.format or "bfloat16",
        args.method or "endpoint-ls",
        shift=True if args.shift is None else args.shift,
        **fit_opts(args),
    )
    if write_text(ps.to_json(), args.out, args.force):
        return 1
    e = ps.meta["errors"]
    X = ps.meta["error_grid"]["extent"]
    print(ps.describe(), file=sys.stderr)
    print(
        f"max |err| {e['max_abs_error']:.4e} (real arithmetic, |x| <= {X:g}; polynomial "
        f"window {e['window_error']:.4e} at "
        f"|x| = {e['window_argmax']:.4g}, clamp tail {e['tail_error']:.4e})",
        file=sys.stderr,
    )
    print(
        f"plain rounding {e['rounded_max_abs_error']:.4e}  float64 fit {e['float64_fit_error']:.4e}"
        f"  ops (Horner, FMA) {e['op_count']}",
        file=sys.stderr,
    )
    replays = [
        f"{name} {e[key]:.4e}"
        for name, key in (
            ("float32 replay", "float32_replay_max_abs_error"),
            (f"{ps.fmt} replay", "target_replay_max_abs_error"),
        )
        if key in e
    ]
    if replays:
        print("  ".join(replays), file=sys.stderr)
    return 0


def _cmd_codegen(args) -> int:
    from .approx import codegen

    files = codegen.outputs(args.spec_dir)
    if args.out:  # --out: the C++ header only, written there
        files = {Path(args.out): files[codegen.HEADER]}
    if args.check:
        stale = [p for p, text in files.items() if not p.is_file() or p.read_text() != text]
        for path in stale:
            print(f"{path} differs from what the specs generate; run `python -m turbogelu codegen`",
                  file=sys.stderr)  # fmt: skip
        if stale:
            return 1
        for path in files:
            print(f"{path} is up to date", file=sys.stderr)
        return 0
    codegen.write_outputs(files)
    return 0


def _cmd_report(args) -> int:
    import json

    from .approx import replay, report, rounding, spec

    if args.spec is None:  # the package's copy: the same from a checkout or an installed wheel
        args.spec = spec.spec_path("none")
    s = spec.load(args.spec)
    part = spec.part_values(s[args.part])
    grad = args.part != "forward"
    fn = rounding.gelu_function(s["approximate"], grad=grad)
    if grad:
        approx = lambda x: replay.backward32(x, part)  # noqa: E731
    else:
        approx = lambda x: replay.forward32(x, part)  # noqa: E731
    label = f"{Path(args.spec).name}:{args.part}"
    reports = report.sweep(approx, fn, label=label)
    dense = report.dense_errors(approx, fn, label=label)
    print(f"# Error report: {label} against {fn}\n")
    print(report.render_markdown(dense))
    print()
    print(report.render_markdown(reports, worst=args.worst))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "spec": str(args.spec),
            "part": args.part,
            "function": fn,
            "dense": report.to_json(dense),
            "exhaustive": report.to_json(reports),
        }
        Path(args.out).write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {args.out}", file=sys.stderr)
    if args.plot:
        report.plot_abs_error([(label, approx)], "bfloat16", args.plot, fn=fn)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def add_form_arguments(p) -> None:
    """--target, --method, --format, --variable, --factor, --shift/--no-shift, --radius."""
    p.add_argument("--target", default=None, help="a name of approx.targets.TARGETS")
    p.add_argument("--method", choices=FIT_METHODS, default=None, help="(endpoint-ls)")
    p.add_argument(
        "--format", default=None, help="coefficient format: bf16, fp16, fp32, fp64 (bf16)"
    )
    p.add_argument("--variable", choices=("u", "y"), default=None, help="P in |x| or x^2")
    p.add_argument("--factor", type=int, default=None, help="r ~ |x|^factor P (natural)")
    p.add_argument(
        "--shift",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="normalized variable z = 2 v / V - 1 (default) or v itself",
    )
    p.add_argument("--radius", type=int, default=None, help="+search: ulps per move (1)")


# The lab's packages (pyproject's [lab] extra): every command here fits, generates or measures.
LAB_PACKAGES = ("numpy", "scipy", "mpmath")


def missing_lab_packages() -> list[str]:
    """The lab's packages that cannot be imported here (found without importing them)."""
    return [name for name in LAB_PACKAGES if importlib.util.find_spec(name) is None]


def run_command(args) -> int:
    """The subcommand, with what the user can fix said in one line and exit status 2 rather
    than a traceback: a ValueError (an unknown target, a bad range or degree, a malformed spec
    or sweep file, ...) and an OSError (a missing spec, an --out that cannot be written)."""
    try:
        return args.func(args)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m turbogelu", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    f = sub.add_parser(
        "fit",
        help="fit the GELU kernel spec, or with --target one PolySpec of any target",
        description="Without --target: the kernels' GELU spec (IRLS, float32; --range, "
        "--iters, --points, --degree, --gelu-mode). With --target: one PolySpec "
        "(--method, --degree, --fit-interval, --clamp, --format, --variable, --factor), "
        "written as JSON, its errors printed.",
    )
    # The kernel spec's defaults are the shipped spec's of --gelu-mode (spec.DEFAULTS, not
    # imported here: the parser stays free of numpy); the command prints the values it uses.
    shipped = "default: the shipped spec's for --gelu-mode"
    f.add_argument(
        "--range", type=float, default=None, help=f"clamp R: polynomial on [-R, R] ({shipped})"
    )
    f.add_argument("--iters", type=int, default=None, help=f"IRLS iterations ({shipped})")
    f.add_argument("--points", type=int, default=None, help=f"sample points on [0, R] ({shipped})")
    f.add_argument(
        "--degree",
        type=int,
        default=None,
        help=f"degree of P (kernel spec: {shipped}; --target: 3)",
    )
    f.add_argument("--gelu-mode", choices=("exact", *MODES), default=None, help="(exact)")
    add_form_arguments(f)
    f.add_argument("--fit-interval", type=float, default=None, help="L_i: fit on |x| in [0, L_i]")
    f.add_argument("--clamp", type=float, default=None, help="L_c: asymptote for |x| > L_c (L_i)")
    f.add_argument(
        "--out",
        default=None,
        help="output path (kernel spec: default data/specs/gelu_<mode>.json, which is left "
        "untouched when the fit matches it and not overwritten when it differs; --target: "
        "default stdout; - for stdout)",
    )
    f.add_argument(
        "--force",
        action="store_true",
        help="overwrite a committed spec (data/specs/) that differs from the fit",
    )
    f.add_argument(
        "--all",
        action="store_true",
        help="refit every committed spec (data/specs/: GELU's, the cells, packed, the family's "
        "every tier, exp2's) with its shipped settings, then codegen (make fit)",
    )
    f.add_argument("--list", action="store_true", help="list the spec files --all refits")
    f.set_defaults(func=_cmd_fit)

    c = sub.add_parser(
        "codegen",
        help="generate the kernels' coefficients from the specs: kernels/include/turbogelu/"
        "{gelu,family}_coeffs.h and kernels/mps/{gelu,family}_kernels.metal",
    )
    c.add_argument("--spec-dir", type=Path, default=None)
    c.add_argument("--out", default=None, help="write (or check) only the C++ header, here")
    c.add_argument("--check", action="store_true", help="fail if a generated file is out of date")
    c.set_defaults(func=_cmd_codegen)

    r = sub.add_parser("report", help="exhaustive bf16/fp16 and dense float32 error report")
    r.add_argument(
        "--spec",
        type=Path,
        default=None,
        help="a kernel spec file (the shipped exact-GELU spec, from the package's data)",
    )
    r.add_argument("--part", choices=PARTS, default="forward")
    r.add_argument("--worst", action="store_true", help="also list the worst inputs")
    r.add_argument("--out", default=None, help="write the report as JSON here")
    r.add_argument("--plot", default=None, help="write |error| vs x at bf16 inputs as PNG here")
    r.set_defaults(func=_cmd_report)

    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    args.argv = argv[1:]
    missing = missing_lab_packages()
    if missing:
        print(
            f"error: python -m turbogelu {args.command} is part of the lab and needs "
            f"{', '.join(missing)}: pip install 'turbogelu[lab]' (the ops need only torch)",
            file=sys.stderr,
        )
        return 2
    return run_command(args)
