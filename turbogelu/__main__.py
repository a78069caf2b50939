"""Command line: ``python -m turbogelu {fit,codegen,bench}``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_fit(args) -> int:
    from .approx import spec

    mode = "none" if args.gelu_mode in ("exact", "none") else args.gelu_mode
    s = spec.build_spec(args.range, args.iters, args.points, args.degree, mode)
    text = spec.dumps(s)
    out = spec.spec_path(mode) if args.out is None else args.out
    if str(out) == "-":
        sys.stdout.write(text)
    else:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    for name in spec.PARTS:
        e = s[name]["errors"]
        print(
            f"{name:17s} degree {s[name]['degree']}  float32 max |err| {e['max_abs_float32']:.3e}"
            f"  mean {e['mean_abs_float32_grid']:.3e}  float64 max {e['max_abs_float64']:.3e}",
            file=sys.stderr,
        )
    print(f"default backward: {s['default_backward']}", file=sys.stderr)
    return 0


def _cmd_codegen(args) -> int:
    from .approx import codegen

    text = codegen.generate(args.spec_dir)
    path = Path(args.out) if args.out else codegen.HEADER
    if args.check:
        if not path.is_file() or path.read_text() != text:
            print(f"{path} differs from what the specs generate; run `python -m turbogelu codegen`",
                  file=sys.stderr)  # fmt: skip
            return 1
        print(f"{path} is up to date", file=sys.stderr)
        return 0
    path.write_text(text)
    print(f"wrote {path}", file=sys.stderr)
    return 0


def _cmd_report(args) -> int:
    import json

    from .approx import replay, report, rounding, spec

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


def _cmd_bench(args) -> int:
    from . import bench

    return bench.main(args)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m turbogelu", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    f = sub.add_parser("fit", help="fit the GELU polynomials and write a spec JSON")
    f.add_argument("--range", type=float, default=4.389, help="clamp R: polynomial on [-R, R]")
    f.add_argument("--iters", type=int, default=35, help="IRLS iterations")
    f.add_argument("--points", type=int, default=20000, help="sample points on [0, R]")
    f.add_argument("--degree", type=int, default=8, help="degree of P in y = x^2")
    f.add_argument("--gelu-mode", choices=("exact", "none", "tanh"), default="exact")
    f.add_argument(
        "--out",
        default=None,
        help="output path (default data/specs/gelu_<mode>.json; - for stdout)",
    )
    f.set_defaults(func=_cmd_fit)

    c = sub.add_parser("codegen", help="generate kernels/include/turbogelu/gelu_coeffs.h")
    c.add_argument("--spec-dir", type=Path, default=None)
    c.add_argument("--out", default=None)
    c.add_argument("--check", action="store_true", help="fail if the header is out of date")
    c.set_defaults(func=_cmd_codegen)

    r = sub.add_parser("report", help="exhaustive bf16/fp16 and dense float32 error report")
    r.add_argument("--spec", type=Path, default=Path("data/specs/gelu_exact.json"))
    r.add_argument(
        "--part", choices=("forward", "backward_direct", "backward_matched"), default="forward"
    )
    r.add_argument("--worst", action="store_true", help="also list the worst inputs")
    r.add_argument("--out", default=None, help="write the report as JSON here")
    r.add_argument("--plot", default=None, help="write |error| vs x at bf16 inputs as PNG here")
    r.set_defaults(func=_cmd_report)

    b = sub.add_parser("bench", help="time turbogelu against PyTorch and a copy of the same bytes")
    from .bench import add_arguments

    add_arguments(b)
    b.set_defaults(func=_cmd_bench)

    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
