"""Canaries: deliberately broken arms that the gate must catch (discard, never score), and the healthy arms the same
paths admit. The canaries run in one grid (one cell each, the reader on one task): what each test asserts is its own
arm's row, and the corpus and the command's start are paid once, not once a test. The healthy arms run in a project
of their own: two canaries claim recall's server name, which would make recall's tools foreign there."""

import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from runner.results.ledger import Ledger

from conftest import ISSUED_RUN_IDS, PROJECT_SCALE, REPO, TEST_RUN_PREFIX, assert_nothing_left, copy_project, write_grid

TASK = "slug_ids"


def derive_arm(root: Path, source: str, name: str, edit) -> None:
    shutil.copytree(REPO / "arms" / source, root / "arms" / name, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = root / "arms" / name / "arm.yaml"
    data = yaml.safe_load(path.read_text())
    data["name"] = name
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def misroute(d):
    d["ingest"]["command"] = [part.replace("{corpus}", "/tmp") for part in d["ingest"]["command"]]


# name: (the arm it is derived from, the edit that breaks it or not)
CANARY_ARMS = {
    "broken_server": ("recall", lambda d: d["mcp"].update(server="broken", command=["false"])),
    "impostor": ("recall", lambda d: None),  # its server is named 'recall': recall's tools
    "silent_hook": ("oracle_memory", lambda d: d.update(hooks=[{"event": "session_start", "command": ["true"]}])),
    "loud_hook": ("oracle_memory",
                  lambda d: d.update(hooks=[{"event": "session_start", "command": ["echo", "memory loaded"]}])),
    "misrouted": ("recall", misroute),
    "pathless": ("oracle_memory", lambda d: d.update(required_paths=["/sandbox/agent/nowhere.md"])),
}


def run_grid(root: Path, home: Path, run_id: str, arms: tuple[str, ...]) -> list[dict]:
    grid = write_grid(home / f"{run_id}.yaml", tasks=[TASK], arms=arms, agents=("reader",))
    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "grid", "--spec", str(grid),
                           "--run-id", run_id, "--runs-dir", str(home / "runs"), "--no-progress"],
                          env={**os.environ, "MEMGRID_ROOT": str(root)}, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return Ledger(home / "runs" / run_id).rows()


@dataclass(frozen=True)
class CanaryRun:
    root: Path
    runs: Path
    run_id: str
    rows: list[dict]

    def arm(self, arm: str) -> list[dict]:
        return [r for r in self.rows if r["arm"] == arm]


@pytest.fixture(scope="module")
def canaries(engine, images, tmp_path_factory) -> CanaryRun:
    home = tmp_path_factory.mktemp("canaries")
    root = copy_project(home / "project", engine=True)
    for name, (source, edit) in CANARY_ARMS.items():
        derive_arm(root, source, name, edit)
    run_id = f"{TEST_RUN_PREFIX}{uuid.uuid4().hex[:10]}"
    ISSUED_RUN_IDS.add(run_id)
    try:
        rows = run_grid(root, home, run_id, tuple(CANARY_ARMS))
    finally:
        assert_nothing_left(engine, run_id)
    return CanaryRun(root, home / "runs", run_id, rows)


def only_final(rows: list[dict]) -> dict:
    finals = [r for r in rows if r["final"]]
    assert len(finals) == 1, rows
    return finals[0]


def test_a_server_that_fails_to_start_is_discarded_after_two_retries(canaries):
    rows = canaries.arm("broken_server")
    assert [(r["attempt"], r["final"], r["discard_reason"]) for r in rows] == [
        (1, False, "mcp_server_failed"), (2, False, "mcp_server_failed"), (3, True, "mcp_server_failed")]
    assert all(r["checker_passed"] is None for r in rows), "a discarded cell was scored"


def test_tools_of_another_arm_are_discarded(canaries):
    row = only_final(canaries.arm("impostor"))
    assert not row["admitted"] and row["discard_reason"] == "foreign_tools"
    assert row["checker_passed"] is None


def test_a_hook_that_never_fires_is_discarded_and_one_that_fires_is_admitted(canaries):
    silent = only_final(canaries.arm("silent_hook"))
    assert not silent["admitted"] and silent["discard_reason"] == "hook_not_fired"
    shown = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "cell", "show", canaries.run_id,
                            silent["cell_id"][:8], "--runs-dir", str(canaries.runs)],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert "discarded: hook_not_fired" in shown.stdout and "did not fire with exit 0 and output" in shown.stdout
    assert "not run (the cell was discarded, not scored)" in shown.stdout
    loud = only_final(canaries.arm("loud_hook"))
    assert loud["admitted"], loud["gate_proofs"]


def test_a_misrouted_namespace_with_an_empty_store_is_discarded(canaries):
    row = only_final(canaries.arm("misrouted"))
    assert not row["admitted"] and row["discard_reason"] == "store_empty"
    built = json.loads((canaries.root / "corpus" / "build" / "present" / "seed-0" / "meta.json").read_text())
    assert built["documents"] == PROJECT_SCALE + built["planted"]
    assert f"0 of {built['documents']} documents" in row["gate_proofs"]


def test_healthy_memory_arms_are_admitted_with_their_proofs(engine, images, project, tmp_path, run_id, no_leftovers):
    """The control for the canaries above: the same paths admit recall and recall_prefetch."""
    rows = run_grid(project, tmp_path, run_id, ("recall", "recall_prefetch"))
    for arm in ("recall", "recall_prefetch"):
        row = only_final([r for r in rows if r["arm"] == arm])
        assert row["admitted"] and row["store_digest"], row["gate_proofs"]
        assert row["sandbox_image"] != images.sandbox.id, "the ledger must name the arm's own image the cell ran in"
        proofs = {p["name"]: p for p in json.loads(row["gate_proofs"])}
        assert proofs["store_populated"]["passed"] and proofs["mcp_connected"]["passed"]
        if arm == "recall":
            assert proofs["required_tools_listed"]["passed"] and proofs["no_foreign_tools"]["passed"]
        else:
            assert proofs["prefetch_injected"]["passed"]
            cell = tmp_path / "runs" / run_id / "cells" / row["cell_id"]
            assert any(json.loads(l)["type"] == "prefetched" for l in (cell / "prefetch.jsonl").open())


def test_a_missing_required_path_is_discarded(canaries):
    row = only_final(canaries.arm("pathless"))
    assert not row["admitted"] and row["discard_reason"] == "required_path_missing"
    assert "/sandbox/agent/nowhere.md" in row["gate_proofs"]
