"""`memgrid task import --format traptask PATH`: a trapstreet task hosted as published.

A trap task (AntiNoise-ai/trapstreet-tasks, `tasks/<name>/`) is a folder with `traptask.yaml`: `harness.needs`,
`dirs.inputs` and `dirs.expected`, `cases` (id, description, tags), `judge.cmd` (scores one case's run; it reads
TRAPTASK_MANIFEST) and `grader.cmd` (the run's verdict over every case's judge result). memgrid hosts the tasks
whose `needs` is `multi_session`: each case's inputs hold `step1.txt` and `step2.txt`, the prompts of two
sessions (the contract of the task's own runner, tools/run_case.sh), and the two-session protocol runs them in
two fresh containers with only the arm's store between them.

The import copies the folder unchanged into tasks/<suite>/source/ and records every file's sha256 in
tasks/<suite>/provenance.json, with the cases it hosts and those it refused. A task publishes its inputs as its
build writes them; when a case's inputs are missing and the task has its build (build_cases.py), the build runs
first, unchanged, in a fresh container of the checker image with no network, and the import takes what it
wrote. A file the source already had must come out of the build byte for byte, or the source is refused: it is
not the task its own build makes. What cannot be hosted faithfully is refused with one line: the task (a need
memgrid does not host, no judge) or one case (its inputs missing).
"""

import json
import re
import shlex
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from runner.digest import sha256_bytes, sha256_json
from runner.errors import SpecError, UserError
from runner.env.archive import Entry
from runner.sources.base import (SUITE_NAME, ImportResult, Refusal, Refused, Source, SourceFormat, hosted_files,
                                 last_json, new_suite_folder, write_hosted_suite)
from runner.units.two_session import HostedCase, JudgeRequest

SPEC = "traptask.yaml"
REPOSITORY = "AntiNoise-ai/trapstreet-tasks"
# The needs memgrid hosts, and how.
HOSTED_NEEDS = {"multi_session": "two fresh sessions with only the arm's store between them"}
STEP_FILES = ("step1.txt", "step2.txt")  # a multi_session case's prompts, one a session (tools/run_case.sh)
BUILD_SCRIPT = "build_cases.py"
BUILD_COMMAND = ("python3", "-B", BUILD_SCRIPT)
BUILD_NAME = f"python3 {BUILD_SCRIPT}"
BUILD_SECONDS = 300
BUILD_CAP_BYTES = 256 * 1024 * 1024
SKIP = frozenset({".git", "__pycache__", ".pytest_cache", ".ruff_cache"})
CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Where the task's judge meets a case in the checker container: the task folder (this case's inputs and expected
# answer, no other case's) where only the judge reads it, the last session's output and exit status beside it.
JUDGE_TASK_DIR = "/oracle/task"
RUN_STDOUT, RUN_META = "/artifact/stdout.txt", "/artifact/meta.json"
JUDGE_SECONDS = 120
MIN_SECRET = 4  # a gold value shorter than this is no evidence of a leak when an environment variable holds it


@dataclass(frozen=True)
class TrapCase:
    id: str
    description: str
    tags: tuple[str, ...]
    inputs: str  # the case's inputs folder, relative to the task folder
    expected: str | None  # its expected folder; None: the task has no gold for it (its grader counts it unscored)


@dataclass(frozen=True)
class SuitePlan:
    """The task as it will be hosted: every file (path under source/ -> bytes) and what was done to get them."""
    source: Path
    suite: str
    cases: tuple[TrapCase, ...]
    refused: tuple[Refusal, ...]
    files: dict[str, bytes]
    provenance: dict
    notes: tuple[str, ...]

    def line(self) -> str:
        return (f"import {self.source.name} -> tasks/{self.suite}/: {len(self.cases)} cases "
                f"({', '.join(c.id for c in self.cases)}); {len(self.files)} files"
                + (f"; {'; '.join(self.notes)}" if self.notes else ""))

    def unisolated_line(self) -> None:
        return None  # the judge reads the session's output only; it runs no code of the agent's


# ---------------------------------------------------------------- reading the source

def find_task(path: Path) -> Source:
    if not (path / SPEC).is_file():
        raise UserError(f"{path}: {SPEC}: is missing — fix: give a trap task folder (tasks/<name>/ with {SPEC})")
    return Source(path.resolve(), "trap task")


def source_files(src: Source) -> tuple[dict[str, bytes], frozenset[str]]:
    """Every regular file of the task folder by relative path, and those with an executable bit (a judge.cmd may
    run one as ./judge.sh); a link is refused (it could name a file of this machine), caches are left out."""
    files, executable = {}, set()
    for p in sorted(src.root.rglob("*")):
        rel = p.relative_to(src.root)
        if SKIP & set(rel.parts) or p.suffix == ".pyc":
            continue
        if p.is_symlink():
            raise Refused(rel.as_posix(), "(file)", "is a symbolic link", "replace it with a copy of the file")
        if p.is_file():
            files[rel.as_posix()] = p.read_bytes()
            if p.stat().st_mode & 0o111:
                executable.add(rel.as_posix())
    return files, frozenset(executable)


def folder_field(spec: dict, name: str) -> str:
    value = (spec.get("dirs") or {}).get(name) if isinstance(spec.get("dirs"), dict) else None
    if not isinstance(value, str) or not value.strip("/"):
        raise Refused(SPEC, f"dirs.{name}", "is missing", f"name the task's {name} folder, e.g. {name}: {name}/")
    folder = PurePosixPath(value.strip("/"))
    if folder.is_absolute() or ".." in folder.parts or value.startswith("/"):
        raise Refused(SPEC, f"dirs.{name}", f"'{value}' leaves the task folder", f"give a folder inside it, e.g. {name}/")
    return folder.as_posix()


def command_files(spec: dict, role: str, files: dict[str, bytes]) -> str | None:
    """`role`.cmd, checked: each file it names is one of the task's. None when the task has none."""
    cmd = (spec.get(role) or {}).get("cmd") if isinstance(spec.get(role), dict) else None
    if cmd is None:
        return None
    if not isinstance(cmd, str) or not cmd.strip():
        raise Refused(SPEC, f"{role}.cmd", "is empty", f"give the command that runs the task's {role}")
    try:
        words = shlex.split(cmd)
    except ValueError as e:
        raise Refused(SPEC, f"{role}.cmd", f"cannot be read as a command ({e})", "quote it as a shell would") from None
    for word in words[1:]:
        if not word.startswith("-") and PurePosixPath(word).suffix and word not in files:
            raise Refused(SPEC, f"{role}.cmd", f"names {word}, which the task folder does not have",
                          f"add {word}, or point {role}.cmd at the task's {role}")
    return cmd


def read_spec(data: bytes) -> dict:
    try:
        spec = yaml.safe_load(data)
    except yaml.YAMLError as e:
        raise Refused(SPEC, "(file)", f"is not YAML ({str(e).splitlines()[0]})", "fix its syntax") from None
    if not isinstance(spec, dict):
        raise Refused(SPEC, "(file)", "is not a mapping", "give harness, dirs, cases, judge and grader")
    needs = (spec.get("harness") or {}).get("needs") if isinstance(spec.get("harness"), dict) else None
    needs = [needs] if isinstance(needs, str) else needs or []
    for need in needs:
        if need not in HOSTED_NEEDS:
            raise Refused(SPEC, "harness.needs", f"'{need}' is not a need memgrid hosts",
                          "memgrid hosts " + ", ".join(f"{k} ({v})" for k, v in HOSTED_NEEDS.items()))
    if "multi_session" not in needs:
        raise Refused(SPEC, "harness.needs", "does not name multi_session: the task's sessions are one",
                      "memgrid hosts trap tasks of two sessions (needs: [multi_session]), whose memory it can measure")
    return spec


def spec_cases(spec: dict, inputs: str, expected: str, files: dict[str, bytes], require_inputs: bool = True
               ) -> tuple[list[TrapCase], list[Refusal], list[str]]:
    """The cases, each with its inputs (a case without both prompts is refused alone), and notes."""
    if not isinstance(spec.get("cases"), list) or not spec["cases"]:
        raise Refused(SPEC, "cases", "is missing or empty", "list the task's cases, each with an id")
    cases, refused, notes, seen = [], [], [], set()
    for i, raw in enumerate(spec["cases"]):
        cid = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(cid, str) or not CASE_ID.match(cid):
            raise Refused(SPEC, f"cases[{i}].id", f"{cid!r} is not a case id",
                          "give an id of letters, digits, _ . - (it names the case's inputs folder)")
        if cid in seen:
            raise Refused(SPEC, f"cases[{i}].id", f"'{cid}' is listed twice", "give each case an id of its own")
        seen.add(cid)
        missing = [f for f in STEP_FILES if f"{inputs}/{cid}/{f}" not in files]
        if missing and require_inputs:
            refused.append(Refusal(Path(cid), str(Refused(f"{inputs}/{cid}/{missing[0]}", "(file)", "is missing",
                                                          f"run the task's build ({BUILD_NAME}) or add "
                                                          f"the case's {' and '.join(missing)}"))))
            continue
        has_gold = bool(under(files, f"{expected}/{cid}"))
        if not has_gold and not missing:
            notes.append(f"{cid} has no {expected}/{cid}/: its judge and grader score it as the task does without gold")
        tags = raw.get("tags") or []
        cases.append(TrapCase(cid, str(raw.get("description") or ""), tuple(str(t) for t in tags) if isinstance(tags, list) else (),
                              f"{inputs}/{cid}", f"{expected}/{cid}" if has_gold else None))
    return cases, refused, notes


# ---------------------------------------------------------------- the task's build, in a container

def run_build(files: dict[str, bytes], executable: frozenset[str], run_id: str, log=print
              ) -> tuple[dict[str, bytes], frozenset[str], dict]:
    """The task's build run unchanged over a copy of its folder in a fresh checker container (no network, the
    sandbox's limits; labelled with `run_id`): the folder as the build left it (files, the executable ones), and
    what ran."""
    from runner.env.archive import Entry
    from runner.env.bundle import bundle_of
    from runner.env.engine import connect
    from runner.env.images import ensure_images
    from runner.env.sandbox import Sandbox

    client = connect()
    images = ensure_images(client, log=log)
    bundle = bundle_of([Entry(f"source/{rel}", data, 0o755 if rel in executable else 0o644) for rel, data in files.items()])
    log(f"running the task's build ({BUILD_NAME}) in the checker image {images.checker.tag}, no network")
    started = time.monotonic()
    with Sandbox(client, images.checker.tag, run_id, "build", bundle_tar=bundle.tar,
                 lifetime=BUILD_SECONDS + 120) as sandbox:
        done = sandbox.exec(list(BUILD_COMMAND), timeout=BUILD_SECONDS, workdir="/sandbox/source",
                            env={"PYTHONDONTWRITEBYTECODE": "1"})
        if done.exit_code != 0:
            last = next((ln for ln in reversed((done.stderr or done.stdout).strip().splitlines()) if ln.strip()), "")
            why = f"timed out after {BUILD_SECONDS}s" if done.timed_out else f"exited {done.exit_code}: {last[:200]}"
            raise Refused(BUILD_SCRIPT, "(build)", why, "fix the task's build, or import a folder its build already wrote")
        export = sandbox.export("/sandbox/source", BUILD_CAP_BYTES)
    if export.too_large:
        raise Refused(BUILD_SCRIPT, "(build)", f"wrote more than {BUILD_CAP_BYTES >> 20} MiB", "import a smaller task")
    kept = [e for e in export.entries if not (SKIP & set(PurePosixPath(e.path).parts))]
    return {e.path: e.data for e in kept}, frozenset(e.path for e in kept if e.mode & 0o111), {"command": list(BUILD_COMMAND), "image": images.checker.tag, "image_id": images.checker.id,
                   "seconds": round(time.monotonic() - started, 1), "output": done.stdout.strip()[-300:]}


def agrees_with_build(source: dict[str, bytes], built: dict[str, bytes]) -> None:
    """Every file the source had comes out of its build byte for byte: otherwise it is not the task its build makes."""
    for rel, data in source.items():
        if rel not in built:
            raise Refused(rel, "(file)", "is removed by the task's build", "import the folder as its build writes it")
        if built[rel] != data:
            raise Refused(rel, "(file)", "differs from what the task's build writes",
                          "import the folder as its build writes it (run it, or restore the file)")


# ---------------------------------------------------------------- one task

def plan_suite(src: Source, suite: str, dry_run: bool, run_id: str, log=print) -> SuitePlan:
    """The task as it will be hosted (a whole-task refusal is raised); on a dry run a build is named, not run."""
    files, executable = source_files(src)
    spec = read_spec(files[SPEC])
    inputs, expected = folder_field(spec, "inputs"), folder_field(spec, "expected")
    judge = command_files(spec, "judge", files)
    if judge is None:
        raise Refused(SPEC, "judge.cmd", "is missing: the task has no judge", "give the command that scores one case")
    grader = command_files(spec, "grader", files)
    notes, built = [], None
    cases, refused, case_notes = spec_cases(spec, inputs, expected, files)
    if refused and BUILD_SCRIPT in files:
        if dry_run:
            notes.append(f"would run its build ({BUILD_NAME}) in the checker container first: "
                         f"{len(refused)} cases lack their inputs")
            cases, refused, case_notes = spec_cases(spec, inputs, expected, files, require_inputs=False)
        else:
            out, executable, built = run_build(files, executable, run_id, log)
            agrees_with_build(files, out)
            files = out
            cases, refused, case_notes = spec_cases(read_spec(files[SPEC]), inputs, expected, files)
            notes.append(f"built by its {BUILD_NAME} in {built['seconds']}s")
    notes += case_notes
    if grader is None:
        notes.append("no grader.cmd: the run has per-case scores and memgrid's statistics only")
    git_root = next((d for d in (src.root, *src.root.parents) if (d / ".git").exists()), None)
    origin = Source(git_root, "trap task").origin(REPOSITORY) if git_root else {"repository": REPOSITORY, "commit": None}
    digests = {rel: sha256_bytes(data) for rel, data in sorted(files.items())}
    provenance = {
        "format": "traptask", "protocol": TrapTaskFormat.protocol,
        "source": {**origin, "task": src.root.relative_to(git_root).as_posix() if git_root else src.root.name},
        "needs": sorted(HOSTED_NEEDS), "judge": judge, "grader": grader, "built": built,
        "dirs": {"inputs": inputs, "expected": expected},
        "cases": [{"id": c.id, "description": c.description, "tags": list(c.tags), "inputs": c.inputs,
                   "expected": c.expected} for c in cases],
        "refused": [r.reason for r in refused],
        "files": digests, "executable": sorted(executable), "digest": sha256_json(sorted(digests.items()))}
    return SuitePlan(src.root, suite, tuple(cases), tuple(refused), files, provenance, tuple(notes))


def write_suite(plan: SuitePlan, project: Path) -> list[str]:
    """tasks/<suite>/ whole or not at all: staged beside tasks/, then renamed into place."""
    folder = project / "tasks" / plan.suite
    staging = project / "tasks" / f".memgrid-import-{plan.suite}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for rel, data in plan.files.items():
            (staging / "source" / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / "source" / rel).write_bytes(data)
            if rel in plan.provenance["executable"]:
                (staging / "source" / rel).chmod(0o755)
        origin = plan.provenance["source"]
        doc = {"name": plan.suite, "title": f"Trap task {plan.source.name} from {origin['repository']}, hosted as "
                                            f"published by memgrid task import --format traptask",
               "protocol": TrapTaskFormat.protocol,
               "source": {"format": "traptask", "repository": origin["repository"], "commit": origin["commit"]}}
        write_hosted_suite(staging, "# A hosted trap task: source/ is the task folder as published (and as its build "
                           "wrote it), unchanged;\n# provenance.json records every file's sha256 and the cases hosted "
                           "(tasks/README.md, Suites).\n", doc, plan.provenance, indent=2)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [f"tasks/{plan.suite}/suite.yaml", f"tasks/{plan.suite}/provenance.json",
            f"tasks/{plan.suite}/source/ ({len(plan.files)} files)"]


def import_task(path: Path, project: Path, suite: str, *, dry_run: bool = False, log=print,
                run_id: str | None = None) -> ImportResult:
    """Host the trap task at `path` as suite `suite`; `run_id` labels its build's container (default: a new id)."""
    new_suite_folder(project, suite, "the task")
    src = find_task(path)
    result = ImportResult()
    try:
        plan = plan_suite(src, suite, dry_run, run_id or f"import-{uuid.uuid4().hex[:12]}", log)
    except Refused as e:
        result.refusals.append(Refusal(src.root, str(e)))
        return result
    result.refusals.extend(plan.refused)
    if plan.cases:
        result.plans.append(plan)
        if not dry_run:
            result.created = write_suite(plan, project)
    return result


def hosted(folder: Path) -> dict:
    """A hosted task's provenance.json, every file of source/ checked against the sha256 recorded there."""
    return verified(folder)[0]


def verified(folder: Path) -> tuple[dict, dict[str, bytes]]:
    """A hosted task's provenance.json and the files of source/ as read once and checked against the sha256 recorded
    there: a hosted task is the one imported, or it is refused by name. What is checked is what is used."""
    path = folder / "provenance.json"
    try:
        provenance = json.loads(path.read_text())
        recorded = dict(provenance["files"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SpecError(path, "files", f"cannot be read ({e})", "import the task again (memgrid task import --format traptask)") from None
    source = folder / "source"
    present = {p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file() or p.is_symlink()} \
        if source.is_dir() else set()
    return provenance, hosted_files(source, recorded, present, "the task",
                                    "restore the task as published: import it again into a new suite")


# ---------------------------------------------------------------- a hosted task's cases and judge

def session_prompt(data: bytes) -> str:
    """A prompt file as tools/run_case.sh passes it, `"$(cat step1.txt)"`: the command substitution drops every
    trailing newline."""
    return data.decode("utf-8", errors="replace").rstrip("\n")


def gold_values(expected: dict[str, bytes], public: str) -> tuple[str, ...]:
    """The values a case's expected files hold (each JSON leaf of MIN_SECRET characters or more) that its public
    text (prompts, id, description, tags) does not: what no session's environment may hold."""
    found, stack = set(), []
    for data in expected.values():
        try:
            stack.append(json.loads(data))
        except ValueError:
            continue
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = str(value)
            if len(text) >= MIN_SECRET and text not in public:
                found.add(text)
    return tuple(sorted(found))


def stated_answer(expected: dict[str, bytes]) -> str | None:
    """The `answer` an expected answer.json states (trap's convention: id, category, answer), as text; None without."""
    data = next((d for rel, d in expected.items() if PurePosixPath(rel).name == "answer.json"), None)
    try:
        answer = json.loads(data).get("answer") if data else None
    except (ValueError, AttributeError):
        return None
    return str(answer) if isinstance(answer, (str, int, float)) and not isinstance(answer, bool) else None


def under(files: dict[str, bytes], folder: str | None) -> dict[str, bytes]:
    """The files inside `folder` (a path relative to the task folder); none for None."""
    return {} if folder is None else {rel: data for rel, data in files.items() if rel.startswith(f"{folder}/")}


def shared_files(provenance: dict, files: dict[str, bytes]) -> dict[str, bytes]:
    """The task's files outside its inputs and expected folders: what its judge and grader may read of every case."""
    return {rel: data for rel, data in files.items() if not any(rel.startswith(f"{d}/") for d in provenance["dirs"].values())}


def hosted_case_list(folder: Path) -> dict[str, HostedCase]:
    provenance, files = verified(folder)
    cases = {}
    for c in provenance["cases"]:
        prompts = tuple(session_prompt(files[f"{c['inputs']}/{name}"]) for name in STEP_FILES)
        public = "\n".join([*prompts, c["id"], c["description"], *c["tags"]])
        expected = under(files, c["expected"])
        cases[c["id"]] = HostedCase(c["id"], c["description"], prompts,
                                    sha256_json([TrapTaskFormat().reader_identity(), c["id"], provenance["digest"],
                                                 prompts, stated_answer(expected)]),
                                    gold_values(expected, public), stated_answer(expected))
    return cases


def oracle_entries(provenance: dict, files: dict[str, bytes]) -> tuple[Entry, ...]:
    """The task's files where only the judge reads them, each executable one still executable."""
    executable = set(provenance.get("executable", ()))
    return tuple(Entry(f"oracle/task/{rel}", data, 0o755 if rel in executable else 0o644)
                 for rel, data in sorted(files.items()))


def judge_request(folder: Path, case_id: str, output: str, exit_code: int) -> JudgeRequest:
    """The task's judge.cmd, unchanged, in the task folder: TRAPTASK_MANIFEST names this case's inputs and expected
    folders and the run's stdout and meta (exit_code), as trap-cli's does. No other case's inputs or answer is there."""
    provenance, files = verified(folder)
    case = next(c for c in provenance["cases"] if c["id"] == case_id)
    own = under(files, case["inputs"]) | under(files, case["expected"])
    manifest = {"case_id": case_id, "inputs_dir": f"{JUDGE_TASK_DIR}/{case['inputs']}",
                "expected_dir": f"{JUDGE_TASK_DIR}/{case['expected'] or provenance['dirs']['expected'] + '/' + case_id}",
                "run": {"stdout": RUN_STDOUT, "meta": RUN_META}}
    oracle = oracle_entries(provenance, shared_files(provenance, files) | own)
    artifact = (Entry(PurePosixPath(RUN_STDOUT).name, output.encode()),
                Entry(PurePosixPath(RUN_META).name, json.dumps({"exit_code": exit_code}).encode()))
    command = ("env", f"TRAPTASK_MANIFEST={json.dumps(manifest)}", "sh", "-c",
               f"cd {JUDGE_TASK_DIR} && exec {provenance['judge']}")
    return JudgeRequest(oracle, artifact, command, JUDGE_SECONDS)


def grader_request(folder: Path, judged: list[dict]) -> JudgeRequest | None:
    """The task's grader.cmd, unchanged, in the task folder (no case's inputs or answers), TRAPTASK_MANIFEST the
    list trap-cli hands it: per case its id, `metrics` (the judge's verdict; None when it gave none), `duration`
    (seconds) and `cost` ({"cost_usd"} when known). The list travels as a file and is read into the variable."""
    provenance, files = verified(folder)
    if not provenance.get("grader"):
        return None
    manifest = [{"id": c["id"], "metrics": c["verdict"], "duration": c["seconds"],
                 **({"cost": {"cost_usd": c["cost_usd"]}} if c.get("cost_usd") is not None else {})} for c in judged]
    oracle = oracle_entries(provenance, shared_files(provenance, files))
    artifact = (Entry("manifest.json", json.dumps(manifest).encode()),)
    command = ("sh", "-c", 'TRAPTASK_MANIFEST="$(cat /artifact/manifest.json)" && export TRAPTASK_MANIFEST && '
                           f"cd {JUDGE_TASK_DIR} && exec {provenance['grader']}")
    return JudgeRequest(oracle, artifact, command, JUDGE_SECONDS)


def judge_verdict(output: str) -> dict | None:
    """The judge's last printed line, a JSON object with a numeric score (trap's per-case metrics)."""
    verdict = last_json(output)
    score = verdict.get("score") if verdict is not None else None
    return verdict if isinstance(score, (int, float)) and not isinstance(score, bool) else None


# ---------------------------------------------------------------- a trap solution as a command agent

SOLUTION_SPEC = "trap.yaml"
RUNNER = "run_case.sh"  # the task's reference runner: a solution's cmd names the harness it is given
# The harness gets the prompt as its last argument, as run_case.sh appends it: read from the command agent's stdin.
PROMPT_AS_LAST_ARGUMENT = ("sh", "-c", 'exec "$@" "$(cat)"', "sh")


def solution_agent(folder: Path, where: Path, field: str) -> tuple[tuple[str, ...], dict[str, Path]]:
    """A trap solution folder as a command agent: the command (its harness command, the prompt appended as the
    last argument, as run_case.sh invokes it) and its files by path relative to the folder. memgrid runs the two
    sessions itself, so the solution's cmd must hand its harness to the task's run_case.sh. The folders its
    trap.yaml clones tasks into (`clone_to`, `.trap/`) are never delivered: they hold the tasks' expected answers."""
    spec_path = folder / SOLUTION_SPEC
    if not spec_path.is_file():
        raise SpecError(where, field, f"names {folder}, which has no {SOLUTION_SPEC}",
                        f"name a trap solution folder (with {SOLUTION_SPEC})")
    try:
        spec = yaml.safe_load(spec_path.read_text())
    except yaml.YAMLError as e:
        raise SpecError(spec_path, "(file)", f"is not YAML ({str(e).splitlines()[0]})", "fix its syntax") from None
    cmd = spec.get("cmd") if isinstance(spec, dict) else None
    if not isinstance(cmd, str) or not cmd.strip():
        raise SpecError(spec_path, "cmd", "is missing", "give the command trap runs, e.g. cmd: bash task/tools/run_case.sh "
                        "python3 my_agent.py")
    words = shlex.split(cmd)
    at = next((i for i, w in enumerate(words) if PurePosixPath(w).name == RUNNER), None)
    if at is None or at + 1 >= len(words):
        raise SpecError(spec_path, "cmd", f"does not hand a harness command to the task's tools/{RUNNER}",
                        f"memgrid runs the two sessions itself: use cmd: bash <task>/tools/{RUNNER} <your-harness-command>")
    clones = {PurePosixPath(str(t.get("clone_to"))).parts[0] for t in (spec.get("tasks") or {}).values()
              if isinstance(t, dict) and t.get("clone_to")}
    files = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if (SKIP | clones | {".trap"}) & set(rel.parts) or p.suffix == ".pyc":
            continue
        if p.is_symlink():
            raise SpecError(p, "(file)", "is a symbolic link in a trap solution", "replace it with a copy of the file")
        if p.is_file():
            files[rel.as_posix()] = p
    return (*PROMPT_AS_LAST_ARGUMENT, *words[at + 1:]), files


class TrapTaskFormat(SourceFormat):
    name = "traptask"
    protocol = "two-session"
    reader_version = 1
    solution_key = "trap_solution"
    about = "a trapstreet task folder (tasks/<name>/ with traptask.yaml)"

    def default_suite(self, path: Path) -> str:
        """The task folder's name, as a suite name (session_memory_recall)."""
        name = re.sub(r"[^a-z0-9_]+", "_", path.resolve().name.lower()).strip("_")
        name = name if name[:1].isalpha() else f"trap_{name}"
        return name[:48] if SUITE_NAME.match(name[:48]) else "traptask"

    def import_source(self, path: Path, project: Path, suite: str, *, dry_run: bool = False) -> ImportResult:
        return import_task(path, project, suite, dry_run=dry_run)

    def hosted_units(self, folder: Path) -> list[tuple[str, str]]:
        return [(c["id"], c["description"]) for c in hosted(folder)["cases"]]

    def solution_agent(self, folder: Path, where: Path, field: str) -> tuple[tuple[str, ...], dict[str, Path]]:
        return solution_agent(folder, where, field)

    def grid_example(self, folder: Path, suite: str) -> dict | None:
        """Played by the reader when every case states its answer (it remembers it in step 1); else by a command
        agent of the user's (docs/hosted-trap-tasks.md), which no spec printed here can name."""
        if any(c.reference is None for c in hosted_case_list(folder).values()):
            return None
        return {"name": suite, "protocol": self.protocol, "suite": suite, "tasks": "all", "conditions": ["published"],
                "arms": ["bare", "notes"], "agents": ["reader"], "seeds": 1}

    def hosted_cases(self, folder: Path) -> dict[str, HostedCase]:
        return hosted_case_list(folder)

    def judge_request(self, folder: Path, case_id: str, output: str, exit_code: int) -> JudgeRequest:
        return judge_request(folder, case_id, output, exit_code)

    def grader_request(self, folder: Path, judged: list[dict]) -> JudgeRequest | None:
        return grader_request(folder, judged)

    def verdict(self, judge_output: str) -> dict | None:
        return judge_verdict(judge_output)

    def closing_lines(self, result: ImportResult, suite: str, dry_run: bool) -> list[str]:
        if not result.plans or dry_run:
            return []
        return [f"suite {suite} runs in the {self.protocol} protocol; every file's sha256 is in tasks/{suite}/provenance.json"]
