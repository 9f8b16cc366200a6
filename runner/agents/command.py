"""The `command` agent: any command line, gridded. Its definition comes from the grid spec:

    command_agents:
      stub-unknown:
        command: [python3, -I, unknown.py]
        files: [runner/protocols/two_session/stubs/unknown.py]

The files (paths relative to the project root) are delivered through the agent's own channel to
/sandbox/.command/ (recorded with their digest, never in the bundle), and the command runs there as
the sandbox user with the prompt on stdin and in the file named by MEMGRID_PROMPT_FILE. Its stdout is
its transcript and its output; tokens are unobserved (None). A non-zero exit or a timeout is recorded (the
transcript's `ended`, the ledger's `agent_ended`) and the cell is scored as the command left it: an agent
cannot choose to be discarded.
"""

from dataclasses import dataclass
from pathlib import Path

from runner.agents.base import Agent, Transcript, ending_of, record_truncation
from runner.arms.kinds import STORE_DIR, kind_of
from runner.digest import sha256_bytes
from runner.env.archive import Entry, pack
from runner.env.bundle import AGENT_UID
from runner.env.sandbox import Sandbox
from runner.errors import SpecError
from runner.plan.spec import inside_project

FOLDER = "/sandbox/.command"
PROMPT_FILE = "/sandbox/agent/prompt.txt"


@dataclass(frozen=True)
class CommandSpec:
    name: str
    command: tuple[str, ...]
    files: tuple[Path, ...]  # absolute paths on the host
    base: Path | None = None  # a folder delivered whole: files keep their paths relative to it; None: by name


def load_command_agents(data: dict, root: Path, grid_path, solutions: dict | None = None) -> dict[str, CommandSpec]:
    """The grid spec's `command_agents` mapping, each file checked to be inside the project and to exist (the
    schema checked the shape). Its files are copied into the sandbox and so into what the cell records.
    `solutions`: the source formats that read a benchmark's own solution folder, by the key naming it
    (sources/registry.SOLUTIONS, handed in by the run: agents import no format)."""
    agents = {}
    for name, spec in data.items():
        if key := next((k for k in solutions or {} if k in spec), None):
            agents[name] = solution_agent(name, key, spec[key], root, grid_path, solutions[key]())
            continue
        files = []
        for i, f in enumerate(spec.get("files", [])):
            path = inside_project(root / f, root, grid_path, f"command_agents.{name}.files[{i}]", f,
                                  "name a file inside the project, relative to its root, e.g. "
                                  "runner/protocols/two_session/stubs/unknown.py (a copy, not a link out of it)")
            if not path.is_file():
                raise SpecError(grid_path, f"command_agents.{name}.files[{i}]", f"{f} does not exist",
                                "give a file path relative to the project root")
            files.append(path)
        agents[name] = CommandSpec(name, tuple(spec["command"]), tuple(files))
    return agents


def solution_agent(name: str, key: str, named: str, root: Path, grid_path, source) -> CommandSpec:
    """A benchmark's solution folder (e.g. a trap solution's, `trap_solution:`) as a command agent, read by
    `source`, the source format that defines `key`."""
    field = f"command_agents.{name}.{key}"
    folder = inside_project(root / named, root, grid_path, field, named,
                            "name a folder inside the project, relative to its root (a copy, not a link out of it)")
    command, files = source.solution_agent(folder, grid_path, field)
    return CommandSpec(name, command, tuple(files.values()), base=folder)


def command_env(setup) -> dict[str, str]:
    """The command's whole environment besides the image's own: where its prompt is, which session this
    is, and its arm's writable store when the arm has a write path. Nothing names a protocol's inputs."""
    env = {"HOME": "/home/agent", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "MEMGRID_PROMPT_FILE": PROMPT_FILE, "MEMGRID_PHASE": setup.phase}
    if kind_of(setup.arm).write_path(setup.arm) is not None:
        env["MEMGRID_STORE"] = STORE_DIR
    return env


class CommandAgent(Agent):
    name = "command"

    def __init__(self, setup, spec: CommandSpec):
        super().__init__(setup)
        self.spec = spec
        self.name = spec.name

    def channel(self) -> tuple[bytes, list[str]]:
        entries = [Entry(f".command/{p.relative_to(self.spec.base).as_posix() if self.spec.base else p.name}",
                         p.read_bytes(), 0o755) for p in self.spec.files]
        # The folder is the command's working directory: made even for a command that brings no files.
        return pack(entries, uid=AGENT_UID, gid=AGENT_UID, folders=(".command",)), [e.path for e in entries]

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=self.name, model=None)
        archive, files = self.channel()
        sandbox.put("/sandbox", archive)
        env = command_env(self.setup)
        transcript.add("channel", name=f"command:{self.name}", sha256=sha256_bytes(archive), files=files)
        transcript.add("init", agent=self.name, command=list(self.spec.command), env_names=sorted(env),
                       prompt_sha256=sha256_bytes(prompt.encode()), tools=[])
        seconds = self.setup.agent_seconds
        # The prompt on stdin from its file: the engine's exec API gives no stdin without attaching a socket.
        result = sandbox.exec(["sh", "-c", 'exec "$@" < "$MEMGRID_PROMPT_FILE"', "sh", *self.spec.command],
                              timeout=seconds, workdir=FOLDER, env=env)
        transcript.output = result.stdout
        transcript.add("output", lines=len(result.stdout.splitlines()), sha256=sha256_bytes(result.stdout.encode()),
                       tail=result.stdout[-2000:], stderr_tail=result.stderr[-1000:])
        record_truncation(transcript, result)
        transcript.ended = ending_of(result, seconds)
        if result.exit_code != 0:
            transcript.is_error = True
            transcript.error = (f"{self.name} timed out after {seconds}s" if transcript.ended == "timeout"
                                else f"{self.name} exited {result.exit_code}: {result.stderr.strip()[-300:]}")
        transcript.add("result", is_error=transcript.is_error, error=transcript.error, ended=transcript.ended,
                       exit_code=result.exit_code)
        return transcript
