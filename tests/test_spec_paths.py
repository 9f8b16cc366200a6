"""Every path a spec names resolves inside the project, links followed: a grid spec's command agents' files, an
arm's files, a task's folders and transcripts, a planted task's folders, and an imported task's files. Anything
else is one line naming the file, the field and the fix, exit 2, and nothing runs.

The CLI tests point DOCKER_HOST at nothing, so a defence that fails cannot run a grid: it reaches the engine
check instead, whose line names no spec field."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner.agents.command import load_command_agents
from runner.env.bundle import build_bundle
from runner.errors import SpecError
from runner.plan.spec import load_all_arms, load_all_tasks, load_arm, load_task
from runner.units.planted import load_planted_task
from runner.sources.amb import import_tasks
from test_importer import GOOD, amb  # noqa: F401 (amb: the fixture, a private copy of the synthetic checkout)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path) -> Path:
    """The smallest project a grid of slug_ids x bare / claude_md loads from, and an import writes into (the
    shared fixture copies every task and arm, seconds a test)."""
    root = tmp_path / "project"
    for sub in ("tasks/slug_ids", "arms/bare", "arms/claude_md", "arms/placebo"):
        shutil.copytree(REPO / sub, root / sub, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def grid_spec(project: Path, files: list[str], agent: str = "x") -> Path:
    path = project / "grids" / "evil.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("name: evil\ntasks: [slug_ids]\narms: [bare]\nagents: [x]\nseeds: 1\nconditions: [present]\n"
                    f"command_agents:\n  {agent}:\n    command: [cat, leaked]\n    files: {json.dumps(files)}\n")
    return path


def memgrid_grid(project: Path, spec: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMGRID_ROOT": str(project), "DOCKER_HOST": "unix:///nonexistent/memgrid-test.sock"}
    return subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "grid", "--spec", str(spec),
                           "--runs-dir", str(project / "runs"), "--no-progress", *extra],
                          capture_output=True, text=True, timeout=120, cwd=project, env=env)


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("named", ["/etc/passwd", "../../../../../../../../etc/passwd", "stubs/host"])
def test_a_grid_spec_cannot_hand_a_command_agent_a_host_file(project, named):
    (project / "stubs").mkdir()
    (project / "stubs" / "host").symlink_to("/etc/hostname")  # inside the project, leading out of it
    line = one_line(memgrid_grid(project, grid_spec(project, [named])))
    assert "evil.yaml: command_agents.x.files[0]:" in line
    assert repr(named) in line and "outside the project" in line and "fix: name a file inside the project" in line
    assert not (project / "runs").exists()


def test_a_command_agent_file_inside_the_project_still_runs(project):
    (project / "stubs").mkdir()
    (project / "stubs" / "ok.py").write_text("print('hello')\n")
    (project / "stubs" / "linked.py").symlink_to(project / "stubs" / "ok.py")  # a link that stays inside is fine
    spec = grid_spec(project, ["stubs/ok.py", "stubs/linked.py"])
    agents = load_command_agents({"x": {"command": ["python3", "ok.py"], "files": ["stubs/ok.py", "stubs/linked.py"]}},
                                 project, spec)
    assert [p.read_text() for p in agents["x"].files] == ["print('hello')\n"] * 2
    # the CLI gets past every spec check to the engine, which this test withholds
    line = one_line(memgrid_grid(project, spec))
    assert "no Docker engine answers" in line


def test_an_arm_file_cannot_lead_out_of_the_project(project):
    arm_yaml = project / "arms" / "claude_md" / "arm.yaml"
    arm_yaml.write_text(arm_yaml.read_text().replace("source: tasks/{task}/CLAUDE.md", "source: ../../../../../etc/passwd"))
    with pytest.raises(SpecError) as e:
        load_arm(arm_yaml.parent)
    assert e.value.field == "files[0].source" and "/etc/passwd" in str(e.value)
    line = one_line(memgrid_grid(project, grid_spec(project, [])))  # any grid: every arm is loaded first
    assert "arm.yaml: files[0].source:" in line and "'../../../../../etc/passwd'" in line and "fix:" in line


def test_a_per_task_arm_file_linked_out_of_the_project_stops_the_grid_before_it_runs(project):
    claude_md = project / "arms" / "claude_md" / "tasks" / "slug_ids" / "CLAUDE.md"
    claude_md.unlink()
    claude_md.symlink_to("/etc/hostname")
    load_arm(claude_md.parents[2])  # '{task}' is filled in only when a grid names the task
    spec = project / "grids" / "md.yaml"
    spec.parent.mkdir()
    spec.write_text("name: md\ntasks: [slug_ids]\narms: [claude_md]\nagents: [floor]\nseeds: 1\nconditions: [present]\n")
    line = one_line(memgrid_grid(project, spec))
    assert "claude_md/arm.yaml: files[0].source:" in line and "'tasks/slug_ids/CLAUDE.md'" in line
    assert "/etc/hostname" in line and not (project / "runs").exists()
    tasks, arms = load_all_tasks(project), load_all_arms(project)
    with pytest.raises(SpecError, match=r"files\[0\]\.source"):  # and the bundle refuses it too, whoever calls it
        build_bundle(tasks["slug_ids"], arms["claude_md"], {"agent": "floor"})


def test_a_shipped_arm_file_still_reaches_the_bundle(project):
    tasks, arms = load_all_tasks(project), load_all_arms(project)
    bundle = build_bundle(tasks["slug_ids"], arms["claude_md"], {"agent": "floor"})
    assert "workspace/CLAUDE.md" in bundle.manifest


@pytest.mark.parametrize("sub", ["fixture", "oracle", "references/naive", "references/damaged/superseded"])
def test_a_task_folder_cannot_be_a_link_out_of_the_project(project, tmp_path, sub):
    task = project / "tasks" / "slug_ids"
    outside = tmp_path / "host" / "folder"
    shutil.copytree(task / sub, outside)
    shutil.rmtree(task / sub)
    (task / sub).symlink_to(outside, target_is_directory=True)
    with pytest.raises(SpecError) as e:
        load_task(task)
    assert e.value.field == "(task folder)" and f"'{sub}/'" in str(e.value) and "outside the project" in str(e.value)


def test_a_task_transcript_cannot_be_a_link_out_of_the_project(project):
    fact = project / "tasks" / "slug_ids" / "corpus" / "fact.jsonl"
    fact.unlink()
    fact.symlink_to("/etc/hostname")
    with pytest.raises(SpecError) as e:
        load_task(fact.parents[1])
    assert e.value.field == "roles.fact[0]" and "plants.yaml" in str(e.value.path)


def test_a_task_linked_in_from_outside_is_refused(project, tmp_path):
    shutil.move(project / "tasks" / "slug_ids", tmp_path / "elsewhere")
    (project / "tasks" / "slug_ids").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    line = one_line(memgrid_grid(project, grid_spec(project, [])))
    assert "slug_ids/task.yaml: (task folder):" in line and "outside the project" in line


def test_the_shipped_tasks_and_arms_all_stay_inside():
    assert len(load_all_tasks(REPO)) >= 12 and len(load_all_arms(REPO)) >= 10


def test_a_planted_task_folder_cannot_be_a_link_out_of_the_project(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(REPO / "tasks" / "planted", project / "tasks" / "planted")
    for task in sorted(p.parent for p in (project / "tasks" / "planted").glob("*/planted.yaml")):
        try:
            load_planted_task(task)
            break
        except SpecError:  # a task mid-edit in this checkout; any one that loads will do
            continue
    else:
        pytest.skip("no planted task of this checkout loads")
    shutil.move(task / "hidden", tmp_path / "hidden")
    (task / "hidden").symlink_to(tmp_path / "hidden", target_is_directory=True)
    with pytest.raises(SpecError) as e:
        load_planted_task(task)
    assert e.value.field == "(task folder)" and "'hidden/'" in str(e.value)


# ---------------------------------------------------------------- imported tasks: inside the amb checkout

def host_folder(tmp_path: Path) -> Path:
    host = tmp_path / "host"
    host.mkdir(exist_ok=True)
    (host / "id_rsa").write_text("-----BEGIN SECRET-----\n")
    return host


def imported_text(project: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in (project / "tasks").rglob("*") if p.is_file())


def refusal(result) -> str:
    assert not result.plans and len(result.refusals) == 1, result.refusals
    return result.refusals[0].line()


def test_an_imported_fixture_linked_to_a_host_folder_is_refused(project, amb, tmp_path):  # noqa: F811
    tree = amb / "tasks" / GOOD / "tree"
    shutil.rmtree(tree)
    tree.symlink_to(host_folder(tmp_path), target_is_directory=True)
    line = refusal(import_tasks(amb / "tasks" / GOOD, project, "amb"))
    assert "tree" in line and "outside the amb checkout" in line
    assert "BEGIN SECRET" not in imported_text(project)


def test_an_imported_oracle_linked_to_a_host_folder_is_refused(project, amb, tmp_path):  # noqa: F811
    oracle = amb / "oracles" / GOOD
    shutil.rmtree(oracle)
    oracle.symlink_to(host_folder(tmp_path), target_is_directory=True)
    line = refusal(import_tasks(amb / "tasks" / GOOD, project, "amb"))
    assert f"oracles/{GOOD}" in line and "outside the amb checkout" in line


def test_an_imported_plant_named_out_of_the_checkout_is_refused(project, amb, tmp_path):  # noqa: F811
    staged = host_folder(tmp_path)
    (staged / "prompt.txt").write_text("a staged session\n")
    (staged / "stage").mkdir()
    (staged / "stage" / "id_rsa").write_text("-----BEGIN SECRET-----\n")
    plants = amb / "tasks" / GOOD / "plants.json"
    data = json.loads(plants.read_text())
    escape = os.path.relpath(staged, amb / "tasks" / GOOD / "plants")  # '../../../../host'
    data["plants"][escape] = data["plants"]["adjacent_mib_dashboard"]
    data["conditions"]["adjacent"]["plants"] = [escape]
    plants.write_text(json.dumps(data))
    line = refusal(import_tasks(amb / "tasks" / GOOD, project, "amb", render=True))
    assert "outside the amb checkout" in line
    assert "BEGIN SECRET" not in imported_text(project)


def test_an_imported_checkouts_git_head_cannot_name_a_host_file(project, amb, tmp_path):  # noqa: F811
    (amb / ".git").mkdir()
    secret = host_folder(tmp_path) / "id_rsa"
    (amb / ".git" / "HEAD").write_text(f"ref: {os.path.relpath(secret, amb / '.git')}\n")
    line = refusal(import_tasks(amb / "tasks" / GOOD, project, "amb"))
    assert ".git" in line and "ref" in line and "outside the amb checkout" in line


# ---------------------------------------------------------------- reproduce names what it will read and run

def test_reproduce_lists_what_it_will_read_and_run_then_refuses_a_host_file(project):
    from runner.plan.prereg import MARKER, append_results

    grid = {"name": "theirs", "tasks": ["slug_ids"], "arms": ["bare"], "agents": ["floor", "x"], "seeds": 1,
            "conditions": ["present"], "network": "none",
            "command_agents": {"x": {"command": ["python3", "-I", "x.py"], "files": ["/etc/passwd"]}}}
    front = {"question": "Someone else's question?", "endpoints": ["checker_pass"], "contrasts": ["bare - bare"],
             "predictions": [{"id": "P1", "text": "t", "contrast": "bare - bare", "condition": "present",
                              "agent": "floor", "expect": "null"}],
             "exclusion_rules": ["none"], "sizing": {"text": "two cells", "cells": 2}, "min_effect": 0.1,
             "grid": grid, "prices": {}}
    prereg = project / "preregistration" / "001-theirs.md"
    prereg.parent.mkdir()
    prereg.write_text(f"---\n{json.dumps(front)}\n---\n\nWhy.\n\n{MARKER}\n")
    append_results(prereg, "their results", {"run_id": "theirs-0", "inputs": {}, "per_arm_condition": {}})
    env = {**os.environ, "MEMGRID_ROOT": str(project), "DOCKER_HOST": "unix:///nonexistent/memgrid-test.sock"}
    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "reproduce", str(prereg),
                           "--runs-dir", str(project / "runs"), "--no-progress"],
                          capture_output=True, text=True, timeout=120, cwd=project, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    err = proc.stderr
    listing = err[err.index("it will read and run:"):]
    assert "tasks: tasks/slug_ids/" in listing and "arms: arms/bare/" in listing and "agent floor: memgrid's own" in listing
    assert "agent x: runs python3 -I x.py with the files /etc/passwd" in listing
    last = err.strip().splitlines()[-1]
    assert "command_agents.x.files[0]:" in last and "'/etc/passwd'" in last and "outside the project" in last
    assert err.index("agent x: runs") < err.index("command_agents.x.files[0]")
    assert not (project / "runs").exists()
