"""A grid of several models, analysed by model (issue 71, step 3), on synthetic ledgers with numbers checkable by
hand: each contrast per model side by side, each model's difference from the first over the pairs admitted on both,
never one delta pooled from two models; each model's spend."""

import io
import json
import re

import pytest
from rich.console import Console

from runner.errors import UserError
from runner.results.analysis import analyse
from runner.results.report import make_report
from conftest import REPO
from synthetic_ledger import cell, write_run

TASKS = [f"t{i}" for i in range(6)]
MODELS = ["strong", "weak"]


def grid(agents=("claude-code",), models=MODELS) -> dict:
    return {"name": "axis", "agents": list(agents), "models": list(models), "arms": ["claude_md", "recall"],
            "conditions": ["present"], "tasks": TASKS, "seeds": 1, "network": "none"}


def rows(recall_passes: dict[str, int], agent="claude-code", discard=None, **extra) -> list:
    """claude_md fails everywhere; recall passes the first n tasks on each model. `discard`: (model, task) of a recall
    cell discarded."""
    out = []
    for model, n in recall_passes.items():
        player = f"{agent}@{model}"
        for i, t in enumerate(TASKS):
            out.append(cell(t, "claude_md", False, agent=player, model=model, **extra))
            admitted = discard != (model, t)
            out.append(cell(t, "recall", i < n if admitted else None, agent=player, model=model, admitted=admitted,
                            **extra))
    return out


def test_each_models_effect_side_by_side_and_its_difference_from_the_first(tmp_path):
    run = write_run(tmp_path / "r", rows({"strong": 5, "weak": 2}), grid())
    a = analyse(run, resamples=2000)
    assert a.agents == ["claude-code@strong", "claude-code@weak"]
    [effect] = [e for e in a.across_models if e.name == "recall - claude_md"]
    assert effect.agent == "claude-code" and effect.models == ("strong", "weak")
    assert [s.delta for s in effect.effects] == pytest.approx([5 / 6, 2 / 6])
    assert effect.interactions[0] is None
    weak = effect.interactions[1]
    assert (weak.pairs, weak.tasks, weak.label) == (6, 6, "negative") and weak.delta == pytest.approx(-3 / 6)
    assert weak.low < weak.delta < weak.high <= 0
    # no pooled figure: no contrast of the bare agent exists, each is a model's
    assert {c.agent for c in a.contrasts} == {"claude-code@strong", "claude-code@weak"}


def test_the_difference_takes_only_pairs_admitted_on_both_models(tmp_path):
    run = write_run(tmp_path / "r", rows({"strong": 6, "weak": 6}, discard=("weak", "t0")), grid())
    [effect] = [e for e in analyse(run, resamples=500).across_models if e.name == "recall - claude_md"]
    assert [s.pairs for s in effect.effects] == [6, 5]
    assert effect.interactions[1].pairs == 5 and effect.interactions[1].delta == 0 and effect.interactions[1].label == "noise"


def test_a_one_model_grid_has_no_view_by_model(tmp_path):
    one = [cell(t, arm, arm == "recall", agent="claude-code", model="strong") for t in TASKS for arm in ("claude_md", "recall")]
    run = write_run(tmp_path / "r", one, {**{k: v for k, v in grid().items() if k != "models"}, "model": "strong"})
    a = analyse(run, resamples=200)
    assert a.contrasts and not a.across_models and not a.spend_by_model


def test_spend_is_summed_per_model_and_unpriced_when_any_cell_is(tmp_path):
    priced = rows({"strong": 3, "weak": 3}, tokens_fresh_input=100, tokens_output=10, cost_usd=0.5)
    run = write_run(tmp_path / "r", priced, grid())
    spend = {m.model: m for m in analyse(run, resamples=200).spend_by_model}
    assert list(spend) == MODELS
    assert spend["strong"].cells == 12 and spend["strong"].passed == 3
    assert spend["strong"].tokens["tokens_fresh_input"] == 1200 and spend["strong"].cost_usd == pytest.approx(6.0)
    assert spend["weak"].tokens["tokens_cache_read"] is None  # never observed, not zero
    priced[0] = cell("t0", "claude_md", False, agent="claude-code@strong", model="strong")  # one cell unpriced
    run = write_run(tmp_path / "r2", priced, grid())
    strong = analyse(run, resamples=200).spend_by_model[0]
    assert strong.cost_usd is None and strong.cost_reason == "1 of 12 cells unpriced"


def test_the_report_shows_the_models_side_by_side(tmp_path):
    run = write_run(tmp_path / "r", rows({"strong": 5, "weak": 2}, tokens_fresh_input=100, cost_usd=0.5), grid())
    console = Console(file=io.StringIO(), width=200)
    make_report(str(run), html_path=tmp_path / "report.html", console=console)
    out = console.file.getvalue()
    assert "does the memory effect hold across models" in out and "weak − strong" in out
    assert "-0.50 [" in out and "costs per model" in out
    html = (tmp_path / "report.html").read_text()
    assert 'id="across-models"' in html and 'id="costs-by-model"' in html and "+0.83 [" in html
    lock = json.loads((run / "run.json").read_text())
    assert lock["grid"]["models"] == MODELS


def test_the_view_site_filters_by_model(tmp_path):
    from runner.results import view

    run = write_run(tmp_path / "r", rows({"strong": 5, "weak": 2}), grid())
    index = view.build_site(run, tmp_path / "site", REPO).index.read_text()
    assert re.search(r'<select data-filter="model"><option value="">all</option><option>strong</option>'
                     r'<option>weak</option></select>', index)
    assert len(re.findall(r'<tr [^>]*data-model="weak"', index)) == 12 and "model strong, weak" in index


def test_compare_pairs_within_a_model_and_names_one_models_drifted_inputs(tmp_path):
    from runner.results.compare import compare_runs

    for name, weak in (("a", 2), ("b", 4)):
        run = write_run(tmp_path / "runs" / name, rows({"strong": 5, "weak": weak}), grid())
        lock = json.loads((run / "run.json").read_text())
        lock["inputs"]["by_model"] = {m: {"model": m, "cli": "pin"} for m in MODELS}
        (run / "run.json").write_text(json.dumps(lock))
    comparison = compare_runs("a", "b", tmp_path / "runs", arm="recall")
    deltas = {g.agent: g.pp.delta for g in comparison.groups}
    assert deltas == {"claude-code@strong": 0, "claude-code@weak": pytest.approx(2 / 6)}
    lock = json.loads((tmp_path / "runs" / "b" / "run.json").read_text())
    lock["inputs"]["by_model"]["weak"]["cli"] = "other"
    (tmp_path / "runs" / "b" / "run.json").write_text(json.dumps(lock))
    with pytest.raises(UserError, match="agent input 'cli' of model weak digest pin in run A, other in run B"):
        compare_runs("a", "b", tmp_path / "runs", arm="recall")


def test_a_prediction_naming_a_model_is_scored_on_that_models_cells(tmp_path):
    from runner.results.analysis import score_predictions

    run = write_run(tmp_path / "r", rows({"strong": 6, "weak": 0}), grid())
    a = analyse(run, resamples=500)
    predict = {"id": "P1", "text": "recall helps", "contrast": "recall - claude_md", "condition": "present",
               "agent": "claude-code", "expect": "positive"}
    strong, weak, unnamed = score_predictions(a, [{**predict, "model": "strong"}, {**predict, "id": "P2", "model": "weak"},
                                                  {**predict, "id": "P3"}])
    assert (strong.agent, strong.verdict, strong.delta) == ("claude-code@strong", "confirmed", 1.0)
    assert (weak.agent, weak.verdict, weak.delta) == ("claude-code@weak", "refuted", 0.0)
    assert unnamed.verdict == "inconclusive" and "no contrast" in unnamed.why  # never a pooled or a first model's
