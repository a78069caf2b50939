"""The language-model protocols' results drawn and told (``python -m experiments llm``,
notebook 11), from the JSON they write (``experiments.llm_protocols``), beside the source
paper's figures (``llm_settings.PAPER_*``). Free of torch; matplotlib is imported when a
figure is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .llm_settings import PAPER_TABLE4, PAPER_TABLE5, PAPER_TABLE6, PAPER_TABLE7
from .records import save_png

MEASURES = (("final_train_loss_smoothed", "smoothed train loss"), ("final_val_loss", "val loss"))


def _figure(nrows: int, ncols: int, size):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=110)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _smooth(values: Sequence[float], half_life: float) -> list[float]:
    decay = 0.5 ** (1.0 / max(half_life, 1e-12))
    out, num, den = [], 0.0, 0.0
    for v in values:
        num, den = num * decay + v, den * decay + 1.0
        out.append(num / den)
    return out


def plot_seed_curves(result: dict, path: str | Path | None = None):
    """Seed protocol: per task the training loss (thin: per step; thick: smoothed) and the
    validation loss (markers) of both arms, and the smoothed difference below."""
    runs = result["runs"]
    tasks = list(dict.fromkeys(r["task"] for r in runs))
    fig, axes = _figure(2, len(tasks), (3.2 * len(tasks), 6.0))
    for j, task in enumerate(tasks):
        ax, ax_d = axes[0][j], axes[1][j]
        rs = [r for r in runs if r["task"] == task]
        smooth = {}
        for i, r in enumerate(rs):
            c = f"C{i}"
            steps = range(1, len(r["train_loss"]) + 1)
            smooth[r["arm"]] = _smooth(r["train_loss"], r["smoothing_half_life_steps"])
            ax.plot(steps, r["train_loss"], color=c, lw=0.4, alpha=0.5)
            ax.plot(steps, smooth[r["arm"]], color=c, lw=1.5, label=f"{r['arm']} train")
            ax.plot([v["step"] for v in r["val"]], [v["loss"] for v in r["val"]], "o--",
                    color=c, ms=3, lw=0.8, label=f"{r['arm']} val")  # fmt: skip
        ax.set(title=task, xlabel="step", ylabel="cross-entropy (nats/char)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
        names = list(smooth)
        if len(names) >= 2:
            d = [b - a for a, b in zip(smooth[names[0]], smooth[names[1]], strict=True)]
            ax_d.plot(range(1, len(d) + 1), d, color="C3")
            ax_d.axhline(0, color="k", lw=0.5)
            ax_d.set(xlabel="step", ylabel=f"{names[1]} - {names[0]}", title="smoothed train loss")
            ax_d.grid(alpha=0.3)
    return save_png(fig, path)


def plot_noise(result: dict, path: str | Path | None = None):
    """Noise protocol, per measure: top, the paired differences per task (grey: per seed;
    red: mean with its interval) on their own scale; bottom (log scale), the interval's
    farthest end from 0 beside the native arm's seed-to-seed sd."""
    s = result["summary"]
    tasks = list(s)
    fig, axes = _figure(2, len(MEASURES), (6.0 * len(MEASURES), 7.0))
    for j, (key, what) in enumerate(MEASURES):
        ax, ax_s = axes[0][j], axes[1][j]
        reach, sds = [], []
        for i, task in enumerate(tasks):
            m = s[task][key]
            name, p = next(iter(m["paired"].items()))
            ax.plot([i] * len(p["values"]), p["values"], "o", color="0.6", ms=3)
            ax.errorbar([i], [p["mean"]], fmt="s", color="C3", capsize=4,
                        yerr=[[p["mean"] - p["ci_low"]], [p["ci_high"] - p["mean"]]],
                        label=f"{name}: mean, {p['confidence']:.0%} t interval"
                        if i == 0 else None)  # fmt: skip
            reach.append(max(abs(p["ci_low"]), abs(p["ci_high"])))
            sds.append(next(iter(m["spread"].values()))["sd"])
        ax.axhline(0, color="k", lw=0.5)
        ax.set_xticks(range(len(tasks)), tasks)
        ax.set(ylabel=f"paired difference, final {what}", title=what)
        ax.legend(fontsize=7)
        xs = range(len(tasks))
        ax_s.bar([x - 0.2 for x in xs], reach, 0.4, color="C3", label="interval's farthest end")
        ax_s.bar([x + 0.2 for x in xs], sds, 0.4, color="C0", label="native seed-to-seed sd")
        ax_s.set_yscale("log")
        ax_s.set_xticks(range(len(tasks)), tasks)
        ax_s.set(ylabel=f"final {what}", title="the difference against the noise")
        ax_s.legend(fontsize=7)
        for a in (ax, ax_s):
            a.grid(alpha=0.3)
    return save_png(fig, path)


def plot_throughput(rows: Sequence[dict], path: str | Path | None = None):
    """Throughput protocol: per task the speedups (native / polynomial time) of forward,
    backward and step here, beside the paper's Table 5 (hatched); and the activation's share
    of a step in each arm."""
    fig, axes = _figure(1, 2, (12.0, 4.0))
    ax, ax_s = axes[0]
    tasks = [r["task"] for r in rows]
    width = 0.13
    for k, part in enumerate(("forward", "backward", "step")):
        xs = [i + (k - 1) * 2 * width for i in range(len(tasks))]
        ax.bar([x - width / 2 for x in xs], [r.get("speedup", {}).get(part, 0) for r in rows],
               width, color=f"C{k}", label=f"{part} (here)")  # fmt: skip
        ax.bar([x + width / 2 for x in xs],
               [PAPER_TABLE5.get(t, {}).get(part, 0) for t in tasks], width, color=f"C{k}",
               alpha=0.4, hatch="//", label=f"{part} (paper, GB200)")  # fmt: skip
    ax.axhline(1, color="k", lw=0.6)
    ax.set_xticks(range(len(tasks)), tasks)
    ax.set(ylabel="native time / polynomial time", title="speedup (>1 favours the polynomial)")
    ax.legend(fontsize=6, ncol=2)
    names = list(rows[0]["arms"]) if rows else []
    for k, name in enumerate(names):
        ax_s.bar([i + (k - 0.5) * 0.35 for i in range(len(tasks))],
                 [100 * (r["arms"][name]["activation_share"] or 0) for r in rows], 0.35,
                 label=name)  # fmt: skip
    ax_s.set_xticks(range(len(tasks)), tasks)
    ax_s.set(ylabel="% of a profiled training step", title="the activation's share")
    ax_s.legend(fontsize=7)
    for a in (ax, ax_s):
        a.grid(alpha=0.3, axis="y")
    return save_png(fig, path)


def plot_swap(rows: Sequence[dict], path: str | Path | None = None):
    """Swap protocol: the validation-loss change per task for each swapped-in form."""
    fig, axes = _figure(1, 1, (7.0, 3.8))
    ax = axes[0][0]
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    forms = list(dict.fromkeys(r["form"] for r in rows))[1:]
    for k, form in enumerate(forms):
        vals = [next(r["delta_val_loss"] for r in rows if r["task"] == t and r["form"] == form)
                for t in tasks]  # fmt: skip
        ax.bar([i + (k - (len(forms) - 1) / 2) * 0.3 for i in range(len(tasks))], vals, 0.3,
               label=form)  # fmt: skip
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks(range(len(tasks)), tasks)
    ax.set(ylabel="val loss - native val loss", title="the native checkpoint, functions swapped")
    ax.set_yscale("symlog", linthresh=1e-5)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    return save_png(fig, path)


# ---------------------------------------------------------------- text


def seed_text(result: dict) -> str:
    lines = ["seed protocol: final smoothed train loss and val loss, polynomial - native "
             "(paper's Table 7 change beside):"]  # fmt: skip
    for task, d in result["differences"].items():
        paper = PAPER_TABLE7.get(task)
        lines.append(
            f"  {task:4s} train {d['train_loss_change']:+.2e}  val {d['val_loss_change']:+.2e}"
            + (f"  | paper {paper['change']:+.4f}" if paper else "  | paper: no such task")
        )
    return "\n".join(lines)


def noise_text(summary: dict) -> str:
    lines = ["noise protocol: paired differences (95 % t interval) and native seed-to-seed sd:"]
    for task, m in summary.items():
        for key, what in MEASURES:
            sd = next(iter(m[key]["spread"].values()))["sd"]
            for name, p in m[key]["paired"].items():
                lines.append(
                    f"  {task:4s} {what:19s} {name}: {p['mean']:+.2e} "
                    f"[{p['ci_low']:+.2e}, {p['ci_high']:+.2e}]  native sd {sd:.2e}  "
                    f"(+{p['positive']} ={p['zero']} -{p['negative']})"
                )
    return "\n".join(lines)


def swap_text(rows: Sequence[dict]) -> str:
    lines = ["swap protocol: the native checkpoint with the functions swapped in:"]
    for r in rows:
        lines.append(
            f"  {r['task']:4s} {r['form']:17s} val loss {r['val_loss']:.5f}  change "
            f"{r['delta_val_loss']:+.2e}  max |logit diff| {r['max_abs_logit_diff']:.2e}  "
            f"changed predictions {r['changed_predictions']}/{r['predictions']}"
        )
    return "\n".join(lines)


def throughput_text(rows: Sequence[dict]) -> str:
    lines = ["throughput protocol: speedup native/polynomial (paper Table 5 beside), "
             "activation share native/polynomial:"]  # fmt: skip
    for r in rows:
        sp, p5, p4 = r["speedup"], PAPER_TABLE5.get(r["task"]), PAPER_TABLE4.get(r["task"])
        sh = [r["arms"][n]["activation_share"] for n in r["arms"]]
        paper = (
            f"  | paper step {p5['step']:.3f}, throughput {p5['throughput']:.3f}, component "
            f"fwd {p4['forward']:.3f} bwd {p4['backward']:.3f}"
            if p5
            else "  | paper: none (control)"
        )
        lines.append(
            f"  {r['task']:4s} fwd {sp['forward']:.3f} bwd {sp['backward']:.3f} step "
            f"{sp['step']:.3f} tokens/s ratio {r['throughput_ratio']:.3f}  share "
            + "/".join(f"{100 * s:.1f}%" for s in sh)
            + paper
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- the Table 6 ablation


def _paper6(task: str, form: str) -> str:
    """The paper's Table 6 rows our ``task`` stands for, at ``form`` (or "")."""
    out = []
    for p in PAPER_TABLE6:
        r = p["rows"].get(form) if p["task"] == task else None
        if r:
            a, b = r["perplexity"]
            out.append(
                f"{p['model']} ({p['operator']}): {a:,.3f} → {b:,.3f}, "
                f"{r['accuracy_change_pp']:+.2f} pp"
            )
    return "; ".join(out)


def _ablation_rows(result: dict, condition: str) -> list[dict]:
    return [r for r in result["rows"] if r["condition"] == condition]


def ablation_text(result: dict) -> str:
    """The ablation as trained, per task and form, and whether the inputs reached a clamp."""
    lines = [f"ablation (Table 6): minimax by {result['minimax_fitter']}; dtype "
             f"{', '.join(result['dtype'])}"]  # fmt: skip
    for r in _ablation_rows(result, "trained"):
        lines.append(
            f"  {r['task']:4s} {r['form']:11s} val loss {r['val_loss']:.5f}  perplexity "
            f"{r['perplexity']:.4f}  accuracy {r['accuracy']:.4f}  change "
            f"{r['delta_val_loss']:+.2e} / {100 * r['accuracy_change']:+.2f} pp"
        )
    for task, sites in result["ranges"].items():
        for site, o in sites["trained"].items():
            lines.append(
                f"  {task:4s} {site:7s} inputs [{o['min']:.4g}, {o['max']:.4g}], clamp "
                f"{o['clamp']:.5g}: {o['beyond_clamp']} of {o['values']:,} beyond"
            )
    return "\n".join(lines)


def render_table6(result: dict) -> str:
    """Markdown: the ablation as trained beside the paper's Table 6, the stress test, and the
    programs swapped in."""
    ranges = result["ranges"]
    lines = [
        "| task | form | val loss | perplexity (per char) | next-char accuracy | accuracy change"
        " | inputs reached / clamp | paper Table 6: perplexity native → variant, accuracy |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for r in _ablation_rows(result, "trained"):
        site = result["task_sites"][r["task"]]
        o = ranges[r["task"]]["trained"][site]
        reach = (
            f"{site}: [{o['min']:.3g}, {o['max']:.3g}] / {o['clamp']:.4g}"
            if r["form"] == "native"
            else ""
        )
        change = "" if r["form"] == "native" else f"{100 * r['accuracy_change']:+.2f} pp"
        lines.append(
            f"| {r['task']} | {r['form']} | {r['val_loss']:.4f} | {r['perplexity']:.4f} "
            f"| {r['accuracy']:.4f} | {change} | {reach} | {_paper6(r['task'], r['form'])} |"
        )
    conds = [c for c in dict.fromkeys(r["condition"] for r in result["rows"]) if c != "trained"]
    if conds:
        lines += [
            "",
            "| task | inputs stretched | share beyond the clamp | native val loss "
            "| change: endpoint-ls | change: minimax | changed predictions (LS / minimax) |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for c in conds:
            rs = {(r["task"], r["form"]): r for r in _ablation_rows(result, c)}
            for task in dict.fromkeys(t for t, _ in rs):
                site = result["task_sites"][task]
                o = ranges[task][c][site]
                n, ls, mm = (rs[task, f] for f in ("native", "endpoint-ls", "minimax"))
                lines.append(
                    f"| {task} | {site}: to {o['max_abs_over_clamp']:.3g} × clamp "
                    f"| {100 * o['share_beyond_clamp']:.1f} % | {n['val_loss']:.4f} "
                    f"| {ls['delta_val_loss']:+.2e} | {mm['delta_val_loss']:+.2e} "
                    f"| {ls['changed_predictions']} / {mm['changed_predictions']} |"
                )
    lines += [
        "",
        "| function | D4 form | L_i | L_c | max error: endpoint-ls | max error: minimax |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for fn, p in result["programs"].items():
        ls, mm = p["endpoint-ls"], p["minimax"]
        lines.append(
            f"| {fn} | {ls['reduced_form']} "
            f"| {ls['fit_interval']:g} | {ls['clamp']:g} | {ls['max_abs_error']:.2e} "
            f"| {mm['max_abs_error']:.2e} |"
        )
    return "\n".join(lines)


def plot_ablation(result: dict, path: str | Path | None = None):
    """The validation-loss change against native per task, as trained and under each
    stretch, one panel per fitted form."""
    forms = [f for f in result["forms"] if f != "native"]
    conds = list(dict.fromkeys(r["condition"] for r in result["rows"]))
    tasks = list(dict.fromkeys(r["task"] for r in result["rows"]))
    fig, axes = _figure(1, len(forms), (5.0 * len(forms), 3.8))
    for j, form in enumerate(forms):
        ax = axes[0][j]
        for k, c in enumerate(conds):
            vals = [next(r["delta_val_loss"] for r in result["rows"]
                         if r["task"] == t and r["form"] == form and r["condition"] == c)
                    for t in tasks]  # fmt: skip
            ax.bar([i + (k - (len(conds) - 1) / 2) * 0.25 for i in range(len(tasks))], vals,
                   0.25, label=c)  # fmt: skip
        ax.axhline(0, color="k", lw=0.5)
        ax.set_xticks(range(len(tasks)), tasks)
        ax.set(ylabel="val loss - native val loss", title=f"{form} (D4, bfloat16)")
        ax.set_yscale("symlog", linthresh=1e-5)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=7, title="inputs", title_fontsize=7)
    return save_png(fig, path)


# ---------------------------------------------------------------- the bfloat16 study

BF16_TIERS = {"accurate": "polynomial", "paper": "polynomial-paper"}  # tier -> arm


def bf16_table(summary: dict, swap: Sequence[dict] = ()) -> list[dict]:
    """Per task and tier (``BF16_TIERS``): the paired change (tier minus native of the same
    seed) of the smoothed training loss and of the validation loss with its interval, the
    native seed-to-seed sd, whether the interval excludes 0 (``outside_noise``), the swap's
    validation change and the paper's Table 7 change (None for the GELU control)."""
    swapped = {(r["task"], r["form"]): r["delta_val_loss"] for r in swap}
    rows = []
    for task, m in summary.items():
        for tier, arm in BF16_TIERS.items():
            row = {"task": task, "tier": tier, "arm": arm, "seeds": len(m["seeds"])}
            for key, short in (("final_train_loss_smoothed", "train"), ("final_val_loss", "val")):
                p = m[key]["paired"][f"{arm}-native"]
                row[short] = {
                    **{k: p[k] for k in ("mean", "ci_low", "ci_high", "values")},
                    "native_sd": m[key]["spread"]["native"]["sd"],
                    "outside_noise": not p["contains_zero"],
                }
            row["swap_delta_val_loss"] = swapped.get((task, arm))
            row["paper_table7_change"] = PAPER_TABLE7.get(task, {}).get("change")
            rows.append(row)
    return rows


def _change(m: dict) -> str:
    return f"{m['mean']:+.1e} [{m['ci_low']:+.1e}, {m['ci_high']:+.1e}]"


def bf16_text(result: dict) -> str:
    """One line per task and tier: both changes, and which lie outside the seed noise."""
    lines = [f"bfloat16 study: {result['table'][0]['seeds']} seeds, tier minus native [95 %]"]
    for r in result["table"]:
        outside = [k for k in ("train", "val") if r[k]["outside_noise"]]
        lines.append(
            f"  {r['task']:4s} {r['tier']:8s} smoothed train {_change(r['train'])}  val "
            f"{_change(r['val'])}  outside the noise: {', '.join(outside) or 'neither'}"
        )
    return "\n".join(lines)


def render_table7_bf16(result: dict) -> str:
    """Markdown: the bfloat16 study per task and tier beside the paper's Table 7 change."""
    lines = [
        "| task | tier | smoothed train change [95 %] | outside noise | val change [95 %] "
        "| outside noise | native val sd | swap: val change | paper Table 7: train change |",
        "|---|---|---:|---|---:|---|---:|---:|---:|",
    ]
    for r in result["table"]:
        paper = r["paper_table7_change"]
        swap = r["swap_delta_val_loss"]
        lines.append(
            f"| {r['task']} | {r['tier']} | {_change(r['train'])} "
            f"| {'yes' if r['train']['outside_noise'] else 'no'} | {_change(r['val'])} "
            f"| {'yes' if r['val']['outside_noise'] else 'no'} | {r['val']['native_sd']:.1e} "
            f"| {'' if swap is None else format(swap, '+.1e')} "
            f"| {'(control)' if paper is None else format(paper, '+.4f')} |"
        )
    return "\n".join(lines)


def bf16_summary(table: Sequence[dict]) -> dict:
    """For the prose: per tier and measure the tasks whose change lies outside the seed noise
    ("none" if none; a text, so that the paper can print it) and the largest |mean change|."""
    out = {}
    for tier in BF16_TIERS:
        rows = [r for r in table if r["tier"] == tier]
        out[tier] = {}
        for short in ("train", "val"):
            outside = [r["task"] for r in rows if r[short]["outside_noise"]]
            out[tier][f"{short}_outside_noise"] = ", ".join(outside) or "none"
            out[tier][f"{short}_outside_noise_count"] = len(outside)
            out[tier][f"{short}_max_abs_change"] = max(abs(r[short]["mean"]) for r in rows)
        out[tier]["tasks"] = len(rows)
    return out
