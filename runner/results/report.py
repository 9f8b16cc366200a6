"""`memgrid report RUN`: the analysis as rich tables, a self-contained HTML page, and optionally
the results section of a preregistration.

The page carries no external resource (no CDN, no web font): plots are base64 PNGs and the
style sheet is inline, so the file can be mailed or archived with the run and still render.
"""

import base64
from dataclasses import dataclass
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from runner.results.analysis import (BASELINE, FLOOR, OUTCOMES, TOKEN_CLASSES, Analysis, ScoredPrediction, analyse,
                                     fmt_rate, score_predictions)
from runner.results.stats import Contrast, PairedStat
from runner.errors import UserError
from runner.results.page import CSS, digests_table, escape, html_table, write_page
from runner.plan.prereg import append_results, load_prereg
from runner.exec.run import resolve_run_dir


@dataclass(frozen=True)
class ReportResult:
    analysis: Analysis
    html_path: Path
    scored: list[ScoredPrediction]


# ---------------------------------------------------------------- formatting

def _num(value, digits: int = 2, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _int(value) -> str:
    return "not observed" if value is None else f"{value:,}"


def _delta(s: PairedStat) -> str:
    if s.delta is None:
        return "–"
    ci = f" [{s.low:+.2f}, {s.high:+.2f}]" if s.low is not None else ""
    return f"{s.delta:+.2f}{ci}"


def _p(s: PairedStat) -> str:
    return "–" if s.p_mcnemar is None else (f"{s.p_mcnemar:.3g}" if s.p_mcnemar >= 0.001 else "<0.001")


def _usd(value) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def _discards_by_arm(a: Analysis) -> list[tuple[str, str, str, int]]:
    counts: dict[tuple[str, str, str], int] = {}
    for g in a.groups:
        for reason, n in g.discards.items():
            counts[(g.agent, g.arm, reason)] = counts.get((g.agent, g.arm, reason), 0) + n
    return [(agent, arm, reason, n) for (agent, arm, reason), n in sorted(counts.items())]


def _agent_errors_by_arm(a: Analysis) -> list[tuple[str, str, int, int, str]]:
    """Per agent x arm: admitted cells, those whose agent ended with an error (scored as they ended), and how."""
    admitted: dict[tuple[str, str], int] = {}
    endings: dict[tuple[str, str], dict[str, int]] = {}
    for g in a.groups:
        admitted[(g.agent, g.arm)] = admitted.get((g.agent, g.arm), 0) + g.admitted
        for ending, n in g.agent_endings.items():
            by = endings.setdefault((g.agent, g.arm), {})
            by[ending] = by.get(ending, 0) + n
    return [(agent, arm, admitted[(agent, arm)], sum(by.values()), ", ".join(f"{e} {n}" for e, n in sorted(by.items())))
            for (agent, arm), by in sorted(endings.items(), key=lambda kv: (a.agents.index(kv[0][0]), a.arms.index(kv[0][1])))]


AGENT_ERRORS_NOTE = ("admitted and scored as the agent left its work: an agent that exits non-zero, times out or reports "
                     "an error is never discarded (a cell is discarded only on evidence of a fault outside the agent)")


Matrix = tuple[list[str], list[tuple[str, str, list[str]]]]  # (conditions, rows of (agent, arm, one cell per condition))


def _matrix(a: Analysis, cells: dict[tuple[str, str, str], str], skip: frozenset[str] = frozenset()) -> Matrix:
    from runner.results.plots import axes_order

    agents, arms, conditions = axes_order(a)
    rows = [(agent, arm, [cells.get((agent, arm, condition), "–") for condition in conditions])
            for agent in agents for arm in arms
            if arm not in skip and any(key[:2] == (agent, arm) for key in cells)]
    return conditions, rows


def _damage_matrix(a: Analysis) -> Matrix:
    """The damage detector's rate per agent x arm x condition: damaged / admitted cells it scored."""
    return _matrix(a, {(g.agent, g.arm, g.condition): "–" if g.damage.rate is None
                       else f"{g.damage.passed}/{g.damage.n} ({g.damage.rate:.2f})" for g in a.groups})


def _harm_matrix(a: Analysis) -> Matrix:
    return _matrix(a, {(h.agent, h.arm, h.condition): "–" if h.net_harm is None
                       else f"{h.harmed}/{h.pairs} (net {h.net_harm:+.2f})" for h in a.harm}, skip=frozenset({FLOOR}))


def unisolated_lines(lock: dict) -> list[str]:
    """One line per task graded by a checker that is not isolated, which the grid accepted by name (run.json)."""
    return [f"task {task}: its pass rates rest on a checker that runs artifact code unisolated, as the judge who can "
            f"read the expected values ({why}); the grid accepted it by name (unisolated_checkers)"
            for task, why in sorted(lock.get("unisolated_checkers", {}).items())]


# ---------------------------------------------------------------- terminal

def _rt(*columns: str, title: str, wrap: tuple[str, ...] = ("note", "why")) -> Table:
    """A rich table that fits make's 130 columns: light rules, and only free-text columns wrap
    (a wrapped interval such as "0.67 [0.39,\n0.86]" is hard to read)."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for name in columns:
        table.add_column(name, no_wrap=name not in wrap, overflow="fold" if name in wrap else "ellipsis")
    return table


def print_terminal(a: Analysis, console: Console, scored: list[ScoredPrediction] = ()) -> None:
    grid = a.lock.get("grid", {})
    console.print(f"[bold]run {a.run_id}[/]: {a.cells} finished cells of {a.lock.get('cells', '?')} · "
                  f"{len(grid.get('tasks', []))} tasks · seeds {grid.get('seeds', '?')} · "
                  f"minimum effect {a.min_effect:.2f} · bootstrap {a.resamples:,} task resamples (seed {a.seed})")
    for stop in a.lock.get("budget_stops", []):
        console.print(f"[yellow]stopped at its budget at {stop['at']}: {stop['detail']}", highlight=False)
    for line in unisolated_lines(a.lock):
        console.print(line, style="yellow", markup=False, highlight=False)
    head = _rt("agent", "arm", "condition", "cells", "adm.", "ITT [Wilson 95%]", "PP [Wilson 95%]", "solved", "damaged",
               "disc.", "agent err.", title="headline: intention-to-treat (ITT) beside per-protocol (PP, admitted cells); "
               "damaged = the damage detector's class; agent err. = admitted cells whose agent ended with an error, scored")
    for g in a.groups:
        head.add_row(g.agent, g.arm, g.condition, str(g.cells), str(g.admitted), fmt_rate(g.itt), fmt_rate(g.pp),
                     str(g.outcomes.get("solved", 0)), str(g.outcomes.get("damaged", 0)),
                     str(g.cells - g.admitted), str(g.agent_errors))
    console.print(head)
    for title, rows in ((f"contrasts against {BASELINE} (paired by task and seed)", a.contrasts),
                        ("diagnostic contrasts (never ranked)", a.diagnostics)):
        if rows:
            console.print(_contrast_table(title, rows))
            reasons: dict[str, int] = {}
            for c in rows:
                for reason in filter(None, (c.pp.reason or "").split("; ")):
                    reasons[reason] = reasons.get(reason, 0) + 1
            for reason, n in reasons.items():
                console.print(f"  [dim]note: {reason} ({n} of {len(rows)} contrasts)", highlight=False)
    for o in a.omitted:
        console.print(f"[yellow]omitted[/] {o.name}: {o.reason}")
    if a.across_models:
        headers, rows = _across_models(a)
        table = _rt(*headers[:3], *headers[4:], title=f"does the memory effect hold across models: {ACROSS_MODELS_NOTE}")
        for row in rows:
            table.add_row(*row[:3], *row[4:])
        console.print(table)
    conditions, damage_rows = _damage_matrix(a)
    damage = _rt("agent", "arm", *conditions, title="damage detector by condition (damaged / admitted cells)")
    for agent, arm, cells in damage_rows:
        damage.add_row(agent, arm, *cells)
    console.print(damage)
    conditions, harm_rows = _harm_matrix(a)
    if harm_rows:
        harm = _rt("agent", "arm", *conditions, title=f"harm against {FLOOR} by condition (harmed / admitted pairs where {FLOOR} "
                   f"solved and the arm failed; net = (harmed − helped) / pairs)")
        for agent, arm, cells in harm_rows:
            harm.add_row(agent, arm, *cells)
        console.print(harm)
    else:
        console.print(f"harm against {FLOOR}: no {FLOOR} arm in this run, so harm against {FLOOR} is undefined")
    discards = _discards_by_arm(a)
    if discards:
        why = _rt("agent", "arm", "discard reason", "cells", title="discarded, not scored")
        for agent, arm, reason, n in discards:
            why.add_row(agent, arm, reason, str(n))
        console.print(why)
    else:
        console.print("discards: none (every finished cell was admitted)")
    errors = _agent_errors_by_arm(a)
    if errors:
        ended = _rt("agent", "arm", "admitted", "agent ended with an error (scored)", "how",
                    title=f"agent ended with an error (scored): {AGENT_ERRORS_NOTE}")
        for agent, arm, admitted, n, how in errors:
            ended.add_row(agent, arm, str(admitted), str(n), how)
        console.print(ended)
    else:
        console.print("agent ended with an error (scored): none")
    console.print(_cost_table(a))
    if a.spend_by_model:
        headers, rows = _spend_by_model(a)
        table = _rt(*headers, title="costs per model (every finished cell on the model, admitted or not)")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    if a.ingest:
        console.print(_ingest_table(a))
    for agent, arm, condition, n in a.budget_exhausted:
        console.print(f"[yellow]budget_exhausted[/]: {n} {agent} x {arm} x {condition} cells reached a session cap "
                      "(limits); scored as they ended", highlight=False)
    if any(c.tokens_total is not None for c in a.costs):
        console.print(_token_table(a))
    if scored:
        preds = _rt("id", "contrast", "condition", "agent", "expect", "verdict", "why", title="preregistered predictions")
        for s in scored:
            colour = {"confirmed": "green", "refuted": "red"}.get(s.verdict, "yellow")
            preds.add_row(s.id, s.contrast, str(s.condition), str(s.agent), s.expect, f"[{colour}]{s.verdict}", s.why)
        console.print(preds)


def _contrast_table(title: str, rows: list[Contrast]) -> Table:
    table = _rt("agent", "condition", "contrast", "pairs", "tasks", "delta PP [95% CI]", "McNemar p", "label",
                "delta ITT", title=title)
    for c in rows:
        colour = {"positive": "green", "negative": "red"}.get(c.pp.label or "", "dim")
        table.add_row(c.agent, c.condition, c.name, str(c.pp.pairs), str(c.pp.tasks), _delta(c.pp), _p(c.pp),
                      f"[{colour}]{c.pp.label or '–'}", _num(c.itt.delta, signed=True))
    return table


ACROSS_MODELS_NOTE = ("each contrast within one model (cells paired by task and seed), its models side by side, and "
                      "each model's delta minus the first model's over the pairs admitted on both (task-cluster "
                      "bootstrap 95 %); never pooled across models")


def _models(a: Analysis) -> list[str]:
    return list(dict.fromkeys(m for e in a.across_models for m in e.models))


def _across_models(a: Analysis) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the across-models table: per model its delta (per-protocol, 95 % CI), per later model its
    difference from the first model's."""
    models = _models(a)
    headers = ["agent", "condition", "contrast", "kind", *models, *(f"{m} − {models[0]}" for m in models[1:])]
    rows = []
    for e in a.across_models:
        effect = dict(zip(e.models, e.effects))
        differs = {m: i for m, i in zip(e.models, e.interactions) if i is not None and e.models[0] == models[0]}
        rows.append([e.agent, e.condition, e.name, e.kind, *(_delta(effect[m]) if m in effect else "–" for m in models),
                     *(_delta(differs[m]) + (f" {differs[m].label}" if differs[m].label else "") if m in differs else "–"
                       for m in models[1:])])
    return headers, rows


def _spend_by_model(a: Analysis) -> tuple[list[str], list[list[str]]]:
    headers = ["model", "cells", "passed", "session tokens", "fresh in", "cache read", "cache write", "output", "USD", "wall s"]
    rows = [[m.model, str(m.cells), str(m.passed),
             _int(None if all(v is None for v in m.tokens.values()) else sum(v or 0 for v in m.tokens.values())),
             *[_int(m.tokens[k]) for k in TOKEN_CLASSES], _usd(m.cost_usd), f"{m.wall_seconds:,.1f}"]
            for m in a.spend_by_model]
    return headers, rows


def _cost_table(a: Analysis) -> Table:
    columns = ["agent", "arm", "cells", "passed", "tokens", "USD", *(["CLI USD (unverified)"] if a.has_cli_cost else []),
               "wall s", "s/cell", "pass/Mtok"]
    table = _rt(*columns, title="costs per arm (every finished cell, admitted or not; tokens = session tokens, all classes)")
    for c in a.costs:
        table.add_row(c.agent, c.arm, str(c.cells), str(c.passed), _int(c.tokens_total), _usd(c.cost_usd),
                      *([_usd(c.cli_cost_usd)] if a.has_cli_cost else []), f"{c.wall_seconds:,.0f}",
                      f"{c.wall_seconds_mean:.2f}", _num(c.success_per_million_tokens))
    return table


INGEST_HEADERS = ["arm", "stores", "documents", "ingest s", "s / store", "MiB / store", "model tokens"]


def _ingest_cells(i) -> list[str]:
    return [i.arm, str(i.stores), f"{i.documents:,}", f"{i.seconds:,.1f}", f"{i.seconds / i.stores:,.1f}",
            f"{i.store_mib:,.1f}", _int(i.tokens)]


def _ingest_table(a: Analysis) -> Table:
    table = _rt(*INGEST_HEADERS, title="ingest per arm (its own write path; one store per condition and seed)")
    for i in a.ingest:
        table.add_row(*_ingest_cells(i))
    return table


def _token_table(a: Analysis) -> Table:
    table = _rt("agent", "arm", "cells observed", "fresh input", "cache read", "cache creation", "output",
                title="session tokens by class")
    for c in a.costs:
        table.add_row(c.agent, c.arm, f"{c.tokens_observed_cells}/{c.cells}", *[_int(c.tokens[k]) for k in TOKEN_CLASSES])
    return table


# ---------------------------------------------------------------- HTML

# Marks each figure with the size the browser decoded, and says so on the page when a plot
# did not decode, instead of leaving a blank frame.
SCRIPT = """
window.addEventListener('load', function () {
  var figures = document.querySelectorAll('figure.plot');
  for (var i = 0; i < figures.length; i++) {
    var img = figures[i].querySelector('img');
    var ok = img && img.complete && img.naturalWidth > 0;
    figures[i].setAttribute('data-rendered', ok ? img.naturalWidth + 'x' + img.naturalHeight : 'failed');
    if (!ok) figures[i].insertAdjacentHTML('beforeend', '<p class="bad">this plot did not render</p>');
  }
  document.body.setAttribute('data-plots-checked', String(figures.length));
});
"""


def _contrast_html(rows: list[Contrast], table_id: str) -> str:
    """Diagnostic rows also say what their difference measures (headroom, access gap ...)."""
    diagnostic = any(c.kind == "diagnostic" for c in rows)
    headers = ["agent", "condition", "contrast", *(["measures"] if diagnostic else []), "pairs", "tasks",
               "delta PP [95 % CI]", "McNemar p", "label", "delta ITT [95 % CI]", "note"]
    body = []
    for c in rows:
        label = c.pp.label or "–"
        body.append([c.agent, c.condition, c.name, *([c.measures] if diagnostic else []), c.pp.pairs, c.pp.tasks,
                     _delta(c.pp), _p(c.pp), (escape(label), label if c.pp.label else ""), _delta(c.itt),
                     (escape(c.pp.reason or ""), "wrap")])
    first = 4 if diagnostic else 3
    return html_table(headers, body, numeric={first, first + 1}, table_id=table_id)


def render_html(a: Analysis, scored: list[ScoredPrediction] = ()) -> str:
    from runner.results.plots import all_plots

    lock, grid = a.lock, a.lock.get("grid", {})
    parts = [f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>memgrid report {escape(a.run_id)}</title>"
             f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><style>{CSS}</style></head><body>",
             f"<h1>memgrid report: run <code id=\"run-id\">{escape(a.run_id)}</code></h1>",
             f"<p class=\"meta\">created {escape(lock.get('created_at', '?'))} · git {escape((lock.get('git_commit') or 'unknown')[:12])} · "
             f"memgrid {escape(lock.get('versions', {}).get('memgrid', '?'))} · {a.cells} finished cells of {escape(lock.get('cells', '?'))} planned · "
             f"minimum effect {a.min_effect:.2f} · bootstrap {a.resamples:,} task resamples, seed {a.seed}</p>"]

    for stop in lock.get("budget_stops", []):
        parts.append(f"<p class=\"bad budget-stop\">stopped at its budget at {escape(stop['at'])}: {escape(stop['detail'])}</p>")
    parts += [f"<p class=\"bad unisolated\">{escape(line)}</p>" for line in unisolated_lines(lock)]
    parts.append("<h2>Grid</h2>" + html_table(["field", "value"], [
        ["agents", ", ".join(grid.get("agents", []))], ["arms", ", ".join(grid.get("arms", []))],
        ["conditions", ", ".join(grid.get("conditions", []))], ["tasks", (escape(", ".join(grid.get("tasks", []))), "wrap")],
        ["seeds", grid.get("seeds", "?")], ["network", grid.get("network", "?")], ["model", grid.get("model") or ", ".join(grid.get("models", ())) or "none"]],
        table_id="grid"))

    headline = html_table(["agent", "arm", "condition", "cells", "admitted", "ITT pass [Wilson 95 %]", "PP pass [Wilson 95 %]",
                       "agent ended with an error (scored)"],
                      [[g.agent, g.arm, g.condition, g.cells, g.admitted, fmt_rate(g.itt), fmt_rate(g.pp), g.agent_errors]
                       for g in a.groups],
                      numeric={3, 4, 7}, table_id="headline")
    discard_rows = _discards_by_arm(a)
    discards = (html_table(["agent", "arm", "reason", "cells"], [list(r) for r in discard_rows], numeric={3}, table_id="discards")
                if discard_rows else '<p id="discards">none: every finished cell was admitted</p>')
    error_rows = _agent_errors_by_arm(a)
    errors = (html_table(["agent", "arm", "admitted", "agent ended with an error", "how"], [list(r) for r in error_rows],
                     numeric={2, 3}, table_id="agent-errors")
              if error_rows else '<p id="agent-errors">none: every admitted agent finished without error</p>')
    parts.append("<h2>Headline: intention-to-treat beside per-protocol</h2>"
                 "<p class=\"note\">ITT counts every cell and a discarded cell as a failure; per-protocol counts admitted "
                 "cells only. A cell is discarded only on evidence of a fault outside the agent; an agent that exits "
                 "non-zero, times out or reports an error is scored, and counted per arm.</p>"
                 f"<div class=\"row\"><div>{headline}</div><div><h3>Discarded, not scored</h3>{discards}"
                 f"<h3>Agent ended with an error (scored)</h3>{errors}</div></div>")

    parts.append("<h2>Figures</h2>")
    for plot in all_plots(a):
        data = base64.b64encode(plot.png).decode()
        parts.append(f"<figure class=\"plot\" id=\"plot-{plot.id}\"><img id=\"img-{plot.id}\" alt=\"{escape(plot.alt)}\" "
                     f"src=\"data:image/png;base64,{data}\"><figcaption>{escape(plot.title)}</figcaption></figure>")

    parts.append(f"<h2>Contrasts against {BASELINE}</h2><p class=\"note\">Cells paired by (task, seed) within an agent and "
                 "condition; delta = mean pass(arm) − pass(baseline) over admitted pairs, 95 % interval from a task-cluster "
                 f"bootstrap; exact McNemar on the discordant pairs. |delta| below {a.min_effect:.2f} is labelled noise.</p>")
    parts.append(_contrast_html(a.contrasts, "contrasts") if a.contrasts else "<p>none</p>")
    parts.append("<h2>Diagnostic contrasts (never ranked)</h2>")
    parts.append(_contrast_html(a.diagnostics, "diagnostics") if a.diagnostics else "<p>none</p>")
    if a.across_models:
        headers, rows = _across_models(a)
        parts.append("<h2>Does the memory effect hold across models</h2>"
                     f"<p class=\"note\">{escape(ACROSS_MODELS_NOTE[0].upper() + ACROSS_MODELS_NOTE[1:])}. A difference "
                     f"below {a.min_effect:.2f} is labelled noise.</p>" + html_table(headers, rows, table_id="across-models"))
    if a.omitted:
        parts.append("<ul id=\"omitted\">" + "".join(f"<li>omitted <code>{escape(o.name)}</code>: {escape(o.reason)}</li>"
                                                    for o in a.omitted) + "</ul>")

    conditions, damage_rows = _damage_matrix(a)
    parts.append("<h2>Damage detector by condition</h2><p class=\"note\">damaged / admitted cells: the task's damage "
                 "detector found the condition's wrong rule (stale, rival or another subsystem's) in the artifact. "
                 "Never pooled across conditions.</p>")
    parts.append(html_table(["agent", "arm", *conditions], [[agent, arm, *cells] for agent, arm, cells in damage_rows],
                        table_id="damage"))
    conditions, harm_rows = _harm_matrix(a)
    parts.append(f"<h2>Harm against {FLOOR} by condition</h2><p class=\"note\">harmed = an admitted cell failing where "
                 f"the paired {FLOOR} cell solved; net = (harmed − helped) / admitted pairs. Where {FLOOR} never solves, "
                 f"harm is 0 whatever the damage detector saw. Never pooled across conditions.</p>")
    parts.append(html_table(["agent", "arm", *conditions], [[agent, arm, *cells] for agent, arm, cells in harm_rows], table_id="harm")
                 if harm_rows else f"<p id=\"harm\">no {FLOOR} arm in this run: harm against {FLOOR} is undefined</p>")
    parts.append("<h3>Outcome classes (admitted cells)</h3>" + html_table(
        ["agent", "arm", "condition", *OUTCOMES, "unscored"],
        [[g.agent, g.arm, g.condition, *[g.outcomes.get(k, 0) for k in OUTCOMES], g.outcomes.get("unscored", 0)] for g in a.groups],
        numeric=set(range(3, 4 + len(OUTCOMES))), table_id="outcomes"))

    cost_headers = ["agent", "arm", "cells", "passed", "session tokens", "fresh in", "cache read", "cache write", "output",
                    "USD", *(["CLI USD (unverified)"] if a.has_cli_cost else []), "wall s", "s / cell", "pass per M tokens"]
    cost_rows = [[c.agent, c.arm, c.cells, c.passed, _int(c.tokens_total), *[_int(c.tokens[k]) for k in TOKEN_CLASSES],
                  _usd(c.cost_usd), *([_usd(c.cli_cost_usd)] if a.has_cli_cost else []), f"{c.wall_seconds:.1f}",
                  f"{c.wall_seconds_mean:.2f}", _num(c.success_per_million_tokens)] for c in a.costs]
    parts.append("<h2>Costs</h2><p class=\"note\">Every finished cell, admitted or not. \"not observed\" means no cell "
                 "reported that token class (no model, or the agent does not report usage), never zero."
                 + (" The CLI USD column is the agent CLI's own figure, not verified against prices." if a.has_cli_cost else "")
                 + "</p>" + html_table(cost_headers, cost_rows, numeric=set(range(2, len(cost_headers))), table_id="costs"))
    if a.spend_by_model:
        headers, rows = _spend_by_model(a)
        parts.append("<h3>Costs per model</h3><p class=\"note\">Every finished cell on the model, admitted or not.</p>"
                     + html_table(headers, rows, numeric=set(range(1, len(headers))), table_id="costs-by-model"))
    if a.ingest:
        parts.append("<h3>Ingest per arm</h3><p class=\"note\">Each arm's own write path, once per condition and seed, "
                     "before any cell; every cell of that store receives the same frozen copy. From the store reports under "
                     "<code>stores/</code>, also in run.json's <code>stores</code>. Documents are what the product holds when "
                     "read back, not what was sent.</p>"
                     + html_table(INGEST_HEADERS, [_ingest_cells(i) for i in a.ingest], numeric=set(range(1, len(INGEST_HEADERS))),
                              table_id="ingest"))

    if a.budget_exhausted:
        parts.append("<h2>Sessions stopped at a cap</h2><p class=\"note\">error_class budget_exhausted: the session "
                     "reached the grid's or the task's limits (max_turns, max_output_tokens); the cell is scored as it "
                     "ended, and counted here.</p>" + html_table(["agent", "arm", "condition", "cells"],
                                                             [list(r) for r in a.budget_exhausted], numeric={3},
                                                             table_id="budget-exhausted"))
    if scored:
        parts.append("<h2>Preregistered predictions</h2>" + html_table(
            ["id", "prediction", "contrast", "condition", "agent", "expect", "verdict", "why"],
            [[s.id, (escape(s.text), "wrap"), s.contrast, s.condition, s.agent, s.expect, (escape(s.verdict), s.verdict),
              (escape(s.why), "wrap")] for s in scored],
            table_id="predictions"))

    parts.append("<h2>Digests (from run.json)</h2>" + digests_table(lock))
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts)


def write_html(a: Analysis, path: Path, scored: list[ScoredPrediction] = ()) -> Path:
    return write_page(path, render_html(a, scored))


# ---------------------------------------------------------------- preregistration

def prereg_record(a: Analysis) -> dict:
    """The machine-readable block `reproduce` reads back. Per agent/arm/condition: cells, admitted,
    passed (admitted and the checker passed), damaged (admitted cells whose outcome is `damaged`,
    the damage detector's class, as in the grid summary) and harmed (damage against bare: failed
    where the paired bare cell solved; None when the run has no bare arm)."""
    harmed = {(h.agent, h.arm, h.condition): h.harmed for h in a.harm}
    has_floor = any(g.arm == FLOOR for g in a.groups)
    per = {}
    for g in a.groups:
        key = (g.agent, g.arm, g.condition)
        per[f"{g.agent}/{g.arm}/{g.condition}"] = {
            "cells": g.cells, "admitted": g.admitted, "passed": g.passed, "damaged": g.outcomes.get("damaged", 0),
            "harmed": (0 if g.arm == FLOOR else harmed.get(key, 0)) if has_floor else None}
    return {"run_id": a.run_id, "git_commit": a.lock.get("git_commit"), "inputs": a.lock.get("inputs", {}),
            "image_tags": a.lock.get("image_tags", {}), "image_recipes": a.lock.get("image_recipes", {}),
            **({"claude_code": a.lock["claude_code"]} if a.lock.get("claude_code") else {}), "per_arm_condition": per}


def prereg_markdown(a: Analysis, scored: list[ScoredPrediction]) -> str:
    lines = [f"## Results: run `{a.run_id}`", "",
             f"{a.cells} finished cells; git `{(a.lock.get('git_commit') or 'unknown')[:12]}`; minimum effect {a.min_effect:.2f}; "
             f"intervals: Wilson 95 % for rates, task-cluster bootstrap 95 % ({a.resamples:,} resamples, seed {a.seed}) for deltas.", "",
             *(f"**Unisolated checker:** {line}\n" for line in unisolated_lines(a.lock)),
             "| agent | arm | condition | cells | admitted | ITT pass | per-protocol pass |",
             "|---|---|---|---:|---:|---|---|"]
    lines += [f"| {g.agent} | {g.arm} | {g.condition} | {g.cells} | {g.admitted} | {fmt_rate(g.itt)} | {fmt_rate(g.pp)} |"
              for g in a.groups]
    if a.contrasts:
        lines += ["", f"### Contrasts against {BASELINE} (admitted pairs)", "",
                  "| agent | condition | contrast | pairs | delta [95 % CI] | McNemar p | label |", "|---|---|---|---:|---|---|---|"]
        lines += [f"| {c.agent} | {c.condition} | {c.name} | {c.pp.pairs} | {_delta(c.pp)} | {_p(c.pp)} | {c.pp.label or '–'} |"
                  for c in a.contrasts]
    lines += ["", "### Predictions", ""]
    if scored:
        lines += ["| id | prediction | contrast | condition | agent | expect | verdict | why |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {s.id} | {s.text} | {s.contrast} | {s.condition} | {s.agent} | {s.expect} | **{s.verdict}** | {s.why} |"
                  for s in scored]
    else:
        lines.append("The preregistration lists no predictions.")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- entry point

def make_report(run: str, runs_dir: Path = Path("runs"), html_path: Path | None = None, prereg_path: Path | None = None,
                min_effect: float | None = None, console: Console | None = None) -> ReportResult:
    run_dir = resolve_run_dir(run, runs_dir)
    prereg = None
    if prereg_path is not None:
        if not prereg_path.is_file():
            raise UserError(f"{prereg_path}: no such preregistration: fix: give the path of a preregistration/NNN-slug.md")
        prereg = load_prereg(prereg_path)
        if min_effect is None:
            min_effect = prereg.min_effect
    a = analyse(run_dir, min_effect)
    scored = score_predictions(a, list(prereg.predictions)) if prereg else []
    if console is not None:
        print_terminal(a, console, scored)
    out = write_html(a, html_path or run_dir / "report.html", scored)
    if prereg is not None:
        append_results(prereg_path, prereg_markdown(a, scored), prereg_record(a))
    return ReportResult(a, out, scored)

