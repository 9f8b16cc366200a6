"""Spend control: per-session caps (turns, passed to the CLI; output tokens, enforced by the gateway) that
record a cell budget_exhausted, never a plain failure; the run's budget (--max-usd) that stops scheduling,
is recorded, and lets a resume with a higher budget go on; and the estimate before a run."""

import json
from pathlib import Path

import pytest

from runner.exec.job import run_grid
from runner.plan.spec import grid_from_dict
from runner.results.ledger import latest_attempts

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
    assert row["admitted"] and proof(row, "agent_ok")["passed"], row["discard_reason"]
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
