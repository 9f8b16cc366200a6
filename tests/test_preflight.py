"""A task that lacks a file an arm needs is the author's error: the grid refuses to start (nothing run,
nothing written) and task check names the file, instead of cells discarded as harness errors."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, write_grid

from runner.errors import UserError
from runner.exec.job import run_grid
from runner.plan.spec import load_all_arms, load_all_tasks, load_grid
from runner.tasks.check import arm_findings

NEW = "new_task"
CLAUDE_MD = f"arms/claude_md/tasks/{NEW}/CLAUDE.md"
PLACEBO = f"arms/placebo/tasks/{NEW}/CLAUDE.md"


class EngineReached(Exception):
    """Raised in place of connecting to the engine: the grid got past its preflight."""


@pytest.fixture
def new_task(project: Path) -> Path:
    """A project copy with a task written from tasks/README.md's folder table, but no arm files."""
    task_dir = project / "tasks" / NEW
    shutil.copytree(project / "tasks" / "slug_ids", task_dir)
    data = yaml.safe_load((task_dir / "task.yaml").read_text())
    (task_dir / "task.yaml").write_text(yaml.safe_dump({**data, "id": NEW}, sort_keys=False))
    return project


@pytest.fixture
def no_engine(monkeypatch):
    def refuse(**_):
        raise EngineReached()
    monkeypatch.setattr("runner.exec.job.connect", refuse)


def grid(project: Path, tmp_path: Path, conditions=("present",)):
    path = write_grid(tmp_path / "grid.yaml", tasks=[NEW], arms=("bare", "claude_md", "placebo"), agents=("floor",),
                      conditions=conditions)
    runs = tmp_path / "runs"
    return lambda: run_grid(load_grid(path), path, root=project, run_id="pytest-preflight", runs_dir=runs,
                            concurrency=1, progress=False, log=lambda m: None), runs


def restore(project: Path) -> None:
    """What tasks/README.md tells the author: write the claude_md file, then generate the placebo."""
    target = project / CLAUDE_MD
    target.parent.mkdir(parents=True)
    shutil.copy(project / "arms/claude_md/tasks/slug_ids/CLAUDE.md", target)
    subprocess.run([sys.executable, str(project / "arms/placebo/generate.py")], check=True, capture_output=True)


def test_grid_refuses_before_the_engine_and_names_each_missing_file(new_task, tmp_path, no_engine):
    start, runs = grid(new_task, tmp_path)
    with pytest.raises(UserError) as refused:
        start()
    assert refused.value.exit_code == 2
    header, *problems = str(refused.value).splitlines()
    assert "nothing was run or written" in header
    assert [p.split(":")[0] for p in problems] == [CLAUDE_MD, PLACEBO]
    assert all(": missing: " in p and "fix: add it" in p for p in problems), problems
    assert not runs.exists()


def test_restoring_the_files_lets_the_grid_start(new_task, tmp_path, no_engine):
    restore(new_task)
    start, _ = grid(new_task, tmp_path)
    with pytest.raises(EngineReached):
        start()


def test_a_task_with_no_cell_in_the_grid_needs_nothing(new_task, tmp_path, no_engine):
    task_yaml = new_task / "tasks" / NEW / "task.yaml"
    data = yaml.safe_load(task_yaml.read_text())
    task_yaml.write_text(yaml.safe_dump({**data, "conditions": ["present"]}, sort_keys=False))
    start, _ = grid(new_task, tmp_path, conditions=("absent",))
    with pytest.raises(EngineReached):
        start()


def test_the_command_line_exits_2_with_one_line_per_missing_file(new_task, tmp_path):
    path = write_grid(tmp_path / "grid.yaml", tasks=[NEW], arms=("bare", "claude_md", "placebo"), agents=("floor",))
    runs = tmp_path / "runs"
    done = subprocess.run([str(REPO / ".venv/bin/memgrid"), "grid", "--spec", str(path), "--runs-dir", str(runs),
                           "--run-id", "pytest-preflight-cli", "--no-progress"],
                          env={**os.environ, "MEMGRID_ROOT": str(new_task)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert [l.split(":")[0] for l in lines[1:]] == [CLAUDE_MD, PLACEBO], done.stderr
    assert not runs.exists()


def test_task_check_reports_what_each_arm_needs(new_task):
    def findings():
        return arm_findings(load_all_tasks(new_task)[NEW], list(load_all_arms(new_task).values()))

    assert {(f.rule, f.file, f.passed) for f in findings()} == {
        ("arm claude_md has its CLAUDE.md for this task", CLAUDE_MD, False),
        ("arm placebo has its CLAUDE.md for this task", PLACEBO, False)}
    restore(new_task)
    assert all(f.passed for f in findings()), [f.detail for f in findings()]


def test_task_check_fails_on_the_command_line(new_task):
    done = subprocess.run([str(REPO / ".venv/bin/memgrid"), "task", "check", NEW, "--static"],
                          env={**os.environ, "MEMGRID_ROOT": str(new_task)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert f"FAIL {NEW}: arm claude_md has its CLAUDE.md for this task: {CLAUDE_MD}: missing" in done.stderr, done.stderr


def test_an_arm_file_that_would_overwrite_the_fixture_is_refused(project):
    (project / "tasks/slug_ids/fixture/CLAUDE.md").write_text("# a fixture file of the same name\n")
    bad = [f for f in arm_findings(load_all_tasks(project)["slug_ids"], list(load_all_arms(project).values()))
           if not f.passed]
    assert {f.rule for f in bad} == {"arm claude_md has its CLAUDE.md for this task",
                                     "arm placebo has its CLAUDE.md for this task"}
    assert all("would overwrite the fixture's CLAUDE.md" in f.detail for f in bad)


def test_every_shipped_task_has_what_every_shipped_arm_needs():
    arms = list(load_all_arms(REPO).values())
    findings = [f for t in load_all_tasks(REPO).values() for f in arm_findings(t, arms)]
    assert len(findings) == 2 * len(load_all_tasks(REPO))
    assert all(f.passed for f in findings), [f"{f.file}: {f.detail}" for f in findings if not f.passed]
