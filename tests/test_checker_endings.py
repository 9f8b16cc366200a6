"""What the artifact's code does inside the checker ends as the judge's verdict (issue 52: endings an agent can cause
are scored, with their ending recorded): here, a fork bomb at import that takes every pid of the checker
container. memgrid-grade kills the artifact user's processes after each run; it did so from a child it forked, and
with no pid left that fork failed, the grade ended in a traceback and the cell waited out the checker's bound for
"the grader gave no result" (outcome ambiguous). Its Reaper, forked before any user code, needs no fork."""

import time

import pytest

from runner.grading.checker import outcome_of, run_checker
from runner.plan.spec import load_all_tasks
from runner.tasks.check import artifact_variants

from conftest import REPO

# A process of it leaves the run (no pipe of the run's, a session of its own) and forks for as long as it lives, so
# every pid of the container stays taken until memgrid-grade kills them all; the run itself fails a second later.
FORK_BOMB = b"""
import os as _os, time as _time
if _os.fork() == 0:
    _os.closerange(0, 1024)
    _os.setsid()
    while True:
        try:
            _os.fork()
        except OSError:
            _time.sleep(0.01)
_time.sleep(1)
raise SystemExit(3)
"""


@pytest.mark.docker
def test_an_artifact_that_takes_every_pid_in_the_checker_gets_the_judges_verdict(engine, images, run_id,
                                                                                  no_leftovers):
    task = load_all_tasks(REPO)["slug_ids"]
    naive = artifact_variants(task)["naive"]
    entry = task.entry.file
    bombed = [e if e.path != entry else type(e)(e.path, e.data + FORK_BOMB, e.mode) for e in naive]
    assert bombed != naive
    started = time.monotonic()
    verdict, log = run_checker(engine, images.checker.tag, task, bombed, run_id=run_id, cell_id="fork-bomb")
    # the judge ran to its end and reported: every case of the artifact failed
    assert verdict.exit_code == 1 and not verdict.timed_out, (verdict.detail, log[-2000:])
    assert "Traceback" not in verdict.detail and verdict.detector_detail.startswith("fired")
    assert outcome_of(verdict, "present") == "neutral_failure"
    assert time.monotonic() - started < task.checker.timeout_seconds + 60
