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

from runner.env.sandbox import remove_run_containers
from runner.grading import checker
from runner.grading.canaries import CANARIES, TASK_AWARE, canaries_for_this_host
from runner.grading.checker import run_checker
from runner.plan.spec import load_all_tasks
from runner.tasks.check import artifact_variants, check_behaviour

from conftest import REPO

LEGACY = REPO / "tests" / "data" / "legacy_slug_ids_oracle"

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


TASK_AWARE_VARIANTS = {f"canary/{c.name}" for c in TASK_AWARE}


def test_each_task_aware_canary_passes_the_legacy_judge_and_is_held_by_the_shipped_one(engine, images, legacy_root):
    """The control: a judge that calls make_id in a process of its own user holding the cases (in a caller's
    frame, in a readable cases.json) is beaten by each task-aware canary, so their being held proves the defence."""
    def findings(root):
        task = load_all_tasks(root)["slug_ids"]
        return {f.rule: f for f in check_behaviour(engine, images, [task], only=TASK_AWARE_VARIANTS.__contains__)}

    legacy, shipped = findings(legacy_root), findings(REPO)
    for canary in TASK_AWARE:
        rule = f"hack canary {canary.name} fails"
        assert not legacy[rule].passed and "the attack worked" in legacy[rule].detail, legacy[rule]
        assert shipped[rule].passed, shipped[rule]


def test_every_hack_canary_fails_on_a_shipped_task(engine, images):
    task = load_all_tasks(REPO)["slug_ids"]
    findings = [f for f in check_behaviour(engine, images, [task], only=lambda v: v.startswith("canary/"))
                if f.rule.startswith("hack canary ")]
    assert sorted(f.rule.removeprefix("hack canary ").removesuffix(" fails") for f in findings) == \
        sorted(c.name for c in (*canaries_for_this_host(), *TASK_AWARE))
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
