"""An agent cannot choose to be discarded (issue 25, item 8): a cell is discarded only on evidence the harness
holds of a fault outside the agent (wiring, a model API error the gateway recorded, memgrid's own failure); a process
killed at the memory limit is the agent's own doing. An agent that writes the naive rule and quits non-zero is scored,
and the ledger and the report say how it ended."""

import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from rich.console import Console
from synthetic_ledger import cell, write_run

from runner.agents.base import Transcript
from runner.agents.claude_code import classify
from runner.agents.model_cli import ended
from runner.agents.stream_json import parse_stream, transcript_events
from runner.agents.command import CommandSpec
from runner.env.containers import Limits
from runner.exec.trial import TrialContext, run_cell, session_proofs
from runner.plan.grid import CellSpec
from runner.grading import gate
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.protocols.registry import PROTOCOLS
from runner.results.ledger import Ledger, agent_error_counts
from runner.results.report import make_report

from conftest import REPO

CODING = PROTOCOLS["coding"]
TASKS = ("slug_ids", "retry_backoff", "cli_default_output")
STREAMS = Path(__file__).parent / "data" / "claude_stream"
CORE_TOOLS = ("Bash", "Read")

# The reward-hacking agent: writes the task's naive rule into the workspace, then exits 1 as if it had given up,
# hoping to be discarded (excluded from the per-protocol rate) rather than scored as the failure it is.
QUITTER = '''
import hashlib, json, os, sys

NAIVE = json.loads(%r)
prompt = sys.stdin.read().strip()
files = NAIVE[hashlib.sha256(prompt.encode()).hexdigest()]
for rel, text in files.items():
    path = os.path.join("/sandbox/workspace", rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
print("wrote the naive rule to", ", ".join(sorted(files)))
print("giving up: let this cell be discarded", file=sys.stderr)
sys.exit(1)
'''


def quitter_script(tasks) -> str:
    naive = {}
    for task_id in TASKS:
        task = tasks[task_id]
        root = task.reference("naive")
        naive[hashlib.sha256(task.prompt.strip().encode()).hexdigest()] = {
            str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
    return QUITTER % json.dumps(naive)


# ---- the gate, from a session's record ------------------------------------------------------------

ARMS = load_all_arms(REPO)


def ctx() -> TrialContext:
    return TrialContext(None, "unit", Path("/nonexistent"), None, {}, ARMS, protocol=CODING)



def decide(transcript, gateway=None, memory=None, harness_code=False) -> gate.GateDecision:
    endpoint = None if gateway is None else SimpleNamespace(scripted=False)
    arm = ARMS["bare"]
    return gate.decide(session_proofs(ctx(), arm, transcript, endpoint, gateway or [], CORE_TOOLS, False,
                                      memory, harness_code))


def command_transcript(exit_code: int) -> Transcript:
    t = Transcript(agent="quitter", model=None)
    t.add("init", agent="quitter", tools=[])
    t.is_error, t.error, t.ended = True, f"quitter exited {exit_code}: giving up", "exit_nonzero"
    t.add("result", is_error=True, error=t.error, ended=t.ended, exit_code=exit_code)
    return t


def claude_transcript(stream: str, timed_out=False, exit_code=1) -> Transcript:
    s = parse_stream((STREAMS / stream).read_text().splitlines())
    t = Transcript(agent="claude-code", model="claude-x")
    for kind, data in transcript_events(s):
        t.add(kind, **data)
    t.error_class, t.error = classify(s, timed_out, exit_code, "", 600)
    t.is_error, t.ended = t.error_class is not None, ended(t.error_class, exit_code)
    return t


def model_call(status: int, **extra) -> dict:
    return {"kind": "model", "path": "/v1/messages", "status": status, "key_injected": True, "tools": list(CORE_TOOLS),
            **extra}


def test_an_agent_that_exits_non_zero_is_admitted_and_its_ending_recorded():
    decision = decide(command_transcript(1), memory=gate.memory_proof(gate.memory_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"), False))
    assert decision.admitted and decision.discard_reason is None
    ending = next(p for p in decision.proofs if p.name == "agent_ended")
    assert ending.passed and "exit_nonzero" in ending.detail and "scored" in ending.detail


def test_a_model_api_error_the_gateway_recorded_is_still_discarded():
    # The CLI ended on an API error (its own result: is_error, terminal_reason api_error), and the gateway saw
    # the model's last answer fail: a fault outside the agent.
    t = claude_transcript("server_failed.jsonl")
    assert t.ended == "error" and t.error_class == "session_error" and "api_error" in t.error
    failed = decide(t, gateway=[model_call(200), model_call(529, error="overloaded")])
    assert not failed.admitted and failed.discard_reason == gate.MODEL_UNREACHABLE
    unreachable = decide(t, gateway=[model_call(502, error="ConnectionRefusedError")])
    assert unreachable.discard_reason == gate.MODEL_UNREACHABLE
    # The same CLI error with every request answered at the gateway is the CLI's word alone: scored.
    scored = decide(t, gateway=[model_call(200), model_call(200)])
    assert scored.admitted, scored.proofs
    # A session killed at its time limit is the agent's own ending too.
    killed = Transcript(agent="claude-code", model="claude-x")
    killed.add("init", tools=list(CORE_TOOLS), mcp_servers=[])
    s = parse_stream((STREAMS / "killed_before_result.jsonl").read_text().splitlines())
    killed.error_class, killed.error = classify(s, True, 137, "", 600)
    killed.is_error, killed.ended = True, ended(killed.error_class, 137)
    timed_out = decide(killed, gateway=[model_call(200)])
    assert killed.ended == "timeout" and timed_out.admitted, timed_out.proofs


def test_a_model_that_names_another_arms_tool_is_scored_and_a_tool_that_served_is_foreign():
    """A model can ask for any tool name (the CLI answers a tool the session does not have with an error), and its
    shell can print a forged call and answer into the CLI's stdout: both are the model's doing and scored. Another
    arm's tool listed at init, or offered to the model in a request (the gateway's record), served the session."""
    def called(is_error, listed=(), offered=()):
        t = claude_transcript("killed_before_result.jsonl")
        next(e for e in t.events if e["type"] == "init")["tools"] = [*CORE_TOOLS, *listed]
        t.add("tool_call", id="toolu_x", tool="mcp__recall__search", input="{}", is_error=is_error,
              result="<tool_use_error>Error: No such tool available: mcp__recall__search</tool_use_error>")
        return decide(t, gateway=[model_call(200), model_call(200, tools=[*CORE_TOOLS, *offered])])

    for scored in (called(True), called(False)):  # refused by the CLI; 'answered' in the sandbox's own record
        assert scored.admitted, scored.proofs
        assert next(p for p in scored.proofs if p.name == "no_foreign_tools").detail == "none"
    for foreign in (called(True, listed=("mcp__recall__search",)), called(True, offered=("mcp__recall__search",))):
        assert not foreign.admitted and foreign.discard_reason == gate.FOREIGN_TOOLS, foreign.proofs
        assert "mcp__recall__search" in next(p for p in foreign.proofs if p.name == "no_foreign_tools").detail


def test_memgrids_own_agent_failing_is_a_harness_error_never_a_verdict():
    t = command_transcript(1)
    t.agent = "reader"
    decision = decide(t, harness_code=True)
    assert not decision.admitted and decision.discard_reason == gate.HARNESS_ERROR
    assert "memgrid's own agent reader failed" in decision.proofs[-1].detail


@pytest.mark.parametrize("counters,killed", [
    ("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", 2),  # cgroup v1 memory.oom_control
    ("low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\noom_group_kill 0\n", 1),  # cgroup v2 memory.events
    ("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n", 0),
    ("oom_kill_disable 0\nunder_oom 0\n", None),  # a kernel without the count: not observed, never a discard
])
def test_a_kill_at_the_memory_limit_is_the_agents_own_doing_and_memgrids_own_agents_discard(counters, killed):
    """Everything in the sandbox's memory runs because the agent ran: an agent under test whose process was killed at
    the limit is scored, the kill in its proof; under memgrid's own agent the same count discards the cell first."""
    kills = gate.memory_kills(counters)
    assert kills.count == killed
    scored = decide(command_transcript(137), memory=gate.memory_proof(kills, harness_code=False))
    assert scored.admitted and scored.discard_reason is None, scored.proofs
    memory = next(p for p in scored.proofs if p.name == "not_oom_killed")
    assert ("the agent's own doing, scored" in memory.detail) is bool(killed), memory.detail
    own = command_transcript(0)
    own.is_error, own.ended = False, "ok"
    mine = decide(own, memory=gate.memory_proof(kills, harness_code=True), harness_code=True)
    assert mine.discard_reason == (gate.OOM_KILLED if killed else None), mine.proofs


def test_the_engines_own_oom_flag_counts_when_the_counters_cannot_be_read():
    assert gate.memory_kills(None, True, "container not running").count == 1
    assert gate.memory_kills(None, False, "container not running").count is None
    assert not gate.memory_proof(gate.memory_kills(None, True, "gone"), harness_code=True).passed


def test_the_report_counts_agents_that_ended_with_an_error_per_arm(tmp_path):
    rows = [cell(f"t{t}", arm, False, agent_ended="exit_nonzero" if (arm, t) in (("bare", 0), ("bare", 1))
                 else "timeout" if (arm, t) == ("recall", 2) else "ok") for t in range(3) for arm in ("bare", "recall")]
    rows.append(cell("t9", "recall", None, admitted=False))  # a discard is not an agent error
    run = write_run(tmp_path / "run", rows)
    assert agent_error_counts([vars(r) for r in rows]) == [("reader", "bare", 3, 2, "exit_nonzero 2"),
                                                           ("reader", "recall", 3, 1, "timeout 1")]
    console = Console(record=True, width=220)
    html = make_report(str(run), html_path=tmp_path / "r.html", console=console).html_path.read_text()
    table = html[html.index('<table id="agent-errors">'):]
    table = table[:table.index("</table>")]
    assert "<td>bare</td><td class=\"n\">3</td><td class=\"n\">2</td><td>exit_nonzero 2</td>" in table, table
    assert "<td>recall</td><td class=\"n\">3</td><td class=\"n\">1</td><td>timeout 1</td>" in table, table
    text = " ".join(console.export_text().split())
    assert "agent ended with an error (scored)" in text and "exit_nonzero 2" in text


# ---- a real grid: the quitter on three coding tasks ------------------------------------------------

def test_an_agent_that_writes_the_naive_rule_and_quits_is_scored_not_discarded(engine, images, project, tmp_path,
                                                                             run_id, no_leftovers):
    (project / "agents").mkdir()
    (project / "agents" / "quitter.py").write_text(quitter_script(load_all_tasks(project)))
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({
        "name": "quitter", "tasks": list(TASKS), "arms": ["bare"], "agents": ["quitter"], "seeds": 1,
        "conditions": ["present"],
        "command_agents": {"quitter": {"command": ["python3", "-I", "quitter.py"], "files": ["agents/quitter.py"]}}}))
    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "grid", "--spec", str(grid),
                           "--run-id", run_id, "--runs-dir", str(tmp_path / "runs"), "--no-progress",
                           "--concurrency", "3"],
                          env={**os.environ, "MEMGRID_ROOT": str(project), "COLUMNS": "250"}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / run_id
    rows = Ledger(run_dir).rows()
    assert sorted(r["task"] for r in rows) == sorted(TASKS) and all(r["final"] for r in rows), rows
    for r in rows:
        assert r["admitted"] and r["discard_reason"] is None, (r["task"], r["discard_reason"], r["error_detail"])
        assert r["agent_ended"] == "exit_nonzero" and r["error_detail"].startswith("quitter exited 1"), r["error_detail"]
        # Graded as it left the workspace: the naive rule, which the checker fails.
        assert r["checker_passed"] is False and r["outcome"] != "solved", (r["task"], r["checker_detail"])
        assert r["checker_exit_code"] is not None
        cell_dir = run_dir / "cells" / r["cell_id"]
        naive = load_all_tasks(project)[r["task"]].reference("naive")
        with tarfile.open(cell_dir / "artifact.tar") as tar:
            graded = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
        for p in (p for p in naive.rglob("*") if p.is_file()):
            assert graded[str(p.relative_to(naive))] == p.read_bytes(), f"{r['task']}: the naive rule was not graded"
        proofs = {p["name"]: p for p in json.loads(r["gate_proofs"])}
        assert proofs["agent_ended"]["passed"] and "exit_nonzero" in proofs["agent_ended"]["detail"]
        assert proofs["not_oom_killed"] == {"name": "not_oom_killed", "passed": True,
                                            "detail": "no process killed at the memory limit"}  # read, not assumed
    # The run's summary and its report count the three per arm.
    assert "agent err. (scored)" in proc.stdout
    assert agent_error_counts(rows) == [("quitter", "bare", 3, 3, "exit_nonzero 3")]
    html = make_report(str(run_dir), html_path=tmp_path / "report.html", console=Console(record=True)).html_path.read_text()
    assert '<table id="agent-errors">' in html and "<td>exit_nonzero 3</td>" in html


# The agent allocates until the kernel kills it; or it leaves that to a child and exits 0 itself (the cheapest way to
# choose a discard, were a kill at the memory limit one).
HOGS = {"the agent itself": ("import sys\nheld = bytearray(1 << 30)\nprint(len(held))\n", "exit_nonzero"),
        "a child, the agent exiting 0": ("import subprocess, sys\n"
                                         "child = subprocess.run([sys.executable, '-c', 'held = bytearray(1 << 30)'])\n"
                                         "print('child exited', child.returncode)\n", "ok")}


@pytest.mark.parametrize("who", sorted(HOGS))
def test_a_process_killed_at_the_memory_limit_is_seen_in_the_sandboxes_cgroup_and_scored(engine, images, project, tmp_path,
                                                                                         run_id, no_leftovers, who):
    """The kernel's count, read as root after the session: the hog (or its child) is killed long before its time is
    up; the cell is admitted and graded as the workspace was left (the fixture, which fails), the kill recorded as a
    resource limit, and the ending is not called a timeout."""
    script, ending = HOGS[who]
    hog = tmp_path / "hog.py"
    hog.write_text(script)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(project), load_all_arms(project),
                       limits=Limits(memory="128m"), disk_mib=64, protocol=CODING,
                       command_agents={"hog": CommandSpec("hog", ("python3", "-I", "hog.py"), (hog,))})
    row = run_cell(ctx, CellSpec("slug_ids", "bare", 0, "present", "hog", "hog-slug_ids", 0), 1)
    assert row.admitted and row.discard_reason is None and row.final, (row.discard_reason, row.error_detail)
    assert row.checker_passed is False and row.agent_ended == ending, (row.checker_passed, row.agent_ended)
    assert row.error_class == "resource_limit", row.error_class
    assert row.error_detail.startswith(f"memory limit of {128 + 64} MiB reached: the kernel killed 1 process of the "
                                       "sandbox at its memory limit"), row.error_detail
    proof = json.loads(row.gate_proofs)[1]
    assert proof["name"] == "not_oom_killed" and proof["passed"] and "oom_kill" in proof["detail"], proof
    assert proof["detail"].endswith("the agent's own doing, scored"), proof


# Attaches to the sandbox's first process and makes it exit (x86-64: exit(0) written at its instruction pointer), which
# stops the container and unmounts the workspace before the export: were that possible, the cell could not be graded
# and a resume would rerun it, where the same agent could do it again.
PTRACE_INIT = '''import ctypes, os, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
POKETEXT, GETREGS, SETREGS, ATTACH, DETACH = 4, 12, 13, 16, 17


class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in ("r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax "
                                                  "rip cs eflags rsp ss fs_base gs_base ds es fs gs").split()]


if libc.ptrace(ATTACH, 1, None, None) != 0:
    print("attaching to pid 1 refused:", os.strerror(ctypes.get_errno()))
    sys.exit(3)
os.waitpid(1, 0x40000000)  # __WALL
regs = Regs()
libc.ptrace(GETREGS, 1, None, ctypes.byref(regs))
code = bytes.fromhex("b83c00000031ff0f05") + bytes(7)  # mov eax, 60; xor edi, edi; syscall
for at in (0, 8):
    libc.ptrace(POKETEXT, 1, ctypes.c_void_p(regs.rip + at), ctypes.c_void_p(int.from_bytes(code[at:at + 8], "little")))
regs.orig_rax = 2**64 - 1  # no restart of the syscall it was stopped in
libc.ptrace(SETREGS, 1, None, ctypes.byref(regs))
libc.ptrace(DETACH, 1, None, None)
print("pid 1 made to exit")
'''


def test_an_agent_cannot_stop_its_sandbox_by_tracing_its_first_process(engine, images, project, tmp_path, run_id,
                                                                       no_leftovers):
    """The sandbox's first process belongs to another user than the agent's, so the agent can neither trace nor
    signal it: the attach is refused, the container lives on to the export, and the cell is scored as the agent
    left it (exit 3, the fixture, which fails) instead of ending in a harness error a resume reruns."""
    agent = tmp_path / "tracer.py"
    agent.write_text(PTRACE_INIT)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(project), load_all_arms(project),
                       protocol=CODING, command_agents={"tracer": CommandSpec("tracer", ("python3", "-I", "tracer.py"),
                                                                              (agent,))})
    row = run_cell(ctx, CellSpec("slug_ids", "bare", 0, "present", "tracer", "tracer-slug_ids", 0), 1)
    assert row.admitted and row.final and row.discard_reason is None, (row.discard_reason, row.error_detail)
    assert row.agent_ended == "exit_nonzero" and row.checker_passed is False, (row.agent_ended, row.checker_detail)
    transcript = (tmp_path / "run" / "cells" / "tracer-slug_ids" / "transcript.jsonl").read_text()
    assert "attaching to pid 1 refused: Operation not permitted" in transcript, transcript[-2000:]


# More of what an agent can do to end its session, each its own doing (issue 52): scored as the workspace was left,
# the ending recorded, never a discard. (Out of memory, a trace of pid 1, an exit non-zero and an output flood have
# their own tests; a workspace of 200,000 files or past the disk budget, test_sandbox_bounds and test_export_links.)
ENDINGS = {  # what it does -> (its command, how its session ends)
    "fork bomb until its time is up": (("python3", "-c", "import os\nwhile True:\n    try:\n        os.fork()\n"
                                                         "    except OSError:\n        pass\n"), "timeout"),
    "hang past its time": (("sleep", "100000"), "timeout"),
    "signals to the sandbox's first process": (("sh", "-c", "kill -9 1; kill -STOP 1; exit 0"), "ok"),  # another user's
    "the arm's files deleted": (("sh", "-c", "rm -rf /sandbox/workspace/* /sandbox/workspace/.[!.]*; exit 0"), "ok"),
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_an_ending_the_agent_chooses_is_scored_as_it_left_the_workspace(engine, images, project, tmp_path, run_id,
                                                                        no_leftovers, ending):
    from dataclasses import replace

    tasks = load_all_tasks(project)
    tasks["slug_ids"] = replace(tasks["slug_ids"], agent_seconds=4)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, tasks, load_all_arms(project), protocol=CODING,
                       command_agents={"hostile": CommandSpec("hostile", ENDINGS[ending][0], ())})
    row = run_cell(ctx, CellSpec("slug_ids", "claude_md", 0, "present", "hostile", "hostile-slug_ids", 0), 1)
    assert row.admitted and row.final and row.discard_reason is None, (row.discard_reason, row.error_detail)
    assert row.checker_passed is False and row.checker_exit_code is not None, (row.checker_detail, row.error_class)
    assert row.agent_ended == ENDINGS[ending][1], (row.agent_ended, row.error_detail)
    proofs = {p["name"]: p for p in json.loads(row.gate_proofs)}
    assert proofs["bundle_verified"]["passed"], proofs  # read before the agent ran: CLAUDE.md was delivered
    assert proofs["agent_ended"]["passed"] and proofs["not_oom_killed"]["passed"], proofs


def test_a_command_agent_that_brings_no_files_runs_in_its_folder(engine, images, project, tmp_path, run_id,
                                                                 no_leftovers):
    """A grid's command agent may be a command line alone (`command:` without `files:`). Its working directory,
    /sandbox/.command, is made all the same: without it the engine refused the exec (126, "chdir to cwd ... no such
    file or directory"), which the cell scored as the agent's own failure although the agent never ran."""
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(project), load_all_arms(project),
                       protocol=CODING, command_agents={"bare-command": CommandSpec(
                           "bare-command", ("sh", "-c", 'pwd; echo "prompt of $(wc -c) bytes"'), ())})
    row = run_cell(ctx, CellSpec("slug_ids", "bare", 0, "present", "bare-command", "bare-command-slug_ids", 0), 1)
    assert row.admitted and row.final and row.agent_ended == "ok", (row.agent_ended, row.error_detail)
    output = [json.loads(line) for line in (tmp_path / "run" / "cells" / "bare-command-slug_ids" /
                                            "transcript.jsonl").read_text().splitlines()
              if json.loads(line)["type"] == "output"][0]
    assert output["tail"].startswith("/sandbox/.command\nprompt of "), output
