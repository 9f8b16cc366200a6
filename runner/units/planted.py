"""Planted tasks, as memgrid ships them (tasks/planted/<id>/planted.yaml) or a source format hosts them: a fixture,
an instruction, the memories to plant, the judge's oracle (hidden/, never seen by the agent), a solution and the
naive implementation.

They live in a folder of their own because a coding task (tasks/<id>/task.yaml) is a different shape:
its memory is a corpus of transcripts under conditions, graded by an oracle; a planted task's memory is
a handful of typed memories written through the arm's own write API, graded by the task's judge
(hidden/check.py). The visible/holdout split (split.yaml) enters every unit's digest, so a run records
which split it ran.
"""

from dataclasses import dataclass
from pathlib import Path

from runner.digest import sha256_bytes
from runner.errors import SpecError
from runner.plan.spec import FOLDER_FIX, inside_project, read_yaml, validate

FOLDER = Path("tasks") / "planted"
SPLIT = "split.yaml"


@dataclass(frozen=True)
class Memory:
    type: str  # wisdom | belief | episode | correction
    content: str


@dataclass(frozen=True)
class PlantedTask:
    id: str
    title: str
    prompt: str
    memories: tuple[Memory, ...]
    terms: tuple[str, ...]  # phrases of the memory the solution follows: what the reader looks for
    leak_terms: tuple[str, ...]
    # python3 {oracle}/check.py {artifact}: {artifact} is the workspace exactly as the agent left it, {oracle}
    # is hidden/ (the judge's alone, never laid over the workspace); check.py runs artifact code only through
    # the checker image's memgrid_check, as another user that cannot read {oracle}
    check: tuple[str, ...]
    check_seconds: int
    agent_seconds: int
    root: Path
    # A task hosted from another benchmark's layout (sources/smriti.py): its fixture folder when it is not
    # root/fixture, and its own check as a shell command run over the workspace with hidden/ laid over it (its
    # runner's way: the artifact's code and hidden/'s tests in one process tree, so the check is not isolated and
    # `unisolated` says why); None: memgrid's own planted task.
    fixture_dir: Path | None = None
    check_shell: str | None = None
    unisolated: str | None = None
    hosted_digest: str | None = None  # what else defines a hosted task (its fixture, the reader of its format)

    @property
    def fixture(self) -> Path:
        return self.fixture_dir or self.root / "fixture"

    @property
    def hidden(self) -> Path:
        return self.root / "hidden"

    def reference(self, option: str) -> Path:
        """The files an option writes over the fixture: the solution (informed) or the naive implementation (a
        hosted task without naive/ has none: the naive option leaves the fixture as it is)."""
        return self.root / ("solution" if option == "informed" else "naive")


def load_planted_task(task_dir: Path) -> PlantedTask:
    path = task_dir / "planted.yaml"
    project = task_dir.parent.parent.parent  # tasks/planted/<id>
    inside_project(task_dir, project, path, "(task folder)", task_dir.name, FOLDER_FIX)
    inside_project(path, project, path, "(file)", path.name, "make it a file of the task folder, not a link out of it")
    data = read_yaml(path)
    validate(data, "planted", path)
    if data["id"] != task_dir.name:
        raise SpecError(path, "id", f"is '{data['id']}' but the folder is '{task_dir.name}'", "make the id equal the folder name")
    for sub in ("fixture", "hidden", "solution", "naive"):
        if not (task_dir / sub).is_dir():
            raise SpecError(path, "(task folder)", f"has no {sub}/ folder", f"create {task_dir / sub}")
        # read whole into the sandbox (fixture) or the check (hidden, solution, naive)
        inside_project(task_dir / sub, project, path, "(task folder)", f"{sub}/", FOLDER_FIX)
    if "{oracle}/check.py" not in data["check"]["command"]:
        raise SpecError(path, "check.command", "never names {oracle}/check.py",
                        'make it ["python3", "{oracle}/check.py", "{artifact}"]: hidden/check.py is the judge')
    if not any("{artifact}" in part for part in data["check"]["command"]):
        raise SpecError(path, "check.command", "never names {artifact}", "point the check at {artifact}, the graded workspace")
    return PlantedTask(data["id"], data["title"], data["prompt"],
                       tuple(Memory(m["type"], m["content"]) for m in data["memories"]), tuple(data["terms"]),
                       tuple(data["leak_terms"]), tuple(data["check"]["command"]), data["check"].get("timeout_seconds", 60),
                       data.get("agent_seconds", 300), task_dir)


def load_planted_tasks(root: Path) -> dict[str, PlantedTask]:
    folder = root / FOLDER
    if not folder.is_dir():
        raise SpecError(folder, "(folder)", "does not exist", "run memgrid from the project checkout, or set MEMGRID_ROOT to it")
    return {t.id: t for t in map(load_planted_task, sorted(p.parent for p in folder.glob("*/planted.yaml")))}


def load_split(root: Path, tasks: dict[str, PlantedTask]) -> tuple[dict[str, str], str]:
    """Each task's split (visible | holdout) and the split file's sha256; every task in exactly one."""
    path = root / FOLDER / SPLIT
    data = read_yaml(path)
    split: dict[str, str] = {}
    for part in ("visible", "holdout"):
        ids = data.get(part)
        if not isinstance(ids, list):
            raise SpecError(path, part, "is missing or not a list", f"list the {part} task ids")
        for i in ids:
            if i not in tasks:
                raise SpecError(path, part, f"names '{i}', which is not a task under {FOLDER}", "remove it or add the task")
            if i in split:
                raise SpecError(path, part, f"names '{i}' twice (also in {split[i]})", "keep each task in one part")
            split[i] = part
    missing = sorted(set(tasks) - set(split))
    if missing:
        raise SpecError(path, "visible", f"does not place {', '.join(missing)}", "add each task to visible or holdout")
    return split, sha256_bytes(path.read_bytes())
