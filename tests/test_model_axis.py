"""A grid of several models (issue 71, step 1), before any engine: the spec's `models`, each model agent once per
model as a player named agent@model, cell ids that take the player's model's inputs alone, a lock that keeps each
model's entries apart, a resume on other models refused by name, and what cannot price or preregister several
models yet refused by name. tests/test_claude_code runs such a grid."""

from dataclasses import replace
from pathlib import Path

import pytest

from runner.agents.claude_code import ClaudeCodeAgent
from runner.agents.registry import agent_class, grid_players
from runner.errors import SpecError, UserError
from runner.exec.job import agent_lock_entries, check_inputs, check_models
from runner.exec.run import lock_differences
from runner.plan.estimate import estimate, estimate_models
from runner.plan.grid import GridInputs, cell_id, expand
from runner.plan.players import Player
from runner.plan.prereg import load_prereg
from runner.plan.spec import grid_from_dict, load_all_tasks

from conftest import REPO
from synthetic_ledger import cell, cell as cell_row, write_run
from test_cli_front_door import memgrid
from test_spend import GRID as SPEND_GRID, PRICES

WHERE = Path("grid.yaml")
SPEC = {"name": "axis", "tasks": ["slug_ids"], "arms": ["bare", "recall"], "agents": ["floor", "claude-code", "codex"],
        "seeds": 1, "conditions": ["present"]}
TWO = grid_from_dict({**SPEC, "models": ["scripted", "scripted-skim"]}, WHERE)


def inputs(by_model=None, agent=None) -> GridInputs:
    return GridInputs(tasks={"slug_ids": "t"}, arms={"bare": "b", "recall": "r"}, images={"sandbox": "s"}, corpora={},
                      agent=agent or {}, by_model=by_model or {})


def model_inputs(model: str, cli: str = "pin") -> dict[str, str]:
    return {"model": model, "cli": cli, "model_image": "m"}


def test_models_is_a_list_model_its_one_model_form_and_never_both():
    assert TWO.models == ("scripted", "scripted-skim") and TWO.as_dict()["models"] == ["scripted", "scripted-skim"]
    one = grid_from_dict({**SPEC, "models": ["scripted"]}, WHERE)
    assert one == grid_from_dict({**SPEC, "model": "scripted"}, WHERE) and one.model == "scripted"
    assert one.as_dict()["model"] == "scripted" and "models" not in one.as_dict()  # a one-model lock as before
    with pytest.raises(ValueError, match="names 2 models"):  # never a silent first pick
        TWO.model
    assert TWO.for_model("scripted-skim").model == "scripted-skim"
    with pytest.raises(SpecError, match="models: is set beside model"):
        grid_from_dict({**SPEC, "model": "scripted", "models": ["scripted"]}, WHERE)
    for bad in ([], ["scripted", "scripted"], ["a model"]):
        with pytest.raises(SpecError, match="models"):
            grid_from_dict({**SPEC, "models": bad}, WHERE)


def test_each_model_agent_is_a_player_per_model_and_others_stay_one():
    assert [p.name for p in grid_players(TWO, {})] == [
        "floor", "claude-code@scripted", "claude-code@scripted-skim", "codex@scripted", "codex@scripted-skim"]
    one = grid_from_dict({**SPEC, "model": "scripted"}, WHERE)
    assert [p.name for p in grid_players(one, {})] == ["floor", "claude-code", "codex"]
    assert agent_class("claude-code@scripted-skim", {}) is ClaudeCodeAgent
    assert Player("answerer", "org/model@v2", True).name == "answerer@org/model@v2"
    assert agent_class("answerer@org/model@v2", {}).name == "answerer"  # a model id may hold '@'


def test_a_players_cell_id_takes_its_own_models_inputs_alone(project):
    tasks = {t: s for t, s in load_all_tasks(project).items() if t == "slug_ids"}
    players = grid_players(TWO, {})
    given = inputs(by_model={m: model_inputs(m) for m in TWO.models})
    cells = expand(TWO, ["slug_ids"], tasks, given, grid_players=players)
    assert len(cells) == 5 * 2 and len({c.cell_id for c in cells}) == 10
    moved = expand(TWO, ["slug_ids"], tasks, replace(given, by_model={**given.by_model, "scripted-skim":
                                                                      model_inputs("scripted-skim", "other pin")}),
                   grid_players=players)
    changed = {c.agent for c, m in zip(cells, moved) if c.cell_id != m.cell_id}
    assert changed == {"claude-code@scripted-skim", "codex@scripted-skim"}
    # a one-model grid's ids are those it had before a grid could name several
    one = grid_from_dict({**SPEC, "model": "scripted"}, WHERE)
    flat = inputs(agent=model_inputs("scripted"))
    for c in expand(one, ["slug_ids"], tasks, flat, grid_players=grid_players(one, {})):
        assert c.cell_id == cell_id("slug_ids", c.arm, 0, "present", c.agent, flat, False,
                                    None if c.agent == "floor" else flat.agent)


def test_the_lock_keeps_each_models_entries_and_prices_apart():
    class Setup:
        def __init__(self, model):
            self.model = model

        def lock_entries(self):
            return {"claude_code": {"model": self.model}, "prices": {self.model: {"input": 0}}}

    two = agent_lock_entries([(Player("claude-code", m, True), Setup(m)) for m in ("scripted", "scripted-skim")])
    assert two == {"claude_code": {"scripted": {"model": "scripted"}, "scripted-skim": {"model": "scripted-skim"}},
                   "prices": {"scripted": {"input": 0}, "scripted-skim": {"input": 0}}}
    one = agent_lock_entries([(Player("claude-code", None, True), Setup("scripted"))])
    assert one == {"claude_code": {"model": "scripted"}, "prices": {"scripted": {"input": 0}}}


def test_a_resume_on_other_models_or_another_models_inputs_is_refused_by_name():
    lock = {"grid": TWO.as_dict(), "inputs": inputs(by_model={m: model_inputs(m) for m in TWO.models}).as_dict()}
    other = {"grid": grid_from_dict({**SPEC, "models": ["scripted-skim", "scripted"]}, WHERE).as_dict(),
             "inputs": lock["inputs"]}
    assert lock_differences(lock, other) == [
        "grid.models: ['scripted', 'scripted-skim'] -> ['scripted-skim', 'scripted']"]
    repinned = {**lock, "inputs": inputs(by_model={"scripted": model_inputs("scripted"),
                                                   "scripted-skim": model_inputs("scripted-skim", "new")}).as_dict()}
    assert lock_differences(lock, repinned) == ["agent input 'cli' of model scripted-skim digest pin -> new"]
    assert lock_differences(lock, lock) == []


def test_check_counts_a_player_per_model(monkeypatch, capsys):
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    code, out, err = memgrid(["grid", "--check", "--agent", "claude-code", "--model", "scripted,scripted-skim",
                              "--tasks", "slug_ids", "--arms", "bare,recall", "--conditions", "present"], monkeypatch, capsys)
    assert code == 0, out + err
    assert ": 4 cells = 1 unit x condition pairs x 4 arm x agent pairs x 1 seed(s)" in out
    code, out, err = memgrid(["grid", "--check", "--agent", "claude-code", "--model", "scripted,a model"], monkeypatch, capsys)
    assert code == 2 and err.startswith("memgrid: (command line): --model:"), out + err


def test_the_estimate_of_several_models_is_each_models_from_its_own_source_and_their_total(tmp_path):
    """Each live model is estimated apart, from a live run of that model when one holds the cells (here test-live's
    cells of a two-model live run), else from the scripted cells of a run (here the two-model scripted run's
    `scripted` players, not its scripted-skim ones); a scripted model of the grid costs nothing."""
    runs = tmp_path / "runs"
    scripted_rows = [cell("slug_ids", arm, False, condition=c, agent=f"claude-code@{m}", model=m, cost_usd=0.0,
                          tokens_fresh_input=n, tokens_cache_read=0, tokens_cache_creation=0, tokens_output=400)
                     for m, n in (("scripted", 60_000), ("scripted-skim", 1)) for arm in SPEND_GRID["arms"]
                     for c in SPEND_GRID["conditions"]]
    write_run(runs / "src-scripted", scripted_rows, {**SPEND_GRID, "tasks": ["slug_ids"], "models": ["scripted", "scripted-skim"]})
    live_rows = [cell("slug_ids", arm, False, condition=c, agent=f"claude-code@{m}", model=m, cost_usd=0.5,
                      tokens_fresh_input=1_000, tokens_cache_read=0, tokens_cache_creation=0, tokens_output=100)
                 for m in ("test-live", "test-other") for arm in SPEND_GRID["arms"] for c in SPEND_GRID["conditions"]]
    write_run(runs / "src-live", live_rows, {**SPEND_GRID, "tasks": ["slug_ids"], "models": ["test-live", "test-other"]})
    dear = {**PRICES["test-live"], "input": 6.0, "output": 30.0, "cache_read": 0.6, "cache_creation": 7.5}
    grid = grid_from_dict({**SPEND_GRID, "models": ["test-live", "test-dear", "scripted"],
                           "prices": {**PRICES, "test-dear": dear}}, WHERE)
    live, dearer = estimate_models(grid, WHERE, REPO, runs, allowance=1000)
    assert (live.model, dearer.model) == ("test-live", "test-dear")
    assert live.source == "live run src-live of test-live" and (live.cells, live.matched) == (4, 4)
    assert live.tokens == {"fresh_input": 4 * 1_000, "cache_read": 0, "cache_creation": 0, "output": 4 * 100}
    assert dearer.source.startswith("scripted-model run src-scripted")
    # the scripted players' 60,000 tokens a cell (one request: all of it written to the cache), not the skim ones'
    assert dearer.tokens == {"fresh_input": 0, "cache_read": 0, "cache_creation": 4 * 60_000, "output": 4 * 1000}
    with pytest.raises(UserError, match="models scripted, scripted-skim cost nothing"):
        estimate_models(TWO, WHERE, REPO, runs)


def test_one_models_estimate_is_never_asked_of_a_grid_of_several(tmp_path):
    with pytest.raises(ValueError, match="names 2 models"):  # estimate_models asks it of each model
        estimate(TWO, WHERE, REPO, tmp_path)


PRICE = {"input": 3, "output": 15, "cache_read": 0.3, "cache_creation": 3.75, "as_of": "2026-11-01", "source": "test"}


def test_each_live_model_is_priced_and_one_its_agent_can_reach_before_the_engine(monkeypatch):
    monkeypatch.delenv("MEMGRID_MODEL_UPSTREAM", raising=False)
    prices = {"claude-sonnet-4-5": PRICE, "gpt-5": PRICE}
    cc = {**SPEC, "agents": ["claude-code"], "prices": prices}
    check_models(grid_from_dict({**cc, "models": ["scripted", "claude-sonnet-4-5"]}, WHERE), WHERE, {})
    with pytest.raises(SpecError, match=r"prices\.claude-haiku-4-5: is missing"):  # each model priced, not the first
        check_models(grid_from_dict({**cc, "models": ["claude-sonnet-4-5", "claude-haiku-4-5"]}, WHERE), WHERE, {})
    with pytest.raises(SpecError, match=r"grid\.yaml: models: pairs the codex agent with a model it cannot reach: "
                                        r"claude-sonnet-4-5 is served at https://api\.anthropic\.com"):
        check_models(grid_from_dict({**cc, "agents": ["codex"], "models": ["gpt-5", "claude-sonnet-4-5"]}, WHERE), WHERE, {})
    with pytest.raises(SpecError, match=r"model: pairs the claude-code agent with a model it cannot reach: gpt-5"):
        check_models(grid_from_dict({**cc, "model": "gpt-5"}, WHERE), WHERE, {})
    # an agent without a model is not asked; a compatible upstream may serve any family
    check_models(grid_from_dict({**cc, "agents": ["reader"], "model": "gpt-5"}, WHERE), WHERE, {})
    monkeypatch.setenv("MEMGRID_MODEL_UPSTREAM", "http://127.0.0.1:9")
    check_models(grid_from_dict({**cc, "model": "gpt-5"}, WHERE), WHERE, {})


def test_a_preregistered_prediction_names_the_model_its_agent_runs_on(tmp_path):
    from test_prereg import fields, one_line_error, write

    two = {"name": "tiny", "tasks": ["slug_ids"], "arms": ["bare", "recall"], "agents": ["reader", "claude-code"],
           "models": ["scripted", "scripted-skim"], "seeds": 1, "conditions": ["present"], "network": "none"}

    def prediction(**p):
        return [{"id": "P1", "text": "recall helps", "contrast": "recall - bare", "condition": "present",
                 "agent": "claude-code", "expect": "positive", **p}]

    def prereg(name, **p):
        return write(tmp_path / f"{name}.md", fields(grid=two, predictions=prediction(**p), contrasts=["recall - bare"],
                                                     sizing={"text": "s", "cells": 6}))

    assert load_prereg(prereg("ok", model="scripted-skim")).predictions[0]["model"] == "scripted-skim"
    assert "predictions[0].model: is missing: the grid runs claude-code on 2 models" in one_line_error(prereg("none"))
    assert "predictions[0].model: 'other' is not among the grid's models" in one_line_error(prereg("other", model="other"))
    assert "predictions[0].model: is set, and agent reader runs on no model" in \
        one_line_error(prereg("reader", agent="reader", model="scripted"))


def test_reproduce_checks_each_models_cli_and_model_and_compares_model_images_by_recipe():
    from runner.plan.reproduce import Original, drift

    prereg = load_prereg(REPO / "preregistration" / "001-default-reader.md")
    by_model = {m: {"model": m, "cli": "pin", "model_image": f"sha256:{m}-here"} for m in ("scripted", "scripted-skim")}
    inputs = {"tasks": {"t": "a" * 64}, "arms": {"bare": "b" * 64}, "images": {"sandbox": "sha256:1"}, "corpora": {},
              "agent": {}, "by_model": by_model}
    entries = {m: {"cli": {"version": "1.0"}, "model": m} for m in by_model}
    original = {"grid": {"name": "g", "models": list(by_model)}, "inputs": inputs, "image_recipes": {"model": "r"},
                "claude_code": entries, "preregistration": {"sha256": prereg.frozen_sha256}}
    elsewhere = {**original, "inputs": {**inputs, "by_model": {m: {**i, "model_image": f"sha256:{m}-there"}
                                                               for m, i in by_model.items()}}}
    ref = Original("test", "r", original, None, [], {})
    assert drift(ref, prereg, elsewhere) == []  # model images rebuilt from the same recipe
    repinned = {**elsewhere, "claude_code": {**entries, "scripted-skim": {"cli": {"version": "2.0"}, "model": "scripted-skim"}}}
    assert drift(ref, prereg, repinned) == ["claude-code on model scripted-skim cli {'version': '1.0'} -> {'version': '2.0'}"]


class FakeExecutor:
    """Runs each submitted cell at once at a cost per model, one slot: what the scheduler decides is all there is."""
    slots = 1

    def __init__(self, cost: dict[str, float]):
        self.cost, self.handles, self.started = cost, {}, []

    def submit(self, cell, attempt):
        self.started.append(cell.agent)
        self.handles[len(self.handles)] = (cell, attempt)
        return len(self.handles) - 1

    def wait(self, handles, timeout):
        return handles

    def result(self, handle):
        cell, attempt = self.handles[handle]
        return cell_row(cell.task, cell.arm, True, agent=cell.agent, attempt=attempt, cost_usd=self.cost[cell.agent])


def test_a_models_cap_stops_its_cells_and_lets_the_other_models_run(tmp_path):
    from types import SimpleNamespace

    from runner.exec.run import Scheduler, SpendCaps
    from runner.plan.grid import CellSpec
    from runner.results.ledger import Ledger

    cells = [CellSpec(f"t{i}", "bare", 0, "present", agent, f"{agent}-{i}", n)
             for n, (i, agent) in enumerate((i, a) for i in range(4) for a in ("claude-code@dear", "claude-code@cheap"))]
    executor = FakeExecutor({"claude-code@dear": 0.4, "claude-code@cheap": 0.1})
    ledger = Ledger(tmp_path)
    ledger.open()
    caps = SpendCaps.of(None, {"dear": 1.0})
    scheduler = Scheduler(SimpleNamespace(), ledger, executor, lambda row: None, caps)
    scheduler.run(cells, {})
    # dear: one cell alone until priced (0.4), then one more (0.4 + 2 x 0.4 > 1.0 stops the third); cheap: all four
    assert executor.started.count("claude-code@dear") == 2 and executor.started.count("claude-code@cheap") == 4
    stop = scheduler.budget_stop
    assert stop["cells_left"] == 2 and set(stop["models"]) == {"dear"} and stop["models"]["dear"]["budget_usd"] == 1.0
    assert stop["detail"].startswith("model dear: spent $0.8000 of $1.0000")
    # a cap over all the models stops them all; the record says the total did
    executor = FakeExecutor({"claude-code@dear": 0.4, "claude-code@cheap": 0.1})
    scheduler = Scheduler(SimpleNamespace(), ledger, executor, lambda row: None, SpendCaps.of(0.55, None))
    scheduler.run(cells, {})
    assert len(executor.started) == 1  # 0.4 spent, and a next cell at the dearest so far would pass 0.55
    assert scheduler.budget_stop["budget_usd"] == 0.55 and scheduler.budget_stop["cells_left"] == 7
    assert "models" not in scheduler.budget_stop


def test_a_cap_per_model_needs_a_grid_of_several_and_names_its_models(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    one = {**SPEC, "agents": ["claude-code"], "model": "scripted", "budgets_usd": {"scripted": 1}}
    with pytest.raises(SpecError, match=r"budgets_usd\.scripted: is set on a grid of one model"):
        check_inputs(grid_from_dict(one, WHERE), WHERE, REPO)
    two = {**SPEC, "agents": ["claude-code"], "models": ["scripted", "scripted-skim"], "budgets_usd": {"other": 1}}
    with pytest.raises(SpecError, match=r"budgets_usd\.other: names no model of the grid"):
        check_inputs(grid_from_dict(two, WHERE), WHERE, REPO)
    check_inputs(grid_from_dict({**two, "budgets_usd": {"scripted-skim": 1}}, WHERE), WHERE, REPO)
    lock = {"grid": grid_from_dict({**two, "budgets_usd": {"scripted": 1}}, WHERE).as_dict(), "inputs": {}}
    raised = {"grid": grid_from_dict({**two, "budgets_usd": {"scripted": 5}}, WHERE).as_dict(), "inputs": {}}
    assert lock_differences(lock, raised) == []  # a resume may raise a model's cap, as the run's
