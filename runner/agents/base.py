"""Agents (Harbor's agent): what drives the session in the sandbox.

Every agent has `prepare(image)` and `run(sandbox, prompt) -> Transcript`. The LLM-free reference
agents validate the harness itself: `floor` applies the task's naive reference (must score 0),
`ceiling` applies the informed one (must score 1). Each delivers its reference through its own
channel, recorded in the transcript with a digest, never through the bundle.
"""

import json
import time
from dataclasses import dataclass, field
from typing import Protocol

from runner.env.archive import Entry, pack
from runner.env.bundle import AGENT_UID, tree_entries
from runner.digest import sha256_bytes
from runner.env.sandbox import Sandbox
from runner.plan.spec import TaskSpec


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

    def add(self, type_: str, **data) -> None:
        self.events.append({"type": type_, "t": round(time.time(), 3), **data})

    def add_printed(self, stdout: str) -> None:
        """Events a program in the sandbox printed, one JSON object per line (other lines are noise)."""
        for line in stdout.splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
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


def task_options(task: TaskSpec) -> dict[str, list[str]]:
    """What a scripted agent looks for in what it retrieved, in order: the fact's terms, then each
    wrong rule's markers; the reference solution of the same name is what it applies."""
    options = {"informed": list(task.fact_terms)}
    options.update({f"damaged/{c}": list(m) for c, m in sorted(task.wrong_rules.items())})
    return options


class ReaderAgent:
    """The LLM-free reader (images/sandbox/memgrid-reader): searches its arm's memory with the prompt
    and applies the rule of the first result that names one of the task's options.

    Its options (the fact's terms, each wrong rule's markers) and the solution for each arrive
    through its own channel, /sandbox/.reader, recorded in the transcript; none is in the bundle.
    """

    name = "reader"

    def __init__(self, task: TaskSpec):
        self.task = task

    def prepare(self, image: str) -> None:
        """Nothing to install: memgrid-reader is part of the sandbox image."""

    def options(self) -> dict[str, list[str]]:
        return task_options(self.task)

    def channel(self) -> bytes:
        entries = [Entry(".reader/options.json", json.dumps(self.options(), indent=1).encode())]
        for option in ["naive", *self.options()]:
            slug = option.replace("/", "__")
            entries += [Entry(f".reader/solutions/{slug}/{e.path.removeprefix('s/')}", e.data, e.mode)
                        for e in tree_entries(self.task.reference(option), "s")]
        return pack(entries, uid=AGENT_UID, gid=AGENT_UID)

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=self.name, model=None)
        archive = self.channel()
        sandbox.put("/sandbox", archive)
        transcript.add("channel", name="reader:options", sha256=sha256_bytes(archive), options=self.options())
        result = sandbox.exec(["memgrid-reader"], timeout=self.task.agent_seconds, workdir="/sandbox")
        transcript.add_printed(result.stdout)
        record_truncation(transcript, result)
        if result.exit_code != 0:
            transcript.is_error = True
            transcript.error = (f"memgrid-reader timed out after {self.task.agent_seconds}s" if result.timed_out
                                else f"memgrid-reader exited {result.exit_code}: {result.stderr.strip()[-300:]}")
        return transcript


AGENTS = {"floor": FloorAgent, "ceiling": CeilingAgent, "reader": ReaderAgent}


def make_agent(name: str, task: TaskSpec) -> Agent:
    return AGENTS[name](task)
