"""Invariants of the planted-memory suite (tasks/planted/, format in its README.md).

A planted task measures memory only if the planted convention is what separates passing from failing:
the untouched fixture and the plausible (naive) implementation fail the hidden check, the solution passes
it, both pass the visible tests (so the visible tests do not give the convention away), and neither the
prompt nor the fixture states it. Each invariant is its own test per task, so a failure names both.

The checks run the task's own check command the way the grader does (python3 -m pytest on the artifact
with hidden/ laid over it, from another working directory, without bytecode, without third-party pytest
plugins), with this interpreter standing in for python3.
"""

import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

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
    # The grader's python has stdlib and pytest only: plugins installed here (anyio's, say) must not help
    # or hurt a check. Without bytecode, because the grader's artifact is read-only.
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


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def run_check(task_dir: Path, invariant: str, artifact: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    argv = [a.replace("{artifact}", str(artifact)) for a in spec(task_dir)["check"]["command"]]
    if argv[0] == "python3":
        argv[0] = sys.executable
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    before = snapshot(artifact)
    proc = run(task_dir, invariant, argv, elsewhere)
    # The grader's artifact is read-only: a check that writes into it would error there, not here (root
    # ignores file modes, so compare the tree instead of trusting chmod).
    if snapshot(artifact) != before:
        fail(task_dir, invariant, "the check wrote into the artifact, which the grader mounts read-only; "
                                  "write to tmp_path instead\n" + tail(proc))
    return proc


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
def test_1_untouched_fixture_fails_the_check(task_dir, tmp_path):
    proc = run_check(task_dir, "1 (fixture + hidden fails the check)",
                     assemble(tmp_path / "artifact", task_dir, "hidden"), tmp_path)
    if proc.returncode == 0:
        fail(task_dir, "1 (fixture + hidden fails the check)", "the check passed on the untouched fixture\n" + tail(proc))


@each_task
def test_2_solution_passes_the_check(task_dir, tmp_path):
    proc = run_check(task_dir, "2 (fixture + solution + hidden passes the check)",
                     assemble(tmp_path / "artifact", task_dir, "solution", "hidden"), tmp_path)
    if proc.returncode != 0:
        fail(task_dir, "2 (fixture + solution + hidden passes the check)",
             f"the check exited {proc.returncode} on the solution\n" + tail(proc))


@each_task
def test_3_naive_fails_the_check(task_dir, tmp_path):
    proc = run_check(task_dir, "3 (fixture + naive + hidden fails the check)",
                     assemble(tmp_path / "artifact", task_dir, "naive", "hidden"), tmp_path)
    if proc.returncode == 0:
        fail(task_dir, "3 (fixture + naive + hidden fails the check)",
             "the check passed on the naive implementation: it does not test the convention\n" + tail(proc))


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
    reaching the model around the arm (the planted gate's memory_not_bypassed)."""
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
    elif not any("{artifact}" in a for a in command):
        problems.append("check.command never names {artifact}")
    if set(data["check"]) - {"command", "timeout_seconds"}:
        problems.append(f"check has unknown fields {sorted(set(data['check']) - {'command', 'timeout_seconds'})}")
    if not isinstance(data["check"].get("timeout_seconds", 60), int):
        problems.append("check.timeout_seconds is not an int")
    problems += [f"{sub}/ is missing" for sub in FOLDERS if not (task_dir / sub).is_dir()]
    if not problems:
        # hidden/ lands on the agent's final workspace: a file there that the project also has would
        # replace the agent's work, and the check would grade the task's own file instead.
        project = {p.relative_to(task_dir / sub) for sub in ("fixture", "solution", "naive")
                   for p in (task_dir / sub).rglob("*") if p.is_file()}
        clash = sorted(str(p.relative_to(task_dir / "hidden")) for p in (task_dir / "hidden").rglob("*")
                       if p.is_file() and p.relative_to(task_dir / "hidden") in project)
        if clash:
            problems.append(f"hidden/ overwrites project files: {', '.join(clash)}")
        # Without a pytest.ini of its own, a test folder's configuration comes from the workspace above it:
        # a conftest.py the agent leaves there can skip every hidden test and the check exits 0.
        if any("pytest" in a for a in command):
            for a in command:
                folder = task_dir / "hidden" / a.removeprefix("{artifact}/")
                if a.startswith("{artifact}/") and folder.is_dir() and not (folder / "pytest.ini").is_file():
                    problems.append(f"hidden/{a.removeprefix('{artifact}/')}/ has no pytest.ini pinning the "
                                    "pytest root (copy one from another task)")
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
