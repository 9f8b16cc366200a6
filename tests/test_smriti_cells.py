"""SMRITI's tasks run as published in the planted protocol, in real containers: its memories planted through
recall's own write API, its fixture (a folder, or a git fixture's tree) in the sandbox without hidden/, and its
own check_cmd run in the checker container over the workspace with hidden/ laid over it: with memory on the
reader follows the planted convention and the check passes; off, the fixture's plausible greeting passes the
visible test and fails hidden/'s."""

import io
import json
import tarfile
from pathlib import Path

import pytest

from runner.env.images import ensure_arm_image
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms
from runner.protocols.planted.protocol import PlantedProtocol
from runner.sources.registry import HostedSuite, source_format

from conftest import REPO
from smriti_fixture import write_smriti


@pytest.fixture
def ctx(engine, images, tmp_path, run_id) -> TrialContext:
    project = tmp_path / "project"
    (project / "tasks").mkdir(parents=True)
    write_smriti(tmp_path / "chitta")
    source_format("smriti").import_source(tmp_path / "chitta", project, "smriti", log=lambda m: None)
    recall = ensure_arm_image(engine, REPO / "arms" / "recall", images.sandbox, log=lambda m: None)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, {}, load_all_arms(REPO), images_by_arm={"recall": recall},
                       protocol=PlantedProtocol(), protocol_setup=HostedSuite("smriti", "smriti"), root=project)
    ctx.run_dir.mkdir(parents=True)
    return ctx


def cell(task: str, condition: str) -> CellSpec:
    return CellSpec(task, "recall", 0, condition, "reader", f"reader-{task}-{condition}", 0)


def test_smriti_tasks_pass_their_own_check_with_memory_on_and_fail_it_off(ctx, no_leftovers):
    rows = {(t, c): ctx.protocol.run_cell(ctx, cell(t, c), 1) for t, c in
            (("sm-folder", "on"), ("sm-folder", "off"), ("sm-git", "on"))}
    for key, row in rows.items():
        assert row.admitted and row.final, (key, row.discard_reason, row.error_detail)
    assert rows["sm-folder", "on"].checker_passed and rows["sm-git", "on"].checker_passed, \
        [r.checker_detail for r in rows.values()]
    assert not rows["sm-folder", "off"].checker_passed
    for (task, condition), row in rows.items():
        cell_dir = ctx.run_dir / "cells" / row.cell_id
        log = (cell_dir / "checker.log").read_text()
        assert ("SUMMARY check_cmd exited 0: pass" if row.checker_passed else "SUMMARY check_cmd exited 1: FAIL") in log
        assert "test_hidden.py" not in (cell_dir / "bundle.manifest").read_text()  # hidden/ never in the sandbox
        with tarfile.open(fileobj=io.BytesIO((cell_dir / "artifact.tar").read_bytes())) as tar:
            assert "test_hidden.py" not in tar.getnames() and "test_app.py" in tar.getnames()
        result = json.loads(row.result)
        assert result["split"] == {"sm-folder": "visible", "sm-git": "holdout"}[task]
        assert result["injection"]["confirmed"] == (condition == "on")


def test_claude_code_on_the_scripted_model_plays_a_smriti_task_and_smritis_records_carry_its_tokens(
        engine, images, project, run_id, tmp_path, monkeypatch, no_leftovers):
    """The real CLI on a hosted SMRITI task (the scripted model searches recall and writes the option a memory
    names): on passes SMRITI's own check, off fails it, and the export gives SMRITI's scorer the tokens the
    gateway observed, counted as SMRITI counts them (fresh input + output), where the reader's are 0."""
    from runner.exec.job import run_grid
    from runner.plan.spec import grid_from_dict
    from runner.results.ledger import Ledger, latest_attempts

    write_smriti(tmp_path / "chitta")
    source_format("smriti").import_source(tmp_path / "chitta", project, "smriti", log=lambda m: None)
    monkeypatch.setenv("MEMGRID_ROOT", str(project))
    grid = grid_from_dict({"name": "cc-smriti", "protocol": "planted", "suite": "smriti", "tasks": ["sm-folder"],
                           "arms": ["recall"], "agents": ["claude-code"], "model": "scripted", "seeds": 1,
                           "conditions": ["off", "on"], "unisolated_checkers": ["sm-folder"]}, Path("(test grid)"))
    outcome = run_grid(grid, Path("(test grid)"), root=project, run_id=run_id, runs_dir=tmp_path / "runs",
                       concurrency=2, progress=False, log=lambda m: None)
    rows = {r["condition"]: r for r in latest_attempts(Ledger(outcome.run_dir).rows()).values() if r["final"]}
    assert all(r["admitted"] for r in rows.values()), {c: (r["discard_reason"], r["error_detail"]) for c, r in rows.items()}
    assert rows["on"]["checker_passed"] and not rows["off"]["checker_passed"]
    source_format("smriti").export(outcome.run_dir, tmp_path / "out")
    records = {r["condition"]: r for r in map(json.loads, (tmp_path / "out/claude-code__recall.jsonl").open())}
    assert records["on"]["injected_confirmed"] is True and records["off"]["injected_confirmed"] is None
    for condition, record in records.items():
        fresh, output = rows[condition]["tokens_fresh_input"], rows[condition]["tokens_output"]
        assert fresh > 0 and output > 0 and record["memgrid"]["tokens_observed"]
        assert (record["input_tokens"], record["output_tokens"], record["tokens_used"]) == (fresh, output, fresh + output)
        # the transcript SMRITI's echo_rate reads: the CLI's answer, as the cell's transcript.jsonl excerpts it
        events = map(json.loads, (outcome.run_dir / "cells" / rows[condition]["cell_id"] / "transcript.jsonl").open())
        excerpt = next(e["result_excerpt"] for e in events if e["type"] == "result")
        assert record["memgrid"]["reply_kept"] and record["transcript"] and record["transcript"][:300] == excerpt
    assert records["on"]["transcript"] != records["off"]["transcript"]
