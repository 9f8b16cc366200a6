"""`memgrid grid --check`: a grid spec checked as a run checks it before its first engine call (every name, the
suite imported, its tasks and conditions, the agents each protocol takes), then what the run would be: its cells,
the images it builds or reuses, and any condition, task or arm that would get no cell. Nothing is built or run,
and no engine is needed: a spec can be checked on any machine before it is sent to one that runs it."""

from dataclasses import dataclass
from pathlib import Path

from runner.agents.registry import agent_class, cli_agents, grid_players
from runner.env.images import arm_image_needed
from runner.exec.executors import ExecutorSettings, executor_class
from runner.exec.job import check_inputs
from runner.exec.run import check_run_id
from runner.plan.spec import GridSpec, image_arm, provider

CORE_IMAGES = ("memgrid-base", "memgrid-sandbox", "memgrid-checker")


@dataclass(frozen=True)
class GridCheck:
    cells: int
    pairs: int  # (unit, condition) pairs a seed runs
    played: int  # arm x agent pairs the protocol plays (an agent on each of several models counted once per model)
    seeds: int
    images: tuple[str, ...]  # what its cells run in: built by the first run that lacks one, reused after
    problems: tuple[str, ...]  # one line each: what gets no cell, and the fix

    def lines(self, grid_path: Path) -> list[str]:
        return [f"{grid_path}: checked, nothing run: {self.cells} cells = {self.pairs} unit x condition pairs x "
                f"{self.played} arm x agent pairs x {self.seeds} seed(s)",
                f"images it needs (each built by the first run that lacks it, reused after): {', '.join(self.images)}"]


def check_spec(grid: GridSpec, grid_path: Path, root: Path, run_id: str | None = None, concurrency: int = 1) -> GridCheck:
    """Every engine-free check of a run (the first problem raised as one line), then its plan's shape."""
    executor_class(grid.executor, grid_path).check(ExecutorSettings(grid.executor, concurrency, grid.scheduler),
                                                   grid.protocol, grid_path)
    checked = check_inputs(grid, grid_path, root)
    if run_id is not None:
        check_run_id(run_id)
    protocol, arms = checked.protocol, checked.arms
    units = protocol.unit_ids(grid, checked.tasks, grid_path)
    pairs = protocol.pairs(grid, units, checked.tasks)
    played = [(arm, p.name) for p in grid_players(grid, checked.command_agents) for arm in grid.arms
              if protocol.plays(arms[arm], p.agent)]
    problems = []
    held = list(dict.fromkeys(c for _, c in pairs))
    for condition in grid.conditions:
        if condition not in held:
            problems.append(f"{grid_path}: conditions: '{condition}' gets no cell: no unit of the grid is run under it "
                            f"— fix: drop it" + (f" (its units are run under: {', '.join(held)})" if held else ""))
    if isinstance(grid.tasks, tuple):
        for unit in units:
            if not any(u == unit for u, _ in pairs):
                problems.append(f"{grid_path}: tasks: '{unit}' gets no cell: none of the grid's conditions is one of its "
                                "own — fix: drop it, or add one of its conditions (memgrid task list shows them)")
    for arm in grid.arms:
        if not any(a == arm for a, _ in played):
            problems.append(f"{grid_path}: arms: '{arm}' gets no cell: no agent of the grid plays it in the "
                            f"{grid.protocol} protocol — fix: drop it, or add an agent that plays it")
    runs_on = {p.name: p for p in (provider(arms[a], arms) for a in grid.arms)}  # as a run builds them
    builds = {b.name: b for b in (image_arm(p, arms) for p in runs_on.values())}
    images = [*CORE_IMAGES, *sorted(f"memgrid-arm-{b.name}" for b in builds.values() if arm_image_needed(b.root))]
    if any(p.embedder == "shared" for p in runs_on.values()):
        images.append("memgrid-embedder")
    agents = {a: agent_class(a, checked.command_agents) for a in grid.agents}
    images += sorted(f"memgrid-{a}" for a, cls in agents.items() if cls in cli_agents())  # each CLI's layer
    if any(cls.needs_model for cls in agents.values()):  # the gateway and the scripted model's sidecars
        images.append("memgrid-model")
    cells = grid.seeds * len(pairs) * len(played)
    return GridCheck(cells, len(pairs), len(played), grid.seeds, tuple(images), tuple(problems))

