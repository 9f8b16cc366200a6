"""The planted protocol's HTML page: the grid, the flags, pass rate per condition with Wilson intervals as
a table and a plot, the Memory Utility Index, injection confirmation, lane deltas and the digests. One
self-contained file (the plot embedded), like the coding report."""

import base64

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from runner.protocols.planted.analysis import SPLIT_NOTE, split_table, table  # noqa: E402
from runner.results.plots import png  # noqa: E402
from runner.results.page import digests_table, escape, html_table, protocol_page_head  # noqa: E402


def pass_rate_plot(summary: list[dict]) -> bytes:
    """One panel per agent x arm: pass rate by condition with its Wilson 95 % interval."""
    fig, axes = plt.subplots(1, max(1, len(summary)), figsize=(4.2 * max(1, len(summary)), 3.4), squeeze=False)
    for ax, s in zip(axes[0], summary):
        conditions = list(s["conditions"])
        rates = [s["conditions"][c]["rate"] or 0 for c in conditions]
        # clamped: a bound can sit a rounding error past its rate (statsmodels gives 0/18 a low of 1.4e-17)
        low = [max(0.0, r - (s["conditions"][c]["wilson_low"] or 0)) for r, c in zip(rates, conditions)]
        high = [max(0.0, (s["conditions"][c]["wilson_high"] or 0) - r) for r, c in zip(rates, conditions)]
        colours = ["#2b7bba" if c == "on" else "#999999" if c == "off" else "#e08a2c" for c in conditions]
        ax.bar(range(len(conditions)), rates, yerr=[low, high], color=colours, capsize=4)
        ax.set_xticks(range(len(conditions)), conditions, rotation=30, ha="right")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("pass rate (Wilson 95 %)")
        mui = s["mui"]["mui"]
        ax.set_title(f"{s['agent']} x {s['arm']}\nMUI {'-' if mui is None else f'{mui:.2f}'}"
                     + (" - FLAGGED" if s["flags"] else ""), fontsize=10, color="#b00020" if s["flags"] else "black")
    return png(fig)


def render(run_id: str, lock: dict, summary: list[dict]) -> str:
    columns, lines = table(summary)
    flags = [f"<li><b>{escape(s['agent'])} x {escape(s['arm'])}</b>: {escape(f)}</li>" for s in summary for f in s["flags"]]
    png = base64.b64encode(pass_rate_plot(summary)).decode()
    return "".join([
        protocol_page_head("planted", "planted-memory", run_id, lock, f"seeds {lock.get('grid', {}).get('seeds', '?')}", flags),
        "<h2>Pass rate, Memory Utility Index, injection</h2>"
        "<p>MUI v2: an on run earns a credit only when injection was confirmed (the arm's own log named a planted id "
        "inside the session), it passed and off runs of the same task and trial exist: a success lift when a paired off "
        "run failed, else a cost saving when one used at least 1.5x its tokens (fresh input + output, as SMRITI counts "
        "them). Lane delta: SR(on) - SR(ablate:lane), all included; ablate:all - off is a harness check, expected near 0. Echo (the artifact repeats 8 words of a memory) is a "
        "reference number only.</p>",
        html_table(columns, lines, table_id="planted"),
        f"<figure><img alt=\"pass rate by condition per agent x arm, Wilson 95 % intervals\" "
        f"src=\"data:image/png;base64,{png}\"></figure>",
        "<h2>Per split, as SMRITI's scorer</h2>", html_table(*split_table(summary), table_id="splits"),
        f"<p>{escape(SPLIT_NOTE)}</p>",
        "<h2>Digests</h2>" + digests_table(lock), "</body></html>"])
