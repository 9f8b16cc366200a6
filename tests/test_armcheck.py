"""memgrid arm add / arm check, through the CLI as a vendor runs it (MEMGRID_ROOT = a private project copy)."""

import os
import re
import subprocess
import sys

import yaml

from conftest import REPO


def memgrid(project, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMGRID_ROOT": str(project)}
    return subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def check(project, name: str, run_id: str) -> subprocess.CompletedProcess:
    return memgrid(project, "arm", "check", name, "--run-id", run_id)


def problems(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stdout.splitlines() if line.startswith("PROBLEM ")]


def edit_arm(project, name: str, change) -> None:
    path = project / "arms" / name / "arm.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_scaffold_passes_its_own_check(engine, images, project, run_id, no_leftovers):
    added = memgrid(project, "arm", "add", "demo_mem")
    assert added.returncode == 0, added.stderr
    arm = project / "arms" / "demo_mem"
    for rel in ("arm.yaml", "Dockerfile", "demo_mem/__init__.py", "demo_mem/ingest.py", "demo_mem/server.py"):
        assert (arm / rel).is_file(), rel
    assert "# kind:" in (arm / "arm.yaml").read_text()  # every field explained for a vendor
    proc = check(project, "demo_mem", run_id)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    for step in ("spec", "image", "ingest", "sandbox", "reader"):
        assert any(line.startswith(f"ok   {step} ") for line in out.splitlines()), (step, out)
    assert "6 of 6 sessions stored" in out
    assert "demo_mem: connected" in out
    assert "mcp__demo_mem__search, mcp__demo_mem__get" in out
    assert "the session it names: rank 1" in out
    assert out.rstrip().splitlines()[-1].startswith("arm check demo_mem: ok")


def test_recall_passes(engine, images, project, run_id, no_leftovers):
    proc = check(project, "recall", run_id)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "recall: connected" in proc.stdout
    assert "mcp__recall__search, mcp__recall__get, mcp__recall__recent" in proc.stdout
    assert "the session it names: rank 1" in proc.stdout
    # its mcp.write: a line remembered through remember, its id read back, then found again by search
    assert "ok   write" in proc.stdout and "mcp__recall__remember: stored 'armcheck w" in proc.stdout
    assert "ok   recall" in proc.stdout and "1 hits, the stored one at rank 1" in proc.stdout


def test_a_write_whose_id_pattern_never_matches_is_named(engine, images, project, run_id, no_leftovers):
    def never(data):
        write = data["mcp"]["write"]
        del write["id"]
        write["id_pattern"] = r"stored as (?P<id>\S+)"

    edit_arm(project, "recall", never)
    proc = check(project, "recall", run_id)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [problem] = problems(proc)
    assert problem.startswith("PROBLEM arms/recall/arm.yaml: mcp.write.id_pattern: matches nothing in what "
                              "mcp__recall__remember answered to a store: "), problem
    assert '"id": "mem-' in problem and ": fix: write a regex that matches that answer" in problem
    assert "FAIL write" in proc.stdout
    assert not re.search(r"^(ok|FAIL) +recall ", proc.stdout, re.M)  # nothing stored, so nothing searched for


def test_broken_server_is_named(engine, images, project, run_id, no_leftovers):
    assert memgrid(project, "arm", "add", "demo_mem").returncode == 0
    edit_arm(project, "demo_mem", lambda d: d["mcp"].update(command=["false"]))
    proc = check(project, "demo_mem", run_id)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [problem] = problems(proc)
    assert problem.startswith("PROBLEM arms/demo_mem/arm.yaml: mcp.command: server 'demo_mem' failed"), problem
    assert ": fix: " in problem
    assert "FAIL server" in proc.stdout


def test_empty_store_is_reported(engine, images, project, run_id, no_leftovers):
    assert memgrid(project, "arm", "add", "demo_mem").returncode == 0
    # an ingest that exits 0 but stores nothing (as a misrouted namespace would)
    empty = ["sh", "-c", "mkdir -p \"$1\" && echo '{{\"documents\": 0}}' > \"$1/store.json\"", "ingest", "{store}", "{corpus}"]
    edit_arm(project, "demo_mem", lambda d: d["ingest"].update(command=empty))
    proc = check(project, "demo_mem", run_id)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL ingest" in proc.stdout and "0 of 6 sessions stored" in proc.stdout
    assert any("ingest.command: store is empty" in p for p in problems(proc)), proc.stdout


def test_add_refuses_and_simple_kinds_check_without_an_engine(project):
    for args, says in ((("Demo-Mem",), "is not valid"), (("recall",), "already exists"),
                       (("demo", "--kind", "vector"), "is not a scaffold kind")):
        proc = memgrid(project, "arm", "add", *args)
        assert proc.returncode == 2 and says in proc.stderr and "fix:" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not (project / "arms" / "demo").exists()
    for name, kind in (("demo_files", "files"), ("demo_none", "none")):
        assert memgrid(project, "arm", "add", name, "--kind", kind).returncode == 0
        proc = memgrid(project, "arm", "check", name)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    tasks = sorted(p.parent.name for p in (project / "tasks").glob("*/task.yaml"))
    assert sorted(p.parent.name for p in (project / "arms" / "demo_files" / "tasks").glob("*/CLAUDE.md")) == tasks
    # a spec problem the schema cannot see is named before any container starts
    assert memgrid(project, "arm", "add", "demo_mem").returncode == 0
    edit_arm(project, "demo_mem", lambda d: d.update(search_tool="mcp__other__search"))
    proc = memgrid(project, "arm", "check", "demo_mem")
    assert proc.returncode == 1
    assert problems(proc) == ["PROBLEM arms/demo_mem/arm.yaml: search_tool: is 'mcp__other__search' but the server's "
                              "search tool is 'mcp__demo_mem__search': fix: set search_tool: mcp__demo_mem__search"]
