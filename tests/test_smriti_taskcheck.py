"""SMRITI's corpus tests as `memgrid task check` (protocols/planted/check.py): over six SMRITI-format tasks (one
with a git fixture), the check fails every untouched fixture and passes every sound solution in the checker
container, and exactly the two broken tasks are flagged, each with its fix: the one whose prompt leaks its
convention and the one whose solution does not follow it. memgrid's exits-at-import canary passes every check
SMRITI runs (not isolated by design): said as a note, not hidden."""

import os
import subprocess
import sys

from runner.sources.registry import source_format

from conftest import REPO
from smriti_fixture import write_corpus


def test_task_check_flags_exactly_the_leaky_prompt_and_the_failing_solution(engine, images, tmp_path):
    project = tmp_path / "project"
    (project / "tasks").mkdir(parents=True)
    write_corpus(tmp_path / "chitta")
    result = source_format("smriti").import_source(tmp_path / "chitta", project, "smriti", log=lambda m: None)
    assert len(result.plans) == 6 and any("fixture" in p.line() and "git" in p.line() for p in result.plans)
    done = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "task", "check", "--suite",
                           "smriti"], capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={**os.environ, "MEMGRID_ROOT": str(project)})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    fails = sorted(line for line in done.stderr.splitlines() if line.startswith("FAIL "))
    assert fails == [
        "FAIL sm-badsolution: solution_passes: solution/: the check fails with solution/ applied (SUMMARY check_cmd "
        "exited 1: FAIL): fix: make solution/ follow the convention hidden/'s tests check, or correct check_cmd",
        "FAIL sm-leaky: no_leak: prompt: 'ahoy' appears in prompt: fix: reword it there, or move the test that holds it "
        "into hidden/"], done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("NOTE ")]
    assert len(notes) == 6 and all("exits 0 when imported" in n for n in notes)
    assert "task check: 6 tasks of suite smriti" in done.stdout
