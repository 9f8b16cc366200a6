"""The frozen bundle: everything the sandbox receives, as one tar with a sha256 manifest.

Layout inside the sandbox (/sandbox):
  MANIFEST.sha256   sha256sum-format list of every file below; its own sha256 is the bundle digest
  workspace/        the task fixture plus the arm's files (the agent works here; exported as the artifact)
  agent/            the agent's configuration: prompt.txt, instructions.md, config.json (memory.md: oracle arms)
  memory/           corpus arms: the condition's corpus, one rendered session per file (never exported)
  store/            mcp arms: a fresh copy of the arm's frozen store for the condition (never exported)
"""

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from runner.arms.kinds import kind_of
from runner.env.archive import Entry, pack
from runner.digest import CACHES, sha256_bytes, tree_files
from runner.errors import SpecError
from runner.plan.spec import ArmSpec, TaskSpec, arm_file

MANIFEST = "MANIFEST.sha256"
AGENT_UID = 1000


@dataclass(frozen=True)
class Bundle:
    tar: bytes
    digest: str  # sha256 of MANIFEST.sha256
    manifest: str
    files: int


def arm_entries(arm: ArmSpec, task: TaskSpec) -> list[Entry]:
    entries = []
    for i, f in enumerate(arm.files):
        source = arm_file(arm, i, task.id)
        if not source.is_file():
            raise SpecError(arm.root / "arm.yaml", f"files[{i}].source",
                            f"{source} does not exist for task '{task.id}'", f"add that file or remove task '{task.id}' from the grid")
        entries.append(Entry(f"workspace/{f.dest}", source.read_bytes()))
    return entries


def tree_entries(root: Path, prefix: str, skip: frozenset[str] = CACHES) -> list[Entry]:
    return [Entry(f"{prefix}/{p.relative_to(root).as_posix()}", p.read_bytes(), 0o755 if p.stat().st_mode & 0o111 else 0o644)
            for p in tree_files(root, skip)]


def arm_instructions(arm: ArmSpec) -> str:
    """Every memory arm gets the same text, byte for byte but for the slot naming its search tool,
    then its own appendix (capped by the schema); other arms only their appendix."""
    shared = ""
    if kind_of(arm).memory:
        template = resources.files("runner").joinpath("defaults/memory-instructions.md").read_text()
        shared = template.replace("{search_tool}", arm.search_tool or "")
    return shared + arm.instructions


def build_bundle(task: TaskSpec, arm: ArmSpec, agent_config: dict, memory: list[Entry] = ()) -> Bundle:
    """`memory` is what the arm's kind brings from the condition's corpus (already placed under memory/ or agent/)."""
    entries = tree_entries(task.fixture, "workspace") + list(memory)
    fixture_paths = {e.path for e in entries}
    for e in arm_entries(arm, task):
        if e.path in fixture_paths:
            raise SpecError(arm.root / "arm.yaml", "files", f"{e.path} would overwrite a fixture file of task '{task.id}'",
                            "choose another dest")
        entries.append(e)
    entries.append(Entry("agent/prompt.txt", task.prompt.encode()))
    entries.append(Entry("agent/instructions.md", arm_instructions(arm).encode()))
    entries.append(Entry("agent/config.json", json.dumps(agent_config, sort_keys=True, indent=2).encode()))
    return bundle_of(entries)


def bundle_of(entries: list[Entry]) -> Bundle:
    """The bundle of these files (paths relative to /sandbox), with their manifest; its sha256 is the digest."""
    entries = list(entries)
    manifest = "".join(f"{sha256_bytes(e.data)}  {e.path}\n" for e in sorted(entries, key=lambda e: e.path))
    entries.append(Entry(MANIFEST, manifest.encode()))
    return Bundle(pack(entries, uid=AGENT_UID, gid=AGENT_UID), sha256_bytes(manifest.encode()), manifest, len(entries) - 1)
