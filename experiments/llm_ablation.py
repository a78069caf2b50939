"""The source paper's Table 6 in miniature (issue 38, item 3): a trained checkpoint with its
activations swapped for D4 polynomial programs fitted two ways, evaluated (no training).

The paper swaps the SwiGLU / router-sigmoid activations of open-weight models for D4 programs
fitted by its endpoint-constrained least squares ("Endpoint LS") and by a same-form minimax
control ("Sollya minimax"), and reports accuracy and perplexity; a dense model's perplexity goes
from about 9 to about 200 (LS) and to about 300,000 (minimax). Here the checkpoints are the seed
protocol's native model of each task (``llm_protocols.run_seed_protocol``: float32) and the
bfloat16 study's native model of its first seed (``llm_protocols.run_bf16_protocol``: float32
weights, bfloat16 products, so every activation sees and returns bfloat16, as the paper's
bfloat16 checkpoints), each evaluated on the validation windows at its own precision, with three
forms swapped in:

* ``native``: PyTorch's functions (the reference; the row equals the unswapped evaluation);
* ``endpoint-ls``: every activation (sigmoid, tanh of the softcap, SiLU of the dense MLP and of
  SwiGLU, GELU) by its D4 program of the paper's reduced form (``llm_settings.ABLATION_FORMS``,
  ``ABLATION_POINTS``: the same (L_i, L_c) for both fitters), endpoint LS, bfloat16
  coefficients;
* ``minimax``: the same form and (L_i, L_c), minimax: Sollya's fpminimax when ``sollya`` is on
  PATH (the paper's control), else this project's Remez fit with a search over neighbouring
  bfloat16 coefficients (``remez+search``); the record says which (``minimax_fitter``, and
  ``minimax_sollya_version``: the Sollya that fitted it, else None). ``figure_tag`` names the
  minimax figures by that version, as Table 2's Sollya control is named (``compare``): another
  version's fpminimax chooses other coefficients, so its figures are other figures.

Each program runs as ``polyspec.replay(ps, x, fma=False)`` runs it in float32 (the "generic"
order: Horner, the reduction, the target's asymptote beyond |x| > L_c; each multiply-add a
multiply and an add, each rounded), bit for bit, with torch's float32 operations on tensors
(``evaluate_program``; its ``fma=True`` is the fused form, a rounding apart and much slower);
inputs of a narrower dtype are widened to float32 and the result narrowed back, as a kernel
computing in float32 does. The attention's softmax and B4's router stay PyTorch's.

Per row: validation loss (mean cross-entropy per character), perplexity (its exp, per
character: the paper's is WikiText-2 word perplexity), next-character accuracy, and their
changes against native. The inputs each activation site reaches (min, max, share beyond the
program's clamp, per layer too) are recorded during the native evaluation. The paper's
blow-ups come from inputs beyond the programs' clamps; to show what happens when the inputs
get there, the stress test evaluates every form again with each site's inputs multiplied by the
factor that takes their largest magnitude to a multiple of the clamp (``ABLATION_REACHES``;
SiLU / GELU / SwiGLU outputs divided by it, so that their scale stays), native and programs
alike: the change against native under the same stretch is the programs' effect.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial

import numpy as np
import torch
from torch import nn

from . import llm
from .llm_settings import (
    ABLATION_FORMS,
    ABLATION_POINTS,
    ABLATION_REACHES,
    PAPER_TABLE6,
    PAPER_TABLE6_SOURCE,
)

FORMS = ("native", "endpoint-ls", "minimax")
FITTED = FORMS[1:]
MINIMAX_CHOICES = ("auto", "remez", "sollya")
# An arm's function -> the lab target its program approximates (the softcap is c tanh(s / c)).
SITE_FUNCTION = {
    "gelu": "gelu",
    "silu": "silu",
    "swiglu": "silu",
    "sigmoid": "sigmoid",
    "softcap": "tanh",
}
# The site each task swaps (llm.py's module docstring).
TASK_SITES = {"gelu": "gelu", "b1": "silu", "b2": "softcap", "b3": "sigmoid", "b4": "swiglu"}


# ---------------------------------------------------------------- the programs


def minimax_fitter(choice: str = "auto") -> str:
    """ "sollya" or "remez": ``choice`` itself, or for "auto" Sollya when it is installed."""
    from turbogelu.approx import methods

    if choice not in MINIMAX_CHOICES:
        raise ValueError(f"minimax must be one of {MINIMAX_CHOICES}, got {choice!r}")
    have = methods.sollya_available()
    if choice == "sollya" and not have:
        raise RuntimeError("minimax='sollya' needs the sollya binary on PATH; it is not there")
    if choice == "auto":
        return "sollya" if have else "remez"
    return choice


def fitter_name(method: str) -> str:
    """What made a program, as the record says it."""
    if method == "endpoint-ls":
        return "endpoint-ls (turbogelu.approx.least_squares.endpoint_ls), coefficients rounded"
    if method == "remez":
        return (
            "remez+search (turbogelu.approx.remez, then a search over neighbouring bfloat16 "
            "coefficients)"
        )
    from turbogelu.approx import methods

    return f"sollya fpminimax {methods.sollya_version()} (bfloat16, monomials on [0, L_c])"


def _sollya_version(fitter: str) -> str | None:
    from turbogelu.approx import methods

    return methods.sollya_version() if fitter.startswith("sollya") else None


def figure_tag(body: Mapping, form: str) -> str:
    """What a figure of ``form`` in the ablation record ``body`` ends with: ``@sollya-<version>``
    for the minimax form when Sollya fitted it, else nothing (``compare`` sets aside a Sollya
    figure of the reference that a run with another or no Sollya cannot make)."""
    version = body.get("minimax_sollya_version")
    return f"@sollya-{version}" if form == "minimax" and version else ""


def fit_program(function: str, method: str, point: tuple[float, float] | None = None):
    """The D4 program of ``function`` (a key of ``ABLATION_FORMS``) fitted by ``method``
    ("endpoint-ls", "remez" or "sollya") at ``point`` = (L_i, L_c) (default
    ``ABLATION_POINTS``), bfloat16 coefficients: a ``PolySpec``."""
    from turbogelu.approx import table2
    from turbogelu.approx.polyspec import PolySpec

    if function not in ABLATION_FORMS:
        raise ValueError(f"no D4 form for {function!r}; functions: {sorted(ABLATION_FORMS)}")
    variable, factor, degree = ABLATION_FORMS[function]
    li, lc = ABLATION_POINTS[function] if point is None else point
    cfg = table2.Config(function, variable, factor, degree, True, float(li), float(lc))
    if method == "endpoint-ls":
        return cfg.fit("endpoint-ls")
    if method == "remez":
        return cfg.fit("remez+search")
    if method == "sollya":
        # fpminimax in monomials (no shift), as table2's control; same form, fit interval, clamp
        res = table2.sollya_control(cfg)
        tpl = PolySpec.template(function, degree, cfg.fit_interval, variable=variable,
                                factor=factor, shift=False, clamp=lc, fmt="bfloat16")  # fmt: skip
        return tpl.with_coefficients(res["coefficients"], method="sollya-fpminimax")
    raise ValueError(f"method must be endpoint-ls, remez or sollya, got {method!r}")


def fit_programs(minimax: str = "auto") -> tuple[dict[str, dict], dict[str, str]]:
    """({form: {function: PolySpec}} for the two fitted forms, {form: fitter name})."""
    mm = minimax_fitter(minimax)
    methods_ = {"endpoint-ls": "endpoint-ls", "minimax": mm}
    specs = {f: {fn: fit_program(fn, m) for fn in ABLATION_FORMS} for f, m in methods_.items()}
    return specs, {f: fitter_name(m) for f, m in methods_.items()}


def describe_program(ps) -> dict:
    """A program as the record keeps it: its form, (L_i, L_c), coefficients (hex and decimal)
    and its error in real arithmetic (``family_fit.ErrorModel``: the whole program, polynomial
    inside the clamp and asymptote beyond)."""
    from turbogelu.approx import table2
    from turbogelu.approx.family_fit import ErrorModel

    errors = ErrorModel(ps).errors(np.array(ps.coefficients))
    cfg = table2.Config(ps.target, ps.variable, ps.factor, ps.degree, ps.shift,
                        ps.fit_interval, ps.clamp)  # fmt: skip
    return {
        "form": ps.describe(),
        "reduced_form": cfg.form(),
        "target": ps.target,
        "variable": ps.variable,
        "factor": ps.factor,
        "degree": ps.degree,
        "shift": ps.shift,
        "fit_interval": ps.fit_interval,
        "clamp": ps.clamp,
        "method": ps.method,
        "coefficients": list(ps.coefficients),
        "coefficients_hex": [float.hex(c) for c in ps.coefficients],
        **{k: errors[k] for k in ("max_abs_error", "window_error", "tail_error", "decided_by")},
    }


# ---------------------------------------------------------------- a program on tensors


def _f32(t: torch.Tensor) -> torch.Tensor:
    """Round float64 values to float32 and hold them in float64 again (one rounding)."""
    return t.to(torch.float32).to(torch.float64)


def _asymptote(kind: str, x: torch.Tensor) -> torch.Tensor:
    """``targets.ASYMPTOTES`` on tensors."""
    one, zero = torch.ones_like(x), torch.zeros_like(x)
    if kind == "relu":
        return torch.where(x > 0, x, -zero)  # -0.0 on the left, as the lab's
    if kind == "relu+":
        return torch.where(x > 0, x, zero)
    if kind == "step":
        return torch.where(x > 0, one, zero)
    if kind == "sign":
        return torch.where(x > 0, one, -one)
    if kind == "zero":
        return zero
    raise ValueError(f"unknown asymptote {kind!r}")


def evaluate_program(ps, x: torch.Tensor, *, fma: bool = False) -> torch.Tensor:
    """``ps`` (a PolySpec, program "generic") at ``x`` as ``polyspec.replay(ps, x, fma=fma)``
    computes it in float32 (``replay.program``'s steps), on tensors. ``fma=False`` (what the
    ablation runs: float32 tensor operations, fast): each multiply-add a multiply and an add,
    each rounded to float32, bit for bit the replay's. ``fma=True``: each operation in float64
    then rounded to float32, an FMA's product exact in float64, so one rounding but for a rare
    double rounding of the sum (slow: a check of the kernels' fused form). Returns ``x``'s
    dtype (float32 values narrowed for bf16/fp16)."""
    if ps.program != "generic":
        raise ValueError(f"only the generic order is evaluated here, not {ps.program!r}")
    if not x.is_floating_point():
        raise TypeError(f"a program takes floating-point tensors, not {x.dtype}")
    if fma:
        work = x.to(torch.float32).to(torch.float64)

        def mul(a, b):
            return _f32(a * b)

        def add(a, b):
            return _f32(a + b)

        def mad(a, b, c):
            return _f32(a * b + c)
    else:
        work = x.to(torch.float32)

        def mul(a, b):
            return a * b

        def add(a, b):
            return a + b

        def mad(a, b, c):
            return a * b + c  # two float32 roundings, as replay's split FMA

    tgt = ps.tgt
    u = work.abs()
    y = mul(u, u) if ps.variable == "y" else None
    v = y if ps.variable == "y" else u
    coeffs = [float(np.float32(c)) for c in ps.coefficients]
    t = v if ps.scale is None else mad(v, float(np.float32(ps.scale)), -1.0)
    p = torch.full_like(t, coeffs[-1])
    for c in reversed(coeffs[:-1]):  # Horner
        p = mad(p, t, c)
    if ps.variable == "y":
        mults = [y] * (ps.factor // 2) + [u] * (ps.factor % 2)
    else:
        mults = [u] * ps.factor
    for m in mults[:-1]:
        p = mul(m, p)
    last = mults[-1] if mults else None
    if tgt.residual_parity == "odd":  # sign(x) r(|x|): through x itself, or a negation
        if last is u:
            last = work
        else:
            p = torch.where(torch.signbit(work), -p, p)
    const = {"x/2 + even": lambda: work * 0.5, "1/2 + odd": lambda: 0.5}.get(tgt.reduction)
    if last is None:
        out = p if const is None else add(const(), p)
    else:
        out = mul(last, p) if const is None else mad(last, p, const())
    if tgt.nonnegative:
        out = torch.where(out < 0, torch.zeros_like(out), out)
    if math.isfinite(ps.clamp):  # beyond the clamp the asymptote; NaN fails the test, stays
        beyond = u > float(np.float32(ps.clamp))
        out = torch.where(beyond, _asymptote(tgt.asymptote_kind, work), out)
    return out.to(torch.float32).to(x.dtype)


def program_arm(name: str, specs: Mapping) -> llm.Arm:
    """An arm whose functions evaluate ``specs`` ({function: PolySpec} for sigmoid, tanh, silu
    and gelu): softcap c tanh(s / c) and SwiGLU silu(a) b built on them as the native arm
    builds them. Forward only (evaluation)."""
    f = {fn: partial(evaluate_program, specs[fn]) for fn in ABLATION_FORMS}
    return llm.Arm(
        name=name,
        gelu=f["gelu"],
        silu=f["silu"],
        sigmoid=f["sigmoid"],
        softcap=lambda s, c: c * f["tanh"](s / c),
        swiglu=lambda a, b: f["silu"](a) * b,
    )


# ---------------------------------------------------------------- inputs and the stress


class Probe:
    """Statistics of the inputs each (site, layer) passes to its function: count, min, max,
    and how many lie beyond the site's clamp (|x| > L_c, the float32 clamp as the program
    compares). Attention sites count the causal entries only (the others are masked)."""

    def __init__(self, clamps: Mapping[str, float]):
        self.clamps = dict(clamps)
        self.stats: dict[tuple[str, int], dict] = {}

    def __call__(self, site: str, layer: int, x: torch.Tensor) -> None:
        x = x.detach()
        if site in ("sigmoid", "softcap"):  # (batch, heads, t, t): keep the causal entries
            t = x.shape[-1]
            x = x[..., torch.ones(t, t, dtype=torch.bool, device=x.device).tril()]
        x = x.float()
        clamp = float(np.float32(self.clamps[site]))
        s = self.stats.setdefault(
            (site, layer), {"values": 0, "min": math.inf, "max": -math.inf, "beyond_clamp": 0}
        )
        s["values"] += x.numel()
        s["min"] = min(s["min"], x.min().item())
        s["max"] = max(s["max"], x.max().item())
        s["beyond_clamp"] += int((x.abs() > clamp).sum().item())

    def summary(self) -> dict[str, dict]:
        """{site: the statistics over its layers and per layer}."""
        out: dict[str, dict] = {}
        for (site, layer), s in sorted(self.stats.items()):
            o = out.setdefault(
                site,
                {"function": SITE_FUNCTION[site], "clamp": self.clamps[site], "values": 0,
                 "min": math.inf, "max": -math.inf, "beyond_clamp": 0, "layers": []},
            )  # fmt: skip
            o["values"] += s["values"]
            o["min"], o["max"] = min(o["min"], s["min"]), max(o["max"], s["max"])
            o["beyond_clamp"] += s["beyond_clamp"]
            o["layers"].append({"layer": layer, **s})
        for o in out.values():
            o["max_abs"] = max(abs(o["min"]), abs(o["max"]))
            o["max_abs_over_clamp"] = o["max_abs"] / o["clamp"]
            o["share_beyond_clamp"] = o["beyond_clamp"] / max(o["values"], 1)
        return out


def probed(
    arm: llm.Arm,
    stretch: Mapping[str, float] | None = None,
    probe: Probe | None = None,
    layer: int = 0,
) -> llm.Arm:
    """``arm`` with each site's input multiplied by its ``stretch`` ({site: factor}, 1 where
    absent; the SiLU, GELU and SwiGLU outputs divided by it) and, with a probe, the inputs
    recorded. Without a stretch the functions compute exactly what ``arm``'s do."""
    ks = {site: 1.0 for site in SITE_FUNCTION} | dict(stretch or {})
    for site, k in ks.items():
        if site not in SITE_FUNCTION or not (math.isfinite(k) and k > 0):
            raise ValueError(f"a stretch is a positive factor of a site of {sorted(SITE_FUNCTION)}"
                             f", got {site!r}: {k}")  # fmt: skip

    def seen(site: str, x: torch.Tensor) -> torch.Tensor:
        x = x if ks[site] == 1.0 else x * ks[site]
        if probe is not None:
            probe(site, layer, x)
        return x

    def softcap(s, c):
        s = s if ks["softcap"] == 1.0 else s * ks["softcap"]
        if probe is not None:
            probe("softcap", layer, s / c)  # the tanh's input, which the clamp bounds
        return arm.softcap(s, c)

    def unscale(site: str, y):
        return y if ks[site] == 1.0 else y / ks[site]

    return dataclasses.replace(
        arm,
        gelu=lambda x: unscale("gelu", arm.gelu(seen("gelu", x))),
        silu=lambda x: unscale("silu", arm.silu(seen("silu", x))),
        sigmoid=lambda x: arm.sigmoid(seen("sigmoid", x)),
        softcap=softcap,
        swiglu=lambda a, b: unscale("swiglu", arm.swiglu(seen("swiglu", a), b)),
    )


def stretches_to_reach(sites: Mapping[str, dict], reach: float) -> dict[str, float]:
    """{site: the factor that takes the site's largest |input| (``Probe.summary``) to ``reach``
    times its clamp}."""
    return {s: reach * o["clamp"] / o["max_abs"] for s, o in sites.items() if o["max_abs"] > 0}


def set_layer_arms(model: llm.TinyLM, arm_of: Callable[[int], llm.Arm]) -> llm.TinyLM:
    """Block i of ``model`` calls ``arm_of(i)``'s functions (``llm_protocols.set_arm`` per
    block, so that a probe knows the layer)."""
    for i, block in enumerate(model.blocks):
        arm = arm_of(i)
        block.attn.arm = arm
        if isinstance(block.mlp, llm.RoutedSwiGLU):
            block.mlp.arm = arm
        else:
            block.mlp.act = arm.gelu if model.task == "gelu" else arm.silu
    return model


# ---------------------------------------------------------------- the ablation


def evaluated_dtype(model: nn.Module) -> str:
    """The dtype the activations of ``model`` see: its parameters' dtype, or for a model
    computing in bfloat16 (``llm.TinyLM.precision``: float32 weights, bfloat16 products)
    "bfloat16"."""
    if getattr(model, "precision", "float32") == "bfloat16":
        return "bfloat16"
    return str(next(model.parameters()).dtype).removeprefix("torch.")


def check_reaches(reaches: Sequence[float]) -> list[float]:
    r = [float(v) for v in reaches]
    if any(not (math.isfinite(v) and v > 0) for v in r) or len(set(r)) != len(r):
        raise ValueError(f"reaches must be distinct positive numbers, got {list(reaches)}")
    return r


def condition(reach: float | None) -> str:
    """A row's condition: "trained" (the checkpoint as it is) or "reach<m>" (each site's
    inputs stretched to reach m times its clamp)."""
    return "trained" if reach is None else f"reach{reach:g}"


def summarize(rows: Sequence[dict], sites: Sequence[dict]) -> dict:
    """The headline of an ablation, as trained and under the stretches: the largest |change|
    of the validation loss and of the accuracy against native, and how far the inputs went
    (sites with any input beyond the clamp, the largest input over its clamp, the largest share
    beyond it)."""
    out = {}
    for part, keep in (
        ("trained", lambda c: c == "trained"),
        ("stressed", lambda c: c != "trained"),
    ):
        rs = [r for r in rows if keep(r["condition"])]
        ss = [s for s in sites if keep(s["condition"])]
        if not rs:
            continue
        out[part] = {
            "max_abs_delta_val_loss": max(abs(r["delta_val_loss"]) for r in rs),
            "max_abs_accuracy_change": max(abs(r["accuracy_change"]) for r in rs),
            "sites": len(ss),
            "sites_beyond_clamp": sum(s["beyond_clamp"] > 0 for s in ss),
            "max_abs_over_clamp": max(s["max_abs_over_clamp"] for s in ss),
            "max_share_beyond_clamp": max(s["share_beyond_clamp"] for s in ss),
        }
    return out


def run_ablation(
    models: Mapping[str, nn.Module],
    settings,
    corpus,
    *,
    reaches: Sequence[float] = ABLATION_REACHES,
    minimax: str = "auto",
    log: Callable[[str], None] | None = None,
) -> dict:
    """Each checkpoint of ``models`` ({task: the seed protocol's native model}) evaluated on
    the validation windows of ``settings`` with each form of ``FORMS`` swapped in for every
    activation the model calls: as trained, then with each site's inputs stretched so that
    their largest magnitude is each of ``reaches`` times the clamp (``stretches_to_reach``
    from the native evaluation as trained). Returns the record's body: programs, rows, input
    ranges, the dtype evaluated and the minimax fitter (module docstring)."""
    from .llm_protocols import evaluate, set_arm, val_windows
    from .mnist import deterministic

    reaches = check_reaches(reaches)
    log = log or (lambda m: None)
    t0 = time.perf_counter()
    specs, fitters = fit_programs(minimax)
    fit_s = time.perf_counter() - t0
    forms = {"native": llm.NATIVE, **{f: program_arm(f, specs[f]) for f in FITTED}}
    # both fits share their clamps (the same (L_i, L_c)); a site's clamp is its function's
    clamps = {site: specs["endpoint-ls"][fn].clamp for site, fn in SITE_FUNCTION.items()}
    val = val_windows(corpus.val, settings.model.context, settings.val_windows)
    rows, ranges, stretch, dtypes = [], {}, {}, {}
    with deterministic(settings.threads):
        for task, model in models.items():
            dtypes[task] = evaluated_dtype(model)
            original = model.arm
            try:
                for reach in [None, *reaches]:
                    cond = condition(reach)
                    ks = (
                        None
                        if reach is None
                        else stretches_to_reach(ranges[task]["trained"], reach)
                    )
                    stretch.setdefault(task, {})[cond] = ks or {}
                    ref = None
                    for name, arm in forms.items():
                        probe = Probe(clamps) if name == "native" else None
                        set_layer_arms(model, lambda i, a=arm, p=probe, k=ks: probed(a, k, p, i))
                        loss, logits = evaluate(model, *val)
                        pred = logits.argmax(-1)
                        acc = (pred == val[1]).float().mean().item()
                        if probe is not None:
                            ranges.setdefault(task, {})[cond] = probe.summary()
                        if ref is None:
                            ref = (loss, logits, pred, acc)
                        rows.append(
                            {
                                "task": task,
                                "form": name,
                                "condition": cond,
                                "reach": reach,
                                "val_loss": loss,
                                "perplexity": math.exp(loss) if math.isfinite(loss) else loss,
                                "accuracy": acc,
                                "delta_val_loss": loss - ref[0],
                                "accuracy_change": acc - ref[3],
                                "max_abs_logit_diff": (logits - ref[1]).abs().max().item(),
                                "changed_predictions": int((pred != ref[2]).sum().item()),
                                "predictions": int(pred.numel()),
                            }
                        )
            finally:
                set_arm(model, original)
            r1 = [r for r in rows if r["task"] == task and r["reach"] is None]
            site = ranges[task]["trained"][TASK_SITES[task]]
            log(
                f"ablation {task:4s} "
                + "  ".join(f"{r['form']} {r['val_loss']:.4f}" for r in r1)
                + f"; inputs [{site['min']:.3g}, {site['max']:.3g}], clamp {site['clamp']:.4g}"
            )
    reached = {
        t: {site: o["beyond_clamp"] > 0 for site, o in r["trained"].items()}
        for t, r in ranges.items()
    }
    sites = [
        {"task": t, "condition": c, "site": site,
         **{k: o[k] for k in ("min", "max", "clamp", "values", "beyond_clamp",
                              "max_abs_over_clamp", "share_beyond_clamp")}}
        for t, conds in ranges.items() for c, by_site in conds.items()
        for site, o in by_site.items()
    ]  # fmt: skip
    return {
        "forms": list(FORMS),
        "minimax_fitter": fitters["minimax"],
        "minimax_sollya_version": _sollya_version(fitters["minimax"]),
        "fitters": fitters,
        "programs": {
            fn: {f: describe_program(specs[f][fn]) for f in FITTED} for fn in ABLATION_FORMS
        },
        "dtype": sorted(set(dtypes.values())),
        "dtypes": dtypes,
        "precision": sorted({getattr(m, "precision", "float32") for m in models.values()}),
        "swapped": "every activation the model calls (its task's site and, in b2 and b3, the "
        "SiLU MLP)",
        "evaluation": (
            "programs in float32 as polyspec.replay(fma=False) (generic order, each multiply and "
            "add rounded, asymptote beyond the clamp) on torch tensors, inputs widened to float32 "
            "and the result narrowed to the model's dtype; attention softmax and B4's router: "
            "PyTorch's"
        ),
        "reaches": reaches,
        "stress_rule": (
            "each site's input multiplied by the factor that takes its largest magnitude (native,"
            " as trained) to the reach times the clamp (SiLU, GELU and SwiGLU outputs divided by "
            "it), native and programs alike"
        ),
        "stretches": stretch,
        "rows": rows,
        "ranges": ranges,
        "sites": sites,  # the same, flat: one entry per task, condition and site
        "summary": summarize(rows, sites),
        "task_sites": {t: TASK_SITES[t] for t in models},
        "reaches_clamp": reached,
        "fit_seconds": fit_s,
        "wall_seconds": time.perf_counter() - t0,
        "paper": {"source": PAPER_TABLE6_SOURCE, "table6": PAPER_TABLE6},
    }
