"""The controller as a user runs it: kill -9 and resume, Ctrl-C, changed inputs refused."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from runner.results.ledger import Ledger
from runner.env.containers import RUN_LABEL

from conftest import write_grid


def memgrid(project: Path, *args: str) -> list[str]:
    return [sys.executable, "-c", "from runner.cli import main; main()", *args]


def start(project: Path, args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "MEMGRID_ROOT": str(project)}
    # A shell that starts the suite in the background (`make test &`, nohup) leaves SIGINT ignored, and
    # children inherit that: give the grid the default disposition a terminal's Ctrl-C meets.
    return subprocess.Popen(memgrid(project, *args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_rows(journal: Path, n: int, proc: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_text().count("\n") >= n:
            return
        assert proc.poll() is None, f"memgrid ended early: {proc.communicate()}"
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"{n} ledger rows did not appear within {seconds}s")


# 3 tasks x 2 arms x floor and ceiling: enough cells that a stop after the first few lands mid-run (two run at
# once), few enough that the resume stays short.
CELLS = 12


@pytest.fixture
def grid_args(project, tmp_path, run_id):
    grid = write_grid(tmp_path / "grid.yaml", tasks=("cli_exit_codes", "slug_ids", "utc_event_log"),
                      arms=("bare", "claude_md"), seeds=1)
    return ["grid", "--spec", str(grid), "--run-id", run_id, "--runs-dir", str(tmp_path / "runs"),
            "--concurrency", "2", "--no-progress"]


def final_rows(run_dir: Path) -> list[dict]:
    return [r for r in Ledger(run_dir).rows() if r["final"]]


def test_kill9_then_resume_loses_and_duplicates_nothing(engine, images, project, tmp_path, run_id, grid_args, no_leftovers):
    run_dir = tmp_path / "runs" / run_id
    proc = start(project, grid_args)
    wait_for_rows(run_dir / "ledger.jsonl", 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    before = Counter(r["cell_id"] for r in final_rows(run_dir))
    assert 3 <= sum(before.values()) < CELLS, "the kill landed after the run finished; the test proves nothing"
    orphans = engine.containers.list(all=True, ignore_removed=True, filters={"label": f"{RUN_LABEL}={run_id}"})

    resumed = subprocess.run(memgrid(project, *grid_args), env={**os.environ, "MEMGRID_ROOT": str(project)},
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{sum(before.values())} cells already finished were skipped" in resumed.stdout
    after = Counter(r["cell_id"] for r in final_rows(run_dir))
    assert len(after) == CELLS and set(after.values()) == {1}, "a cell was lost or recorded twice"
    assert all(before[c] == after[c] for c in before), "a finished cell was rerun"
    table = pq.read_table(run_dir / "ledger.parquet")
    assert table.num_rows == len(Ledger(run_dir).rows()) == CELLS
    assert not engine.containers.list(all=True, ignore_removed=True, filters={"label": f"{RUN_LABEL}={run_id}"}), \
        f"resume did not remove the {len(orphans)} containers the killed controller left"


# SIGTERM is what `kill`, a CI timeout and a batch system send; without its handler the grid dies with -15,
# its containers left running and no resume line.
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_stops_cleans_up_and_resumes(engine, images, project, tmp_path, run_id, grid_args, no_leftovers, stop):
    run_dir = tmp_path / "runs" / run_id
    proc = start(project, grid_args)
    wait_for_rows(run_dir / "ledger.jsonl", 2, proc)
    proc.send_signal(stop)
    out, errs = proc.communicate(timeout=120)
    assert proc.returncode == 130, errs
    assert "resume with: memgrid grid --run-id" in errs
    assert not engine.containers.list(all=True, ignore_removed=True, filters={"label": f"{RUN_LABEL}={run_id}"})
    rows = Ledger(run_dir).rows()
    assert 2 <= len(rows) < CELLS and all(r["final"] for r in rows)
    assert pq.read_table(run_dir / "ledger.parquet").num_rows == len(rows)
    if stop == signal.SIGTERM:
        return  # the stop leaves the run as Ctrl-C does; resuming it once is proof enough (CI time)
    resumed = subprocess.run(memgrid(project, *grid_args), env={**os.environ, "MEMGRID_ROOT": str(project)},
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert Counter(r["cell_id"] for r in final_rows(run_dir)).most_common(1)[0][1] == 1
    assert len(final_rows(run_dir)) == CELLS


def test_resume_with_changed_inputs_is_refused(engine, images, project, tmp_path, run_id, no_leftovers):
    grid = write_grid(tmp_path / "grid.yaml", tasks=["slug_ids"], agents=("floor",))
    args = ["grid", "--spec", str(grid), "--run-id", run_id, "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    env = {**os.environ, "MEMGRID_ROOT": str(project)}
    first = subprocess.run(memgrid(project, *args), env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    ledger_before = (tmp_path / "runs" / run_id / "ledger.jsonl").read_bytes()
    readme = project / "tasks" / "slug_ids" / "fixture" / "README.md"
    readme.write_text(readme.read_text() + "\nedited\n")
    again = subprocess.run(memgrid(project, *args), env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2
    assert "task 'slug_ids' digest" in again.stderr and "Traceback" not in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert (tmp_path / "runs" / run_id / "ledger.jsonl").read_bytes() == ledger_before, "a refused resume changed the ledger"


def test_a_controller_stalled_past_a_sandboxs_lifetime_runs_the_cell_again(engine, images, project, tmp_path, run_id,
                                                                          no_leftovers, monkeypatch):
    """The controller paused (SIGSTOP, a stalled host) past a sandbox's lifetime: the sandbox's first process has slept
    it out and the container stopped with the session in it unread. By hand (a sleeping command agent, the controller
    stopped 290 s) the export then failed 404 and the cell was a harness_error for a resume to rerun. Here the first
    cell's sandbox lives 2 s and the controller stalls at its export until it has stopped: the attempt is discarded
    `sandbox_expired`, saying why, and the same run runs the cell again, which passes as an unstalled one does."""
    from runner.env.sandbox import Sandbox
    from runner.exec import trial

    stalled = []
    made = trial.new_sandbox

    def first_lives_two_seconds(*args, **kwargs):
        sandbox = made(*args, **kwargs)
        if not stalled:
            sandbox.lifetime, sandbox.create_args["command"] = 2, ["sleep", "2"]
            stalled.append(sandbox)
        return sandbox

    export = Sandbox.export

    def stalls_first(self, path, cap_bytes):
        if self in stalled:  # the controller, frozen, comes back after the sandbox's lifetime
            self.container.wait(timeout=60)
        return export(self, path, cap_bytes)

    monkeypatch.setattr(trial, "new_sandbox", first_lives_two_seconds)
    monkeypatch.setattr(Sandbox, "export", stalls_first)
    expired_then_graded(engine, images, project, tmp_path, run_id, stalled, "the sandbox's lifetime of 2s ran out")


def test_a_controller_stalled_past_the_checker_containers_lifetime_runs_the_cell_again(engine, images, project, tmp_path,
                                                                                      run_id, no_leftovers, monkeypatch):
    """The same fault at the grade: the checker container sleeps out its lifetime while the controller is stalled, and
    its grade cannot be read (or is cut short). That is no verdict on the artifact: the attempt is discarded
    sandbox_expired, saying why, and the same run runs the cell again, which is graded as an unstalled one is. Without
    the check the attempt was a harness_error left for a resume (a grade cut short in flight: scored checker_timeout)."""
    from runner.grading import checker as checker_module

    stalled = []
    made = checker_module.CheckerContainer.__init__

    def first_lives_two_seconds(self, *args, **kwargs):
        made(self, *args, **kwargs)
        if not stalled:
            self.lifetime, self.args["command"] = 2, ["sleep", "2"]
            stalled.append(self)

    grade = checker_module.CheckerContainer.grade

    def stalls_first(self, inputs_tar, bound):
        if self in stalled:  # the controller, frozen, comes back after the container's lifetime
            self.container.wait(timeout=60)
        return grade(self, inputs_tar, bound)

    monkeypatch.setattr(checker_module.CheckerContainer, "__init__", first_lives_two_seconds)
    monkeypatch.setattr(checker_module.CheckerContainer, "grade", stalls_first)
    expired_then_graded(engine, images, project, tmp_path, run_id, stalled,
                        "the checker container's lifetime of 2s ran out")


def expired_then_graded(engine, images, project, tmp_path, run_id, stalled: list, says: str) -> None:
    """One ceiling cell whose first attempt stalled past a container's lifetime: discarded sandbox_expired (saying
    `says`), not final, then run again in the same run and graded."""
    from conftest import run_grid_in_process

    grid = write_grid(tmp_path / "grid.yaml", tasks=("slug_ids",), agents=("ceiling",))
    summary, rows = run_grid_in_process(engine, images, project, tmp_path / "runs", run_id, grid)
    assert stalled and [(r["attempt"], r["admitted"], r["discard_reason"], r["final"]) for r in rows] == [
        (1, False, "sandbox_expired", False), (2, True, None, True)], rows
    assert rows[0]["error_detail"].startswith(says) and rows[1]["checker_passed"]
    assert (summary.total, summary.recorded, summary.interrupted) == (1, 2, False)
