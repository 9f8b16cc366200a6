"""Spend control: per-session caps (turns, passed to the CLI; output tokens, enforced by the gateway) that
record a cell budget_exhausted, never a plain failure; the run's budget (--max-usd) that stops scheduling,
is recorded, and lets a resume with a higher budget go on; and the estimate before a run."""

import json
from pathlib import Path

import pytest

from runner.exec.job import run_grid
from runner.plan.spec import grid_from_dict
from runner.results.ledger import latest_attempts

from conftest import model_upstream

REPO = Path(__file__).resolve().parent.parent


def run(run_id, tmp_path, **spec) -> tuple[list[dict], Path]:
    grid = grid_from_dict({"name": "spend", "tasks": ["slug_ids"], "arms": ["recall"], "agents": ["claude-code"], "seeds": 1,
                           "conditions": ["present"], "model": "scripted", **spec}, Path("(test grid)"))
    outcome = run_grid(grid, Path("(test grid)"), root=REPO, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=1,
                       progress=False, log=lambda m: None)
    rows = list(latest_attempts([json.loads(line) for line in (outcome.run_dir / "ledger.jsonl").open()]).values())
    return rows, outcome.run_dir


def proof(row, name) -> dict:
    return next(p for p in json.loads(row["gate_proofs"]) if p["name"] == name)


@pytest.mark.parametrize("limits, detail", [({"max_turns": 2}, "turn cap (--max-turns)"),
                                            ({"max_output_tokens": 30}, "output-token cap of 30")])
def test_a_session_at_its_cap_is_budget_exhausted_and_still_scored(engine, images, run_id, tmp_path, no_leftovers,
                                                                   limits, detail):
    (row,), run_dir = run(run_id, tmp_path, limits=limits)
    assert row["error_class"] == "budget_exhausted" and detail in row["error_detail"], (row["error_class"], row["error_detail"])
    assert row["admitted"] and proof(row, "agent_ended")["passed"], row["discard_reason"]
    assert row["checker_passed"] is False and row["outcome"] == "neutral_failure"  # graded: it stopped before writing
    gateway = [json.loads(line) for line in (run_dir / "cells" / row["cell_id"] / "gateway.jsonl").open()]
    if "max_output_tokens" in limits:
        stopped = [g for g in gateway if g["kind"] == "budget"]
        assert stopped and stopped[0]["output_tokens"] >= 30
        assert sum(g.get("output_tokens", 0) for g in gateway if g["kind"] == "model") == stopped[0]["output_tokens"]
    else:
        assert len([g for g in gateway if g["kind"] == "model"]) <= 3


def test_without_a_cap_the_same_session_finishes(engine, images, run_id, tmp_path, no_leftovers):
    (row,), _ = run(run_id, tmp_path)
    assert row["error_class"] is None and row["admitted"]


# ---------------------------------------------------------------- a live model: estimate and budget

PRICES = {"test-live": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_creation": 3.75, "as_of": "2026-12-01",
                        "source": "test prices (a provider's published shape)"}}
KEY = "sk-ant-test-" + "5e" * 12
GRID = {"name": "spend-live", "tasks": ["slug_ids"], "arms": ["bare", "claude_md"], "agents": ["claude-code"], "seeds": 1,
        "conditions": ["present", "superseded"]}


@pytest.fixture
def live_upstream(engine, images, run_id, monkeypatch):
    """A model server this test owns on this machine's bridge network, playing the task's session and reporting
    usage as a provider with prompt caching does; the gateway forwards to it as to a live provider."""
    from runner.agents.script import build_script
    from runner.plan.spec import load_all_arms, load_all_tasks

    script = build_script(load_all_tasks(REPO)["slug_ids"], load_all_arms(REPO)["claude_md"], None, "present", 0)
    with model_upstream(engine, images, run_id, script, {"MEMGRID_MODEL_USAGE": "cached"}) as (upstream, url):
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("MEMGRID_MODEL_UPSTREAM", url)
        yield upstream


def grid_run(run_id, runs_dir, **spec):
    grid = grid_from_dict({**GRID, **spec}, Path("(test grid)"))
    return run_grid(grid, Path("(test grid)"), root=REPO, run_id=run_id, runs_dir=runs_dir, concurrency=1, progress=False,
                    log=lambda m: None)


def spend(run_dir: Path) -> list[float]:
    return [r["cost_usd"] for r in latest_attempts([json.loads(l) for l in (run_dir / "ledger.jsonl").open()]).values()
            if r["final"]]


def test_estimate_then_a_budget_stop_then_a_resume_with_more(engine, images, run_id, tmp_path, no_leftovers, live_upstream):
    from runner.plan.estimate import estimate

    runs = tmp_path / "runs"
    scripted = grid_run(f"{run_id}-scripted", runs, model="scripted").run_dir
    live_grid = grid_from_dict({**GRID, "model": "test-live", "prices": PRICES}, Path("(test grid)"))
    guess = estimate(live_grid, Path("(test grid)"), REPO, runs, allowance=300)
    assert guess.source.startswith(f"scripted-model run {scripted.name}") and guess.matched == guess.cells == 4
    assert guess.usd_low <= guess.usd <= guess.usd_high and guess.tokens["cache_read"] > 0

    budget = round(2.5 * guess.usd / guess.cells, 6)  # room for two cells, not three
    stopped = grid_run(run_id, runs, model="test-live", prices=PRICES, budget_usd=budget)
    costs = spend(stopped.run_dir)
    stop = stopped.summary.budget_stop
    assert stop is not None and 0 < len(costs) < 4, (costs, stop)
    assert sum(costs) <= budget < sum(costs) + max(costs)  # it stopped within one cell's cost of its budget
    lock = json.loads((stopped.run_dir / "run.json").read_text())
    assert lock["budget_stops"] == [stop] and stop["cells_left"] == 4 - len(costs) and stop["budget_usd"] == budget

    resumed = grid_run(run_id, runs, model="test-live", prices=PRICES, budget_usd=budget * 10)
    assert resumed.summary.budget_stop is None and resumed.summary.skipped == len(costs) and resumed.unfinished == 0
    actual = sum(spend(resumed.run_dir))
    assert guess.usd_low <= actual <= guess.usd_high, (guess, actual)
    from runner.results.view import build_site

    site = build_site(resumed.run_dir, tmp_path / "site", REPO).index.parent
    for path in [*resumed.run_dir.rglob("*"), *site.rglob("*")]:  # the key reached the gateway only
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path
    print(f"estimate ${guess.usd:.4f} [{guess.usd_low:.4f}, {guess.usd_high:.4f}] vs actual ${actual:.4f}: "
          f"ratio actual/estimate {actual / guess.usd:.3f}; budget ${budget:.4f} stopped at ${sum(costs):.4f} "
          f"after {len(costs)} cells")


def test_two_live_models_are_estimated_and_spent_each_at_its_own_prices(engine, images, run_id, tmp_path, no_leftovers,
                                                                        live_upstream):
    """A grid of two live models (the same upstream, priced apart): each model's estimate from the scripted run, each
    model's cells priced at its own prices, the spend per model within its estimate's range."""
    from runner.plan.estimate import estimate_models
    from runner.results.analysis import analyse

    runs = tmp_path / "runs"
    grid_run(f"{run_id}-scripted", runs, model="scripted")
    prices = {**PRICES, "test-dear": {**PRICES["test-live"], "input": 6.0, "output": 30.0, "cache_read": 0.6,
                                      "cache_creation": 7.5}}
    two = {"models": ["test-live", "test-dear"], "prices": prices}
    guesses = {e.model: e for e in estimate_models(grid_from_dict({**GRID, **two}, Path("(test grid)")),
                                                   Path("(test grid)"), REPO, runs, allowance=300)}
    assert list(guesses) == ["test-live", "test-dear"] and all(e.matched == e.cells == 4 for e in guesses.values())
    ran = grid_run(run_id, runs, **two)
    spent = {m.model: m.cost_usd for m in analyse(ran.run_dir, resamples=200).spend_by_model}
    assert set(spent) == {"test-live", "test-dear"} and spent["test-dear"] > spent["test-live"] > 0
    for model, guess in guesses.items():
        assert guess.usd_low <= spent[model] <= guess.usd_high, (model, guess, spent[model])
    print("; ".join(f"{m}: estimate ${g.usd:.4f} [{g.usd_low:.4f}, {g.usd_high:.4f}] vs spent ${spent[m]:.4f} "
                    f"(ratio {spent[m] / g.usd:.3f})" for m, g in guesses.items()))


def test_a_budget_without_a_priced_model_is_refused(tmp_path):
    from runner.errors import SpecError

    with pytest.raises(SpecError, match="budget_usd: is set, but no agent of this grid has a priced model"):
        grid_run("never-runs", tmp_path / "runs", agents=["reader"], budget_usd=1.0)


# ---------------------------------------------------------------- without Docker

def test_the_budget_admits_one_cell_until_one_is_priced_then_stops_before_passing_it():
    from runner.exec.run import Budget

    budget = Budget(1.0)
    assert budget.allows(0) and not budget.allows(1)  # nothing priced yet: one cell at a time
    budget.add(0.3)
    assert budget.allows(1) and not budget.allows(2)  # a third cell in flight: 0.3 spent + 3 x 0.3 = 1.2 > 1.0
    budget.add(None)  # a cell whose cost went unobserved counts at the dearest so far
    assert budget.spent_usd == pytest.approx(0.6) and budget.allows(0) and not budget.allows(1)
    assert "spent $0.6000 of $1.0000" in budget.stop_record(5)["detail"]


def test_a_resume_may_raise_the_budget_but_not_change_the_grid():
    from runner.exec.run import lock_differences

    old = {"grid": {"arms": ["bare"], "budget_usd": 1.0}, "inputs": {}}
    assert lock_differences(old, {"grid": {"arms": ["bare"], "budget_usd": 5.0}, "inputs": {}}) == []
    assert lock_differences(old, {"grid": {"arms": ["recall"], "budget_usd": 1.0}, "inputs": {}}) != []


def _scripted_source(runs: Path) -> Path:
    from synthetic_ledger import cell, write_run

    rows = [cell("slug_ids", arm, False, condition=c, agent="claude-code", model="scripted", tokens_fresh_input=60_000,
                 tokens_cache_read=0, tokens_cache_creation=0, tokens_output=400, cost_usd=0.0)
            for arm in GRID["arms"] for c in GRID["conditions"]]
    run = write_run(runs / "src-scripted", rows, grid={**GRID, "tasks": ["slug_ids"], "model": "scripted"})
    for r in rows:  # three requests of 10k, 20k and 30k input tokens each
        (run / "cells" / r.cell_id).mkdir(parents=True)
        (run / "cells" / r.cell_id / "model_requests.jsonl").write_text(
            "".join(json.dumps({"n": i, "step": "search", "input_tokens": t}) + "\n" for i, t in enumerate((10_000, 20_000, 30_000))))
    return run


def test_the_estimate_from_a_scripted_run_reads_its_requests_as_a_caching_provider_bills(tmp_path):
    from runner.plan.estimate import estimate

    _scripted_source(tmp_path / "runs")
    grid = grid_from_dict({**GRID, "model": "test-live", "prices": PRICES}, Path("(test grid)"))
    e = estimate(grid, Path("(test grid)"), REPO, tmp_path / "runs", allowance=1000)
    assert (e.cells, e.matched) == (4, 4) and e.source.startswith("scripted-model run src-scripted")
    # per cell: reads 10k + 20k of the predecessors' prompts, writes 10k + 10k + 10k; output max(1000, 400)
    assert e.tokens == {"fresh_input": 0, "cache_read": 4 * 30_000, "cache_creation": 4 * 30_000, "output": 4 * 1000}
    assert e.usd == pytest.approx(4 * (30_000 * 0.3 + 30_000 * 3.75 + 1000 * 15) / 1e6)
    assert e.usd_low == pytest.approx(4 * (10_000 * 3.0 + 50_000 * 0.3 + 400 * 15) / 1e6)
    assert e.usd_high == pytest.approx(4 * (60_000 * 3.75 + 2000 * 15) / 1e6)


def test_the_estimate_reads_requests_that_stand_alone_as_fresh_input(tmp_path, monkeypatch):
    """The personal protocol's answerer sends one request per question, none resending another: no prompt cache to
    read from, so the scripted run's input is fresh input at every end of the range (here the coding cells' agent is
    made to declare the same, so the same rows price the other way)."""
    from runner.agents.claude_code import ClaudeCodeAgent
    from runner.plan.estimate import estimate

    _scripted_source(tmp_path / "runs")
    monkeypatch.setattr(ClaudeCodeAgent, "independent_requests", True)
    grid = grid_from_dict({**GRID, "model": "test-live", "prices": PRICES}, Path("(test grid)"))
    e = estimate(grid, Path("(test grid)"), REPO, tmp_path / "runs", allowance=1000)
    assert e.tokens == {"fresh_input": 4 * 60_000, "cache_read": 0, "cache_creation": 0, "output": 4 * 1000}
    assert e.usd == pytest.approx(4 * (60_000 * 3.0 + 1000 * 15) / 1e6)
    assert (e.usd_low, e.usd_high) == (pytest.approx(4 * (60_000 * 3.0 + 400 * 15) / 1e6),
                                       pytest.approx(4 * (60_000 * 3.0 + 2000 * 15) / 1e6))
    assert "each answer request's, as fresh input" in e.source and "prompt caching" not in e.source


def test_grid_estimate_prints_tokens_usd_and_its_source_and_refuses_a_free_model(tmp_path):
    import subprocess
    import sys

    import yaml

    _scripted_source(tmp_path / "runs")
    spec = tmp_path / "live.yaml"
    spec.write_text(yaml.safe_dump({**GRID, "model": "test-live", "prices": PRICES}))

    def memgrid(*args):
        return subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "grid", "--spec", str(spec),
                               "--runs-dir", str(tmp_path / "runs"), "--estimate", *args], capture_output=True, text=True,
                              cwd=REPO, timeout=120)

    out = memgrid("--output-allowance", "1000")
    assert out.returncode == 0, out.stderr
    assert "USD: 0.55 (range 0.20 – 1.02)" in out.stdout and "from the scripted-model run src-scripted" in out.stdout
    assert "4 of 4 cells matched" in out.stdout
    free = memgrid("--model", "scripted")
    assert free.returncode == 2 and "costs nothing" in free.stderr and "Traceback" not in free.stderr


def test_grid_stopped_at_its_budget_says_so_and_how_to_go_on(engine, images, run_id, tmp_path, no_leftovers, live_upstream):
    import subprocess
    import sys

    import yaml

    spec = tmp_path / "live.yaml"
    spec.write_text(yaml.safe_dump({**GRID, "arms": ["bare"], "model": "test-live", "prices": PRICES}))
    out = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "grid", "--spec", str(spec),
                          "--run-id", run_id, "--runs-dir", str(tmp_path / "runs"), "--concurrency", "1", "--no-progress",
                          "--max-usd", "0.01"], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    stops = json.loads((tmp_path / "runs" / run_id / "run.json").read_text())["budget_stops"]
    assert len(stops) == 1 and stops[0]["cells_left"] == 1  # the first cell runs to learn the price; the second would pass it
    said = " ".join(out.stderr.split())
    assert "stopped at its budget: spent $" in said and f"memgrid grid --run-id {run_id} --max-usd <a higher budget>" in said
    assert "harness errors" not in said
