"""Canaries: deliberately broken arms that the gate must catch (discard, never score)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runner.results.ledger import Ledger

from conftest import PROJECT_SCALE, REPO, write_grid

TASK = "slug_ids"


@pytest.fixture
def root(project):
    """The project copy (with the corpus settings, so grids can build their corpora inside it)."""
    return project


def derive_arm(root: Path, source: str, name: str, edit) -> None:
    shutil.copytree(REPO / "arms" / source, root / "arms" / name, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = root / "arms" / name / "arm.yaml"
    data = yaml.safe_load(path.read_text())
    data["name"] = name
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def run_grid(root: Path, tmp_path: Path, run_id: str, arm: str) -> list[dict]:
    grid = write_grid(tmp_path / "grid.yaml", tasks=[TASK], arms=(arm,), agents=("reader",))
    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "grid", "--spec", str(grid),
                           "--run-id", run_id, "--runs-dir", str(tmp_path / "runs"), "--no-progress"],
                          env={**os.environ, "MEMGRID_ROOT": str(root)}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return Ledger(tmp_path / "runs" / run_id).rows()


def only_final(rows: list[dict]) -> dict:
    finals = [r for r in rows if r["final"]]
    assert len(finals) == 1, rows
    return finals[0]


def test_a_server_that_fails_to_start_is_discarded_after_two_retries(engine, images, root, tmp_path, run_id, no_leftovers):
    derive_arm(root, "recall", "broken_server", lambda d: d["mcp"].update(server="broken", command=["false"]))
    rows = run_grid(root, tmp_path, run_id, "broken_server")
    assert [(r["attempt"], r["final"], r["discard_reason"]) for r in rows] == [
        (1, False, "mcp_server_failed"), (2, False, "mcp_server_failed"), (3, True, "mcp_server_failed")]
    assert all(r["checker_passed"] is None for r in rows), "a discarded cell was scored"


def test_tools_of_another_arm_are_discarded(engine, images, root, tmp_path, run_id, no_leftovers):
    derive_arm(root, "recall", "impostor", lambda d: None)  # its server is named 'recall': recall's tools
    row = only_final(run_grid(root, tmp_path, run_id, "impostor"))
    assert not row["admitted"] and row["discard_reason"] == "foreign_tools"
    assert row["checker_passed"] is None


def test_a_hook_that_never_fires_is_discarded_and_one_that_fires_is_admitted(engine, images, root, tmp_path, run_id,
                                                                           no_leftovers):
    derive_arm(root, "oracle_memory", "silent_hook",
               lambda d: d.update(hooks=[{"event": "session_start", "command": ["true"]}]))
    derive_arm(root, "oracle_memory", "loud_hook",
               lambda d: d.update(hooks=[{"event": "session_start", "command": ["echo", "memory loaded"]}]))
    silent = only_final(run_grid(root, tmp_path, run_id, "silent_hook"))
    assert not silent["admitted"] and silent["discard_reason"] == "hook_not_fired"
    shown = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "cell", "show", run_id,
                            silent["cell_id"][:8], "--runs-dir", str(tmp_path / "runs")],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert "discarded: hook_not_fired" in shown.stdout and "did not fire with exit 0 and output" in shown.stdout
    assert "not run (the cell was discarded, not scored)" in shown.stdout
    loud = only_final(run_grid(root, tmp_path, run_id + "-control", "loud_hook"))
    assert loud["admitted"], loud["gate_proofs"]


def test_a_misrouted_namespace_with_an_empty_store_is_discarded(engine, images, root, tmp_path, run_id, no_leftovers):
    def misroute(d):
        d["ingest"]["command"] = [part.replace("{corpus}", "/tmp") for part in d["ingest"]["command"]]

    derive_arm(root, "recall", "misrouted", misroute)
    row = only_final(run_grid(root, tmp_path, run_id, "misrouted"))
    assert not row["admitted"] and row["discard_reason"] == "store_empty"
    built = json.loads((root / "corpus" / "build" / "present" / "seed-0" / "meta.json").read_text())
    assert built["documents"] == PROJECT_SCALE + built["planted"]
    assert f"0 of {built['documents']} documents" in row["gate_proofs"]


def test_healthy_memory_arms_are_admitted_with_their_proofs(engine, images, root, tmp_path, run_id, no_leftovers):
    """The control for the canaries above: the same paths admit recall and recall_prefetch."""
    for arm in ("recall", "recall_prefetch"):
        row = only_final(run_grid(root, tmp_path, f"{run_id}-{arm}", arm))
        assert row["admitted"] and row["store_digest"], row["gate_proofs"]
        assert row["sandbox_image"] != images.sandbox.id, "the ledger must name the arm's own image the cell ran in"
        proofs = {p["name"]: p for p in json.loads(row["gate_proofs"])}
        assert proofs["store_populated"]["passed"] and proofs["mcp_connected"]["passed"]
        if arm == "recall":
            assert proofs["required_tools_listed"]["passed"] and proofs["no_foreign_tools"]["passed"]
        else:
            assert proofs["prefetch_injected"]["passed"]
            cell = tmp_path / "runs" / f"{run_id}-{arm}" / "cells" / row["cell_id"]
            assert any(json.loads(l)["type"] == "prefetched" for l in (cell / "prefetch.jsonl").open())


def test_a_missing_required_path_is_discarded(engine, images, root, tmp_path, run_id, no_leftovers):
    derive_arm(root, "oracle_memory", "pathless", lambda d: d.update(required_paths=["/sandbox/agent/nowhere.md"]))
    row = only_final(run_grid(root, tmp_path, run_id, "pathless"))
    assert not row["admitted"] and row["discard_reason"] == "required_path_missing"
    assert "/sandbox/agent/nowhere.md" in row["gate_proofs"]
