"""Artifacts that do not solve their task must fail its judge, graded in the real checker container.

Each case is the task's informed reference (its solution) with one edit that makes it degenerate, and each
passed the judge as it was converted from the old hidden tests: a same_user that answers True, a float
where a two-place Decimal is asked, a table printed as JSON lines and a CSV with no numbers, a row count
never returned, a letter with the due date both day-first and month-first and nothing else, an error body
that ignores its arguments. The informed references passing and the naive ones failing are the task
invariants' tests (test_taskcheck, test_planted_tasks)."""

from pathlib import Path

import pytest

from runner.env.archive import Entry
from runner.env.bundle import tree_entries
from runner.grading.checker import GRACE_SECONDS, checker_bound, checker_inputs, checker_spec, grade_in_container
from runner.plan.spec import load_task
from runner.protocols.planted.protocol import check_command, check_inputs
from runner.units.planted import load_planted_task

REPO = Path(__file__).resolve().parent.parent

# task -> (file, text of the solution's file, what replaces it)
DEGENERATE = {
    "cli_default_output": (
        "opsreport.py",
        'RENDERERS = {"table": render_table, "csv": render_csv,',
        'def degenerate_csv(rows):  # the header, then the service names with every number empty\n'
        '    return "\\n".join([",".join(COLUMNS)] + [row["service"] + ",,,," for row in rows])\n\n\n'
        'RENDERERS = {"table": render_jsonl, "csv": degenerate_csv,'),
    "money_rounding": (
        "invoicing/__init__.py",
        "    return total.quantize(CENT, rounding=ROUND_HALF_EVEN)",
        "    return float(total.quantize(CENT, rounding=ROUND_HALF_EVEN))"),
    "pl_attendee_csv": ("events/export.py", "    return len(attendees)", "    return None"),
    "pl_reminder_dates": (
        "letters/reminder.py",
        '    due = invoice.due_date.strftime("%d.%m.%Y")',
        '    return f"{invoice.due_date:%d.%m.%Y} {invoice.due_date:%m.%d.%Y}"'),
    "pl_username_keys": ("accounts/names.py", "def same_user(a, b):", "def same_user(a, b):\n    return True"),
    "pl_validation_errors": (
        "api/errors.py",
        '"field": field, "message": message',
        '"field": "email", "message": "is not an email address"'),
}
CODING = {"cli_default_output", "money_rounding"}


def degenerate_workspace(root: Path, solution: str, task_id: str) -> list[Entry]:
    files = {}
    for layer in (root / "fixture", root / solution):
        files |= {e.path.removeprefix("w/"): Entry(e.path.removeprefix("w/"), e.data, e.mode) for e in tree_entries(layer, "w")}
    path, old, new = DEGENERATE[task_id]
    source = files[path].data.decode()
    assert source.count(old) == 1, f"{task_id}: the edit no longer matches {path}"
    files[path] = Entry(path, source.replace(old, new).encode(), files[path].mode)
    return list(files.values())


@pytest.mark.parametrize("task_id", sorted(DEGENERATE))
def test_a_degenerate_artifact_fails_the_judge(task_id, engine, images, run_id, no_leftovers):
    if task_id in CODING:
        task = load_task(REPO / "tasks" / task_id)
        inputs = checker_inputs(task, degenerate_workspace(task.root, "references/informed", task_id))
        spec, bound = checker_spec(task), checker_bound(task)
    else:
        task = load_planted_task(REPO / "tasks" / "planted" / task_id)
        inputs = check_inputs(task, degenerate_workspace(task.root, "solution", task_id))
        spec = {"checker": {"command": check_command(task), "timeout": task.check_seconds}, "detector": None}
        bound = task.check_seconds + GRACE_SECONDS
    judged, log, _ = grade_in_container(engine, images.checker.tag, inputs, spec, bound, run_id=run_id, cell_id=task_id)
    checker = judged["checker"]
    assert not checker["timed_out"], log
    assert checker["exit"] != 0 and "FAIL" in checker["output"], checker["output"]
