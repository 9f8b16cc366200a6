"""Preregistrations: one-line errors, the frozen part never changes, a dirty folder blocks the run,
and reproduce refuses drift by name."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runner.errors import SpecError, UserError
from runner.plan.prereg import MARKER, append_results, check_clean, frozen_bytes, load_prereg, new_prereg, read_results
from runner.plan.spec import load_all_tasks

from conftest import REPO

SHIPPED = REPO / "preregistration" / "001-default-reader.md"


def fields(**changes) -> dict:
    data = {
        "question": "Does the ceiling agent pass where the floor agent fails?",
        "predictions": [{"id": "P1", "text": "ceiling beats floor", "contrast": "bare - bare", "condition": "present",
                         "agent": "ceiling", "expect": "null"}],
        "endpoints": ["checker_pass"],
        "contrasts": ["bare - bare"],
        "exclusion_rules": ["Cells the gate discards are excluded."],
        "sizing": {"text": "one task, two agents", "cells": 2},
        "min_effect": 0.1,
        "grid": {"name": "tiny", "tasks": [sorted(load_all_tasks(REPO))[0]], "arms": ["bare"], "agents": ["floor", "ceiling"],
                 "seeds": 1, "conditions": ["present"], "network": "none"},
        "prices": {},
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def write(path: Path, data: dict, body: str = "Why this grid.\n", marker: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{yaml.safe_dump(data, sort_keys=False)}---\n\n{body}\n" + (f"{MARKER}\n" if marker else ""))
    return path


def one_line_error(path: Path) -> str:
    with pytest.raises(SpecError) as e:
        load_prereg(path)
    message = str(e.value)
    assert "\n" not in message and str(path) in message and "fix:" in message
    return message


def test_the_shipped_preregistration_loads_and_matches_its_sizing():
    from runner.plan.prereg import check_sizing

    prereg = load_prereg(SHIPPED)
    assert prereg.min_effect == 0.10 and prereg.endpoints[0] == "checker_pass" and prereg.prices == {}
    assert prereg.grid.agents == ("reader",) and len(prereg.grid.arms) == 7 and len(prereg.grid.conditions) == 5
    check_sizing(prereg, REPO)


@pytest.mark.parametrize("field", ["question", "predictions", "endpoints", "sizing", "min_effect", "grid", "prices"])
def test_a_missing_field_is_one_line_naming_it(tmp_path, field):
    message = one_line_error(write(tmp_path / "001-x.md", fields(**{field: None})))
    assert f"'{field}'" in message


def test_bad_fields_are_named_with_their_path(tmp_path):
    assert "min_effect" in one_line_error(write(tmp_path / "a.md", fields(min_effect=1.5)))
    bad_arm = fields()
    bad_arm["predictions"][0]["contrast"] = "recall - bare"
    assert "predictions[0].contrast" in one_line_error(write(tmp_path / "b.md", bad_arm))
    assert "grid.seeds" in one_line_error(write(tmp_path / "c.md", fields(grid={**fields()["grid"], "seeds": 0})))
    assert "(marker)" in one_line_error(write(tmp_path / "d.md", fields(), marker=False))


def test_new_writes_the_next_number_and_refuses_to_load_until_edited(project):
    root = project  # a copy: tasks/ and arms/ linked from elsewhere would lead out of the project, and are refused
    first = new_prereg(root, "first-question")
    second = new_prereg(root, "second-question")
    assert (first.name, second.name) == ("001-first-question.md", "002-second-question.md")
    assert "question" in one_line_error(first) and "TODO" in one_line_error(first)
    with pytest.raises(UserError):
        new_prereg(root, "first-question")


def test_append_keeps_the_frozen_bytes_and_every_record(tmp_path):
    path = write(tmp_path / "001-x.md", fields())
    above = path.read_bytes()
    append_results(path, "## Results\n\nfirst run", {"run_id": "one", "per_arm_condition": {"a/b/c": {"passed": 1}}})
    append_results(path, "## Results again", {"run_id": "two"})
    assert path.read_bytes()[:len(above)] == above
    assert frozen_bytes(path) == above[:above.index(MARKER.encode())]
    records = read_results(path)
    assert [r["run_id"] for r in records] == ["one", "two"]
    assert records[0]["per_arm_condition"] == {"a/b/c": {"passed": 1}}
    assert records[0]["preregistration_sha256"] == load_prereg(path).frozen_sha256
    assert "first run" in path.read_text().split(MARKER)[1]


def test_a_broken_results_block_is_named(tmp_path):
    path = write(tmp_path / "001-x.md", fields())
    append_results(path, "## Results", {"run_id": "one"})
    path.write_text(path.read_text().replace('"run_id": "one"', '"run_id": one'))
    with pytest.raises(SpecError, match="results block 1"):
        read_results(path)


# ---------------------------------------------------------------- git and the CLI

def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True)


def memgrid(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", *args], cwd=project,
                          env={**os.environ, "MEMGRID_ROOT": str(project)}, capture_output=True, text=True, timeout=600)


@pytest.fixture
def repo(project) -> Path:
    """The project copy as a git checkout with one committed, tiny preregistration. It ignores what the repository
    ignores: without it, git would hash every resolved wheel of the product arms (hundreds of MB) at each commit
    and status, a minute of every test here."""
    shutil.copy(REPO / ".gitignore", project / ".gitignore")
    write(project / "preregistration" / "001-tiny.md", fields())
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "tiny preregistration")
    return project


def refused(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("memgrid: ")]
    assert "Traceback" not in result.stderr and len(errors) == 1, result.stderr
    return errors[0]


def test_uncommitted_or_untracked_preregistrations_block_the_grid(repo):
    prereg = "preregistration/001-tiny.md"
    (repo / "preregistration" / "002-draft.md").write_text("draft")
    assert "002-draft.md" in refused(memgrid(repo, "grid", "--prereg", prereg, "--no-progress"))
    (repo / "preregistration" / "002-draft.md").unlink()
    with (repo / prereg).open("a") as f:
        f.write("an afterthought\n")
    assert "001-tiny.md" in refused(memgrid(repo, "grid", "--prereg", prereg, "--no-progress"))
    with pytest.raises(UserError, match="not a git checkout"):
        check_clean(repo.parent)


def test_grid_options_and_a_wrong_sizing_are_refused_before_any_container(repo):
    prereg = "preregistration/001-tiny.md"
    assert "--arms" in refused(memgrid(repo, "grid", "--prereg", prereg, "--arms", "bare"))
    wrong = fields(sizing={"text": "miscounted", "cells": 3})
    write(repo / "preregistration" / "002-wrong.md", wrong)
    git(repo, "add", "preregistration")
    git(repo, "commit", "-q", "-m", "miscounted")
    assert "sizing.cells" in refused(memgrid(repo, "grid", "--prereg", "preregistration/002-wrong.md"))
    missing = fields(min_effect=None)
    write(repo / "preregistration" / "003-missing.md", missing)
    assert "'min_effect'" in refused(memgrid(repo, "grid", "--prereg", "preregistration/003-missing.md"))


def test_reproduce_refuses_drift_by_name_and_agrees_with_itself(engine, images, repo, tmp_path, run_id, no_leftovers):
    from runner.results.ledger import Ledger, latest_attempts
    from runner.plan.reproduce import counts_by_group

    prereg, runs = "preregistration/001-tiny.md", str(tmp_path / "runs")
    first = memgrid(repo, "grid", "--prereg", prereg, "--run-id", run_id, "--runs-dir", runs, "--no-progress")
    assert first.returncode == 0, first.stderr
    lock = json.loads((tmp_path / "runs" / run_id / "run.json").read_text())
    assert lock["preregistration"] == {"path": prereg, "sha256": load_prereg(repo / prereg).frozen_sha256}

    again = memgrid(repo, "reproduce", prereg, "--run", run_id, "--run-id", f"{run_id}-r1", "--runs-dir", runs, "--no-progress")
    assert again.returncode == 0, again.stderr
    assert "agreement: 2/2 cells (1.00)" in again.stdout

    # A copy of the original whose task digest differs: refused by name, before a run folder exists.
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    for name in ("run.json", "ledger.parquet"):
        (tampered / name).write_bytes((tmp_path / "runs" / run_id / name).read_bytes())
    task = next(iter(lock["inputs"]["tasks"]))
    lock["inputs"]["tasks"][task] = "0" * 64
    (tampered / "run.json").write_text(json.dumps(lock))
    drifted = memgrid(repo, "reproduce", prereg, "--run", str(tampered), "--run-id", f"{run_id}-r2", "--runs-dir", runs)
    assert f"task '{task}' digest" in refused(drifted) and "--allow-drift" in drifted.stderr
    assert not (tmp_path / "runs" / f"{run_id}-r2").exists()
    allowed = memgrid(repo, "reproduce", prereg, "--run", str(tampered), "--allow-drift", "--run-id", f"{run_id}-r2",
                      "--runs-dir", runs, "--no-progress")
    assert allowed.returncode == 0, allowed.stderr
    assert f"task '{task}' digest" in allowed.stderr and "agreement: 2/2 cells" in allowed.stdout

    # Without the run folder: the record appended to the preregistration is the reference.
    rows = list(latest_attempts(Ledger(tmp_path / "runs" / run_id).rows()).values())
    original = json.loads((tmp_path / "runs" / run_id / "run.json").read_text())
    append_results(repo / prereg, "## Results", {"run_id": run_id, "git_commit": original["git_commit"],
                                                 "inputs": original["inputs"], "image_tags": original["image_tags"],
                                                 "per_arm_condition": counts_by_group(rows)})
    from_record = memgrid(repo, "reproduce", prereg, "--run-id", f"{run_id}-r3", "--runs-dir", runs, "--no-progress")
    assert from_record.returncode == 0, from_record.stderr
    assert "agreement: 2/2 agent/arm/condition groups (1.00)" in from_record.stdout


def test_an_editable_installs_egg_info_is_not_drift(tmp_path):
    """`make setup` writes memgrid_recall.egg-info into arms/recall; a fresh clone has none until it
    runs, and reproduce must not call that a different arm."""
    from runner.digest import tree_digest

    arm = tmp_path / "arm"
    (arm / "pkg").mkdir(parents=True)
    (arm / "pkg" / "server.py").write_text("print('serve')\n")
    before = tree_digest(arm)
    (arm / "pkg_name.egg-info").mkdir()
    (arm / "pkg_name.egg-info" / "PKG-INFO").write_text("Name: pkg\n")
    assert tree_digest(arm) == before
    (arm / "pkg" / "server.py").write_text("print('changed')\n")
    assert tree_digest(arm) != before


def test_images_rebuilt_elsewhere_from_the_same_recipe_are_not_drift(tmp_path):
    """Image ids differ on every machine (build times are part of them): with recipes on both sides,
    a reproduction compares recipes, and a changed recipe is drift by name."""
    from runner.plan.reproduce import Original, drift

    prereg = load_prereg(REPO / "preregistration" / "001-default-reader.md")
    inputs = {"tasks": {"t": "a" * 64}, "arms": {"bare": "b" * 64}, "images": {"sandbox": "sha256:1111"}, "corpora": {}}
    recipes = {"base": "r-base", "sandbox": "r-sandbox", "arm:recall": "r-recall"}
    original = {"grid": {"name": "g"}, "inputs": inputs, "image_recipes": recipes,
                "arm_images": {"recall": {"tag": "memgrid-arm-recall:x", "id": "sha256:aaaa"}},
                "preregistration": {"sha256": prereg.frozen_sha256}}
    elsewhere = {**original, "inputs": {**inputs, "images": {"sandbox": "sha256:2222"}},
                 "arm_images": {"recall": {"tag": "memgrid-arm-recall:y", "id": "sha256:bbbb"}}}
    ref = Original("test", "r", original, None, [], {})
    assert drift(ref, prereg, elsewhere) == []
    changed = {**elsewhere, "image_recipes": {**recipes, "sandbox": "r-sandbox-2"}}
    assert drift(ref, prereg, changed) == ["image recipe 'sandbox' r-sandbox -> r-sandbox-2"]
    # Without recipes on one side (an older run), ids are all there is to compare: drift.
    old = Original("test", "r", {k: v for k, v in original.items() if k != "image_recipes"}, None, [], {})
    assert any("sha256:1111" in c for c in drift(old, prereg, elsewhere))
