"""What the artifact's code does inside the checker ends as the judge's verdict (issue 52: endings an agent can cause
are scored, with their ending recorded), and costs the machine what the checker container's bounds allow.
A fork bomb at import that takes every pid of the container: memgrid-grade kills the artifact user's processes after
each run; it did so from a child it forked, and with no pid left that fork failed, the grade ended in a traceback and
the cell was recorded "the grader gave no result" (outcome ambiguous). Its Reaper, forked before any user code, needs
no fork. A disk fill: the artifact user's home was on the container's own layer, so its writes went to the engine's
disk unbounded (2 GiB a run, by hand); it is a tmpfs of checker.ARTIFACT_HOME_MIB now."""

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


# Each ends every run of the artifact at import, in its own way; the judge must still report its failing cases.
ENDINGS = {
    "fork-bomb": FORK_BOMB,
    "memory": b"\n_hog = []\nwhile True:\n    _hog.append(bytearray(64 * 2**20))\n",
    # a process left behind, holding none of the run's pipes: memgrid-grade must kill it before the next run
    "detached-sleeper": b"\nimport os as _os, time as _time\nif _os.fork() == 0:\n    _os.closerange(0, 1024)\n"
                        b"    _os.setsid()\n    _time.sleep(100000)\nraise SystemExit(3)\n",
    "kill-its-parent": b"\nimport os as _os, signal as _signal\ntry:\n    _os.kill(_os.getppid(), _signal.SIGKILL)\n"
                       b"except OSError:\n    pass\nraise SystemExit(3)\n",
}


def with_payload(task, reference: str, payload: bytes) -> list:
    entries = artifact_variants(task)[reference]
    changed = [e if e.path != task.entry.file else type(e)(e.path, e.data + payload, e.mode) for e in entries]
    assert changed != entries
    return changed


@pytest.mark.docker
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_what_the_artifact_does_in_the_checker_ends_as_the_judges_verdict(ending, engine, images, run_id,
                                                                          no_leftovers):
    task = load_all_tasks(REPO)["slug_ids"]
    started = time.monotonic()
    verdict, log = run_checker(engine, images.checker.tag, task, with_payload(task, "naive", ENDINGS[ending]),
                               run_id=run_id, cell_id=ending)
    # the judge ran to its end and reported: every case of the artifact failed
    assert verdict.exit_code == 1 and not verdict.timed_out, (verdict.detail, log[-2000:])
    assert "0/10 cases passed" in verdict.detail and verdict.detector_detail.startswith("fired")
    assert outcome_of(verdict, "present") == "neutral_failure"
    assert time.monotonic() - started < task.checker.timeout_seconds + 60


# The informed solution, which first tries to write 2 GiB into its home: with the home bounded the write fails and
# the module goes on (every case passes); had it been written whole, the module exits and every case fails.
DISK_FILL = b"""
import os as _os
try:
    with open(_os.path.expanduser("~/fill"), "wb") as _f:
        for _ in range(2048):
            _f.write(b"x" * 2**20)
            _f.flush()
except OSError:
    _os.remove(_os.path.expanduser("~/fill"))
else:
    raise SystemExit(3)
"""


@pytest.mark.docker
def test_the_artifact_cannot_write_past_its_homes_bound_in_the_checker(engine, images, run_id, no_leftovers):
    from runner.grading.checker import ARTIFACT_HOME_MIB

    task = load_all_tasks(REPO)["slug_ids"]
    verdict, log = run_checker(engine, images.checker.tag, task, with_payload(task, "informed", DISK_FILL),
                               run_id=run_id, cell_id="disk-fill")
    assert verdict.passed, (verdict.detail, log[-2000:])
    assert ARTIFACT_HOME_MIB < 2048
