"""`memgrid task import --format traptask`: a trap-format task (tests/data/traptask/pair_recall/, written for these
tests in trapstreet's layout, none of trapstreet's content) is hosted as a suite of its own, unchanged, with every
file's sha256; what cannot be hosted faithfully is refused in one line (the task, or one case alone); inputs the
source lacks are written by its own build, run in the checker container."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runner.digest import sha256_bytes
from runner.errors import SpecError, UserError
from runner.plan.spec import load_all_tasks, load_suite_tasks, load_suites
from runner.sources.traptask import hosted, import_task, judge_request

REPO = Path(__file__).resolve().parent.parent
PAIR = REPO / "tests" / "data" / "traptask" / "pair_recall"
SUITE = "pair_recall"
CASES = ["pair_01", "pair_02", "pair_03"]


@pytest.fixture
def unbuilt(tmp_path) -> Path:
    """A private copy of the test task as committed: its build has not run (no inputs/, no expected/)."""
    root = tmp_path / "src" / SUITE
    shutil.copytree(PAIR, root, ignore=shutil.ignore_patterns("__pycache__", "inputs", "expected"))
    return root


@pytest.fixture
def trap(unbuilt) -> Path:
    """The test task as published: its own build has written inputs/ and expected/ (our fixture's code, on the host)."""
    subprocess.run([sys.executable, "-B", "build_cases.py"], cwd=unbuilt, check=True, capture_output=True, timeout=60)
    return unbuilt


@pytest.fixture
def root(tmp_path) -> Path:
    """A checkout with memgrid's own (empty) suite: what an import needs, and nothing to copy."""
    (tmp_path / "project" / "tasks").mkdir(parents=True)
    return tmp_path / "project"


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def edit(folder: Path, name: str, change) -> None:
    spec = yaml.safe_load((folder / name).read_text())
    change(spec)
    (folder / name).write_text(yaml.safe_dump(spec, sort_keys=False))


def test_a_trap_task_is_hosted_unchanged_with_every_files_digest(trap, root):
    (trap / "judge.py").chmod(0o755)  # a judge.cmd may run it as ./judge.py
    result = import_task(trap, root, SUITE)
    assert not result.refusals and [c.id for c in result.plans[0].cases] == CASES
    folder = root / "tasks" / SUITE
    assert files_of(folder / "source") == files_of(trap)  # byte for byte, nothing added, nothing dropped
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["files"] == {rel: sha256_bytes(data) for rel, data in files_of(trap).items()}
    assert [c["id"] for c in provenance["cases"]] == CASES and provenance["built"] is None
    assert provenance["cases"][1] == {"id": "pair_02", "description": "A ticket number, recalled in a fresh session.",
                                      "tags": ["number"], "inputs": "inputs/pair_02", "expected": "expected/pair_02"}
    assert (provenance["judge"], provenance["grader"]) == ("python3 judge.py", "python3 grader.py")
    suite = load_suites(root)[SUITE]
    assert (suite.protocol, suite.source["format"]) == ("two-session", "traptask")
    assert hosted(folder)["digest"] == provenance["digest"]
    # an executable file stays executable, in the suite and where the judge runs (its entry's mode)
    assert provenance["executable"] == ["judge.py"] and os.access(folder / "source" / "judge.py", os.X_OK)
    assert not os.access(folder / "source" / "grader.py", os.X_OK)
    modes = {e.path: e.mode for e in judge_request(folder, "pair_01", "x\n", 0).oracle}
    assert (modes["oracle/task/judge.py"], modes["oracle/task/grader.py"]) == (0o755, 0o644)
    # a coding command naming it is refused by name; the coding tasks of every suite leave it out
    with pytest.raises(SpecError, match="runs in the two-session protocol"):
        load_suite_tasks(root, SUITE)
    assert load_all_tasks(root) == {}


@pytest.mark.parametrize("change", ["edited", "added", "removed"])
def test_a_hosted_file_changed_after_the_import_is_refused_by_name(trap, root, change):
    import_task(trap, root, SUITE)
    source = root / "tasks" / SUITE / "source"
    target = source / "expected" / "pair_01" / "answer.json"
    if change == "edited":
        target.write_text(target.read_text().replace('"answer": "', '"answer": "x'))
    elif change == "added":
        target = source / "inputs" / "pair_01" / "hint.txt"
        target.write_text("the answer\n")
    else:
        target.unlink()
    with pytest.raises(SpecError) as refused:
        hosted(root / "tasks" / SUITE)
    assert str(target) in str(refused.value)


def unknown_need(t):
    edit(t, "traptask.yaml", lambda s: s["harness"].update(needs=["multi_session", "gpu"]))


def one_session(t):
    edit(t, "traptask.yaml", lambda s: s.pop("harness"))


def no_judge(t):
    edit(t, "traptask.yaml", lambda s: s.pop("judge"))


def judge_gone(t):
    (t / "judge.py").unlink()


def inputs_outside(t):
    edit(t, "traptask.yaml", lambda s: s["dirs"].update(inputs="../elsewhere/"))


def case_twice(t):
    edit(t, "traptask.yaml", lambda s: s["cases"].append(dict(s["cases"][0])))


def linked(t):
    os.symlink("/etc/hostname", t / "notes.txt")


@pytest.mark.parametrize("breaks, expected", [
    (unknown_need, "traptask.yaml: harness.needs: 'gpu' is not a need memgrid hosts — fix: memgrid hosts multi_session"),
    (one_session, "traptask.yaml: harness.needs: does not name multi_session"),
    (no_judge, "traptask.yaml: judge.cmd: is missing: the task has no judge"),
    (judge_gone, "traptask.yaml: judge.cmd: names judge.py, which the task folder does not have"),
    (inputs_outside, "traptask.yaml: dirs.inputs: '../elsewhere/' leaves the task folder"),
    (case_twice, "traptask.yaml: cases[3].id: 'pair_01' is listed twice"),
    (linked, "notes.txt: (file): is a symbolic link"),
])
def test_a_task_that_cannot_be_hosted_faithfully_is_refused_in_one_line(trap, root, breaks, expected):
    breaks(trap)
    result = import_task(trap, root, SUITE)
    lines = [r.line() for r in result.refusals]
    assert not result.plans and len(lines) == 1 and lines[0].startswith(f"refuse {SUITE}: {expected}"), lines
    assert not (root / "tasks" / SUITE).exists()


def test_a_case_without_its_inputs_is_refused_alone_when_the_task_has_no_build(trap, root):
    (trap / "build_cases.py").unlink()
    (trap / "inputs" / "pair_02" / "step2.txt").unlink()
    result = import_task(trap, root, SUITE)
    assert [r.line() for r in result.refusals] == [
        "refuse pair_02: inputs/pair_02/step2.txt: (file): is missing — fix: run the task's build "
        "(python3 build_cases.py) or add the case's step2.txt"]
    assert [c["id"] for c in hosted(root / "tasks" / SUITE)["cases"]] == ["pair_01", "pair_03"]


def test_a_dry_run_writes_nothing_and_an_existing_suite_is_never_overwritten(trap, unbuilt, root):
    dry = import_task(trap, root, SUITE, dry_run=True)
    assert dry.plans and not (root / "tasks" / SUITE).exists()
    import_task(trap, root, SUITE)
    before = files_of(root / "tasks" / SUITE)
    with pytest.raises(UserError, match=f"tasks/{SUITE}: already exists"):
        import_task(trap, root, SUITE)
    assert files_of(root / "tasks" / SUITE) == before


def test_missing_inputs_are_written_by_the_tasks_own_build_in_the_checker_container(engine, images, unbuilt, tmp_path,
                                                                                    root, run_id, no_leftovers):
    (unbuilt / "judge.py").chmod(0o755)
    dry = import_task(unbuilt, root, SUITE, dry_run=True)
    assert "would run its build (python3 build_cases.py) in the checker container first: 3 cases lack" in dry.plans[0].line()
    result = import_task(unbuilt, root, SUITE, run_id=run_id, log=lambda m: None)
    assert not result.refusals, [r.line() for r in result.refusals]
    provenance = hosted(root / "tasks" / SUITE)
    assert (provenance["built"]["image"], provenance["built"]["image_id"]) == (images.checker.tag, images.checker.id)
    assert provenance["built"]["output"] == "built 3 cases"
    assert provenance["executable"] == ["judge.py"]  # its bit went into the build's container and came out
    on_host = tmp_path / "host"
    shutil.copytree(unbuilt, on_host)
    subprocess.run([sys.executable, "-B", "build_cases.py"], cwd=on_host, check=True, capture_output=True, timeout=60)
    assert files_of(root / "tasks" / SUITE / "source") == files_of(on_host)  # what the build writes, unchanged
    # a file the source has must be what its build writes
    tampered = unbuilt / "inputs" / "pair_01" / "step1.txt"
    tampered.parent.mkdir(parents=True)
    tampered.write_text("PART 1 of 2. Remember this word: not-the-one\n")
    refused = import_task(unbuilt, root, "pair_recall_2", run_id=run_id, log=lambda m: None)
    assert [r.line() for r in refused.refusals] == [
        f"refuse {SUITE}: inputs/pair_01/step1.txt: (file): differs from what the task's build writes — fix: import "
        "the folder as its build writes it (run it, or restore the file)"]
    # a build that fails is the task's refusal, with its last line
    tampered.unlink()
    (unbuilt / "build_cases.py").write_text("raise SystemExit('gold.cases.json: no seed for pair_02')\n")
    failed = import_task(unbuilt, root, "pair_recall_3", run_id=run_id, log=lambda m: None)
    assert [r.line() for r in failed.refusals] == [
        f"refuse {SUITE}: build_cases.py: (build): exited 1: gold.cases.json: no seed for pair_02 — fix: fix the "
        "task's build, or import a folder its build already wrote"]
    assert not (root / "tasks" / "pair_recall_2").exists() and not (root / "tasks" / "pair_recall_3").exists()


def memgrid(*args, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".venv/bin/memgrid"), "task", *args], capture_output=True, text=True,
                          env={**os.environ, "MEMGRID_ROOT": str(root)}, timeout=120)


def test_the_command_line_lists_the_cases_and_reports_bad_input_in_one_line(trap, root, tmp_path):
    nowhere = memgrid("import", "--format", "traptask", str(tmp_path), root=root)
    assert nowhere.returncode == 2 and "Traceback" not in nowhere.stderr, nowhere.stderr
    assert nowhere.stderr.strip() == (f"memgrid: {tmp_path}: traptask.yaml: is missing — fix: give a trap task folder "
                                      "(tasks/<name>/ with traptask.yaml)"), nowhere.stderr
    done = memgrid("import", "--format", "traptask", str(trap), root=root)
    assert done.returncode == 0, done.stderr
    assert (f"import {SUITE} -> tasks/{SUITE}/: 3 cases (pair_01, pair_02, pair_03); 15 files" in done.stdout
            and f"imported 1 into suite {SUITE}, refused 0" in done.stdout), done.stdout
    listed = memgrid("list", "--suite", SUITE, root=root)
    assert listed.returncode == 0 and all(c in listed.stdout for c in CASES), listed.stdout + listed.stderr
    unknown_need(trap)
    refused = memgrid("import", "--format", "traptask", str(trap), "--suite", "other", root=root)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "'gpu' is not a need" in refused.stderr


def test_the_docs_example_runs_with_files_the_project_has():
    """docs/hosted-trap-tasks.md's grid and commands name only files of this checkout (they once named a stub
    harness that was in no checkout), and its spec is a grid memgrid reads."""
    import re

    from runner.plan.spec import grid_from_dict

    doc = (REPO / "docs" / "hosted-trap-tasks.md").read_text()
    spec = yaml.safe_load(re.search(r"```yaml\n(.*?)```", doc, re.S).group(1))
    files = [f for agent in spec["command_agents"].values() for f in agent["files"]]
    copied = re.findall(r"cp -r (\S+)", re.search(r"```sh\n(.*?)```", doc, re.S).group(1))
    assert files and copied and all((REPO / path).exists() for path in files + copied), (files, copied)
    assert grid_from_dict(spec, REPO / "docs" / "hosted-trap-tasks.md").suite == "pair_recall"
