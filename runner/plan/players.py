"""A grid's players: the agents its cells name, each model agent once per model in a grid of several models."""

from dataclasses import dataclass
from typing import Callable

from runner.plan.spec import GridSpec


@dataclass(frozen=True)
class Player:
    """An agent as a grid's cells name it. In a grid of several models an agent that needs a model is one player
    per model, named `agent@model` (claude-code@scripted-skim): the name is the cells' agent coordinate, so every
    table, contrast and comparison keeps the models apart and none pools them unsaid. Otherwise the agent's name."""
    agent: str
    model: str | None = None  # set only in a grid of several models
    needs_model: bool = False

    @property
    def name(self) -> str:
        return f"{self.agent}@{self.model}" if self.model else self.agent


def agent_of(player: str) -> str:
    """The agent a player name plays (agent names never hold '@'; a model id may)."""
    return player.partition("@")[0]


def model_of(player: str) -> str | None:
    """The model a player's name carries; None for an agent of a one-model grid, or one without a model."""
    return player.partition("@")[2] or None


def players(grid: GridSpec, needs_model: Callable[[str], bool]) -> list[Player]:
    """The grid's players in run order: each agent, and in a grid of several models each agent that needs a model
    once per model, in the order the grid lists them."""
    several = len(grid.models) > 1
    return [Player(a, m if several and needs_model(a) else None, needs_model(a))
            for a in grid.agents for m in (grid.models if several and needs_model(a) else (None,))]
