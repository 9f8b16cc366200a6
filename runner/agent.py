"""Agents (Harbor's agent): what drives the session in the sandbox.

Every agent has `prepare(image)` and `run(sandbox, prompt) -> Transcript`. The LLM-free reference
agents validate the harness itself: `floor` applies the task's naive reference (must score 0),
`ceiling` applies the informed one (must score 1). Each delivers its reference through its own
channel, recorded in the transcript with a digest, never through the bundle.
"""

import time
from dataclasses import dataclass, field
from typing import Protocol

from .archive import pack
from .bundle import AGENT_UID, tree_entries
from .digest import sha256_bytes
from .sandbox import Sandbox
from .spec import TaskSpec


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

    def add(self, type_: str, **data) -> None:
        self.events.append({"type": type_, "t": round(time.time(), 3), **data})


class Agent(Protocol):
    name: str

    def prepare(self, image: str) -> None: ...

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript: ...


class ReferenceAgent:
    """Overlays one of the task's reference solutions on the workspace."""

    reference: str

    def __init__(self, task: TaskSpec):
        self.task = task

    def prepare(self, image: str) -> None:
        """Nothing to install: the reference agents need only the sandbox image."""

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=self.name, model=None)
        transcript.add("init", tools=[], prompt_sha256=sha256_bytes(prompt.encode()))
        entries = tree_entries(self.task.reference(self.reference), "workspace")
        archive = pack(entries, uid=AGENT_UID, gid=AGENT_UID)
        try:
            sandbox.put("/sandbox", archive)
        except Exception as e:  # the agent failed at its own step: a recorded agent error, not a harness crash
            transcript.is_error, transcript.error = True, f"applying {self.reference} reference failed: {e}"
        transcript.add("channel", name=f"reference:{self.reference}", sha256=sha256_bytes(archive),
                       files=[e.path.removeprefix("workspace/") for e in entries])
        transcript.add("result", is_error=transcript.is_error, error=transcript.error)
        return transcript


class FloorAgent(ReferenceAgent):
    name = "floor"
    reference = "naive"


class CeilingAgent(ReferenceAgent):
    name = "ceiling"
    reference = "informed"


AGENTS = {"floor": FloorAgent, "ceiling": CeilingAgent}


def make_agent(name: str, task: TaskSpec) -> Agent:
    return AGENTS[name](task)
