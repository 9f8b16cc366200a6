"""Artifacts that do not solve their task must fail its judge, graded in the real checker container.

Each artifact under tests/data/degenerate/<task>/ is the task's informed reference (its solution) with one
file replaced by a degenerate one that passed the judge as it was converted from the old hidden tests: a
same_user that answers True, a float where a two-place Decimal is asked, a table printed as JSON lines and
a CSV with no numbers, a row count never returned, a letter with the due date both day-first and
month-first and nothing else, an error body that ignores its arguments. The informed references passing
and the naive ones failing are the task invariants' tests (test_taskcheck, test_planted_tasks)."""

from pathlib import Path

import pytest

from runner.env.archive import Entry
from runner.env.bundle import tree_entries
from runner.grading.checker import GRACE_SECONDS, checker_bound, checker_inputs, checker_spec, grade_in_container
from runner.plan.spec import load_task
from runner.protocols.planted.protocol import check_command, check_inputs
from runner.protocols.planted.tasks import load_planted_task

REPO = Path(__file__).resolve().parent.parent
DEGENERATE = Path(__file__).resolve().parent / "data" / "degenerate"
CODING = {"cli_default_output", "money_rounding"}


def workspace(root: Path, solution: str, task_id: str) -> list[Entry]:
    files = {}
    for layer in (root / "fixture", root / solution, DEGENERATE / task_id):
        files |= {e.path.removeprefix("w/"): Entry(e.path.removeprefix("w/"), e.data, e.mode) for e in tree_entries(layer, "w")}
    return list(files.values())


@pytest.mark.parametrize("task_id", sorted(p.name for p in DEGENERATE.iterdir()))
def test_a_degenerate_artifact_fails_the_judge(task_id, engine, images, run_id, no_leftovers):
    if task_id in CODING:
        task = load_task(REPO / "tasks" / task_id)
        inputs, spec = checker_inputs(task, workspace(task.root, "references/informed", task_id)), checker_spec(task)
        bound = checker_bound(task)
    else:
        task = load_planted_task(REPO / "tasks" / "planted" / task_id)
        inputs = check_inputs(task, workspace(task.root, "solution", task_id))
        spec = {"checker": {"command": check_command(task), "timeout": task.check_seconds}, "detector": None}
        bound = task.check_seconds + GRACE_SECONDS
    judged, log, _ = grade_in_container(engine, images.checker.tag, inputs, spec, bound, run_id=run_id, cell_id=task_id)
    checker = judged["checker"]
    assert not checker["timed_out"], log
    assert checker["exit"] != 0 and "FAIL" in checker["output"], checker["output"]
