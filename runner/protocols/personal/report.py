"""The personal protocol's HTML page: FAMA per arm x horizon with bootstrap intervals (table and plot), the
parts of FAMA, per question kind, the search's violations, the published rows beside memgrid's, the judges
and their blind spots, and the digests. One self-contained file (the plot embedded)."""

import base64

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from runner.protocols.personal.analysis import (CONTRACT_NOTE, EVIDENCE_NOTE, SENSITIVITY_NOTE,  # noqa: E402
                                                STORES_NOTE, comparability, contract_table, evidence_table, own_note,
                                                own_table, panel_table, published_own_table, published_table,
                                                reward_note, reward_table, sensitivity_table, stores_table, table, table3,
                                                table3_title)
from runner.protocols.personal.corpus import HORIZONS  # noqa: E402
from runner.protocols.personal.judges import __doc__ as JUDGES_DOC  # noqa: E402
from runner.results.plots import png  # noqa: E402
from runner.results.page import digests_table, escape, html_table, protocol_page_head  # noqa: E402


def fama_plot(summary: list[dict]) -> bytes:
    """FAMA by horizon, one bar group per horizon, one bar per agent x arm, with the 95 % interval over persons."""
    series: dict[str, dict[str, dict]] = {}
    for s in summary:
        series.setdefault(f"{s['agent']} x {s['arm']}", {})[s["horizon"]] = s
    held = {h for by_h in series.values() for h in by_h}  # memgrid's horizons in their order, then a suite's own
    horizons = [h for h in HORIZONS if h in held] + sorted(held - set(HORIZONS))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(horizons) * max(1, len(series)) / 2), 3.6))
    width = 0.8 / max(1, len(series))
    for i, (name, by_h) in enumerate(series.items()):
        xs = [j + i * width for j in range(len(horizons))]
        values = [(by_h.get(h) or {}).get("fama") or 0 for h in horizons]
        low = [v - ((by_h.get(h) or {}).get("fama_low") if (by_h.get(h) or {}).get("fama_low") is not None else v)
               for v, h in zip(values, horizons)]
        high = [((by_h.get(h) or {}).get("fama_high") if (by_h.get(h) or {}).get("fama_high") is not None else v) - v
                for v, h in zip(values, horizons)]
        ax.bar(xs, values, width, yerr=[low, high], capsize=3, label=name)
    ax.set_xticks([j + width * (len(series) - 1) / 2 for j in range(len(horizons))], horizons)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean FAMA (95 % over persons)")
    ax.legend(fontsize=7, loc="upper right")
    return png(fig)


def render(run_id: str, lock: dict, summary: list[dict]) -> str:
    columns, lines = table(summary)
    p_columns, p_lines = published_table(summary)
    t_title, t_note = table3_title(summary)
    own = own_table(summary)
    sensitivity = sensitivity_table(summary)
    figures = published_own_table(summary)
    flags = [f"<li><b>{escape(s['agent'])} x {escape(s['arm'])} ({escape(s['horizon'])})</b>: {escape(f)}</li>"
             for s in summary for f in s["flags"]]
    png = base64.b64encode(fama_plot(summary)).decode()
    rewards = reward_table(summary)
    return "".join([
        protocol_page_head("personal", "personal-memory", run_id, lock, _persons(lock.get("grid", {})), flags),
        "<h2>FAMA per arm and horizon</h2>"
        "<p>Per question: MPA = presence criteria met / Np; FAA = forgetting criteria met / Nf; λ = Nf / (Np + Nf); "
        "FAMA = max(0, MPA − λ(1 − FAA)). A criterion is met when a strict majority of the valid judges agree with "
        "what it expects. The interval resamples persons (2,000 resamples). '95 %': the interval over persons. A column per question "
        "kind: its FAMA ('rem', 'rea', 'rec': Memora's remembering, reasoning and recommending). 'evid': the share of the records "
        "stating the current facts that the search released to the answer. 'viol' (violations): record ids the search "
        "returned that are not the person's records up to the cutoff (dropped, never shown to the answerer).</p>",
        html_table(columns, lines, table_id="personal"),
        f"<figure><img alt=\"mean FAMA by horizon per agent x arm, 95 % bootstrap intervals over persons\" "
        f"src=\"data:image/png;base64,{png}\"></figure>",
        *(["<h2>Reward as the hosted benchmark's card defines it</h2>",
           html_table(*rewards, table_id="reward"), f"<p>{escape(reward_note(summary))}</p>"] if rewards[1] else []),
        f"<h2>{escape(t_title)}</h2>", html_table(*table3(summary), table_id="table3"), f"<p>{escape(t_note)}</p>",
        *(["<h2>Published rows beside memgrid's (remembering, FAMA %)</h2>",
           html_table(p_columns, p_lines, table_id="published"), f"<p>{escape(comparability(summary))}</p>"]
          if p_lines else []),
        *(["<h2>The benchmark's own scores per question kind</h2>", html_table(*own, table_id="own"),
           f"<p>{escape(own_note(summary))}</p>"] if own[1] else []),
        *(["<h2>Published figures beside memgrid's</h2>", html_table(*figures[:2], table_id="published-own"),
           f"<p>{escape(figures[2])}</p>"] if figures[1] else []),
        *(["<h2>Judge sensitivity: the same answers under each published answer prompt</h2>",
           html_table(*sensitivity, table_id="sensitivity"), f"<p>{escape(SENSITIVITY_NOTE)}</p>"]
          if sensitivity[1] else []),
        "<h2>Evidence: what the search returned, and FAMA split by it</h2>",
        html_table(*evidence_table(summary), table_id="evidence"), f"<p>{escape(EVIDENCE_NOTE)}</p>",
        "<h2>Stores</h2>", html_table(*stores_table(summary), table_id="stores"), f"<p>{escape(STORES_NOTE)}</p>",
        *(["<h2>Submissions against the contract</h2>", html_table(*contract_table(summary), table_id="contract"),
           f"<p>{escape(CONTRACT_NOTE)}</p>"] if contract_table(summary)[1] else []),
        "<h2>Judges</h2>" + _panel(summary, lock) + f"<pre>{escape(JUDGES_DOC)}</pre>",
        "<h2>Digests</h2>" + digests_table(lock), "</body></html>"])


def _persons(grid: dict) -> str:
    return f"persons of suite {grid['suite']}" if grid.get("suite") not in (None, "memgrid") else \
        f"persons {grid.get('cases', '?')}"


def _panel(summary: list[dict], lock: dict) -> str:
    judges = lock.get("judges", {})
    if not judges.get("models"):
        return f"<p>Deterministic panel: {escape(', '.join(judges.get('deterministic', [])))}.</p>"
    if judges.get("answer_prompts"):
        prompts = "".join(f"<p>Prompt {escape(name)} (sha256 <code>{escape(p['sha256'])}</code>), from {escape(p['source'])}; "
                          f"its publisher asked {escape(p['publisher_model'])}:</p>"
                          + "".join(f"<pre>{escape(p[k])}</pre>" for k in ("system", "user") if p.get(k))
                          for name, p in judges["answer_prompts"].items())
        where = f"the OpenAI-compatible endpoint {judges['base_url']}" if judges.get("base_url") else "the model gateway"
        return (f"<p>Answer judges: {escape(', '.join(judges['models']))} through {escape(where)}, each asked every "
                f"published answer prompt; the criteria by the "
                f"deterministic panel ({escape(', '.join(judges.get('deterministic', [])))}).</p>" + prompts)
    columns, lines = panel_table(summary)
    named = (f"the published panel {escape(judges['panel'])} " if judges.get("panel") else "") + (
        f"through the OpenAI-compatible endpoint {escape(judges['base_url'])} with the hosted benchmark's own prompt"
        if judges.get("endpoint") == "openai" else "through the model gateway")
    return (f"<p>Model panel ({named}): {escape(', '.join(judges['models']))}; prompt sha256 <code>{escape(judges['prompt_sha256'])}</code>; "
            f"the deterministic panel ({escape(', '.join(judges.get('deterministic', [])))}) judged every criterion too.</p>"
            + html_table(columns, lines, table_id="panel")
            + "".join(f"<pre>{escape(judges[k])}</pre>" for k in ("system_prompt", "prompt") if judges.get(k)))
