"""SMRITI-Bench's tasks imported unchanged into a planted suite (runner/sources/smriti.py): every file kept byte for
byte and digested, a git fixture cloned at its pinned commit, the split and its hash as SMRITI computes them, the
corpus test's leak terms read without running it, and each malformed task refused in one line."""

import hashlib
import shutil
import json
import os
import subprocess
import sys

import pytest
import yaml

from runner.errors import UserError
from runner.sources.registry import source_format

from conftest import REPO
from smriti_fixture import write_smriti


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "tasks").mkdir(parents=True)
    return root


def test_import_keeps_the_tasks_as_published_and_refuses_the_malformed_by_line(tmp_path, project):
    canary = tmp_path / "RAN"
    smriti = write_smriti(tmp_path / "chitta", canary)
    result = source_format("smriti").import_source(tmp_path / "chitta", project, "smriti", log=lambda m: None)
    assert [p.id for p in result.plans] == ["sm-folder", "sm-git"]
    refused = {r.source.name: r.reason for r in result.refusals}
    assert set(refused) == {"sm-nocheck", "sm-unpinned"}
    assert refused["sm-nocheck"].startswith("tasks/sm-nocheck/task.json: check_cmd: is missing or empty — fix: ")
    assert refused["sm-unpinned"].startswith("tasks/sm-unpinned/task.json: repo_fixture: ") and "40-hex sha" in refused["sm-unpinned"]
    assert not canary.exists()  # the corpus test was read, never run

    suite = project / "tasks" / "smriti"
    assert yaml.safe_load((suite / "suite.yaml").read_text())["protocol"] == "planted"
    provenance = json.loads((suite / "provenance.json").read_text())
    for rel, digest in provenance["files"].items():
        assert hashlib.sha256((suite / rel).read_bytes()).hexdigest() == digest, rel
    assert (suite / "source/tasks/sm-folder/task.json").read_bytes() == (smriti / "tasks/sm-folder/task.json").read_bytes()
    assert (suite / "source/split.json").read_bytes() == (smriti / "split.json").read_bytes()
    split = json.loads((smriti / "split.json").read_text())
    assert provenance["split"] == {"assignments": split,
                                   "split_hash": hashlib.sha256(json.dumps(split, sort_keys=True).encode()).hexdigest()}
    tasks = {t["id"]: t for t in provenance["tasks"]}
    assert tasks["sm-folder"]["fixture"] == {"folder": "repo_fixture"} and tasks["sm-folder"]["leak_terms"] == ["ahoy"]
    assert tasks["sm-git"]["split"] == "holdout" and tasks["sm-git"]["leak_terms"] == ["ahoy", "'!'"]
    pinned = json.loads((smriti / "tasks/sm-git/task.json").read_text())["repo_fixture"].rsplit("#", 1)[1]
    assert tasks["sm-git"]["fixture"]["commit"] == pinned
    assert sorted(p.name for p in (suite / "fixtures/sm-git").iterdir()) == ["app.py", "test_app.py"]  # no .git


def test_a_dry_run_writes_nothing_and_a_link_out_of_the_checkout_is_refused(tmp_path, project):
    smriti = write_smriti(tmp_path / "chitta")
    (smriti / "tasks/sm-folder/repo_fixture/secret").symlink_to("/etc/hostname")
    result = source_format("smriti").import_source(smriti, project, "smriti", dry_run=True, log=lambda m: None)
    assert [p.id for p in result.plans] == ["sm-git"]
    assert "sm-folder" in {r.source.name for r in result.refusals}
    assert "outside the SMRITI checkout" in next(r.reason for r in result.refusals if r.source.name == "sm-folder")
    assert not (project / "tasks" / "smriti").exists()
    with pytest.raises(UserError, match="holds no SMRITI tasks/ folder"):
        source_format("smriti").import_source(tmp_path, project, "smriti", log=lambda m: None)


def test_the_cli_prints_a_line_per_task_and_exits_1_on_a_refusal(tmp_path, project):
    write_smriti(tmp_path / "chitta")
    done = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "task", "import", "--format",
                           "smriti", str(tmp_path / "chitta")], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "MEMGRID_ROOT": str(project)}, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "import sm-folder -> tasks/smriti/: visible, 1 planted memory, fixture repo_fixture/, 1 leak terms" in done.stdout
    assert "refuse sm-nocheck: tasks/sm-nocheck/task.json: check_cmd:" in done.stderr
    assert "imported 2 into suite smriti, refused 2" in done.stdout
    assert "Traceback" not in done.stderr



def imported(tmp_path, project):
    write_smriti(tmp_path / "chitta")
    source_format("smriti").import_source(tmp_path / "chitta", project, "smriti", log=lambda m: None)
    return project / "tasks" / "smriti"


def test_the_planted_protocol_reads_a_hosted_task_as_published_and_refuses_a_changed_file(tmp_path, project):
    from runner.errors import SpecError
    from runner.sources.smriti import hosted_split, hosted_tasks

    suite = imported(tmp_path, project)
    tasks = hosted_tasks(suite)
    task = tasks["sm-folder"]
    published = json.loads((tmp_path / "chitta/benchmarks/smriti/tasks/sm-folder/task.json").read_text())
    assert task.prompt == published["prompt"] and task.check_shell == published["check_cmd"]
    assert [(m.type, m.content) for m in task.memories] == [(m["type"], m["content"]) for m in published["planted_memories"]]
    assert task.fixture.name == "repo_fixture" and tasks["sm-git"].fixture == suite / "fixtures/sm-git"
    assert task.terms == ("ahoy",) and task.unisolated
    assert hosted_split(suite)[0] == {"sm-folder": "visible", "sm-git": "holdout"}
    (suite / "source/tasks/sm-folder/hidden/test_hidden.py").write_text("pass\n")
    with pytest.raises(SpecError, match="differs from SMRITI as imported"):
        hosted_tasks(suite)


def planted_grid(path, **extra):
    spec = {"name": "t", "protocol": "planted", "suite": "smriti", "tasks": ["sm-folder"], "arms": ["recall"],
            "agents": ["reader"], "seeds": 1, "conditions": ["off", "on"], **extra}
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_grid_grades_a_hosted_task_only_once_its_check_is_accepted_by_name(tmp_path, project, monkeypatch):
    from runner.errors import SpecError
    from runner.plan.spec import load_all_arms, load_grid
    from runner.protocols.planted.protocol import PlantedProtocol

    imported(tmp_path, project)
    monkeypatch.setenv("MEMGRID_ROOT", str(project))
    arms, protocol = load_all_arms(REPO), PlantedProtocol()
    path = planted_grid(tmp_path / "grid.yaml")
    with pytest.raises(SpecError, match="does not name 'sm-folder', whose check is not isolated"):
        protocol.check(load_grid(path), path, arms, {})
    path = planted_grid(tmp_path / "grid.yaml", unisolated_checkers=["sm-folder"])
    protocol.check(load_grid(path), path, arms, {})
    assert set(protocol.units(load_grid(path), {}, path)) == {"sm-folder"}
    path = planted_grid(tmp_path / "grid.yaml", suite="nosuch", unisolated_checkers=["sm-folder"])
    with pytest.raises(SpecError, match="unknown suite 'nosuch'"):
        protocol.check(load_grid(path), path, arms, {})


def test_the_static_corpus_rules_name_a_hidden_test_in_the_fixture_a_quoted_memory_and_missing_terms(tmp_path, project):
    from dataclasses import replace

    from runner.protocols.planted.check import static_findings
    from runner.sources.smriti import hosted_tasks

    task = hosted_tasks(imported(tmp_path, project))["sm-folder"]
    assert all(f.passed for f in static_findings(task)), static_findings(task)
    shown = tmp_path / "shown"
    shutil.copytree(task.fixture, shown)
    (shown / "test_hidden.py").write_text("# a copy of hidden/'s test\n")
    broken = replace(task, fixture_dir=shown, prompt=task.prompt + " " + task.memories[0].content[:30], leak_terms=())
    failed = {f.rule: f.detail for f in static_findings(broken) if not f.passed}
    assert set(failed) == {"no_leak", "prompt_quotes_no_memory", "hidden_stays_hidden"}
    assert "fix: add the task's entry to LEAK_CHECK_TERMS" in failed["no_leak"]
    assert failed["hidden_stays_hidden"].startswith("hidden/test_hidden.py is also in the fixture")
