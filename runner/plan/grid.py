"""Expand a grid spec into cells with stable ids, in run order.

Order: for each seed, task and condition, all arms of one agent run together, in an arm order
permuted per seed (recorded in run.json), so drift over a long run spreads across arms.
"""

import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from runner.digest import sha256_json
from runner.errors import SpecError
from runner.plan.players import Player
from runner.plan.spec import ArmSpec, GridSpec, TaskSpec, validate

# The `memgrid grid` options that replace a grid spec field, by the field they replace.
FLAGS = {"tasks": "--tasks", "arms": "--arms", "agents": "--agent", "seeds": "--seeds", "conditions": "--conditions",
         "models": "--model", "suite": "--suite"}


@dataclass(frozen=True)
class CellSpec:
    task: str
    arm: str
    seed: int
    condition: str
    agent: str
    cell_id: str
    order_index: int


@dataclass(frozen=True)
class GridInputs:
    """The digests of everything that defines a cell besides its coordinates."""
    tasks: dict[str, str]
    arms: dict[str, str]
    images: dict[str, str]
    corpora: dict[str, str]  # "condition/seed" -> corpus digest, for arms whose cells read the corpus
    agent: dict[str, str] = field(default_factory=dict)  # claude-code: model, CLI pin, model image (its cells' ids only)
    # A grid of several models: each model's agent inputs, as `agent` is for a grid of one (its players' ids only).
    by_model: dict[str, dict[str, str]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        data = asdict(self)
        if not self.by_model:  # a one-model grid's lock stays as it was before a grid could name several
            del data["by_model"]
        return data

    def agent_inputs(self, player: Player) -> dict[str, str]:
        """What defines a model agent's cells besides their coordinates: its model's inputs alone."""
        return self.by_model[player.model] if player.model else self.agent


def corpus_key(condition: str, seed: int) -> str:
    return f"{condition}/{seed}"


def cell_id(task: str, arm: str, seed: int, condition: str, agent: str, inputs: GridInputs, reads_corpus: bool,
            agent_inputs: dict[str, str] | None = None) -> str:
    """`agent`: the player's name; `agent_inputs`: a model agent's inputs (GridInputs.agent_inputs), None otherwise."""
    identity = {
        "task": task, "arm": arm, "seed": seed, "condition": condition, "agent": agent,
        "task_digest": inputs.tasks[task], "arm_digest": inputs.arms[arm], "images": inputs.images,
    }
    if reads_corpus:
        identity["corpus_digest"] = inputs.corpora[corpus_key(condition, seed)]
    if agent_inputs is not None:  # the model, its CLI pin and model image define what such an agent does
        identity["agent_inputs"] = agent_inputs
    return sha256_json(identity)[:16]


def arm_order(arms: tuple[str, ...], seed: int) -> list[str]:
    order = list(arms)
    random.Random(f"memgrid-arm-order-{seed}").shuffle(order)
    return order


def select(grid: GridSpec, protocol, tasks: dict[str, TaskSpec], arms: dict[str, ArmSpec],
           grid_path) -> tuple[list[str], list[str]]:
    """The grid's units (its `protocol`'s: coding tasks, generated cases, planted tasks) and arms, by name. The
    caller looks the protocol up (runner.protocols.registry): protocols build on this module, not it on them."""
    task_ids = protocol.unit_ids(grid, tasks, grid_path)
    for a in grid.arms:
        if a not in arms:
            raise SpecError(grid_path, "arms", f"names unknown arm '{a}'", f"use one of: {', '.join(sorted(arms))}")
    if not task_ids:
        raise SpecError(grid_path, "tasks", "selects no task", "add a task under tasks/ or list existing ones")
    check_unisolated_names(grid.unisolated_checkers, protocol.unisolated(grid, tasks, grid_path), {*tasks, *task_ids},
                           grid_path, "unisolated_checkers")
    return task_ids, list(grid.arms)


def check_unisolated_names(names, unisolated: dict[str, str], known: set[str], where, field: str) -> None:
    """An opt-in to unisolated checkers names only units that have one (`unisolated`; `known`: every unit): a
    misspelt id would leave the task it meant refused, and an isolated task named would have the report say its
    checker is not isolated."""
    for name in names:
        if name not in unisolated:
            problem = f"names unknown task '{name}'" if name not in known else f"names '{name}', whose checker is isolated"
            raise SpecError(where, field, problem, "name only tasks whose checker is not isolated (a task.yaml's "
                            "checker.unisolated, or a hosted benchmark's own check)"
                            + (f": {', '.join(sorted(unisolated))}" if unisolated else " (this project has none): remove it"))


def check_agent_names(grid: GridSpec, grid_path) -> None:
    from runner.agents.registry import AGENTS  # the agents package builds on plan; only this check needs it back

    for name in grid.agents:
        if name not in AGENTS and name not in grid.command_agents:
            raise SpecError(grid_path, "agents", f"names unknown agent '{name}'",
                            f"use one of: {', '.join(sorted({*AGENTS, *grid.command_agents}))}, or define it under command_agents")


def check_names(grid: GridSpec, protocol, grid_path, tasks: dict[str, TaskSpec], arms: dict[str, ArmSpec],
                flags: frozenset[str] = frozenset()) -> None:
    """Validate the grid and the names it uses before anything runs. `flags`: the fields command-line options
    set; an error in one of them names the option, not the spec file the user did not write it in."""
    try:
        validate(grid.as_dict(), "grid", grid_path)
        select(grid, protocol, tasks, arms, grid_path)
        check_agent_names(grid, grid_path)
    except SpecError as e:
        field_name = re.split(r"[.\[]", e.field, maxsplit=1)[0]
        if field_name in flags:
            raise SpecError(Path("(command line)"), FLAGS[field_name], e.problem, e.fix) from None
        raise


def expand(grid: GridSpec, task_ids: list[str], tasks: dict[str, TaskSpec], inputs: GridInputs,
           corpus_arms: frozenset[str] = frozenset(), grid_players: list[Player] | None = None,
           pairs: list[tuple[str, str]] | None = None,
           plays: Callable[[str, str], bool] | None = None) -> list[CellSpec]:
    """`corpus_arms`: the arms whose cells read the condition's corpus (their ids include its digest);
    `grid_players`: the grid's players (`players`; default: its agents, none on a model); `pairs`: the (unit,
    condition) pairs the grid's protocol runs per seed (default: each task under each of its conditions the grid
    names); `plays(arm, agent)`: whether a cell pairs them (default: every agent plays every arm)."""
    if grid_players is None:
        grid_players = [Player(a) for a in grid.agents]
    if pairs is None:
        pairs = [(t, c) for t in task_ids for c in grid.conditions if c in tasks[t].conditions]
    cells = []
    for seed in range(grid.seeds):
        order = arm_order(grid.arms, seed)
        for task, condition in pairs:
            for player in grid_players:
                for arm in order:
                    if plays is not None and not plays(arm, player.agent):
                        continue
                    cid = cell_id(task, arm, seed, condition, player.name, inputs, arm in corpus_arms,
                                  inputs.agent_inputs(player) if player.needs_model else None)
                    cells.append(CellSpec(task, arm, seed, condition, player.name, cid, len(cells)))
    return cells
