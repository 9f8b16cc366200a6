"""Agents (Harbor's agent): what drives a session in the sandbox.

Every agent is a class with `prepare(image)` and `run(sandbox, prompt) -> Transcript`, registered
by name in `agents.registry`. What a session needs beyond the prompt arrives in its SessionSetup;
what an agent needs from the run as a whole (an image layer, a model network, a price) it says
through the class attributes and hooks below, so no other module names an agent.
"""

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from runner.env.sandbox import Sandbox
from runner.plan.spec import ArmSpec, SessionLimits, TaskSpec


BUDGET_EXHAUSTED = "budget_exhausted"  # error class of a session that reached a cap: the agent's doing, still scored
CONTEXT_WINDOW = "context_window"  # error class of a session the model refused as past its window: still scored

# How a session ended, as the harness saw it (Transcript.ended, the ledger's `agent_ended`). Every ending is the
# agent's own doing and is scored: the gate discards a cell only on evidence of a fault outside the agent.
ENDED_OK = "ok"
ENDED_EXIT_NONZERO = "exit_nonzero"  # its process exited non-zero (or was killed) before its time was up
ENDED_TIMEOUT = "timeout"  # killed at the session's time limit
ENDED_ERROR = "error"  # it reported an error itself (the CLI's result says is_error, or it printed none)
ENDED_CAPPED = "capped"  # stopped at a session cap (turns, output tokens): error_class budget_exhausted
ENDINGS = (ENDED_OK, ENDED_EXIT_NONZERO, ENDED_TIMEOUT, ENDED_ERROR, ENDED_CAPPED)
ERROR_ENDINGS = (ENDED_EXIT_NONZERO, ENDED_TIMEOUT, ENDED_ERROR)  # "the agent ended with an error": scored, and counted


def first_ending(*endings: str | None) -> str | None:
    """A cell's ending over its sessions: the first that did not end ok; ok when all did; None when none ran."""
    seen = [e for e in endings if e is not None]
    return next((e for e in seen if e != ENDED_OK), seen[0] if seen else None)


def ending_of(result, seconds: float) -> str:
    """A program's ending from its exec result: exit 0, killed at its time limit, or any other exit (a SIGKILL it
    chose, exit 137, is not a timeout unless its time was up)."""
    if result.exit_code == 0:
        return ENDED_OK
    return ENDED_TIMEOUT if result.timed_out and result.seconds >= seconds else ENDED_EXIT_NONZERO


@dataclass(frozen=True)
class Usage:
    fresh_input: int | None = None
    cache_read: int | None = None
    cache_creation: int | None = None
    output: int | None = None


@dataclass
class Transcript:
    agent: str
    model: str | None
    events: list[dict] = field(default_factory=list)
    is_error: bool = False
    error: str | None = None
    usage: Usage = field(default_factory=Usage)  # None fields: not observed (an LLM-free agent has no model)
    error_class: str | None = None
    cli_cost_usd: float | None = None  # the CLI's own figure: kept, never used as the cost (unverified)
    output: str = ""  # what the agent answered: its printed lines that are not events (a protocol may judge them)
    ended: str | None = None  # one of ENDINGS; None: the agent did not run

    def add(self, type_: str, **data) -> None:
        self.events.append({"type": type_, "t": round(time.time(), 3), **data})

    def add_printed(self, stdout: str) -> None:
        """Events a program in the sandbox printed, one JSON object per line; its other lines are its output."""
        for line in stdout.splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                event = None
            if not isinstance(event, dict):
                self.output += line + "\n"
                continue
            self.add(event.pop("type", "unknown"), **event)

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for event in self.events:
                f.write(json.dumps(event, sort_keys=True) + "\n")


def record_truncation(transcript: Transcript, result) -> None:
    """The agent printed more than the controller keeps (the bounded capture's head and tail): say
    how much of it is missing from the transcript."""
    if result.dropped_bytes:
        transcript.add("output_truncated", stdout_bytes=result.stdout_bytes, dropped_bytes=result.dropped_bytes,
                       dropped_lines=result.stdout_dropped_lines)


@dataclass(frozen=True)
class ReferenceChannel:
    """What a protocol hands an LLM-free reference agent through the agent's own channel (never the
    bundle): files for its channel folder, the arguments its program runs with, and what the
    transcript records of it besides its digest."""
    name: str = "none"
    entries: tuple = ()  # archive.Entry, relative to the agent's channel folder
    args: tuple[str, ...] = ()
    record: dict = field(default_factory=dict)


@dataclass
class SessionSetup:
    """One session of one cell, as its agent sees it."""
    cell: object  # plan.grid.CellSpec
    task: TaskSpec | None  # the coding task; None for a protocol whose cells have no task folder
    arm: ArmSpec
    phase: str  # the protocol's name for this session ("session", "step1", "step2")
    agent_seconds: int
    record_dir: Path  # where the agent keeps its raw records (a stream, a log)
    instructions: str = ""  # the arm's instruction text
    channel: ReferenceChannel = field(default_factory=ReferenceChannel)
    endpoint: object | None = None  # env.model_endpoint.ModelEndpoint when the agent needs a model
    run_setup: object | None = None  # what the agent class prepared for the whole grid (prepare_grid)
    limits: SessionLimits = field(default_factory=SessionLimits)  # caps on a model session (turns, output tokens)


class Agent:
    """The base of every agent. Subclasses set `name` and implement `run`."""
    name: ClassVar[str]
    needs_model: ClassVar[bool] = False  # cells get their own network with the model gateway
    protocols: ClassVar[tuple[str, ...] | None] = None  # the protocols it can play; None: any
    # Whether records written inside its sandbox (an arm's log of what it served) can be taken as they are:
    # only memgrid's own LLM-free agents; any other agent could have written them itself.
    harness_code: ClassVar[bool] = False
    turn_cap: ClassVar[bool] = True  # whether it can stop a session at limits.max_turns (or needs no cap: no model)
    # Whether it runs an arm's hooks at their events, which the gate's hooks_fired proof requires: under an agent
    # that does not, every cell of an arm with hooks would be discarded hook_not_fired, so the grid is refused.
    runs_hooks: ClassVar[bool] = False
    # Whether its session connects to an arm's MCP server and lists its tools, as the gate's mcp_connected and
    # required_tools_listed proofs require of a session under an arm with a server of its own: under an agent that
    # does not, every such cell would be discarded mcp_server_failed, so the grid is refused.
    mcp_client: ClassVar[bool] = False
    # Whether each of its model requests stands alone (the answerer's, one per question) rather than resending a
    # session's growing history: an estimate then reads none of their input from a provider's prompt cache.
    independent_requests: ClassVar[bool] = False

    def __init__(self, setup: SessionSetup):
        self.setup = setup
        self.timings: dict[str, float] = {}

    @classmethod
    def prepare_grid(cls, client, grid, grid_path, images, arm_images: dict, log=print):
        """What every cell of this agent needs from the run (images, a price, a pin); None: nothing."""
        return None

    @classmethod
    def image(cls, run_setup, base):
        """The image a cell runs in, given the arm's image: the arm's own unless the agent layers itself over it."""
        return base

    @classmethod
    def bundle_entries(cls, arm: ArmSpec, agent_config: dict) -> list:
        """Files the agent's configuration adds to the verified bundle."""
        return []

    def cost(self, usage: Usage) -> float | None:
        return None

    @classmethod
    def reply(cls, record_dir: Path) -> str | None:
        """What a session answered in the end, read back from the records it left in `record_dir`; None: the agent
        keeps no such record (memgrid's LLM-free agents, a command agent)."""
        return None

    def prepare(self, image: str) -> None:
        """Nothing to install per cell unless an agent says so."""

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        raise NotImplementedError

    def read_gateway(self, transcript: Transcript, gateway: list[dict]) -> None:
        """What the gateway's record of the session adds to the agent's own (a CLI that prints no tool list)."""


