"""The report: the HTML page renders in headless Chromium with every plot, carries no external
resource, and --append-to-prereg writes the record `reproduce` reads."""

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from PIL import Image
from rich.console import Console
from synthetic_ledger import cell, write_run

from runner.results import plots
from runner.results.analysis import analyse
from runner.results.report import SCRIPT, make_report, print_terminal

REPO = Path(__file__).resolve().parent.parent
PLOTS = ("success", "forest", "damage", "harm", "discards", "cost")
ARMS = ("bare", "placebo", "claude_md", "fs_grep", "recall", "recall_prefetch", "oracle_memory")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """6 tasks x 2 seeds x 2 conditions x 7 arms; recall lifts under present, some recall cells are
    discarded, and only recall cells observed tokens."""
    rows = []
    for t in range(6):
        for seed in range(2):
            for condition in ("present", "superseded"):
                for arm in ARMS:
                    passed = {"bare": t == 0, "placebo": t == 0, "claude_md": t < 2, "fs_grep": t < 3,
                              "recall": t < 5 if condition == "present" else t == 1, "recall_prefetch": t < 5,
                              "oracle_memory": True}[arm]
                    discarded = arm == "recall" and t == 5 and seed == 1
                    tokens = dict(tokens_fresh_input=1000, tokens_cache_read=20000, tokens_cache_creation=500,
                                  tokens_output=700, cost_usd=0.02) if arm == "recall" else {}
                    rows.append(cell(f"task_{t}", arm, None if discarded else passed, seed=seed, condition=condition,
                                     admitted=not discarded, wall_seconds=1.0 + ARMS.index(arm) * 0.3, **tokens))
    return write_run(tmp_path_factory.mktemp("runs") / "synthetic-run", rows)


@pytest.fixture(scope="module")
def page(run_dir) -> Path:
    return make_report(str(run_dir), html_path=run_dir / "report.html").html_path


def _figures(html: str) -> dict[str, bytes]:
    found = re.findall(r'<figure class="plot" id="plot-([a-z]+)"><img id="img-\1" alt="[^"]+" src="data:image/png;base64,([^"]+)"', html)
    return {name: base64.b64decode(data) for name, data in found}


def test_every_plot_is_an_embedded_png_of_real_size(page):
    figures = _figures(page.read_text())
    assert set(figures) == set(PLOTS)
    for name, png in figures.items():
        width, height = Image.open(io.BytesIO(png)).size
        assert width >= 300 and height >= 100, f"{name}: {width}x{height}"


def test_page_has_no_external_resource(page):
    html = page.read_text()
    links = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', html)
    assert links and all(link.startswith("data:") or link.startswith("#") for link in links)
    assert "<link" not in html and "@import" not in html and "url(" not in html


def test_page_names_the_run_grid_digests_and_discards_beside_the_headline(page, run_dir):
    html = page.read_text()
    assert 'id="run-id">synthetic-run<' in html
    assert "memgrid-base:123" in html and "d" * 64 in html  # image tag and task digest from run.json
    row = html[html.index('<div class="row">'):html.index("<h2>Figures</h2>")]
    assert 'id="headline"' in row and 'id="discards"' in row and "mcp_not_connected" in row
    assert 'id="contrasts"' in html and 'id="diagnostics"' in html and 'id="harm"' in html and 'id="costs"' in html


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        message = "chromium is not installed: fix: apt-get install -y chromium"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {message}")
        pytest.skip(message)
    return found


def render(html_file: Path, profile: Path, screenshot: Path | None = None) -> tuple[str, list[str]]:
    """(DOM after scripts ran, console lines) from headless Chromium."""
    base = [_chromium(), "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={profile}", "--hide-scrollbars",
            "--enable-logging=stderr", "--v=0", "--window-size=1300,4000"]
    out = subprocess.run([*base, "--dump-dom", html_file.as_uri()], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    console = [line for line in out.stderr.splitlines() if ":CONSOLE" in line]
    if screenshot is not None:
        shot = subprocess.run([*base, f"--screenshot={screenshot}", html_file.as_uri()], capture_output=True, text=True,
                              timeout=120)
        assert shot.returncode == 0, shot.stderr[-2000:]
    return out.stdout, console


def plot_problems(dom: str, console: list[str]) -> list[str]:
    problems = [f"console: {line}" for line in console]
    rendered = dict(re.findall(r'<figure class="plot" id="plot-([a-z]+)" data-rendered="([^"]+)"', dom))
    for name, size in rendered.items():
        if not re.fullmatch(r"[1-9]\d*x[1-9]\d*", size):
            problems.append(f"plot {name}: {size}")
    if 'data-plots-checked' not in dom:
        problems.append("the page's check script did not run")
    return problems


def test_page_renders_in_chromium_with_every_plot_and_no_console_error(page, tmp_path):
    shot = tmp_path / "report.png"
    dom, console = render(page, tmp_path / "profile", shot)
    assert plot_problems(dom, console) == []
    rendered = {name: (int(w), int(h)) for name, w, h in re.findall(r'id="plot-([a-z]+)" data-rendered="(\d+)x(\d+)"', dom)}
    assert set(rendered) == set(PLOTS)
    assert all(w >= 300 and h >= 100 for w, h in rendered.values()), rendered
    assert Image.open(shot).size == (1300, 4000)


def test_the_chromium_check_catches_a_broken_plot_and_a_script_error(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><html><body><figure class="plot" id="plot-x"><img src="data:image/png;base64,AAAA">'
                   f'</figure><script>{SCRIPT}</script><script>throw new Error("boom")</script></body></html>')
    dom, console = render(bad, tmp_path / "profile")
    problems = plot_problems(dom, console)
    assert any("plot x: failed" in p for p in problems)
    assert any("Uncaught Error: boom" in p for p in problems)


def _write_prereg(path: Path, run_dir: Path) -> bytes:
    from runner.plan.prereg import MARKER

    fields = {
        "question": "Does recall lift the reader over claude_md when the fact is present?",
        "predictions": [
            {"id": "P1", "text": "recall beats claude_md under present", "contrast": "recall - claude_md",
             "condition": "present", "agent": "reader", "expect": "positive"},
            {"id": "P2", "text": "placebo is no better than claude_md", "contrast": "placebo - claude_md",
             "condition": "present", "agent": "reader", "expect": "positive"}],
        "endpoints": ["checker_pass", "damage"],
        "contrasts": ["recall - claude_md"],
        "exclusion_rules": ["Cells the gate discards are excluded from pass rates."],
        "sizing": {"text": "six tasks, two seeds", "cells": 168},
        "min_effect": 0.2,
        "grid": {"name": "synthetic", "tasks": [f"task_{t}" for t in range(6)], "arms": list(ARMS), "agents": ["reader"],
                 "seeds": 2, "conditions": ["present", "superseded"], "network": "none"},
        "prices": {},
    }
    frozen = f"---\n{yaml.safe_dump(fields, sort_keys=False)}---\n\n# Synthetic\n\n{MARKER}\n"
    path.write_text(frozen)
    return frozen.encode()


def test_append_to_prereg_writes_scored_predictions_and_the_record(run_dir, tmp_path):
    from runner.plan.prereg import read_results

    prereg = tmp_path / "001-synthetic.md"
    frozen = _write_prereg(prereg, run_dir)
    result = make_report(str(run_dir), html_path=tmp_path / "r.html", prereg_path=prereg)
    assert result.analysis.min_effect == 0.2  # taken from the preregistration
    assert [s.verdict for s in result.scored] == ["confirmed", "refuted"]
    text = prereg.read_bytes()
    assert text.startswith(frozen)
    assert "**confirmed**" in text.decode() and "**refuted**" in text.decode()
    record = read_results(prereg)[-1]
    assert record["run_id"] == "synthetic-run" and record["git_commit"].startswith("0123456789")
    assert record["image_tags"]["base"] == "memgrid-base:123" and "tasks" in record["inputs"]
    assert record["per_arm_condition"]["reader/recall/present"] == {"cells": 12, "admitted": 11, "passed": 10,
                                                                     "damaged": 0, "harmed": 0}
    # superseded: bare solves task_0 (2 seeds); recall fails it there
    assert record["per_arm_condition"]["reader/recall/superseded"]["harmed"] == 2
    assert len(record["per_arm_condition"]) == len(ARMS) * 2


def test_report_command_writes_the_page_and_prints_its_path(run_dir, tmp_path):
    target = tmp_path / "out.html"
    out = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "report", str(run_dir), "--html",
                          str(target)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    assert f"report: {target}" in out.stdout
    assert "contrasts against claude_md" in out.stdout and "discarded, not scored" in out.stdout
    assert target.stat().st_size > 50_000


@pytest.fixture(scope="module")
def bare_never_passes(tmp_path_factory) -> Path:
    """The default grid's shape: bare never passes, yet the damage detector fires on recall under
    superseded (3 of 4 tasks) and on oracle_memory under adjacent (4 of 4)."""
    rows = []
    for t in range(4):
        for condition in ("superseded", "adjacent"):
            for arm in ("bare", "recall", "oracle_memory"):
                damaged = ((arm, condition) == ("recall", "superseded") and t < 3
                           or (arm, condition) == ("oracle_memory", "adjacent"))
                passed = arm == "oracle_memory" and condition == "superseded"
                rows.append(cell(f"task_{t}", arm, passed, condition=condition,
                                 outcome="damaged" if damaged else "solved" if passed else "neutral_failure"))
    return write_run(tmp_path_factory.mktemp("runs") / "bare-never-passes", rows)


def _drawn(monkeypatch, draw, analysis):
    """The matplotlib figure behind a Plot, captured as it is rendered to PNG."""
    figures, render = [], plots.png
    monkeypatch.setattr(plots, "png", lambda fig: figures.append(fig) or render(fig))
    plot = draw(analysis)
    assert len(figures) == 1
    heatmap, colour_bar = figures[0].axes
    return plot, heatmap, colour_bar


def _cell_value(ax, arms: list[str], conditions: list[str], arm: str, condition: str) -> tuple[float, str]:
    value = ax.images[0].get_array()[arms.index(arm), conditions.index(condition)]
    text = next(t.get_text() for t in ax.texts if t.get_position() == (conditions.index(condition), arms.index(arm)))
    return float(value), text


def test_the_detector_damage_figure_shows_damage_that_harm_against_bare_cannot(bare_never_passes, monkeypatch):
    a = analyse(bare_never_passes)
    arms, conditions = a.arms, a.conditions

    plot, ax, bar = _drawn(monkeypatch, plots.detector_damage_plot, a)
    assert plot.id == "damage" and "damage detector" in plot.title.lower()
    assert "damage detector" in ax.get_title() and "damage detector" in bar.get_ylabel()
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("condition", "arm")
    assert _cell_value(ax, arms, conditions, "recall", "superseded") == (pytest.approx(0.75), "3/4")
    assert _cell_value(ax, arms, conditions, "oracle_memory", "adjacent") == (pytest.approx(1.0), "4/4")
    assert _cell_value(ax, arms, conditions, "recall", "adjacent") == (0.0, "0/4")

    plot, ax, bar = _drawn(monkeypatch, plots.harm_plot, a)
    assert plot.id == "harm" and plot.title.lower().startswith("harm against bare")
    assert "harm against bare" in ax.get_title() and "harm against bare" in bar.get_ylabel()
    assert "damage" not in bar.get_ylabel()
    harm_arms = [label.get_text() for label in ax.get_yticklabels()]
    assert harm_arms == ["recall", "oracle_memory"]
    assert _cell_value(ax, harm_arms, conditions, "recall", "superseded") == (0.0, "0/4")  # bare never solves


def test_page_and_terminal_label_detector_damage_and_harm_against_bare_apart(bare_never_passes, tmp_path):
    console = Console(record=True, width=200)
    result = make_report(str(bare_never_passes), html_path=tmp_path / "r.html", console=console)
    html = result.html_path.read_text()
    damage = html[html.index('<table id="damage">'):]
    damage = damage[:damage.index("</table>")]
    assert "3/4 (0.75)" in damage and "4/4 (1.00)" in damage
    assert "<h2>Damage detector by condition</h2>" in html and "<h2>Harm against bare by condition</h2>" in html
    captions = dict(re.findall(r'id="plot-([a-z]+)".*?<figcaption>([^<]+)</figcaption>', html))
    assert captions["damage"].startswith("Damage detector") and captions["harm"].startswith("Harm against bare")

    text = " ".join(console.export_text().split())  # rich wraps a title to its table's width
    start = text.index("damage detector by condition (damaged / admitted cells)")
    detector = text[start:text.index("harm against bare by condition")]
    assert "recall 3/4 (0.75) 0/4 (0.00)" in detector and "oracle_memory 0/4 (0.00) 4/4 (1.00)" in detector
    assert "damage against" not in text


def test_a_session_stopped_at_a_cap_is_named_on_the_page_and_the_terminal(tmp_path):
    rows = [cell(f"task_{t}", arm, False, outcome="neutral_failure",
                 error_class="budget_exhausted" if (arm, t) == ("recall", 0) else None)
            for t in range(2) for arm in ("bare", "claude_md", "recall")]
    run = write_run(tmp_path / "capped", rows)
    console = Console(record=True, width=200)
    html = make_report(str(run), html_path=tmp_path / "r.html", console=console).html_path.read_text()
    table = html[html.index('<table id="budget-exhausted">'):]
    assert "<td>recall</td><td>present</td><td class=\"n\">1</td>" in table[:table.index("</table>")]
    assert "budget_exhausted: 1 reader x recall x present cells reached a session cap" in console.export_text()


def test_the_ingest_of_each_store_arm_is_a_table_of_its_own(tmp_path):
    run = write_run(tmp_path / "run", [cell("t0", "bare", False), cell("t0", "recall", True)])
    store = run / "stores" / "recall" / "present-seed0"
    store.mkdir(parents=True)
    (store / "report.json").write_text('{"seconds": 12.5, "bytes": 5242880, "documents": 4915, "model_tokens": 0}')
    html = make_report(str(run), html_path=run / "report.html").html_path.read_text()
    row = re.search(r'<table id="ingest">.*?</table>', html, re.S).group(0)
    assert all(f">{v}<" in row for v in ("recall", "4,915", "12.5", "5.0")) and ">bare<" not in row
    console = Console(record=True, width=160)
    print_terminal(analyse(run), console)
    assert "ingest per arm" in console.export_text()
    bare_only = write_run(tmp_path / "bare", [cell("t0", "bare", False)])
    assert 'id="ingest"' not in make_report(str(bare_only), html_path=bare_only / "report.html").html_path.read_text()


def test_a_task_graded_by_an_unisolated_checker_is_named_on_the_page_and_the_terminal(tmp_path, monkeypatch):
    from runner import cli

    run = write_run(tmp_path / "run", [cell("amb_x", "bare", True), cell("t0", "bare", False)])
    why = "oracle/amb/checker.py line 5: sys.path.insert can run artifact code in the judge's process"
    lock = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**lock, "unisolated_checkers": {"amb_x": why}}))
    said = (f"task amb_x: its pass rates rest on a checker that runs artifact code unisolated, as the judge who can "
            f"read the expected values ({why}); the grid accepted it by name (unisolated_checkers)")
    console = Console(record=True, width=400)
    html = make_report(str(run), html_path=run / "report.html", console=console).html_path.read_text()
    assert re.findall(r'<p class="bad unisolated">(.*?)</p>', html) == [said.replace("'", "&#x27;")]
    assert said in console.export_text()
    summary = Console(record=True, width=400)
    monkeypatch.setattr(cli, "console", summary)
    cli._print_summary(run)  # what `memgrid grid` prints when the run ends
    assert said in summary.export_text()
    plain = write_run(tmp_path / "plain", [cell("t0", "bare", False)])
    assert "unisolated" not in make_report(str(plain), html_path=plain / "report.html").html_path.read_text()
