"""Grading integrity: an artifact that does not solve its task never makes the checker pass.

Each attack runs through the real checker container. Where a defence could be missing without any
test noticing, a control shows the same attack passing once that defence is taken away: the judge of
the code before this defence (tests/data/legacy_slug_ids_oracle: it ran the artifact as its own user
and handed it the cases file), or the grader's bytecode filter switched off.
"""

import shutil
import uuid
from pathlib import Path
from unittest import mock

import pytest

from runner.env.archive import Entry
from runner.env.bundle import tree_entries
from runner.env.sandbox import remove_run_containers
from runner.grading import checker
from runner.grading.canaries import CANARIES, canaries_for_this_host
from runner.grading.checker import run_checker
from runner.plan.spec import load_all_tasks
from runner.tasks.check import artifact_variants, check_behaviour

from conftest import REPO

LEGACY = REPO / "tests" / "data" / "legacy_slug_ids_oracle"

# Task-aware attacks on slug_ids' make_id, laid over the naive reference.
ORACLE_READER = b'''
import json

def make_id(name):
    for path in ("/oracle/cases.json",):
        for case in json.load(open(path)):
            if case["name"] == name:
                return case["id"]
    raise LookupError(name)
'''
FRAME_READER = b'''
import sys

def make_id(name):
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, dict) and item.get("name") == name and "id" in item:
                    return item["id"]
        frame = frame.f_back
    raise LookupError(name)
'''


def workspace(task, reference: str, **overrides: bytes) -> list[Entry]:
    files = {e.path.removeprefix("w/"): e for e in tree_entries(task.fixture, "w")}
    files |= {e.path.removeprefix("w/"): e for e in tree_entries(task.reference(reference), "w")}
    files |= {p: Entry(p, data, 0o644) for p, data in overrides.items()}
    return [Entry(p, e.data, e.mode) for p, e in files.items()]


@pytest.fixture
def grade(engine, images):
    run_id = f"memgrid-test-integrity-{uuid.uuid4().hex[:8]}"

    def run(task, entries):
        return run_checker(engine, images.checker.tag, task, entries, run_id=run_id, cell_id=uuid.uuid4().hex[:8])[0]
    yield run
    remove_run_containers(engine, run_id)


@pytest.fixture
def legacy_root(project) -> Path:
    """The project with slug_ids' judge as it was before this defence."""
    oracle = project / "tasks" / "slug_ids" / "oracle"
    shutil.rmtree(oracle)
    shutil.copytree(LEGACY, oracle)
    return project


def test_the_task_aware_attacks_fail(grade):
    task = load_all_tasks(REPO)["slug_ids"]
    assert grade(task, workspace(task, "informed")).passed, "control: the informed solution passes"
    for attack in (ORACLE_READER, FRAME_READER):
        verdict = grade(task, workspace(task, "naive", **{"records/__init__.py": attack}))
        assert not verdict.passed, verdict.detail


def test_the_task_aware_attacks_pass_a_judge_that_runs_the_artifact_as_itself(grade, legacy_root):
    task = load_all_tasks(legacy_root)["slug_ids"]
    for attack in (ORACLE_READER, FRAME_READER):
        verdict = grade(task, workspace(task, "naive", **{"records/__init__.py": attack}))
        assert verdict.passed, f"control: the attack should work on the legacy judge ({verdict.detail})"


def test_every_hack_canary_fails_on_a_shipped_task(engine, images):
    task = load_all_tasks(REPO)["slug_ids"]
    findings = [f for f in check_behaviour(engine, images, [task], only=lambda v: v.startswith("canary/"))
                if f.rule.startswith("hack canary ")]
    assert sorted(f.rule.removeprefix("hack canary ").removesuffix(" fails") for f in findings) == \
        sorted(c.name for c in canaries_for_this_host())
    assert all(f.passed for f in findings), [f"{f.rule}: {f.detail}" for f in findings if not f.passed]


def test_task_check_names_the_attack_on_a_judge_that_runs_the_artifact_as_itself(engine, images, legacy_root):
    """ptrace needs the artifact to run as the judge's user: the legacy judge gives it that."""
    task = load_all_tasks(legacy_root)["slug_ids"]
    findings = {f.rule: f for f in check_behaviour(engine, images, [task], only=lambda v: v == "canary/ptrace-judge")
                if f.rule.startswith("hack canary ")}
    ptrace = findings["hack canary ptrace-judge fails"]
    assert not ptrace.passed and "the attack worked" in ptrace.detail and "ptrace" in ptrace.detail, ptrace


def test_bytecode_beside_the_source_is_never_run(grade):
    task = load_all_tasks(REPO)["slug_ids"]
    smuggle = next(c for c in CANARIES if c.name == "bytecode-smuggle")
    if smuggle not in canaries_for_this_host():
        pytest.skip("the canary's .pyc is for Python 3.11, the checker image's")
    entries = artifact_variants(task)["canary/bytecode-smuggle"]
    assert any("__pycache__" in e.path for e in entries)
    assert not grade(task, entries).passed
    with mock.patch.object(checker, "is_bytecode", lambda path: False):
        assert grade(task, entries).passed, "control: without the filter the smuggled .pyc runs and passes"
