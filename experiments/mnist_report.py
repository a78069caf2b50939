"""The MNIST results drawn and told (``python -m experiments mnist``, notebook 06): the figures
of the seed, swap and noise protocols and the lines the command prints, from the JSON the
protocols write (``experiments.mnist``). Free of torch; matplotlib is imported when a figure
is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .records import save_png

# ---------------------------------------------------------------- plots


def _figure(ncols: int, size=(11.0, 4.0)):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=110)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, ncols)


def _by_activation(rows: Sequence[dict], seed: int | None = None) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        if seed is None or r["seed"] == seed:
            out.setdefault(r["activation"], []).append(r)
    return out


def plot_curves(result: dict, path: str | Path | None = None, seed: int | None = None):
    """Accuracy (train dashed, test solid) and train/test loss per epoch for each activation
    of a seed- or noise-protocol result (``seed``: only that seed's runs; for the noise
    protocol the mean over seeds is drawn). Returns the Figure."""
    fig, (ax_acc, ax_loss) = _figure(2)
    groups: dict[str, dict[int, list[dict]]] = {}
    for r in result["rows"]:
        if seed is None or r["seed"] == seed:
            groups.setdefault(r["activation"], {}).setdefault(r["epoch"], []).append(r)
    for i, (act, by_epoch) in enumerate(groups.items()):
        epochs = sorted(by_epoch)

        def mean(key, by_epoch=by_epoch, epochs=epochs):
            return [sum(r[key] for r in by_epoch[e]) / len(by_epoch[e]) for e in epochs]

        color = f"C{i}"
        ax_acc.plot(epochs, mean("train_acc"), "--", color=color, label=f"{act} train")
        ax_acc.plot(epochs, mean("test_acc"), "-", color=color, label=f"{act} test")
        ax_loss.plot(epochs, mean("train_loss"), "--", color=color, label=f"{act} train")
        ax_loss.plot(epochs, mean("test_loss"), "-", color=color, label=f"{act} test")
    n_seeds = len({r["seed"] for r in result["rows"] if seed is None or r["seed"] == seed})
    what = "" if n_seeds == 1 else f" (mean over {n_seeds} seeds)"
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title=f"accuracy{what}")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy", yscale="log", title=f"loss{what}")
    for ax in (ax_acc, ax_loss):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return save_png(fig, path)


def plot_weight_diff(result: dict, path: str | Path | None = None):
    """Seed protocol: max |weight difference| between the paired runs after each epoch, and
    the test-accuracy difference (turbo - exact)."""
    fig, (ax_w, ax_d) = _figure(2)
    wd = result["weight_diff"]
    ax_w.semilogy([r["epoch"] for r in wd], [r["max_abs"] for r in wd], "o-", ms=3)
    ax_w.set(xlabel="epoch", ylabel="max |w_turbo - w_exact|", title="weight difference")
    runs = list(_by_activation(result["rows"]).values())
    if len(runs) >= 2:
        a, b = runs[0], runs[1]
        ax_d.plot(
            [r["epoch"] for r in a],
            [rb["test_acc"] - ra["test_acc"] for ra, rb in zip(a, b, strict=True)],
            "o-",
            ms=3,
            label="test",
        )
        ax_d.plot(
            [r["epoch"] for r in a],
            [rb["train_acc"] - ra["train_acc"] for ra, rb in zip(a, b, strict=True)],
            "s--",
            ms=3,
            label="train",
        )
        ax_d.axhline(0, color="k", lw=0.5)
        ax_d.set(
            xlabel="epoch",
            ylabel=f"{b[0]['activation']} - {a[0]['activation']}",
            title="accuracy difference",
        )
        ax_d.legend(fontsize=7)
    for ax in (ax_w, ax_d):
        ax.grid(alpha=0.3)
    return save_png(fig, path)


def plot_swap(result: dict, path: str | Path | None = None):
    """Swap protocol: test-accuracy change and changed predictions per epoch for each form."""
    fig, (ax_a, ax_p) = _figure(2)
    forms: dict[str, list[dict]] = {}
    for r in result["swap"]:
        forms.setdefault(r["form"], []).append(r)
    for k, (form, rs) in enumerate(list(forms.items())[1:]):
        ep = [r["epoch"] for r in rs]
        style = {"marker": "os^v"[k % 4], "ms": 6 - 1.5 * k, "alpha": 0.8, "label": form}
        ax_a.plot(ep, [r["delta_acc"] for r in rs], "-", **style)
        ax_p.plot(ep, [r["changed_predictions"] for r in rs], "-", **style)
    ref = next(iter(forms), "?")
    ax_a.set(
        xlabel="epoch of the checkpoint",
        ylabel=f"test acc - test acc with {ref}",
        title="accuracy change after the swap",
    )
    ax_p.set(
        xlabel="epoch of the checkpoint",
        ylabel="test predictions that change",
        title="changed predictions",
    )
    for ax in (ax_a, ax_p):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return save_png(fig, path)


def _paired_panel(ax, summary: dict, paired_key: str, spread_key: str, what: str) -> None:
    names = list(summary[paired_key])
    for i, name in enumerate(names):
        p = summary[paired_key][name]
        ax.plot([i] * len(p["values"]), p["values"], "o", color="0.6", ms=4)
        ax.errorbar(
            [i],
            [p["mean"]],
            yerr=[[p["mean"] - p["ci_low"]], [p["ci_high"] - p["mean"]]],
            fmt="s",
            color="C3",
            capsize=5,
            label=f"mean, {p['confidence']:.0%} t interval" if i == 0 else None,
        )
    ref = summary[spread_key].get("exact")
    if ref is not None:
        ax.errorbar([len(names)], [0.0], yerr=[ref["sd"]], fmt="_", color="C0", capsize=5,
                    label="exact: seed-to-seed sd")  # fmt: skip
        names = [*names, "exact spread"]
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set(ylabel=f"difference in final {what}", title=f"paired differences: {what}")
    ax.legend(fontsize=7)


def plot_noise(result: dict, path: str | Path | None = None):
    """Noise protocol: final test accuracy per seed for each activation (lines join a seed's
    runs), and the paired differences of final test accuracy and test loss with their t
    intervals, next to the seed-to-seed spread (+-1 sd) of exact."""
    s = result["summary"]
    fig, (ax_s, ax_d, ax_l) = _figure(3, size=(15.0, 4.2))
    acts = list(s["final_test_acc"])
    for j in range(len(s["seeds"])):
        ax_s.plot([s["final_test_acc"][a]["values"][j] for a in acts], "o-", color="0.6", ms=4,
                  lw=0.7)  # fmt: skip
    ax_s.set_xticks(range(len(acts)), acts)
    ax_s.set(ylabel=f"test accuracy after epoch {s['epoch']}", title="final accuracy per seed")
    _paired_panel(ax_d, s, "paired", "final_test_acc", "test accuracy")
    _paired_panel(ax_l, s, "paired_loss", "final_test_loss", "test loss")
    for ax in (ax_s, ax_d, ax_l):
        ax.grid(alpha=0.3)
    return save_png(fig, path)


# ---------------------------------------------------------------- report text


def noise_text(summary: dict) -> str:
    lines = [
        f"final test accuracy / loss after epoch {summary['epoch']}, seeds {summary['seeds']}:"
    ]
    for a, v in summary["final_test_acc"].items():
        lo = summary["final_test_loss"][a]
        lines.append(
            f"  {a:14s} acc mean {v['mean']:.4f} sd {v['sd']:.4f} "
            f"range {v['min']:.4f}..{v['max']:.4f}"
            f" | loss mean {lo['mean']:.5f} sd {lo['sd']:.5f}"
        )
    for key, what, f in (("paired", "acc ", "+.5f"), ("paired_loss", "loss", "+.2e")):
        for name, p in summary[key].items():
            lines.append(
                f"  paired {what} {name:16s} mean {p['mean']:{f}}  sd {abs(p['sd']):{f[1:]}}  "
                f"{p['confidence']:.0%} CI [{p['ci_low']:{f}}, {p['ci_high']:{f}}]  "
                f"(+{p['positive']} ={p['zero']} -{p['negative']})"
            )
    for kind, m in summary.get("model_differences", {}).items():
        lines.append(
            f"  models {kind:20s} max|dw| mean {m['mean_max_abs_weight_diff']:.2e}"
            f"  ||dw||/||w|| mean {m['mean_rel_weight_distance']:.2e}"
            f"  differing test predictions mean {m['mean_disagreeing_predictions']:.1f}"
            f" max {m['max_disagreeing_predictions']}"
        )
    lines.append(f"  ({summary['interval']})")
    return "\n".join(lines)


def swap_text(rows: Sequence[dict], epoch: int | None = None) -> str:
    epoch = max(r["epoch"] for r in rows) if epoch is None else epoch
    lines = [f"swap protocol, the exact run's weights after epoch {epoch}:"]
    for r in rows:
        if r["epoch"] == epoch:
            lines.append(
                f"  {r['form']:14s} test acc {r['test_acc']:.4f}  change {r['delta_acc']:+.4f}"
                f"  loss change {r['delta_loss']:+.2e}  changed predictions "
                f"{r['changed_predictions']:3d}  max |logit diff| {r['max_abs_logit_diff']:.2e}"
            )
    return "\n".join(lines)
