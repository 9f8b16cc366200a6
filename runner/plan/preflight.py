"""What each arm needs from a task, and whether the grid accepts each task's checker, checked before anything runs.

An arm declares the files it places in a task's workspace (arm.yaml `files`, '{task}' standing for
the task id). A file that is missing, or that would overwrite a fixture file, is the author's error:
found only when a cell builds its bundle, it would discard every cell of that arm and task as a
harness error and intention-to-treat would count them as failures. `memgrid task check` reports
these needs per task; the grid refuses to start on any unmet one, before engine work and before a
run folder exists.

A task whose checker is not isolated (task.yaml `checker.unisolated`: an imported checker that can run
artifact code as the judge, who can read the expected values) would grade a hostile artifact on its word.
The grid refuses to start on one unless the grid names it under `unisolated_checkers`.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from runner.errors import UserError
from runner.plan.grid import select
from runner.plan.spec import ArmSpec, GridSpec, TaskSpec, arm_file

README = "tasks/README.md, 'What each arm needs from a task'"


@dataclass(frozen=True)
class ArmNeed:
    """One file an arm places in one task's workspace, resolved for that task."""
    arm: str
    task: str
    declared: str  # where the arm declares it, e.g. arms/claude_md/arm.yaml files[0]
    source: Path
    shown: str  # the source as an author finds it: relative to the project root
    dest: str
    problem: str | None  # None when the file is there and can be placed
    fix: str | None

    @property
    def met(self) -> bool:
        return self.problem is None

    def line(self) -> str:
        """One line: the file, what is wrong, which arm declares it for which task, and the fix."""
        return (f"{self.shown}: {self.problem}: arm '{self.arm}' places it at {self.dest} for task '{self.task}' "
                f"({self.declared}) — fix: {self.fix}")


def _shown(path: Path, arm: ArmSpec) -> str:
    try:
        return path.relative_to(arm.root.parent.parent).as_posix()
    except ValueError:
        return str(path)


def arm_needs(task: TaskSpec, arms: list[ArmSpec]) -> list[ArmNeed]:
    """Every file each arm needs for this task, whether or not it is there (what bundle.arm_entries will read)."""
    needs = []
    for arm in arms:
        declared = _shown(arm.root / "arm.yaml", arm)
        for i, f in enumerate(arm.files):
            source = arm_file(arm, i, task.id)  # one leading out of the project stops the grid here, before any run
            if not source.is_file():
                problem, fix = "missing", f"add it ({README})"
            elif (task.fixture / f.dest).is_file():
                problem, fix = f"would overwrite the fixture's {f.dest}", f"choose another files[{i}].dest"
            else:
                problem, fix = None, None
            needs.append(ArmNeed(arm.name, task.id, f"{declared} files[{i}]", source, _shown(source, arm), f.dest,
                                 problem, fix))
    return needs


def tasks_with_cells(grid: GridSpec, tasks: dict[str, TaskSpec], task_ids: list[str]) -> list[TaskSpec]:
    # Only coding tasks are under tasks/<id>; another protocol's units are not.
    return [tasks[t] for t in task_ids if t in tasks and set(tasks[t].conditions) & set(grid.conditions)]


def unisolated_graded(grid: GridSpec, tasks: dict[str, TaskSpec], task_ids: list[str]) -> dict[str, str]:
    """The tasks the grid grades whose checkers are not isolated, each with why (what run.json records)."""
    return {t.id: t.checker.unisolated for t in tasks_with_cells(grid, tasks, task_ids) if t.checker.unisolated}


def refuse_unisolated(tasks: list[TaskSpec], accepted: tuple[str, ...], where, fix: Callable[[str], str]) -> None:
    """One line per task whose checker is not isolated and is not accepted by name: `where` it was asked for
    and `fix(task id)`."""
    refused = [t for t in tasks if t.checker.unisolated and t.id not in accepted]
    if refused:
        raise UserError("\n".join(f"{where}: task '{t.id}' has a checker that is not isolated ({t.checker.unisolated}); "
                                  f"nothing was run — fix: {fix(t.id)}" for t in refused))


def check_grid(grid: GridSpec, protocol, grid_path, tasks: dict[str, TaskSpec], arms: dict[str, ArmSpec]) -> None:
    """Refuse the grid when it grades a task whose checker is not isolated without naming it under
    unisolated_checkers, or when an arm cannot place a file for a task that has cells; one line each."""
    task_ids, arm_names = select(grid, protocol, tasks, arms, grid_path)
    with_cells = tasks_with_cells(grid, tasks, task_ids)
    refuse_unisolated(with_cells, grid.unisolated_checkers, grid_path,
                      lambda t: f"drop '{t}' from the grid's tasks, or accept its checker by naming it in the grid: "
                                f"unisolated_checkers: [{t}]")
    unmet = [n for t in with_cells for n in arm_needs(t, [arms[a] for a in arm_names]) if not n.met]
    if unmet:
        raise UserError(f"{grid_path}: the grid's arms need {len(unmet)} file(s) that are missing or misplaced; nothing "
                        "was run or written:\n" + "\n".join(n.line() for n in unmet))
