"""The agents a grid can name: the built-in classes by name, and the grid spec's command agents."""

from runner.agents.answerer import MessagesAnswerAgent, ModelAnswerAgent
from runner.agents.base import Agent, SessionSetup
from runner.agents.claude_code import ClaudeCodeAgent
from runner.agents.codex import CodexAgent
from runner.agents.command import CommandAgent, CommandSpec
from runner.agents.model_cli import ModelCliAgent
from runner.agents.reference import CeilingAgent, ExtractiveAgent, FloorAgent, ReaderAgent
from runner.agents.submission import SubmissionAgent
from runner.plan.players import Player, agent_of, players

AGENTS: dict[str, type[Agent]] = {c.name: c for c in (FloorAgent, CeilingAgent, ReaderAgent, ExtractiveAgent,
                                                     ClaudeCodeAgent, CodexAgent, SubmissionAgent, ModelAnswerAgent,
                                                     MessagesAnswerAgent)}


def cli_agents() -> list[type[ModelCliAgent]]:
    """The agents that are real CLIs on a model, each with its own image layer."""
    return [c for c in AGENTS.values() if issubclass(c, ModelCliAgent)]


def agent_class(name: str, command_agents: dict[str, CommandSpec]) -> type[Agent]:
    """The class of an agent, or of the agent a player (`agent@model`, a cell's agent coordinate) plays."""
    name = agent_of(name)
    return CommandAgent if name in command_agents else AGENTS[name]


def grid_players(grid, command_agents: dict[str, CommandSpec]) -> list[Player]:
    """The grid's players: each model agent once per model in a grid of several (runner.plan.grid.players)."""
    return players(grid, lambda a: agent_class(a, command_agents).needs_model)


def make_agent(setup: SessionSetup, command_agents: dict[str, CommandSpec]) -> Agent:
    name = agent_of(setup.cell.agent)
    return CommandAgent(setup, command_agents[name]) if name in command_agents else AGENTS[name](setup)
