"""Synthetic run folders for the analysis and report tests, written through the real Ledger API."""

import json
from dataclasses import fields
from pathlib import Path

from runner.results.ledger import Ledger, LedgerRow


def cell(task: str, arm: str, passed: bool | None, *, seed: int = 0, condition: str = "present", agent: str = "reader",
         admitted: bool = True, attempt: int = 1, final: bool = True, **extra) -> LedgerRow:
    """One ledger row; `passed` None with admitted=False is a discarded cell."""
    values = {f.name: None for f in fields(LedgerRow)}  # columns other helpers add later default to unobserved
    values.update(
        run_id="synthetic", cell_id=f"{agent}-{task}-{arm}-{seed}-{condition}", attempt=attempt, final=final, task=task,
        arm=arm, seed=seed, condition=condition, agent=agent, order_index=0, sandbox_image="sha256:" + "a" * 64,
        checker_image="sha256:" + "b" * 64, started_at="2026-11-29T12:00:00+00:00", ended_at="2026-11-29T12:00:01+00:00",
        wall_seconds=1.0, admitted=admitted, discard_reason=None if admitted else "mcp_not_connected", gate_proofs="[]",
        checker_passed=passed if admitted else None,
        outcome=(None if not admitted else "solved" if passed else "neutral_failure"))
    values.update(extra)
    return LedgerRow(**values)


def write_run(run_dir: Path, rows: list[LedgerRow], grid: dict | None = None) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    grid = grid or {"name": "synthetic", "agents": sorted({r.agent for r in rows}),
                    "arms": list(dict.fromkeys(r.arm for r in rows)),
                    "conditions": list(dict.fromkeys(r.condition for r in rows)),
                    "tasks": sorted({r.task for r in rows}), "seeds": max(r.seed for r in rows) + 1, "network": "none"}
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "created_at": "2026-11-29T12:00:00+00:00", "cells": len({r.cell_id for r in rows}),
        "git_commit": "0123456789abcdef0123456789abcdef01234567", "grid": grid,
        "inputs": {"tasks": {t: "d" * 64 for t in grid["tasks"]}, "arms": {a: "e" * 64 for a in grid["arms"]},
                   "images": {"base": "sha256:" + "f" * 64}, "corpora": {}},
        "image_tags": {"base": "memgrid-base:123", "sandbox": "memgrid-sandbox:456", "checker": "memgrid-checker:789"},
        "versions": {"memgrid": "0.1.0"}}))
    ledger = Ledger(run_dir)
    ledger.open()
    for r in rows:
        ledger.append(r)
    ledger.compact()
    return run_dir
