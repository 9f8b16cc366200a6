"""Invariants of the planted-memory suite (tasks/planted/, format in its README.md).

A planted task measures memory only if the planted convention is what separates passing from failing:
the untouched fixture and the plausible (naive) implementation fail the hidden check, the solution passes
it, both pass the visible tests (so the visible tests do not give the convention away), and neither the
prompt nor the fixture states it. Each invariant is its own test per task, so a failure names both.

Invariants 1-3 grade the way a planted cell's check does, in the real checker container: the workspace
(fixture/ with solution/ or naive/ over it) at /artifact, hidden/ as the judge's /oracle, the task's
check command (python3 {oracle}/check.py {artifact}) run by memgrid-grade (protocol.check_inputs,
check_command). Invariant 4 runs the visible tests on the host, as the agent would.
"""

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest
import yaml

from runner.env.archive import Entry
from runner.env.bundle import tree_entries
from runner.errors import SpecError
from runner.grading.checker import GRACE_SECONDS, grade_in_container
from runner.protocols.planted.protocol import check_command, check_inputs
from runner.units.planted import load_planted_task

REPO = Path(__file__).resolve().parent.parent
PLANTED = REPO / "tasks" / "planted"
MEMORY_TYPES = ("wisdom", "belief", "episode", "correction")
REQUIRED = {"id": str, "title": str, "prompt": str, "memories": list, "terms": list, "leak_terms": list, "check": dict}
OPTIONAL = {"agent_seconds": int}
FOLDERS = ("fixture", "hidden", "solution", "naive")
QUOTE_WORDS = 8
SUBPROCESS_TIMEOUT = 120
MIN_TASKS = 15
SPLIT_SIZES = {"visible": 10, "holdout": 5}

# Every folder is a task, so a folder whose planted.yaml is missing or misnamed fails invariant 8
# instead of silently dropping out of the suite.
TASK_DIRS = sorted(p for p in PLANTED.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))) \
    if PLANTED.is_dir() else []
IDS = [p.name for p in TASK_DIRS]
each_task = pytest.mark.parametrize("task_dir", TASK_DIRS, ids=IDS)


@cache
def spec(task_dir: Path) -> dict:
    return yaml.safe_load((task_dir / "planted.yaml").read_text(encoding="utf-8"))


def fail(task_dir: Path, invariant: str, detail: str):
    pytest.fail(f"{task_dir.name}: invariant {invariant}: {detail}", pytrace=False)


def assemble(dest: Path, task_dir: Path, *layers: str) -> Path:
    """fixture/ with each layer's files copied over it, in order, as the harness does."""
    shutil.copytree(task_dir / "fixture", dest)
    for layer in layers:
        shutil.copytree(task_dir / layer, dest, dirs_exist_ok=True)
    return dest


def child_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    # The sandbox's python has stdlib and pytest only: plugins installed here (anyio's, say) must not help
    # or hurt the visible tests. Without bytecode, so the task folders stay as they are.
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


def run(task_dir: Path, invariant: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, cwd=cwd, env=child_env(), capture_output=True, text=True,
                              timeout=SUBPROCESS_TIMEOUT)
    except subprocess.TimeoutExpired:
        fail(task_dir, invariant, f"{' '.join(argv)} ran longer than {SUBPROCESS_TIMEOUT} s")


def tail(proc: subprocess.CompletedProcess) -> str:
    return "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])


VARIANTS = {"fixture": (), "solution": ("solution",), "naive": ("naive",)}
GRADES: dict[str, dict[str, tuple[bool, str]]] = {}  # task -> variant -> (passed, the judge's last lines)


def artifact_of(task_dir: Path, layers: tuple[str, ...]) -> list[Entry]:
    """fixture/ with each layer's files over it, as the workspace the agent leaves."""
    files: dict[str, Entry] = {}
    for layer in ("fixture", *layers):
        files |= {e.path: Entry(e.path.removeprefix("w/"), e.data, e.mode) for e in tree_entries(task_dir / layer, "w")}
    return list(files.values())


def grade(engine, images, run_id: str, task, variant: str) -> tuple[bool, str]:
    judged, log, _ = grade_in_container(engine, images.checker.tag,
                                        check_inputs(task, artifact_of(task.root, VARIANTS[variant])),
                                        {"checker": {"command": check_command(task), "timeout": task.check_seconds},
                                         "detector": None},
                                        task.check_seconds + GRACE_SECONDS, run_id=run_id, cell_id=f"{task.id}-{variant}")
    checker = (judged or {}).get("checker") or {}
    passed = checker.get("exit") == 0 and not checker.get("timed_out")
    shown = checker.get("output") or log or "no output"
    if checker.get("timed_out"):
        shown += f"\n(timed out after {task.check_seconds} s)"
    return passed, "\n".join(shown.strip().splitlines()[-15:])


def graded(engine, images, run_id: str, task_dir: Path, invariant: str, variant: str) -> tuple[bool, str]:
    """Whether the task's judge passes fixture/ with `variant` over it, graded as a planted cell's check is;
    the three variants of a task are graded together, once, in parallel."""
    if task_dir.name not in GRADES:
        try:
            task = load_planted_task(task_dir)
        except SpecError as e:
            fail(task_dir, invariant, f"planted.yaml does not load: {e}")
        with ThreadPoolExecutor(len(VARIANTS)) as pool:
            GRADES[task_dir.name] = dict(zip(VARIANTS, pool.map(lambda v: grade(engine, images, run_id, task, v), VARIANTS)))
    return GRADES[task_dir.name][variant]


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def fixture_texts(task_dir: Path):
    for path in sorted((task_dir / "fixture").rglob("*")):
        rel = path.relative_to(task_dir)
        yield f"{rel} (its path)", str(rel)
        if path.is_file():
            yield str(rel), path.read_text(encoding="utf-8", errors="replace")


# 1-3: the check separates the conventional implementation from the rest.

@each_task
def test_1_untouched_fixture_fails_the_check(task_dir, engine, images, run_id):
    invariant = "1 (fixture + hidden fails the check)"
    passed, output = graded(engine, images, run_id, task_dir, invariant, "fixture")
    if passed:
        fail(task_dir, invariant, "the check passed on the untouched fixture\n" + output)


@each_task
def test_2_solution_passes_the_check(task_dir, engine, images, run_id):
    invariant = "2 (fixture + solution + hidden passes the check)"
    passed, output = graded(engine, images, run_id, task_dir, invariant, "solution")
    if not passed:
        fail(task_dir, invariant, "the check failed on the solution\n" + output)


@each_task
def test_3_naive_fails_the_check(task_dir, engine, images, run_id):
    invariant = "3 (fixture + naive + hidden fails the check)"
    passed, output = graded(engine, images, run_id, task_dir, invariant, "naive")
    if passed:
        fail(task_dir, invariant, "the check passed on the naive implementation: it does not test the convention\n" + output)


# 4: the visible tests accept both implementations, so they cannot be what reveals the convention.

@each_task
@pytest.mark.parametrize("option", ["solution", "naive"])
def test_4_visible_tests_pass_either_way(task_dir, option, tmp_path):
    invariant = f"4 (fixture + {option} passes the visible tests)"
    workspace = assemble(tmp_path / "workspace", task_dir, option)
    if not (workspace / "tests").is_dir():
        fail(task_dir, invariant, "fixture/ has no tests/ folder")
    proc = run(task_dir, invariant, [sys.executable, "-m", "pytest", "-q", "tests"], workspace)
    if proc.returncode != 0:
        fail(task_dir, invariant, f"pytest exited {proc.returncode}\n" + tail(proc))


# 5-7: what the agent sees, and what the reference agent looks for.

@each_task
def test_5_no_leak_term_in_prompt_or_fixture(task_dir):
    data = spec(task_dir)
    places = [("prompt", data["prompt"]), *fixture_texts(task_dir)]
    found = [f"'{term}' in {where}" for term in data["leak_terms"] for where, text in places
             if term.lower() in text.lower()]
    if found:
        fail(task_dir, "5 (no leak term in the prompt or fixture/)", "; ".join(found))


@each_task
def test_6_prompt_and_fixture_quote_no_memory(task_dir):
    """The prompt quotes no memory (the spec); nor does the fixture, or reading it would look like the memory
    reaching the model around the arm (the injection's read_around_the_arm)."""
    data = spec(task_dir)
    quoted = []
    for where, text in [("prompt", data["prompt"]), *fixture_texts(task_dir)]:
        body = " ".join(words(text))
        for i, memory in enumerate(data["memories"]):
            w = words(memory["content"])
            # A memory shorter than the run length counts as quoted when all of it appears.
            n = min(QUOTE_WORDS, len(w))
            for start in range(len(w) - n + 1):
                run_ = " ".join(w[start:start + n])
                if f" {run_} " in f" {body} ":
                    quoted.append(f"memory {i + 1} in {where}: '{run_}'")
                    break
    if quoted:
        fail(task_dir, "6 (the prompt and fixture/ quote no memory)", "; ".join(quoted))


@each_task
def test_7_terms_name_the_memory_the_solution_follows(task_dir):
    invariant = "7 (each term in a memory; in a correction task, in the correction and no earlier memory)"
    memories = spec(task_dir)["memories"]
    contents = [m["content"].lower() for m in memories]
    corrections = [i for i, m in enumerate(memories) if m["type"] == "correction"]
    problems = []
    for term in spec(task_dir)["terms"]:
        t = term.lower()
        if corrections:
            last = corrections[-1]
            if t not in contents[last]:
                problems.append(f"'{term}' is not in the correction (memory {last + 1})")
            # Otherwise the reference agent would apply the solution on reading the superseded memory.
            problems += [f"'{term}' is also in earlier memory {i + 1}" for i in range(last) if t in contents[i]]
        elif not any(t in c for c in contents):
            problems.append(f"'{term}' is in no memory")
    if problems:
        fail(task_dir, invariant, "; ".join(problems))


# 8-9: the files the harness reads.

def spec_problems(task_dir: Path) -> list[str]:
    path = task_dir / "planted.yaml"
    if not path.is_file():
        return ["planted.yaml is missing"]
    try:
        data = spec(task_dir)
    except yaml.YAMLError as e:
        return [f"planted.yaml is not YAML: {e}"]
    if not isinstance(data, dict):
        return ["planted.yaml is not a mapping"]
    problems = [f"'{k}' is missing or not a {t.__name__}" for k, t in REQUIRED.items() if not isinstance(data.get(k), t)]
    problems += [f"'{k}' is not a {t.__name__}" for k, t in OPTIONAL.items() if k in data and not isinstance(data[k], t)]
    problems += [f"unknown field '{k}'" for k in data if k not in REQUIRED and k not in OPTIONAL]
    if problems:
        return problems
    if not re.fullmatch(r"pl_[a-z0-9_]+", data["id"]):
        problems.append(f"id '{data['id']}' does not match ^pl_[a-z0-9_]+$")
    if data["id"] != task_dir.name:
        problems.append(f"id '{data['id']}' differs from the folder name")
    for k in ("title", "prompt"):
        if not data[k].strip():
            problems.append(f"'{k}' is empty")
    if not data["memories"]:
        problems.append("'memories' is empty")
    for i, m in enumerate(data["memories"]):
        if not isinstance(m, dict) or set(m) != {"type", "content"}:
            problems.append(f"memory {i + 1} is not exactly {{type, content}}")
        elif m["type"] not in MEMORY_TYPES:
            problems.append(f"memory {i + 1} has type '{m['type']}', not one of {', '.join(MEMORY_TYPES)}")
        elif not isinstance(m["content"], str) or not m["content"].strip():
            problems.append(f"memory {i + 1} has no content")
    for k, low, high in (("terms", 1, 3), ("leak_terms", 2, 4)):
        if not low <= len(data[k]) <= high or not all(isinstance(t, str) and t.strip() for t in data[k]):
            problems.append(f"'{k}' must list {low}-{high} non-empty strings")
    command = data["check"].get("command")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        problems.append("check.command is not a non-empty list of strings")
    elif "{oracle}/check.py" not in command:
        problems.append("check.command never names {oracle}/check.py (make it python3 {oracle}/check.py {artifact})")
    elif not any("{artifact}" in a for a in command):
        problems.append("check.command never names {artifact}")
    if set(data["check"]) - {"command", "timeout_seconds"}:
        problems.append(f"check has unknown fields {sorted(set(data['check']) - {'command', 'timeout_seconds'})}")
    if not isinstance(data["check"].get("timeout_seconds", 60), int):
        problems.append("check.timeout_seconds is not an int")
    problems += [f"{sub}/ is missing" for sub in FOLDERS if not (task_dir / sub).is_dir()]
    if not problems:
        # hidden/ is the judge's oracle: check.py judges, and the old pytest files, were they left, would be
        # neither run nor needed (hidden/ is never laid over the workspace).
        if not (task_dir / "hidden" / "check.py").is_file():
            problems.append("hidden/check.py is missing (the judge: python3 {oracle}/check.py {artifact})")
        if (task_dir / "hidden" / "hidden_tests").exists():
            problems.append("hidden/hidden_tests/ is still there (check.py replaces it: delete it)")
    return problems


@each_task
def test_8_planted_yaml_is_valid(task_dir):
    problems = spec_problems(task_dir)
    if problems:
        fail(task_dir, "8 (planted.yaml and the task folders are valid)", "; ".join(problems))


def test_9_split_places_every_task_once():
    path = PLANTED / "split.yaml"
    assert path.is_file(), "invariant 9: tasks/planted/split.yaml is missing"
    split = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    problems = [f"unknown key '{k}'" for k in split if k not in SPLIT_SIZES]
    listed = []
    for part, size in SPLIT_SIZES.items():
        ids = split.get(part)
        if not isinstance(ids, list):
            problems.append(f"'{part}' is missing or not a list")
            continue
        if len(ids) != size:
            problems.append(f"'{part}' lists {len(ids)} tasks, not {size}")
        listed += ids
    problems += [f"'{i}' is listed {listed.count(i)} times" for i in sorted(set(listed)) if listed.count(i) > 1]
    problems += [f"'{i}' is not a task folder" for i in sorted(set(listed) - set(IDS))]
    problems += [f"'{i}' is in neither list" for i in sorted(set(IDS) - set(listed))]
    assert not problems, "invariant 9 (split.yaml): " + "; ".join(problems)


def test_suite_has_enough_tasks():
    assert len(IDS) >= MIN_TASKS, f"{len(IDS)} planted tasks, at least {MIN_TASKS} wanted: {IDS}"

