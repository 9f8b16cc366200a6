"""`memgrid task import --format smriti PATH`: SMRITI-Bench (genomewalker/chitta, benchmarks/smriti/) as published,
hosted in the planted protocol.

A SMRITI folder holds `tasks/<id>/task.json` (id, repo_fixture, prompt, check_cmd, planted_memories with content,
realm and type, tags, expected_tokens_budget), beside it the fixture (`repo_fixture`: a folder of the task, or
`git:<url>#<sha>`), `hidden/` (laid over the workdir only after the agent's turn, then `check_cmd` runs there) and
`solution/` (copied over the fixture, the check must pass), and `split.json` (task -> visible | holdout; its
split_hash is sha256(json.dumps(assignments, sort_keys=True)), as its split.py computes it). The words that would
give a task's convention away are in its corpus test, `tests/test_scaffold.py` (LEAK_CHECK_TERMS), read here as a
literal: nothing of the source is run.

The import copies every task's files unchanged into tasks/<suite>/source/tasks/<id>/ and split.json into
tasks/<suite>/source/; a git fixture is cloned at its pinned commit into tasks/<suite>/fixtures/<id>/ (the tree
only: its .git is not carried, the one thing hosted unlike SMRITI's runner, which clones it whole), its url,
commit and tree digest recorded. tasks/<suite>/provenance.json records the checkout's origin, every file's sha256,
each task's split and leak terms. A malformed task is refused in one line (file, field, fix); the others go on.
"""

import ast
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from runner.digest import sha256_bytes, sha256_json, tree_digest
from runner.errors import UserError
from runner.plan.spec import DEFAULT_SUITE, project_root
from runner.sources.base import (ExportResult, ImportResult, Refusal, Refused, Source, SourceFormat, hosted_files,
                                 new_suite_folder, read_provenance, write_hosted_suite)
from runner.units.planted import Memory, PlantedTask, load_planted_tasks

REPOSITORY = "https://github.com/genomewalker/chitta"
MEMORY_TYPES = ("wisdom", "belief", "episode", "correction")
REQUIRED = ("id", "repo_fixture", "prompt", "check_cmd", "planted_memories", "tags")  # its runner.validate_task's
SPLITS = ("visible", "holdout")
SPLIT_FILE = "split.json"
LEAK_FILE = "tests/test_scaffold.py"
LEAK_NAME = "LEAK_CHECK_TERMS"
TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
GIT_FIXTURE = re.compile(r"^git:(?P<url>[^#]+)#(?P<sha>[0-9a-f]{40})$")
SKIP = frozenset({".git", "__pycache__", ".pytest_cache"})
GIT_SECONDS = 300
# Its runner gives the agent 600 s (ClaudeCodeAdapter) and runs check_cmd without a limit; memgrid bounds the check.
AGENT_SECONDS = 600
CHECK_SECONDS = 300
UNISOLATED = ("check_cmd runs in the workspace the agent left with hidden/ laid over it, as SMRITI's runner runs it: "
              "the agent's code runs in the same process tree as the hidden tests and could steer their verdict")


@dataclass
class TaskPlan:
    """A SMRITI task as it is (or, on a dry run, would be) hosted."""
    id: str
    suite: str
    split: str
    memories: int
    fixture: dict  # {"folder": name} or {"git": url, "commit": sha, "tree_sha256": digest}
    leak_terms: tuple[str, ...]
    files: dict[str, bytes] = field(default_factory=dict)  # under source/: the task's files unchanged
    fixture_files: dict[str, bytes] = field(default_factory=dict)  # under fixtures/<id>/: a git fixture's tree

    def line(self) -> str:
        where = (f"fixture {self.fixture['folder']}/" if "folder" in self.fixture else
                 f"git fixture at {self.fixture['commit'][:12]} ({len(self.fixture_files)} files; its .git not carried)")
        return (f"import {self.id} -> tasks/{self.suite}/: {self.split}, {self.memories} planted "
                f"memor{'y' if self.memories == 1 else 'ies'}, {where}, "
                + (f"{len(self.leak_terms)} leak terms" if self.leak_terms else f"no leak terms in {LEAK_FILE}"))

    def unisolated_line(self) -> str:
        return (f"note {self.id}: check_cmd runs the agent's code in the same process tree as hidden/'s tests (as "
                "SMRITI's runner does); a grid names the task under unisolated_checkers to accept that")


def smriti_root(path: Path) -> Source:
    """The SMRITI folder: PATH itself (holding tasks/), or benchmarks/smriti/ of a chitta checkout."""
    for root in (path, path / "benchmarks" / "smriti"):
        if (root / "tasks").is_dir():
            return Source(root.resolve(), "SMRITI")
    raise UserError(f"{path}: holds no SMRITI tasks/ folder — fix: give benchmarks/smriti/ of a chitta checkout "
                    "(the folder holding tasks/<id>/task.json and split.json), or the checkout itself")


def files_under(src: Source, folder: Path, field_name: str) -> dict[str, bytes]:
    """Every file under `folder` (relative paths), each checked to stay inside the checkout."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if SKIP & set(rel.parts):
            continue
        src.inside(p, field_name)
        if p.is_file():
            out[rel.as_posix()] = p.read_bytes()
    return out


def read_split(src: Source) -> tuple[dict[str, str], str | None]:
    """split.json's assignments and its split_hash (as SMRITI's split.fingerprint); empty and None when absent."""
    path = src.root / SPLIT_FILE
    if not path.is_file():
        return {}, None
    try:
        assignments = json.loads(src.inside(path).read_bytes())
    except ValueError as e:
        raise UserError(f"{path}: is not JSON ({e}) — fix: restore SMRITI's split.json") from None
    if not isinstance(assignments, dict) or not assignments or any(v not in SPLITS for v in assignments.values()):
        raise UserError(f"{path}: is not a mapping of task ids to visible or holdout — fix: restore SMRITI's split.json")
    return assignments, sha256_bytes(json.dumps(assignments, sort_keys=True).encode())


def read_leak_terms(src: Source) -> dict[str, list[str]]:
    """LEAK_CHECK_TERMS of SMRITI's corpus test, read as the literal it is (the file is never run); {} when the
    checkout has no such test."""
    path = src.root / LEAK_FILE
    if not path.is_file():
        return {}
    try:
        tree = ast.parse(src.inside(path).read_bytes(), filename=str(path))
    except SyntaxError as e:
        raise UserError(f"{path}: does not parse ({e.msg}, line {e.lineno}) — fix: restore SMRITI's corpus test") from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == LEAK_NAME for t in node.targets):
            try:
                terms = ast.literal_eval(node.value)
            except ValueError:
                break
            if isinstance(terms, dict) and all(isinstance(v, list) and all(isinstance(t, str) for t in v)
                                               for v in terms.values()):
                return {str(k): list(v) for k, v in terms.items()}
            break
    raise UserError(f"{path}: {LEAK_NAME} is not a literal mapping of task ids to lists of strings — fix: restore "
                    "SMRITI's corpus test")


def need(task: dict, name: str, kind, where: str, fix: str):
    value = task.get(name)
    if not isinstance(value, kind) or (isinstance(value, (str, list)) and not value):
        raise Refused(where, name, "is missing or empty" if value in (None, "", []) else
                      f"is a {type(value).__name__}, not a {getattr(kind, '__name__', kind)}", fix)
    return value


def read_task_json(src: Source, task_dir: Path) -> dict:
    where = src.rel(task_dir / "task.json")
    try:
        task = json.loads(src.inside(task_dir / "task.json").read_bytes())
    except ValueError as e:
        raise Refused(where, "(file)", f"is not JSON ({e})", "restore the task as published") from None
    if not isinstance(task, dict):
        raise Refused(where, "(file)", "is not a JSON object", "restore the task as published")
    need(task, "id", str, where, "give the task's id, equal to its folder name")
    if task["id"] != task_dir.name or not TASK_ID.match(task["id"]):
        raise Refused(where, "id", f"is '{task['id']}' but the folder is '{task_dir.name}'",
                      "make the id equal the folder name (letters, digits, . _ -)")
    need(task, "prompt", str, where, "give the instruction the agent gets")
    need(task, "check_cmd", str, where, "give the shell command that passes when the convention was followed")
    need(task, "repo_fixture", str, where, "name the fixture folder of the task, or git:<url>#<commit sha>")
    need(task, "tags", list, where, "list at least one tag")
    for i, m in enumerate(need(task, "planted_memories", list, where, "list the memories to plant")):
        if not isinstance(m, dict):
            raise Refused(where, f"planted_memories[{i}]", "is not an object", "give {content, realm, type}")
        for key in ("content", "realm", "type"):
            if not isinstance(m.get(key), str) or not m[key]:
                raise Refused(where, f"planted_memories[{i}].{key}", "is missing or empty", "give content, realm and type")
        if m["type"] not in MEMORY_TYPES:
            raise Refused(where, f"planted_memories[{i}].type", f"is '{m['type']}'", f"use one of {', '.join(MEMORY_TYPES)}")
    budget = task.get("expected_tokens_budget")
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 0):
        raise Refused(where, "expected_tokens_budget", f"is {budget!r}", "give a whole number of tokens, or leave it out")
    return task


def git_fixture(src: Source, task_dir: Path, spec: str) -> tuple[dict, dict[str, bytes]]:
    """A git fixture cloned at its pinned commit: its tree's files and what identifies them."""
    where = src.rel(task_dir / "task.json")
    found = GIT_FIXTURE.match(spec)
    if not found:
        raise Refused(where, "repo_fixture", f"'{spec}' names no commit sha",
                      "pin it: git:<url>#<the commit's full 40-hex sha>, so every trial gets the same tree")
    url, sha = found["url"], found["sha"]
    with tempfile.TemporaryDirectory(prefix="memgrid-smriti-") as tmp:
        clone = Path(tmp) / "fixture"
        # No hooks, no credential prompt, no ext:: transport: cloning someone's url runs none of their code.
        git = ["git", "-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never", "-c", "protocol.file.allow=always"]
        env = {"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin", "HOME": tmp}
        for args in (["clone", "--quiet", "--no-checkout", url, str(clone)], ["-C", str(clone), "checkout", "--quiet", sha]):
            try:
                done = subprocess.run([*git, *args], capture_output=True, text=True, timeout=GIT_SECONDS, env=env)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise Refused(where, "repo_fixture", f"git could not run ({e})", "install git, or use a fixture folder") from None
            if done.returncode != 0:
                raise Refused(where, "repo_fixture", f"git {args[0] if args[0] != '-C' else args[2]} failed: "
                              f"{done.stderr.strip()[-200:]}", "give a url this machine can clone and a commit it holds")
        files = files_under(Source(clone, "git fixture"), clone, "repo_fixture")
    return {"git": url, "commit": sha, "tree_sha256": sha256_json({p: sha256_bytes(d) for p, d in files.items()})}, files


def read_task(src: Source, task_dir: Path, suite: str, split: dict[str, str], leaks: dict[str, list[str]]) -> TaskPlan:
    task = read_task_json(src, task_dir)
    fixture_files: dict[str, bytes] = {}
    if task["repo_fixture"].startswith("git:"):
        fixture, fixture_files = git_fixture(src, task_dir, task["repo_fixture"])
    else:
        folder = task_dir / task["repo_fixture"]
        if not src.inside(folder, "repo_fixture").is_dir() or folder.parent != task_dir:
            raise Refused(src.rel(task_dir / "task.json"), "repo_fixture", f"'{task['repo_fixture']}' is not a folder "
                          "of the task", "name the task's fixture folder (e.g. repo_fixture), or git:<url>#<sha>")
        fixture = {"folder": task["repo_fixture"]}
    files = {f"tasks/{task_dir.name}/{rel}": data for rel, data in files_under(src, task_dir, "(file)").items()}
    return TaskPlan(task["id"], suite, split.get(task["id"], "unknown"), len(task["planted_memories"]), fixture,
                    tuple(leaks.get(task["id"], ())), files, fixture_files)


def import_smriti(path: Path, project: Path, suite: str, *, dry_run: bool = False, log=None) -> ImportResult:
    log = log or (lambda message: print(message, file=sys.stderr, flush=True))
    into = new_suite_folder(project, suite, "SMRITI")
    src = smriti_root(path)
    split, split_hash = read_split(src)
    leaks = read_leak_terms(src)
    task_dirs = sorted(p.parent for p in (src.root / "tasks").glob("*/task.json"))
    result = ImportResult()
    for n, task_dir in enumerate(task_dirs, 1):
        log(f"[{n}/{len(task_dirs)}] reading tasks/{task_dir.name}")
        try:
            result.plans.append(read_task(src, task_dir, suite, split, leaks))
        except Refused as e:
            result.refusals.append(Refusal(task_dir, str(e)))
    if result.plans and not dry_run:
        result.created = write_suite(project, into, suite, src, split, split_hash, leaks, result.plans)
    return result


def write_suite(project: Path, into: Path, suite: str, src: Source, split: dict[str, str], split_hash: str | None,
                leaks: dict[str, list[str]], plans: list[TaskPlan]) -> list[str]:
    """source/ (the tasks and split.json unchanged), fixtures/ (git fixtures' trees), suite.yaml and provenance.json,
    written in a staging folder renamed into place: whole or not at all."""
    origin = src.origin(REPOSITORY, git_root=next((p for p in (src.root, *src.root.parents) if (p / ".git").exists()),
                                                  None))
    staging = project / "tasks" / f".memgrid-import-{suite}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        written: dict[str, bytes] = {f"source/{rel}": data for p in plans for rel, data in p.files.items()}
        written |= {f"fixtures/{p.id}/{rel}": data for p in plans for rel, data in p.fixture_files.items()}
        if (src.root / SPLIT_FILE).is_file():
            written[f"source/{SPLIT_FILE}"] = (src.root / SPLIT_FILE).read_bytes()
        for rel, data in written.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_bytes(data)
        provenance = {"source": origin, "format": "smriti", "split": {"assignments": split, "split_hash": split_hash},
                      "leak_terms_source": f"{LEAK_FILE} {LEAK_NAME}" if leaks else None,
                      "tasks": [{"id": p.id, "split": p.split, "fixture": p.fixture, "leak_terms": list(p.leak_terms)}
                                for p in plans],
                      "files": {rel: sha256_bytes(data) for rel, data in sorted(written.items())}}
        doc = {"name": suite, "title": f"SMRITI-Bench from {origin['repository']}, hosted as published by memgrid task "
                                       "import --format smriti", "protocol": SmritiFormat.protocol, "source": {"format": "smriti", **origin}}
        write_hosted_suite(staging, "# SMRITI-Bench as published: source/ holds its tasks and split.json unchanged, "
                           "fixtures/ each git\n# fixture's tree at its pinned commit; provenance.json records every "
                           "file's sha256 (runner/sources/smriti.py).\n", doc, provenance)
        staging.rename(into)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [f"tasks/{suite}/suite.yaml", f"tasks/{suite}/provenance.json",
            f"tasks/{suite}/source/ and fixtures/ ({len(written)} files)"]


def provenance_of(folder: Path) -> dict:
    return read_provenance(folder / "provenance.json", {"files": dict, "tasks": list, "split": dict}, "SMRITI",
                           SmritiFormat.name)


def verified(folder: Path) -> dict:
    """The suite's provenance, once every file under source/ and fixtures/ is the one imported: none changed,
    added or missing (each refused by name)."""
    provenance = provenance_of(folder)
    present = {p.relative_to(folder).as_posix() for sub in ("source", "fixtures") for p in (folder / sub).rglob("*")
               if p.is_file() or p.is_symlink()}
    hosted_files(folder, provenance["files"], present, "SMRITI",
                 "restore the suite as imported: import SMRITI again into a new suite")
    return provenance


def title_of(prompt: str) -> str:
    first = re.split(r"(?<=[.:!?])\s", prompt.strip(), maxsplit=1)[0]
    return first if len(first) <= 100 else first[:97] + "..."


def task_as_read(task: PlantedTask) -> str:
    """The digest of what this reader made of a task (its files are digested apart)."""
    read = {k: v for k, v in asdict(task).items() if k not in ("root", "fixture_dir", "hosted_digest")}
    return sha256_json(read)


def hosted_tasks(folder: Path) -> dict[str, PlantedTask]:
    """The suite's tasks as the planted protocol runs them: the prompt and memories as published, the fixture
    folder (or the git fixture's tree), hidden/ laid over the workspace after the session and check_cmd run there
    (not isolated: a grid accepts each by name), and the leak terms as the reader's terms (what a memory naming
    the convention says). A hosted task has no naive/: the naive option leaves the fixture as it is."""
    provenance = verified(folder)
    tasks = {}
    for t in provenance["tasks"]:
        root = folder / "source" / "tasks" / t["id"]
        task = json.loads((root / "task.json").read_bytes())
        fixture = folder / "fixtures" / t["id"] if "git" in t["fixture"] else root / t["fixture"]["folder"]
        read = PlantedTask(
            t["id"], title_of(task["prompt"]), task["prompt"],
            tuple(Memory(m["type"], m["content"]) for m in task["planted_memories"]), tuple(t["leak_terms"]),
            tuple(t["leak_terms"]), (), CHECK_SECONDS, AGENT_SECONDS, root, fixture_dir=fixture,
            check_shell=task["check_cmd"], unisolated=UNISOLATED)
        tasks[t["id"]] = replace(read, hosted_digest=sha256_json({"fixture": tree_digest(fixture),
                                                                  "format": SmritiFormat().reader_identity(),
                                                                  "task": task_as_read(read)}))
    return tasks


def planted_memories(suite: str) -> dict[str, list[str]]:
    """Each planted task's memory contents in this checkout: tasks/planted/'s, or a hosted suite's as imported."""
    root = project_root()
    tasks = load_planted_tasks(root) if suite == DEFAULT_SUITE else hosted_tasks(root / "tasks" / suite)
    return {t.id: [m.content for m in t.memories] for t in tasks.values()}


def hosted_split(folder: Path) -> tuple[dict[str, str], str]:
    """Each hosted task's split (visible, holdout, or unknown when split.json does not place it, as SMRITI's runner
    labels it) and SMRITI's split_hash (or, with no split.json, the digest of the empty assignment)."""
    provenance = provenance_of(folder)
    assignments = provenance["split"]["assignments"]
    return ({t["id"]: assignments.get(t["id"], "unknown") for t in provenance["tasks"]},
            provenance["split"]["split_hash"] or sha256_bytes(json.dumps({}, sort_keys=True).encode()))


class SmritiFormat(SourceFormat):
    name = "smriti"
    protocol = "planted"
    reader_version = 1
    about = "SMRITI-Bench: benchmarks/smriti/ of a genomewalker/chitta checkout, hosted in the planted protocol"
    export_about = "a planted run as the results JSONL SMRITI's scorer.py reads, a file per agent x arm"

    def import_source(self, path: Path, project: Path, suite: str, *, dry_run: bool = False, **options) -> ImportResult:
        return import_smriti(path, project, suite, dry_run=dry_run)

    def hosted_units(self, folder: Path) -> list[tuple[str, str]]:
        return [(t["id"], f"SMRITI task ({t['split']})") for t in provenance_of(folder)["tasks"]]

    def planted_tasks(self, folder: Path) -> dict[str, PlantedTask]:
        return hosted_tasks(folder)

    def planted_split(self, folder: Path) -> tuple[dict[str, str], str]:
        return hosted_split(folder)

    def grid_example(self, folder: Path, suite: str) -> dict | None:
        ids = [t["id"] for t in provenance_of(folder)["tasks"]]
        return {"name": suite, "protocol": self.protocol, "suite": suite, "tasks": "all", "conditions": ["off", "on"],
                "arms": ["recall"], "agents": ["reader"], "seeds": 1,
                "unisolated_checkers": ids}  # SMRITI's check runs beside the agent's code: accepted by name

    def export(self, run_dir: Path, output: Path, log=print) -> ExportResult:
        from runner.sources.smriti_export import export_run  # the ledger's reader, only for an export

        return export_run(run_dir, output, planted_memories, log)

    def closing_lines(self, result: ImportResult, suite: str, dry_run: bool) -> list[str]:
        if not result.plans or dry_run:
            return []
        return [f"suite {suite} runs in the {self.protocol} protocol (units = SMRITI tasks); every file's sha256 is in "
                f"tasks/{suite}/provenance.json"]
