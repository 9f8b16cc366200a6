"""`memgrid view RUN`: a run as a static site a reviewer clicks through.

    index.html            the run's summary, the report's plots, every cell in a table (filters, sorting)
    cells/<id>.html       one cell: identity and digests, every gate proof, the session as a timeline,
                          the checker's verdict and log, the damage detector's finding, the artifact's diff
    cells/<id>-<phase>-<n>.html   the timeline's further pages (PAGE_STEPS steps each)
    plots/<name>.png      the report's plots; report.html the protocol's own report page

Nothing refers outside the site folder (no CDN, no font, no script from elsewhere), and every link is
relative, so the site works from file:// and from any static server. The filters live in the URL's
fragment (index.html#outcome=discarded), so a filtered view is a link.
"""

import html
import http.server
import json
import shutil
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from runner.agents.base import BUDGET_EXHAUSTED
from runner.errors import UserError
from runner.protocols.registry import protocol_named
from runner.results.cell_record import CellRecord, Phase, Step, Text, read_cell
from runner.results.ledger import Ledger, latest_attempts
from runner.results.run_lock import load_lock

PAGE_STEPS = 40
FILTERS = ("arm", "task", "condition", "agent", "model", "outcome", "reason")
INLINE_FIELDS = {"input", "text", "answer", "error", "why"}  # the rest of a step (results, tool lists) folds
TOKEN_COLUMNS = ("tokens_fresh_input", "tokens_cache_read", "tokens_cache_creation", "tokens_output")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;margin:20px auto;max-width:1320px;padding:0 16px}
h1{font-size:21px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{font-size:14px;margin:16px 0 6px}a{color:#0b5cad}.meta,.note{color:#555;font-size:12.5px}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}th,td{padding:3px 7px;border-bottom:1px solid #e6e6e6;text-align:left;vertical-align:top}
th{background:#f3f4f6;position:sticky;top:0}td.n{text-align:right;font-variant-numeric:tabular-nums}
th.sort{cursor:pointer;text-decoration:underline dotted}
.pass{color:#1a7f37;font-weight:600}.fail{color:#b42318;font-weight:600}.warn{color:#9a6700;font-weight:600}
.banner{padding:8px 12px;border-radius:6px;margin:10px 0;font-size:15px}.banner.pass{background:#e8f5ec}.banner.fail{background:#fdecea}
.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:8px 0}.filters label{font-size:12.5px}
.step{border-left:3px solid #c9d3df;padding:2px 10px;margin:6px 0}.step.tool_call{border-color:#2b7bba}
.step.model_request{border-color:#8e6bbf}.step.init{border-color:#1a7f37}.step.result{border-color:#333}.step.failed{border-color:#b42318}
.step .title{font-weight:600}.tok{color:#555;font-size:12px;margin-left:8px}
pre{background:#f6f8fa;padding:6px 8px;white-space:pre-wrap;word-break:break-word;font-size:12px;margin:3px 0;max-height:24em;overflow:auto}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
.diff .add{color:#1a7f37}.diff .del{color:#b42318}.diff .hunk{color:#8e6bbf}
figure{margin:10px 0}figure img{max-width:100%;height:auto;border:1px solid #eee}figcaption{color:#555;font-size:12.5px}
.plots{display:flex;flex-wrap:wrap;gap:0 28px;align-items:flex-start}.thumbs{display:flex;flex-wrap:wrap;gap:8px}
figure.thumb{width:250px;margin:4px 0}figure.thumb figcaption{font-size:11.5px}
"""

# Filters are the URL fragment (#arm=recall&outcome=discarded): the selects write it, and every change of
# it (a select, a link such as "discarded", back/forward) re-applies it to the table.
INDEX_SCRIPT = """
(function () {
  var table = document.getElementById('cells'), rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var selects = document.querySelectorAll('select[data-filter]');
  function state() {
    var s = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var p = kv.split('='); if (p[0]) s[decodeURIComponent(p[0])] = decodeURIComponent(p[1] || '');
    });
    return s;
  }
  function apply() {
    var s = state(), shown = 0;
    selects.forEach(function (sel) { sel.value = s[sel.dataset.filter] || ''; });
    rows.forEach(function (r) {
      var ok = Object.keys(s).every(function (k) { return k === 'sort' || !s[k] || r.dataset[k] === s[k]; });
      r.hidden = !ok; shown += ok;
    });
    if (s.sort) sortBy(s.sort);
    document.getElementById('shown').textContent = shown;
    document.body.setAttribute('data-shown', String(shown));
  }
  function sortBy(spec) {
    var key = spec.replace(/^-/, ''), sign = spec.charAt(0) === '-' ? -1 : 1;
    rows.sort(function (a, b) {
      var x = parseFloat(a.dataset[key]), y = parseFloat(b.dataset[key]);
      if (isNaN(x) !== isNaN(y)) return isNaN(x) ? 1 : -1;  // unobserved last, whichever the direction
      return sign * ((x || 0) - (y || 0));
    });
    rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
  }
  function write(s) {
    location.hash = Object.keys(s).filter(function (k) { return s[k]; })
      .map(function (k) { return encodeURIComponent(k) + '=' + encodeURIComponent(s[k]); }).join('&');
  }
  selects.forEach(function (sel) {
    sel.addEventListener('change', function () { var s = state(); s[sel.dataset.filter] = sel.value; write(s); });
  });
  document.querySelectorAll('th[data-sort]').forEach(function (th) {
    th.addEventListener('click', function () {
      var s = state(), key = th.dataset.sort; s.sort = s.sort === '-' + key ? key : '-' + key; write(s);
    });
  });
  window.addEventListener('hashchange', apply);
  apply();
  document.body.setAttribute('data-ready', '1');
})();
"""


@dataclass(frozen=True)
class Site:
    index: Path
    pages: int
    bytes: int
    seconds: float


def _e(value) -> str:
    return html.escape("" if value is None else str(value))


def _page(title: str, body: str, script: str = "") -> str:
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><style>{CSS}</style></head>"
            f"<body>{body}{f'<script>{script}</script>' if script else ''}</body></html>")


def _table(headers: list[str], rows: list[list[str]], table_id: str = "", numeric: frozenset[int] = frozenset()) -> str:
    """`rows` hold HTML already escaped by the caller."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td class=\"n\">{c}</td>" if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    ident = f" id=\"{table_id}\"" if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _text(t: Text, label: str = "") -> str:
    more = f" <span class=\"note\">(first {len(t.excerpt):,} of {t.chars:,} characters)</span>" if t.cut else ""
    return f"{f'<div><b>{_e(label)}</b>{more}</div>' if label or more else ''}<pre>{_e(t.excerpt)}</pre>"


def _folded(t: Text, label: str) -> str:
    return f"<details><summary>{_e(label)} ({t.chars:,} characters)</summary>{_text(t)}</details>"


def outcome_of(row: dict) -> str:
    """What a cell came to, for the table and its filter: discarded (with its reason beside), else the protocol's
    outcome, else 'not scored'."""
    if not row["admitted"]:
        return "discarded"
    return row.get("outcome") or "not scored"


def tokens_of(row: dict) -> int | None:
    counts = [row.get(k) for k in TOKEN_COLUMNS]
    return None if all(c is None for c in counts) else sum(c or 0 for c in counts)


# ---------------------------------------------------------------- a cell's page

def _step(step: Step) -> str:
    tokens = ""
    if step.tokens:
        tokens = "<span class=\"tok\">tokens: " + " · ".join(f"{k} {v:,}" for k, v in step.tokens.items()) + "</span>"
    fields = "".join(_text(value, label) if label in INLINE_FIELDS else _folded(value, label)
                     for label, value in step.fields if value.chars)
    classes = f"step {step.kind}" + (" failed" if step.failed else "")
    return f"<div class=\"{classes}\"><span class=\"title\">{_e(step.title)}</span>{tokens}{fields}</div>"


def _page_name(cell_id: str, phase: Phase, n: int) -> str:
    return f"{cell_id}.html" if n == 1 else f"{cell_id}-{phase.name or 'session'}-{n}.html"


def _pager(cell_id: str, phase: Phase, n: int, pages: int) -> str:
    if pages == 1:
        return ""
    links = [f"<b>{i}</b>" if i == n else f"<a href=\"{_page_name(cell_id, phase, i)}#timeline-{phase.name or 'session'}\">{i}</a>"
             for i in range(1, pages + 1)]
    return f"<p class=\"pager\">timeline page: {' '.join(links)} ({len(phase.steps)} steps, {PAGE_STEPS} a page)</p>"


def _timeline(cell_id: str, phase: Phase, n: int) -> str:
    pages = max(1, -(-len(phase.steps) // PAGE_STEPS))
    steps = phase.steps[(n - 1) * PAGE_STEPS:n * PAGE_STEPS]
    anchor = f"timeline-{phase.name or 'session'}"
    head = (f"<h3 id=\"{anchor}\">timeline{f' ({_e(phase.name)})' if phase.name else ''}: steps "
            f"{(n - 1) * PAGE_STEPS + 1 if steps else 0}–{(n - 1) * PAGE_STEPS + len(steps)} of {len(phase.steps)}</h3>"
            f"<p class=\"note\">from {_e(phase.source or 'no session record')}</p>")
    pager = _pager(cell_id, phase, n, pages)
    return head + pager + "".join(_step(s) for s in steps) + pager


def _proofs(phase: Phase) -> str:
    if not phase.proofs:
        return "<p class=\"note\">no gate proofs recorded</p>"
    rows = [[_e(p.name), "<span class=\"pass\">pass</span>" if p.passed else "<span class=\"fail\">FAIL</span>",
             _e(p.detail)] for p in phase.proofs]
    return _table(["proof", "result", "evidence"], rows, table_id=f"proofs-{phase.name or 'session'}")


def _diff(record: CellRecord) -> str:
    if record.diff is None:
        return "<p class=\"note\">no artifact (not exported: the cell was discarded, or its protocol has none)</p>"
    note = f"<p class=\"note\">{_e(record.diff_note)}</p>" if record.diff_note else ""
    if not record.diff:
        return note + "<p>the artifact is the fixture, unchanged</p>"
    parts = [note]
    for d in record.diff:
        lines = "".join(f"<span class=\"{'hunk' if l.startswith('@@') else 'add' if l.startswith('+') else 'del' if l.startswith('-') else ''}\">"
                        f"{_e(l)}</span>\n" for l in d.lines)
        more = f"<p class=\"note\">{d.more_lines} more lines not shown</p>" if d.more_lines else ""
        parts.append(f"<h3>{_e(d.status)}: <code>{_e(d.path)}</code></h3>"
                     + (f"<p class=\"note\">{_e(d.note)}</p>" if d.note else f"<pre class=\"diff\">{lines}</pre>{more}"))
    return "".join(parts)


def _damage(row: dict, record: CellRecord) -> str:
    verdict = record.verdict or {}
    fired = row.get("damage_fired")
    if fired is None and "fired" not in verdict:
        return "<p class=\"note\">the damage detector did not run (the cell was not graded, or its protocol has none)</p>"
    names = json.loads(fired) if fired else verdict.get("fired") or []
    found = (f"<span class=\"fail\">fired: {_e(', '.join(names))}</span> (the artifact follows that condition's wrong rule)"
             if names else "<span class=\"pass\">did not fire</span>")
    detail = verdict.get("detector_detail")
    return f"<p id=\"damage\">{found}{f' · {_e(detail)}' if detail else ''}</p>"


def _agent_ended(row: dict) -> str:
    """How the agent's session ended (scored whichever way), with what it said when it did not end ok."""
    ended = row.get("agent_ended")
    if ended is None:
        return "not recorded (no agent ran, or a ledger older than the column)"
    if ended == "ok" or row.get("error_class") or not row.get("error_detail"):
        return ended
    return f"{ended} (scored): {row['error_detail']}"


def cell_page(row: dict, attempts: list[dict], record: CellRecord, lock: dict) -> dict[str, str]:
    """The cell's pages by file name: its main page and its timelines' further pages."""
    cell_id = row["cell_id"]
    inputs = lock.get("inputs", {})
    if row["admitted"]:
        banner = (f"<div class=\"banner pass\" id=\"verdict\">admitted · outcome <b>{_e(outcome_of(row))}</b>"
                  f"{' · checker ' + ('passed' if row['checker_passed'] else 'failed') if row['checker_passed'] is not None else ''}</div>")
    else:
        detail = f" · {_e(row['error_detail'])}" if row.get("error_detail") else ""
        banner = (f"<div class=\"banner fail\" id=\"verdict\">discarded, not scored: <b id=\"discard-reason\">"
                  f"{_e(row['discard_reason'])}</b>{detail}</div>")
    identity = [[_e(k), v] for k, v in [
        ("task", _e(row["task"])), ("arm", _e(row["arm"])), ("seed", _e(row["seed"])), ("condition", _e(row["condition"])),
        ("agent", _e(row["agent"])), ("model", _e(row.get("model") or "none")), ("protocol", _e(row.get("protocol"))),
        ("attempts", _e(", ".join(f"{a['attempt']}: {a['discard_reason'] or 'admitted'}" for a in attempts))),
        ("wall", f"{row['wall_seconds']:.1f} s"), ("started", _e(row.get("started_at"))),
        ("agent ended", _e(_agent_ended(row))),
        ("error", _e(f"{row['error_class']}: {row.get('error_detail') or ''}" if row.get("error_class") else "none")),
        ("tokens", _e(" · ".join(f"{k.removeprefix('tokens_').replace('_', ' ')} {row[k]:,}" for k in TOKEN_COLUMNS
                                 if row.get(k) is not None) or "not observed (no model)")),
        ("cost", _e("unpriced or not observed" if row.get("cost_usd") is None else f"${row['cost_usd']:.4f}"))]]
    digests = [[_e(k), f"<span class=\"mono\">{_e(v)}</span>"] for k, v in [
        ("bundle", row.get("bundle_digest")), ("store", row.get("store_digest")), ("sandbox image", row.get("sandbox_image")),
        ("checker image", row.get("checker_image")), ("task (run.json)", inputs.get("tasks", {}).get(row["task"])),
        ("arm (run.json)", inputs.get("arms", {}).get(row["arm"]))] if v]
    head = (f"<p><a href=\"../index.html\">← run {_e(row['run_id'])}</a> · <a href=\"../index.html#outcome=discarded\">"
            f"discarded cells</a></p><h1>cell <code id=\"cell-id\">{_e(cell_id)}</code></h1>{banner}"
            f"<div class=\"plots\"><div><h2>Identity</h2>{_table(['', ''], identity, 'identity')}</div>"
            f"<div><h2>Digests</h2>{_table(['', ''], digests, 'digests')}</div></div>")
    checker = "<h2>Checker</h2>"
    if row["checker_passed"] is None:
        checker += f"<p>not run: {_e(row.get('checker_detail') or 'the cell was discarded, not scored')}</p>"
    else:
        checker += (f"<p id=\"checker\"><span class=\"{'pass' if row['checker_passed'] else 'fail'}\">"
                    f"{'pass' if row['checker_passed'] else 'fail'}</span> · {_e(row.get('checker_detail'))} · exit "
                    f"{_e(row.get('checker_exit_code'))} · {_e(row.get('checker_seconds'))} s</p>")
    if record.checker_log is not None:
        checker += _text(record.checker_log, "checker.log")
    checker += "<h2>Damage detector</h2>" + _damage(row, record)
    tail = checker + "<h2>Artifact against the fixture</h2>" + _diff(record)
    if row.get("result"):
        tail += f"<h2>Protocol result ({_e(row.get('protocol'))})</h2>" + _text(Text.of(json.loads(row["result"])))
    if record.records:
        tail += "<h2>Other records</h2>" + "".join(
            f"<details><summary><code>{_e(name)}</code> ({t.chars:,} characters)</summary>{_text(t)}</details>"
            for name, t in record.records.items())
    pages = {}
    for phase in record.phases:
        total = max(1, -(-len(phase.steps) // PAGE_STEPS))
        for n in range(2, total + 1):
            pages[_page_name(cell_id, phase, n)] = _page(
                f"cell {cell_id} timeline {n}",
                f"<p><a href=\"{cell_id}.html\">← cell {_e(cell_id)}</a></p>" + _timeline(cell_id, phase, n))
    sessions = "".join(
        f"<h2>{'Phase ' + _e(p.name) if p.name else 'Session'}"
        f"{'' if p.admitted is None else ' · admitted' if p.admitted else ' · discarded: ' + _e(p.discard_reason)}</h2>"
        f"<h3>gate proofs</h3>{_proofs(p)}{_timeline(cell_id, p, 1)}" for p in record.phases) \
        or "<h2>Session</h2><p class=\"note\">no phase records in the cell folder</p>"
    pages[f"{cell_id}.html"] = _page(f"memgrid cell {cell_id}", head + sessions + tail)
    return pages


# ---------------------------------------------------------------- the index

def _summary(rows: list[dict]) -> str:
    """passed / admitted (of cells) per agent x arm (rows) and condition (columns), each a link to those cells."""
    conditions = list(dict.fromkeys(r["condition"] for r in rows))
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["agent"], r["arm"], r["condition"]), []).append(r)
    lines = []
    for agent, arm in sorted({(a, b) for a, b, _ in groups}):
        cells = []
        for condition in conditions:
            members = groups.get((agent, arm, condition), [])
            admitted = [r for r in members if r["admitted"]]
            passed = sum(bool(r["checker_passed"]) for r in admitted)
            link = _e(f"#agent={agent}&arm={arm}&condition={condition}")
            cells.append(f"<a href=\"{link}\">{passed}/{len(admitted)}</a>"
                         + (f" <span class=\"fail\">({len(members) - len(admitted)} disc.)</span>"
                            if len(admitted) < len(members) else "") if members else "–")
        lines.append([_e(agent), _e(arm), *cells])
    return (_table(["agent", "arm", *conditions], lines, "summary", frozenset(range(2, 2 + len(conditions))))
            + "<p class=\"note\">passed / admitted cells; a discarded cell is counted apart, never scored</p>")


def _plots_and_report(run_dir: Path, out: Path, lock: dict, rows: list[dict]) -> str:
    """The report's plots as files under plots/ and the protocol's report page as report.html."""
    protocol = lock.get("grid", {}).get("protocol", "coding")
    if protocol != "coding":
        proto = protocol_named(protocol)
        page = proto.page(run_dir, lock, proto.summary([r for r in rows if r["final"]], lock.get("cells")))
        (out / "report.html").write_text(page, encoding="utf-8")
        return f"<p><a href=\"report.html\">the {_e(protocol)} report</a> (its tables and plot)</p>"
    from runner.results.analysis import analyse
    from runner.results.plots import all_plots
    from runner.results.report import render_html

    try:
        analysis = analyse(run_dir)
    except UserError as e:
        return f"<p class=\"note\">no plots: {_e(e)}</p>"
    (out / "plots").mkdir(exist_ok=True)
    figures = []
    for plot in all_plots(analysis):
        (out / "plots" / f"{plot.id}.png").write_bytes(plot.png)
        figures.append(f"<figure class=\"thumb\" id=\"plot-{plot.id}\"><a href=\"plots/{plot.id}.png\">"
                       f"<img src=\"plots/{plot.id}.png\" alt=\"{_e(plot.alt)}\"></a>"
                       f"<figcaption>{_e(plot.title)}</figcaption></figure>")
    (out / "report.html").write_text(render_html(analysis), encoding="utf-8")
    return (f"<p><a href=\"report.html\">the full report</a> (contrasts, intervals, costs, digests)</p>"
            f"<div class=\"thumbs\">{''.join(figures)}</div>")


def index_page(run_dir: Path, out: Path, lock: dict, rows: list[dict]) -> str:
    grid = lock.get("grid", {})
    discarded = [r for r in rows if not r["admitted"]]
    reasons: dict[str, int] = {}
    for r in discarded:
        reasons[r["discard_reason"]] = reasons.get(r["discard_reason"], 0) + 1
    values = {f: sorted({str(_filter_value(r, f)) for r in rows} - {""}) for f in FILTERS}
    selects = "".join(
        f"<label>{_e(f)} <select data-filter=\"{f}\"><option value=\"\">all</option>"
        + "".join(f"<option>{_e(v)}</option>" for v in values[f]) + "</select></label>" for f in FILTERS)
    body_rows = []
    for r in rows:
        tokens, cost = tokens_of(r), r.get("cost_usd")
        data = " ".join(f"data-{f}=\"{_e(_filter_value(r, f))}\"" for f in FILTERS)
        outcome = outcome_of(r)
        css = "fail" if outcome == "discarded" else "pass" if r["checker_passed"] else ""
        capped = " <span class=\"warn\">(budget_exhausted)</span>" if r.get("error_class") == BUDGET_EXHAUSTED else ""
        body_rows.append(
            f"<tr {data} data-wall=\"{r['wall_seconds']:.3f}\" data-tokens=\"{'' if tokens is None else tokens}\">"
            f"<td><a href=\"cells/{_e(r['cell_id'])}.html\"><code>{_e(r['cell_id'])}</code></a></td><td>{_e(r['task'])}</td>"
            f"<td>{_e(r['arm'])}</td><td>{_e(r['condition'])}</td><td class=\"n\">{_e(r['seed'])}</td><td>{_e(r['agent'])}</td>"
            f"<td class=\"{css}\">{_e(outcome)}{capped}</td><td>{_e(r['discard_reason'] or '')}</td>"
            f"<td class=\"n\">{r['wall_seconds']:.1f}</td><td class=\"n\">{'–' if tokens is None else f'{tokens:,}'}</td>"
            f"<td class=\"n\">{'–' if cost is None else f'{cost:.4f}'}</td></tr>")
    stopped = "".join(f"<p class=\"fail budget-stop\">stopped at its budget at {_e(s['at'])}: {_e(s['detail'])}</p>"
                      for s in lock.get("budget_stops", []))
    reason_links = " · ".join(f"<a href=\"#outcome=discarded&amp;reason={_e(k)}\">{_e(k)}: {n}</a>"
                              for k, n in sorted(reasons.items()))
    head = (f"<h1>memgrid run <code id=\"run-id\">{_e(lock.get('run_id', run_dir.name))}</code></h1>"
            f"<p class=\"meta\">protocol {_e(grid.get('protocol', 'coding'))} · created {_e(lock.get('created_at'))} · git "
            f"{_e((lock.get('git_commit') or 'unknown')[:12])} · {len(rows)} cells recorded of {_e(lock.get('cells'))} planned · "
            f"{sum(r['admitted'] for r in rows)} admitted · model {_e(grid.get('model') or ', '.join(grid.get('models') or ()) or 'none')}</p>{stopped}"
            f"<p><a id=\"show-discarded\" href=\"#outcome=discarded\">discarded: {len(discarded)}</a>"
            f"{' (' + reason_links + ')' if reason_links else ''} · <a href=\"#\">all cells</a></p>"
            f"<div class=\"plots\"><div><h2>Summary</h2>{_summary(rows)}</div>"
            f"<div><h2>Plots</h2>{_plots_and_report(run_dir, out, lock, rows)}</div></div>")
    table = (f"<h2>Cells: <span id=\"shown\">{len(rows)}</span> of {len(rows)} shown</h2><div class=\"filters\">{selects}</div>"
             "<table id=\"cells\"><thead><tr><th>cell</th><th>task</th><th>arm</th><th>condition</th><th>seed</th><th>agent</th>"
             "<th>outcome</th><th>discard reason</th><th class=\"sort\" data-sort=\"wall\">wall s</th>"
             "<th class=\"sort\" data-sort=\"tokens\">tokens</th><th>USD</th></tr></thead><tbody>"
             + "".join(body_rows) + "</tbody></table>")
    return _page(f"memgrid run {run_dir.name}", head + table, INDEX_SCRIPT)


def _filter_value(row: dict, name: str) -> str:
    if name == "outcome":
        return outcome_of(row)
    if name == "reason":
        return row["discard_reason"] or ""
    if name == "model":  # the model a model agent's cell ran on; none for an agent without one
        return row.get("model") or ""
    return str(row[name])


# ---------------------------------------------------------------- the site

def build_site(run_dir: Path, out: Path, root: Path) -> Site:
    """Write the site for `run_dir` into `out` (replacing a site there); `root`: the checkout whose task
    fixtures the artifacts are diffed against."""
    started = time.monotonic()
    lock = load_lock(run_dir)
    all_rows = Ledger(run_dir).saved_rows()
    if not all_rows:
        raise UserError(f"{run_dir}: no cell has finished yet (the ledger is empty): fix: run the grid first, "
                        f"or view it again once a cell is recorded")
    latest = sorted(latest_attempts(all_rows).values(), key=lambda r: r["order_index"])
    attempts: dict[str, list[dict]] = {}
    for r in sorted(all_rows, key=lambda r: r["attempt"]):
        attempts.setdefault(r["cell_id"], []).append(r)
    if out.exists() and any(out.iterdir()) and (not (out / "index.html").is_file() or (out / "run.json").exists()):
        raise UserError(f"{out}: exists and is not a memgrid site: fix: give --out a new or a site folder")
    # Built beside the target and swapped in whole: a failed build never leaves half a site, nor removes the old one.
    building = out.parent / f".{out.name}.building"
    if building.exists():
        shutil.rmtree(building)
    (building / "cells").mkdir(parents=True)
    try:
        pages = _write_pages(run_dir, building, root, lock, latest, attempts)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    building.rename(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return Site(out / "index.html", pages, size, time.monotonic() - started)


def _write_pages(run_dir: Path, out: Path, root: Path, lock: dict, latest: list[dict], attempts: dict) -> int:
    protocol = protocol_named(lock.get("grid", {}).get("protocol", "coding"))
    fixtures: dict[str, Path | None] = {}
    pages = 0
    for row in latest:
        if row["task"] not in fixtures:
            fixtures[row["task"]] = protocol.fixture(root, row["task"])
        record = read_cell(run_dir / "cells" / row["cell_id"], fixtures[row["task"]])
        for name, text in cell_page(row, attempts[row["cell_id"]], record, lock).items():
            (out / "cells" / name).write_text(text, encoding="utf-8")
            pages += 1
    (out / "index.html").write_text(index_page(run_dir, out, lock, latest), encoding="utf-8")
    return pages + 1


def serve(out: Path, port: int) -> None:
    """Serve the site on this machine only (127.0.0.1) until interrupted."""
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        server.serve_forever()
