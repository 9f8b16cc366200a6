"""The run folder's disk filling up mid-run (issue 52, step 3): the run stops with one line (what, where, how to
resume), no traceback; nothing recorded is lost, the journal keeps only whole lines; once there is room again the
same command resumes it to the outcomes an uninterrupted run has. The full disk is a real one: a tmpfs this test
mounts (as root, which CI is) at a size the grid outgrows."""

import contextlib
import json
import os
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

from runner.results.ledger import Ledger, LedgerRow

from conftest import REPO, write_grid


@contextlib.contextmanager
def small_disk(path: Path, size: str):
    """A tmpfs of `size` at `path`, unmounted afterwards."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI is set but the tests do not run as root: mounting a small disk needs root")
        pytest.skip("mounting a small disk needs root")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True, timeout=30)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], timeout=30)


def test_a_journal_that_meets_a_full_disk_keeps_only_whole_lines(tmp_path):
    with small_disk(tmp_path / "disk", "16k") as disk:
        (disk / "run").mkdir()
        ledger = Ledger(disk / "run")
        row = LedgerRow(**{f.name: None for f in fields(LedgerRow)} | {
            "run_id": "r", "cell_id": "c", "attempt": 1, "final": True, "task": "t", "arm": "bare", "seed": 0,
            "condition": "present", "agent": "floor", "order_index": 0, "error_detail": "x" * 700})
        written = 0
        with pytest.raises(OSError) as full:
            for _ in range(100):
                ledger.append(row)
                written += 1
        assert full.value.errno == 28 and full.value.filename == str(ledger.journal), full.value
        data = ledger.journal.read_bytes()
        assert data.endswith(b"\n") and len(data.splitlines()) == written > 0
        assert all(json.loads(line)["cell_id"] == "c" for line in data.splitlines())


def test_a_full_run_folder_stops_the_run_in_one_line_and_a_resume_completes_it(engine, images, tmp_path, run_id,
                                                                                no_leftovers):
    grid = write_grid(tmp_path / "grid.yaml", tasks=("slug_ids", "retry_backoff"), arms=("bare", "claude_md"))
    args = [str(REPO / ".venv/bin/memgrid"), "grid", "--spec", str(grid), "--runs-dir", str(tmp_path / "runs"),
            "--run-id", run_id, "--no-progress", "--concurrency", "2"]
    with small_disk(tmp_path / "runs", "128k"):
        stopped = subprocess.run(args, capture_output=True, text=True, timeout=600)
        assert stopped.returncode == 1, stopped.stdout[-2000:] + stopped.stderr[-2000:]
        assert "Traceback" not in stopped.stderr and "Traceback" not in stopped.stdout, stopped.stderr[-3000:]
        line = [l for l in stopped.stderr.splitlines() if l.startswith("memgrid:")]
        assert line == [l for l in stopped.stderr.splitlines() if l.strip()][-1:], stopped.stderr  # the last, alone
        assert line[0].startswith(f"memgrid: run {run_id} stopped: no space left on the disk of "
                                                     f"{tmp_path / 'runs' / run_id}"), stopped.stderr
        assert "of 8 cells are finished and kept" in line[0] and f"its run id {run_id} resumes the run" in line[0]
        kept = Ledger(tmp_path / "runs" / run_id).rows()  # every line whole (a torn one would not parse)
        assert len({r["cell_id"] for r in kept if r["final"]}) < 8, "the disk did not fill up before the grid ended"
        subprocess.run(["mount", "-o", "remount,size=64m", str(tmp_path / "runs")], check=True, timeout=30)
        resumed = subprocess.run(args, capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
        rows = Ledger(tmp_path / "runs" / run_id).rows()
    final = {r["cell_id"]: r for r in rows if r["final"]}
    assert len(final) == 8 and all(r["admitted"] for r in final.values()), final
    # what an uninterrupted run has: the floor fails every task, the ceiling passes it
    assert {(r["agent"], r["checker_passed"]) for r in final.values()} == {("floor", False), ("ceiling", True)}
    # each finished cell is recorded once: those kept from the stopped run were not run again
    assert sorted(r["cell_id"] for r in rows if r["final"]) == sorted(final)
    for r in kept:
        if r["final"]:
            assert final[r["cell_id"]] == r
