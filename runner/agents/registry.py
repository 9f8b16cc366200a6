"""The agents a grid can name: the built-in classes by name, and the grid spec's command agents."""

from runner.agents.answerer import MessagesAnswerAgent, ModelAnswerAgent
from runner.agents.base import Agent, SessionSetup
from runner.agents.claude_code import ClaudeCodeAgent
from runner.agents.codex import CodexAgent
from runner.agents.command import CommandAgent, CommandSpec
from runner.agents.model_cli import ModelCliAgent
from runner.agents.reference import CeilingAgent, ExtractiveAgent, FloorAgent, ReaderAgent
from runner.agents.submission import SubmissionAgent

AGENTS: dict[str, type[Agent]] = {c.name: c for c in (FloorAgent, CeilingAgent, ReaderAgent, ExtractiveAgent,
                                                     ClaudeCodeAgent, CodexAgent, SubmissionAgent, ModelAnswerAgent,
                                                     MessagesAnswerAgent)}


def cli_agents() -> list[type[ModelCliAgent]]:
    """The agents that are real CLIs on a model, each with its own image layer."""
    return [c for c in AGENTS.values() if issubclass(c, ModelCliAgent)]


def agent_class(name: str, command_agents: dict[str, CommandSpec]) -> type[Agent]:
    return CommandAgent if name in command_agents else AGENTS[name]


def make_agent(setup: SessionSetup, command_agents: dict[str, CommandSpec]) -> Agent:
    name = setup.cell.agent
    return CommandAgent(setup, command_agents[name]) if name in command_agents else AGENTS[name](setup)
