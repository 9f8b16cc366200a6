"""The report's figures, drawn with matplotlib (Agg) and returned as PNG bytes for embedding.

Every function returns a figure even for an empty sample: the page then says why a plot is
blank instead of silently missing it.
"""

import io
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # no display in containers, CI or over ssh

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402

from runner.results.analysis import BASELINE, FLOOR, Analysis  # noqa: E402

DPI = 110
ITT_COLOUR, PP_COLOUR, NOISE_COLOUR, DIAGNOSTIC_COLOUR = "#888888", "#1f5fa8", "#e8e8e8", "#b35806"
plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False, "axes.spines.right": False})


@dataclass(frozen=True)
class Plot:
    id: str
    title: str
    alt: str
    png: bytes


def png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _empty(message: str) -> bytes:
    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=11, color="#555555")
    return png(fig)


def axes_order(a: Analysis) -> tuple[list[str], list[str], list[str]]:
    return a.agents, a.arms, a.conditions


def success_plot(a: Analysis) -> Plot:
    agents, arms, conditions = axes_order(a)
    by_key = {(g.agent, g.arm, g.condition): g for g in a.groups}
    fig, axes = plt.subplots(len(agents), len(conditions), squeeze=False, sharex=True, sharey=True,
                             figsize=(1.1 + 2.3 * len(conditions), 0.6 + (0.32 * len(arms) + 0.6) * len(agents)))
    y = np.arange(len(arms))
    for i, agent in enumerate(agents):
        for j, condition in enumerate(conditions):
            ax = axes[i][j]
            groups = [by_key.get((agent, arm, condition)) for arm in arms]
            pp = np.array([g.pp.rate if g and g.pp.rate is not None else np.nan for g in groups])
            lo = np.array([g.pp.low if g and g.pp.low is not None else np.nan for g in groups])
            hi = np.array([g.pp.high if g and g.pp.high is not None else np.nan for g in groups])
            itt = np.array([g.itt.rate if g and g.itt.rate is not None else np.nan for g in groups])
            ax.barh(y, np.nan_to_num(pp), color=PP_COLOUR, alpha=0.75, height=0.6)
            # clip: a rate of exactly 0 or 1 can sit a rounding error outside its own interval
            ax.errorbar(pp, y, xerr=[np.clip(pp - lo, 0, None), np.clip(hi - pp, 0, None)], fmt="none", ecolor="#222222", capsize=2, lw=0.9)
            ax.plot(itt, y, "D", color=ITT_COLOUR, ms=4, label="ITT")
            ax.set_xlim(0, 1.02)
            ax.set_yticks(y, arms)
            ax.grid(axis="x", color="#dddddd", lw=0.6)
            ax.set_axisbelow(True)
            ax.set_title(condition if len(agents) == 1 else f"{agent} · {condition}")
            if i == len(agents) - 1:
                ax.set_xlabel("pass rate")
    axes[0][0].invert_yaxis()  # shared y: once flips every panel, first arm on top
    handles = [plt.Rectangle((0, 0), 1, 1, color=PP_COLOUR, alpha=0.75),
               plt.Line2D([], [], color="#222222", lw=0.9),
               plt.Line2D([], [], marker="D", color=ITT_COLOUR, ls="none", ms=4)]
    fig.legend(handles, ["per-protocol (admitted)", "Wilson 95 %", "intention-to-treat (all cells)"],
               loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout()
    return Plot("success", "Success by arm and condition",
                "Bar chart: per-protocol pass rate per arm with Wilson 95 % intervals, intention-to-treat as diamonds, "
                "one panel per condition", png(fig))


def forest_plot(a: Analysis) -> Plot:
    primary = {(c.name, c.agent, c.condition) for c in a.contrasts}
    # recall - claude_md is both a ranked contrast and the "natural lift" diagnostic: draw it once
    rows = a.contrasts + [c for c in a.diagnostics if c.baseline == BASELINE and (c.name, c.agent, c.condition) not in primary]
    title, alt = f"Paired deltas against {BASELINE}", f"Forest plot of per-protocol pass-rate deltas against {BASELINE} with task-cluster bootstrap 95 % intervals"
    if not rows:
        reason = "; ".join(o.reason for o in a.omitted) or "no contrast could be formed"
        return Plot("forest", title, alt, _empty(f"no contrast against {BASELINE}: {reason}"))
    agents, arms, conditions = axes_order(a)
    lines = sorted({(c.condition, c.arm, c.kind) for c in rows}, key=lambda r: (conditions.index(r[0]), arms.index(r[1])))
    index = {(condition, arm): k for k, (condition, arm, _) in enumerate(lines)}
    fig, axes = plt.subplots(1, len(agents), squeeze=False, sharey=True,
                             figsize=(2.2 + 3.6 * len(agents), 0.9 + 0.22 * len(lines)))
    for i, agent in enumerate(agents):
        ax = axes[0][i]
        ax.axvspan(-a.min_effect, a.min_effect, color=NOISE_COLOUR)
        ax.axvline(0, color="#444444", lw=0.8)
        for c in (c for c in rows if c.agent == agent):
            k, s = index[(c.condition, c.arm)], c.pp
            colour = DIAGNOSTIC_COLOUR if c.kind == "diagnostic" else PP_COLOUR
            if s.delta is None:
                ax.text(0, k, "no pairs", va="center", ha="center", fontsize=7, color="#888888")
                continue
            if s.low is not None:
                ax.plot([s.low, s.high], [k, k], color=colour, lw=1.4)
            ax.plot(s.delta, k, "o", color=colour, ms=4.5, mfc="white" if s.label == "noise" else colour)
        for k in range(1, len(lines)):  # a faint rule between conditions keeps the long list scannable
            if lines[k][0] != lines[k - 1][0]:
                ax.axhline(k - 0.5, color="#cccccc", lw=0.6)
        ax.set_xlim(-1.05, 1.05)
        ax.set_xlabel(f"pass(arm) − pass({BASELINE})")
        if len(agents) > 1:
            ax.set_title(agent)
    axes[0][0].set_yticks(range(len(lines)), [f"{cond} · {arm}{' (diag.)' if kind == 'diagnostic' else ''}"
                                              for cond, arm, kind in lines])
    axes[0][0].set_ylim(len(lines) - 0.5, -0.5)
    handles = [plt.Rectangle((0, 0), 1, 1, color=NOISE_COLOUR),
               plt.Line2D([], [], marker="o", color=PP_COLOUR, lw=1.4),
               plt.Line2D([], [], marker="o", color=DIAGNOSTIC_COLOUR, lw=1.4),
               plt.Line2D([], [], marker="o", color=PP_COLOUR, mfc="white", ls="none")]
    fig.legend(handles, [f"noise band ±{a.min_effect:.2f}", "ranked arm, 95 % CI", "diagnostic (never ranked)",
                         "below minimum effect"], loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, frameon=False)
    fig.tight_layout()
    return Plot("forest", title, alt, png(fig))


Count = tuple[int, int]  # (numerator, denominator) of one heatmap cell


def _heatmap(a: Analysis, arms: list[str], counts: dict[tuple[str, str, str], Count], panel: str, colour_label: str,
             cmap: str) -> bytes:
    """Arm x condition heatmaps, one panel per agent; a cell without a denominator shows a dash, not a zero."""
    agents, _, conditions = axes_order(a)
    fig, axes = plt.subplots(len(agents), 1, squeeze=False, sharex=True,
                             figsize=(2.4 + 1.25 * len(conditions), (0.5 + 0.32 * len(arms)) * len(agents) + 0.9))
    for i, agent in enumerate(agents):
        ax = axes[i][0]
        grid = np.full((len(arms), len(conditions)), np.nan)
        for r, arm in enumerate(arms):
            for c, condition in enumerate(conditions):
                num, den = counts.get((agent, arm, condition), (0, 0))
                if den:
                    grid[r, c] = num / den
                    ax.text(c, r, f"{num}/{den}", ha="center", va="center", fontsize=8,
                            color="white" if grid[r, c] > 0.5 else "#222222")
                else:
                    ax.text(c, r, "–", ha="center", va="center", fontsize=8, color="#888888")
        image = ax.imshow(grid, cmap=cmap, vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(conditions)), conditions)
        ax.set_yticks(range(len(arms)), arms)
        ax.set_ylabel("arm")
        ax.set_title(f"{agent}: {panel}" if len(agents) > 1 else panel)
        ax.spines[:].set_visible(False)
    axes[-1][0].set_xlabel("condition")
    fig.colorbar(image, ax=[row[0] for row in axes], fraction=0.04, label=colour_label)
    return png(fig)


def detector_damage_plot(a: Analysis) -> Plot:
    title = "Damage detector: damaged / admitted cells by arm and condition"
    alt = ("Heatmap: share of admitted cells the task's damage detector classed as damaged "
           "(the wrong rule applied), per arm and condition")
    counts = {(g.agent, g.arm, g.condition): (g.damage.passed, g.damage.n) for g in a.groups}
    if not any(n for _, n in counts.values()):
        return Plot("damage", title, alt, _empty("no admitted cell was scored: the damage detector's rate is undefined"))
    return Plot("damage", title, alt, _heatmap(a, a.arms, counts, "damage detector: damaged / admitted cells",
                                               "damage detector rate (damaged / admitted)", "Reds"))


def harm_plot(a: Analysis) -> Plot:
    title = f"Harm against {FLOOR}: pairs where {FLOOR} solved and the arm failed"
    alt = (f"Heatmap: share of admitted (task, seed) pairs where {FLOOR} solved and the arm failed, per arm and "
           f"condition; zero wherever {FLOOR} never solves, whatever the damage detector saw")
    if not a.harm:
        return Plot("harm", title, alt,
                    _empty(f"no {FLOOR} arm (or no admitted pair with it): harm against {FLOOR} is undefined"))
    arms = [x for x in a.arms if any(h.arm == x for h in a.harm)]
    counts = {(h.agent, h.arm, h.condition): (h.harmed, h.pairs) for h in a.harm}
    return Plot("harm", title, alt, _heatmap(a, arms, counts, f"harm against {FLOOR}: harmed / admitted pairs",
                                             f"harm against {FLOOR} (harmed / pairs)", "Purples"))


def discard_plot(a: Analysis) -> Plot:
    title = "Discards by reason"
    alt = "Stacked bars: discarded cells per arm by discard reason"
    agents, arms, _ = axes_order(a)
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for g in a.groups:
        bucket = counts.setdefault((g.agent, g.arm), {})
        for reason, n in g.discards.items():
            bucket[reason] = bucket.get(reason, 0) + n
    reasons = sorted({r for b in counts.values() for r in b})
    total_cells = sum(g.cells for g in a.groups)
    if not reasons:
        return Plot("discards", title, alt, _empty(f"no cell discarded: all {total_cells} finished cells admitted"))
    keys = [(agent, arm) for agent in agents for arm in arms if (agent, arm) in counts]
    fig, ax = plt.subplots(figsize=(7.5, 1.0 + 0.3 * len(keys)))
    left = np.zeros(len(keys))
    colours = plt.get_cmap("tab10")
    for k, reason in enumerate(reasons):
        values = np.array([counts[key].get(reason, 0) for key in keys], dtype=float)
        ax.barh(range(len(keys)), values, left=left, color=colours(k % 10), label=reason, height=0.6)
        left += values
    ax.set_yticks(range(len(keys)), [arm if len(agents) == 1 else f"{agent} · {arm}" for agent, arm in keys])
    ax.invert_yaxis()
    ax.set_xlabel("discarded cells")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(3, len(reasons)), frameon=False, fontsize=8)
    return Plot("discards", title, alt, png(fig))


def cost_plot(a: Analysis) -> Plot:
    title = "Cost against success"
    observed = any(c.tokens_total is not None for c in a.costs)
    xlabel = "mean session tokens per cell" if observed else "mean wall seconds per cell (tokens not observed)"
    alt = f"Scatter: intention-to-treat pass rate per arm against {xlabel}"
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    markers = "osD^v"
    agents = list(dict.fromkeys(c.agent for c in a.costs))
    for i, agent in enumerate(agents):
        rows = [c for c in a.costs if c.agent == agent and (c.tokens_total is not None or not observed)]
        x = [(c.tokens_total / c.cells) if observed else c.wall_seconds_mean for c in rows]
        y = [c.passed / c.cells for c in rows]
        ax.scatter(x, y, marker=markers[i % len(markers)], s=36, color=PP_COLOUR, alpha=0.8, label=agent)
        span = (max(x) - min(x)) or 1.0 if x else 1.0
        labels: dict[tuple, list[str]] = {}  # arms on (almost) the same point share one label instead of overprinting
        for c, xi, yi in zip(rows, x, y):
            labels.setdefault((round(xi / span * 40), round(yi * 40)), []).append((xi, yi, c.arm))
        for group in labels.values():
            ax.annotate(", ".join(arm for _, _, arm in group), group[0][:2], textcoords="offset points", xytext=(5, 4), fontsize=8)
    hidden = [f"{c.arm}" + (f" ({c.agent})" if len(agents) > 1 else "") for c in a.costs if observed and c.tokens_total is None]
    if hidden:  # say which arms are missing rather than let them vanish from the plot
        ax.text(0.0, -0.2, "not shown, tokens not observed: " + ", ".join(hidden), transform=ax.transAxes, fontsize=8,
                color="#555555", wrap=True)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("pass rate (ITT, all conditions)")
    ax.set_ylim(-0.03, 1.05)
    ax.grid(color="#eeeeee", lw=0.6)
    if len(agents) > 1:
        ax.legend(frameon=False)
    return Plot("cost", title, alt, png(fig))


def all_plots(a: Analysis) -> list[Plot]:
    return [success_plot(a), forest_plot(a), detector_damage_plot(a), harm_plot(a), discard_plot(a), cost_plot(a)]
