"""A hosted trap task's cases as two-session cells in real containers: each session's prompt is the case's own
prompt file as trap's runner passes it, only the arm's store passes between the sessions, nothing of expected/
or step 1's inputs is in step 2's sandbox, and the score is the task's own judge, run unchanged in the checker
container (tests/data/traptask/pair_recall/, a trap-format task written for these tests)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runner.agents.command import CommandAgent, CommandSpec
from runner.digest import sha256_bytes
from runner.errors import SpecError
from runner.exec.job import run_grid
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_grid
from runner.protocols.registry import PROTOCOLS
from runner.protocols.two_session.hosted import PUBLISHED
from runner.results.ledger import Ledger
from runner.sources.traptask import import_task

from conftest import REPO

PAIR = REPO / "tests" / "data" / "traptask" / "pair_recall"
STUB = REPO / "tests" / "data" / "traptask" / "pair_stub.py"
SUITE = "pair_recall"
PROTOCOL = PROTOCOLS["two-session"]
# As trap's runner gives a solution its prompt: the last argument. `remembers` keeps its value in the file
# STUB_MEMORY_FILE names, pointed at the notes arm's store (NOTES.md), the one thing that passes between sessions.
COMMANDS = {mode: ["sh", "-c", f'exec python3 -I pair_stub.py {mode} "$(cat)"'] for mode in ("amnesiac", "snooper")}
COMMANDS["remembers"] = ["sh", "-c", 'STUB_MEMORY_FILE="$MEMGRID_STORE/NOTES.md" '
                                     'exec python3 -I pair_stub.py remembers "$(cat)"']


@pytest.fixture
def hosted(project, tmp_path, monkeypatch) -> Path:
    """The project with pair_recall imported as a suite (its inputs built on the host by its own build) and the
    stub beside it; MEMGRID_ROOT names it, as `memgrid grid` run in it would."""
    src = tmp_path / "src" / SUITE
    shutil.copytree(PAIR, src, ignore=shutil.ignore_patterns("__pycache__", "inputs", "expected"))
    subprocess.run([sys.executable, "-B", "build_cases.py"], cwd=src, check=True, capture_output=True, timeout=60)
    assert not import_task(src, project, SUITE).refusals
    shutil.copy(STUB, project / "pair_stub.py")
    monkeypatch.setenv("MEMGRID_ROOT", str(project))
    return project


def answer(project: Path, case: str) -> str:
    return json.loads((project / "tasks" / SUITE / "source" / "expected" / case / "answer.json").read_text())["answer"]


def test_hosted_cases_run_as_published_and_the_tasks_own_judge_scores_them(engine, images, hosted, tmp_path, run_id,
                                                                          no_leftovers):
    agents = {m: CommandSpec(m, tuple(c), (hosted / "pair_stub.py",)) for m, c in COMMANDS.items()}
    path = write_grid(hosted, ["remembers"], ["notes"])
    setup = PROTOCOL.prepare(engine, load_grid(path), path, images)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, {}, load_all_arms(hosted), command_agents=agents,
                       protocol=PROTOCOL, protocol_setup=setup, root=hosted)
    ctx.run_dir.mkdir(parents=True)
    rows = {}
    for case, arm, agent in [("pair_01", "notes", "remembers"), ("pair_02", "notes", "remembers"),
                             ("pair_01", "bare", "remembers"), ("pair_01", "notes", "snooper"),
                             ("pair_01", "notes", "amnesiac")]:
        row = PROTOCOL.run_cell(ctx, CellSpec(case, arm, 0, PUBLISHED, agent, f"{agent}-{arm}-{case}", 0), 1)
        assert row.admitted and row.final, row.error_detail
        rows[(case, arm, agent)] = row
    step1 = (hosted / "tasks" / SUITE / "source" / "inputs" / "pair_01" / "step1.txt").read_text()
    for (case, arm, agent), row in rows.items():
        result = json.loads(row.result)
        expected_score = 1.0 if (arm, agent) == ("notes", "remembers") else 0.0
        assert result["score"] == expected_score, (case, arm, agent, result)
        assert row.checker_passed is (expected_score == 1.0)
        # the verdict is the task's own judge's line: its fields, its case id, what it read as the answer
        assert result["judge"]["id"] == case and result["judge"]["category"] in ("word", "number"), result
        if expected_score:
            assert result["judge"]["reported"] == answer(hosted, case)
    init = [json.loads(line) for line in (ctx.run_dir / "cells" / rows[("pair_01", "notes", "amnesiac")].cell_id /
                                          "step1" / "transcript.jsonl").read_text().splitlines()]
    prompt_sha = next(e["prompt_sha256"] for e in init if e["type"] == "init")
    assert prompt_sha == sha256_bytes(step1.rstrip("\n").encode()) != sha256_bytes(step1.encode())
    # the snooper walked every folder of step 2's sandbox: no step1.txt, no answer.json, nothing of expected/
    assert json.loads(rows[("pair_01", "notes", "snooper")].result)["judge"]["reported"] == "UNKNOWN"


def write_grid(project: Path, agents: list[str], arms: list[str], **extra) -> Path:
    path = project.parent / "grid.yaml"
    spec = {"name": "pair-recall", "protocol": "two-session", "suite": SUITE, "arms": arms, "agents": agents,
            "seeds": 1, "conditions": [PUBLISHED], "network": "none",
            "command_agents": {m: {"command": COMMANDS[m], "files": ["pair_stub.py"]} for m in agents}, **extra}
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_grid_names_the_hosted_suite_runs_every_case_and_the_tasks_grader_gives_its_verdict(engine, images, hosted, tmp_path, run_id, no_leftovers):
    path = write_grid(hosted, ["remembers"], ["notes"])
    outcome = run_grid(load_grid(path), path, root=hosted, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=2,
                       progress=False, log=lambda m: None)
    rows = Ledger(outcome.plan.run_dir).rows()
    assert sorted(r["task"] for r in rows) == ["pair_01", "pair_02", "pair_03"]
    assert all(r["admitted"] and r["checker_passed"] and r["condition"] == PUBLISHED for r in rows), rows
    lock = json.loads((outcome.plan.run_dir / "run.json").read_text())
    assert lock["grid"]["suite"] == SUITE and lock["hosted_suite"]["format"] == "traptask"
    # the run's verdict is the task's own grader.py over the group's judged cases, kept in the run folder
    graded = json.loads((outcome.plan.run_dir / "grader.json").read_text())
    assert [(g["agent"], g["arm"], g["cases"]) for g in graded] == [("remembers", "notes", 3)]
    assert graded[0]["verdict"] == {"passed": True, "score": 1.0, "n_total": 3, "n_scored": 3}, graded
    (title, columns, lines, _), = PROTOCOL.run_tables(outcome.plan.run_dir)
    assert columns == ["agent", "arm", "cases", "passed", "score", "n_total", "n_scored"]
    assert lines == [["remembers", "notes", "3", "true", "1.0", "3", "3"]]
    # and on the run's page, as `memgrid report` writes it and the viewer's site carries it
    from runner.results.view import build_site

    build_site(outcome.plan.run_dir, tmp_path / "site", hosted)
    grader_row = "<td>remembers</td><td>notes</td><td>3</td><td>true</td><td>1.0</td><td>3</td><td>3</td>"
    page = (tmp_path / "site" / "report.html").read_text()
    assert "the task&#x27;s own grader, per agent x arm" in page and grader_row in page


@pytest.mark.parametrize("extra, field, problem", [
    ({"cases": 3}, "cases", "brings its own cases"),
    ({"conditions": ["closing_balance"]}, "conditions", "one condition published"),
    ({"tasks": ["pair_09"]}, "tasks", "'pair_09', which is not a case of suite 'pair_recall'"),
])
def test_a_grid_of_a_hosted_suite_is_refused_by_name_when_it_cannot_run_it(hosted, tmp_path, extra, field, problem):
    path = write_grid(hosted, ["remembers"], ["notes"], **extra)
    grid = load_grid(path)
    with pytest.raises(SpecError) as refused:
        PROTOCOL.check(grid, path, load_all_arms(hosted), {"remembers": CommandAgent})
        PROTOCOL.units(grid, {}, path)
    assert field in str(refused.value) and problem in str(refused.value), str(refused.value)


CARRY = r'''
import os, re, sys
prompt, store = sys.argv[-1], os.path.join(os.environ.get("MEMGRID_STORE", "/nowhere"), "NOTES.md")
value = re.search(r"Remember this \w+: (\S+)", prompt)
if value:  # session 1: its memory is the arm's store, the one thing memgrid carries to session 2
    open(store, "w").write(value.group(1))
    print("noted")
else:
    print(open(store).read().strip() if os.path.isfile(store) else "UNKNOWN")
'''
# What trap's runner leaves within reach of a solution, tried in every way: the gold answer walked to from the
# working directory (../../expected/<case>/answer.json under trap-cli) and anywhere on the disk, the task checkout
# its trap.yaml clones beside it, and any variable that names the manifest's inputs or answers.
CHEAT = r'''
import json, os, re, sys
prompt = sys.argv[-1]
if "PART 1 of 2" in prompt:
    print("nothing to do")
    sys.exit(0)
kind = "number" if "number" in prompt else "word"
found = []
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys", "/dev", "/usr")]
    for name in files:
        if name == "answer.json" or name == "step1.txt":
            try:
                text = open(os.path.join(top, name), errors="replace").read()
            except OSError:
                continue
            if name == "answer.json":
                gold = json.loads(text)
                if gold.get("category") == kind:
                    found.append(gold["answer"])
            else:
                hit = re.search(r"Remember this " + kind + r": (\S+)", text)
                found += [hit.group(1)] if hit else []
for value in os.environ.values():
    if "inputs_dir" in value or "expected_dir" in value:
        found.append(value)
print(found[0] if found else "UNKNOWN")
'''


def solution(project: Path, name: str, harness: str, clone: bool = False) -> str:
    folder = project / "solutions" / name
    folder.mkdir(parents=True)
    (folder / f"{name}.py").write_text(harness)
    spec = {"cmd": f"bash task/tasks/{SUITE}/tools/run_case.sh python3 -I {name}.py"}
    if clone:  # the task's checkout where trap-cli's clone_to puts it, expected answers and all
        spec["tasks"] = {SUITE: {"source": "git+https://example.invalid/tasks", "clone_to": "task"}}
        shutil.copytree(project / "tasks" / SUITE / "source", folder / "task" / "tasks" / SUITE)
    (folder / "trap.yaml").write_text(yaml.safe_dump(spec))
    return f"solutions/{name}"


def test_a_trap_solution_runs_as_an_agent_and_no_way_to_the_gold_answer_scores(engine, images, hosted, tmp_path,
                                                                               run_id, no_leftovers):
    path = hosted.parent / "grid.yaml"
    path.write_text(yaml.safe_dump({
        "name": "pair-solutions", "protocol": "two-session", "suite": SUITE, "tasks": ["pair_02"], "arms": ["notes"],
        "agents": ["carry", "cheat"], "seeds": 1, "conditions": [PUBLISHED], "network": "none",
        "command_agents": {"carry": {"trap_solution": solution(hosted, "carry", CARRY)},
                           "cheat": {"trap_solution": solution(hosted, "cheat", CHEAT, clone=True)}}}))
    outcome = run_grid(load_grid(path), path, root=hosted, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=2,
                       progress=False, log=lambda m: None)
    rows = {r["agent"]: r for r in Ledger(outcome.plan.run_dir).rows()}
    assert rows["carry"]["checker_passed"] and json.loads(rows["carry"]["result"])["score"] == 1.0, rows["carry"]
    cheat = json.loads(rows["cheat"]["result"])
    assert rows["cheat"]["admitted"] and cheat["score"] == 0.0 and cheat["judge"]["reported"] == "UNKNOWN", cheat
    # what was delivered: the solution's own files, never the task checkout its trap.yaml clones beside them
    events = [json.loads(line) for line in (outcome.plan.run_dir / "cells" / rows["cheat"]["cell_id"] / "step2" /
                                            "transcript.jsonl").read_text().splitlines()]
    channel = next(e for e in events if e["type"] == "channel")
    assert sorted(channel["files"]) == [".command/cheat.py", ".command/trap.yaml"], channel


def test_a_trap_solution_must_hand_its_harness_to_the_tasks_runner(tmp_path):
    from runner.sources.traptask import solution_agent

    folder = tmp_path / "solution"
    folder.mkdir()
    (folder / "agent.py").write_text("print('UNKNOWN')\n")
    (folder / "trap.yaml").write_text("cmd: bash task/tools/run_case.sh python3 agent.py --profile x\n")
    command, files = solution_agent(folder, tmp_path / "grid.yaml", "command_agents.s.trap_solution")
    assert command == ("sh", "-c", 'exec "$@" "$(cat)"', "sh", "python3", "agent.py", "--profile", "x")
    assert sorted(files) == ["agent.py", "trap.yaml"]
    (folder / "trap.yaml").write_text("cmd: python3 agent.py\n")  # hand-rolled sessions: memgrid runs its own
    with pytest.raises(SpecError, match="does not hand a harness command to the task's tools/run_case.sh"):
        solution_agent(folder, tmp_path / "grid.yaml", "command_agents.s.trap_solution")


def test_memgrids_own_agents_recall_a_hosted_case_through_memory_arms(engine, images, hosted, tmp_path, run_id,
                                                                      no_leftovers):
    """The reader (through notes and recall) and claude-code on the scripted model (through recall) are handed the
    case's expected answer in session 1, as a model that derived it would write it, under the case's id; session 2
    finds it only through the arm, and the task's judge scores what they print. bare carries nothing."""
    path = hosted.parent / "grid.yaml"
    path.write_text(yaml.safe_dump({
        "name": "pair-agents", "protocol": "two-session", "suite": SUITE, "tasks": ["pair_02"],
        "arms": ["bare", "notes", "recall"], "agents": ["reader", "claude-code"], "seeds": 1,
        "conditions": [PUBLISHED], "network": "none", "model": "scripted"}))
    outcome = run_grid(load_grid(path), path, root=hosted, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=2,
                       progress=False, log=lambda m: None)
    rows = {(r["agent"], r["arm"]): r for r in Ledger(outcome.plan.run_dir).rows()}
    assert all(r["admitted"] for r in rows.values()), {k: r["discard_reason"] for k, r in rows.items()}
    scores = {k: json.loads(r["result"])["score"] for k, r in rows.items()}
    assert scores == {("reader", "bare"): 0.0, ("reader", "notes"): 1.0, ("reader", "recall"): 1.0,
                      ("claude-code", "bare"): 0.0, ("claude-code", "notes"): 1.0, ("claude-code", "recall"): 1.0}, scores
    judged = json.loads(rows[("claude-code", "recall")]["result"])["judge"]
    assert judged["id"] == "pair_02" and judged["reported"] == answer(hosted, "pair_02")
