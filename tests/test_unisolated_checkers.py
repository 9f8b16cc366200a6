"""An imported task whose checker can run artifact code as the judge (task.yaml `checker.unisolated`) is graded
only when the researcher names it: a grid or `task check` that would grade it refuses in one line (nothing run
or written), a grid that names it under `unisolated_checkers` plans it and records why in run.json."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from test_importer import AMB, GOOD, IMPORTED, IN_PROCESS_CHECKER

from runner.errors import SpecError, UserError
from runner.exec.job import run_grid
from runner.exec.run import lock_document, plan_run
from runner.plan.spec import grid_from_dict, load_all_arms, load_all_tasks, load_grid
from runner.sources.amb import import_tasks

WHY = "oracle/amb/checker.py line 5: sys.path.insert can run artifact code in the judge's process"


class EngineReached(Exception):
    """Raised in place of connecting to the engine: the grid got past its preflight."""


@pytest.fixture
def no_engine(monkeypatch):
    def refuse(**_):
        raise EngineReached()
    monkeypatch.setattr("runner.exec.job.connect", refuse)


@pytest.fixture
def unisolated(project, tmp_path) -> Path:
    """The project with the synthetic amb task imported from a checker that imports the artifact in the judge."""
    amb = tmp_path / "amb"
    shutil.copytree(AMB, amb, ignore=shutil.ignore_patterns("__pycache__"))
    (amb / "tasks" / GOOD / "checker.py").write_text(IN_PROCESS_CHECKER)
    assert import_tasks(amb / "tasks" / GOOD, project, "amb").plans
    assert load_all_tasks(project)[IMPORTED].checker.unisolated.startswith(WHY)
    return project


def grid_file(tmp_path: Path, tasks=(IMPORTED,), **fields) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({"name": "test", "suite": "amb", "tasks": tasks if tasks == "all" else list(tasks), "arms": ["bare"],
                                    "agents": ["floor"], "seeds": 1, "conditions": ["present"], **fields}))
    return path


def start(path: Path, root: Path, runs: Path):
    return run_grid(load_grid(path), path, root=root, run_id="pytest-unisolated", runs_dir=runs, concurrency=1,
                    progress=False, log=lambda m: None)


def memgrid(*args, root: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".venv/bin/memgrid"), *args], env={**os.environ, "MEMGRID_ROOT": str(root)},
                          cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("tasks", [(IMPORTED,), "all"])
def test_a_grid_that_grades_an_unisolated_task_refuses_in_one_line_before_the_engine(unisolated, tmp_path, no_engine,
                                                                                     tasks):
    path = grid_file(tmp_path, tasks)
    with pytest.raises(UserError) as refused:
        start(path, unisolated, tmp_path / "runs")
    line = str(refused.value)
    assert refused.value.exit_code == 2 and "\n" not in line, line
    assert line.startswith(f"{path}: task '{IMPORTED}' has a checker that is not isolated ({WHY}"), line
    assert line.endswith(f"nothing was run — fix: drop '{IMPORTED}' from the grid's tasks, or accept its checker by "
                         f"naming it in the grid: unisolated_checkers: [{IMPORTED}]"), line
    assert not (tmp_path / "runs").exists()


def test_the_command_line_refuses_it_with_exit_2_and_no_traceback(unisolated, tmp_path):
    done = memgrid("grid", "--spec", str(grid_file(tmp_path)), "--runs-dir", str(tmp_path / "runs"), "--no-progress",
                   root=unisolated, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"task '{IMPORTED}' has a checker that is not isolated" in lines[0], done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_grid_that_names_the_task_is_planned_and_its_lock_records_why(unisolated, tmp_path, no_engine, engine, images):
    path = grid_file(tmp_path, unisolated_checkers=[IMPORTED])
    with pytest.raises(EngineReached):  # past the preflight
        start(path, unisolated, tmp_path / "runs")
    tasks, arms = load_all_tasks(unisolated), load_all_arms(unisolated)
    plan = plan_run(load_grid(path), path, tasks, arms, images, tmp_path / "runs", "pytest-unisolated")
    assert plan.unisolated_checkers == {IMPORTED: tasks[IMPORTED].checker.unisolated}
    lock = lock_document(plan, images, engine, unisolated)
    assert lock["unisolated_checkers"] == {IMPORTED: tasks[IMPORTED].checker.unisolated}
    assert lock["grid"]["unisolated_checkers"] == [IMPORTED]
    # a grid that does not grade the task records nothing, though it names it
    other = grid_file(tmp_path, ("slug_ids",), unisolated_checkers=[IMPORTED])
    plan = plan_run(load_grid(other), other, tasks, arms, images, tmp_path / "runs", "pytest-unisolated-2")
    assert plan.unisolated_checkers == {}
    assert "unisolated_checkers" not in lock_document(plan, images, engine, unisolated)


@pytest.mark.parametrize("suite, named, problem", [
    ("amb", "amb_nope", "unisolated_checkers: names unknown task 'amb_nope' — fix: name only tasks whose checker is "
                        "not isolated (a task.yaml's checker.unisolated, or a hosted benchmark's own check): "
                        f"{IMPORTED}"),
    ("amb", "slug_ids", "unisolated_checkers: names unknown task 'slug_ids' — fix: name only tasks"),  # another suite's
    ("memgrid", "slug_ids", "unisolated_checkers: names 'slug_ids', whose checker is isolated — fix: name only tasks"),
])
def test_an_opt_in_that_names_no_unisolated_task_is_one_line_exit_2(unisolated, tmp_path, suite, named, problem):
    path = grid_file(tmp_path, ("slug_ids",) if suite == "memgrid" else (IMPORTED,), suite=suite,
                     unisolated_checkers=[named] if suite == "memgrid" else [IMPORTED, named])
    done = memgrid("grid", "--spec", str(path), "--runs-dir", str(tmp_path / "runs"), root=unisolated, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"memgrid: {path}: {problem}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()


def test_only_a_coding_grid_takes_the_opt_in():
    grid = {"name": "ts", "protocol": "two-session", "cases": 5, "arms": ["bare"], "agents": ["reader"], "seeds": 1,
            "conditions": ["closing_balance"], "unisolated_checkers": [IMPORTED]}
    with pytest.raises(SpecError) as e:
        grid_from_dict(grid, Path("ts.yaml"))
    assert (e.value.field, e.value.problem) == ("unisolated_checkers", "is not used by the two-session protocol")


def test_task_check_refuses_to_grade_it_unless_named_and_audits_it_with_static(unisolated, tmp_path):
    done = memgrid("task", "check", IMPORTED, root=unisolated, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == (
        f"memgrid: task check: task '{IMPORTED}' has a checker that is not isolated "
        f"({load_all_tasks(unisolated)[IMPORTED].checker.unisolated}); nothing was run — fix: check it with --static, "
        f"or accept its checker by naming it: --unisolated-checkers {IMPORTED}"), done.stderr
    static = memgrid("task", "check", IMPORTED, "--static", root=unisolated, cwd=tmp_path)
    assert "not isolated" not in static.stderr and "Traceback" not in static.stderr, static.stderr
    wrong = memgrid("task", "check", IMPORTED, "--unisolated-checkers", "slug_ids", root=unisolated, cwd=tmp_path)
    assert wrong.returncode == 2 and wrong.stderr.strip().startswith(  # slug_ids is a task of memgrid's suite, not amb's
        "memgrid: (command line): --unisolated-checkers: names unknown task 'slug_ids'"), wrong.stderr
    isolated = memgrid("task", "check", "slug_ids", "--unisolated-checkers", "slug_ids", root=unisolated, cwd=tmp_path)
    assert isolated.returncode == 2 and isolated.stderr.strip().startswith(
        "memgrid: (command line): --unisolated-checkers: names 'slug_ids', whose checker is isolated"), isolated.stderr
