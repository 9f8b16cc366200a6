"""Harness overhead per cell: N no-op cells through the real runner vs. 2 x N bare `docker run ... true`.

A cell starts two containers (the sandbox and the checker), so the floor it is compared with is two
bare runs of the base image. Everything is written to a temp dir; every container carries the label
memgrid.run=<run id> and is removed by that label at the end.

    .venv/bin/python benchmarks/overhead.py [--cells 20] [--keep] [--quick]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from runner.env.engine import connect
from runner.env.images import ensure_images
from runner.exec.run import execute, lock_document, open_run, plan_run
from runner.env.sandbox import RUN_LABEL
from runner.plan.spec import GridSpec, load_all_arms, load_all_tasks
from runner.exec.trial import TrialContext

from _engine import cleanup, foreign_containers

QUICK_CELLS = 2  # two cells: a median, and the second cell starts on a warm engine

TASK_YAML = """\
id: noop
title: A no-op task for measuring harness overhead
prompt: Do nothing.
fact:
  summary: There is no fact.
  terms: ["nothing"]
conditions: [present]
checker:
  command: ["true"]
  timeout_seconds: 30
detector:
  command: ["echo", '{"fired": []}']
  timeout_seconds: 30
limits:
  agent_seconds: 30
"""

ARM_YAML = """\
name: bare
kind: none
description: Nothing besides the repository and the prompt.
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_project(root: Path) -> None:
    """A throwaway project root: one no-op task and the arm 'bare'."""
    task = root / "tasks" / "noop"
    write(task / "task.yaml", TASK_YAML)
    write(task / "fixture" / "README.md", "noop\n")
    write(task / "oracle" / "check.py", "import sys\nsys.exit(0)\n")
    write(task / "references" / "naive" / "answer.txt", "naive\n")
    write(task / "references" / "informed" / "answer.txt", "informed\n")
    write(root / "arms" / "bare" / "arm.yaml", ARM_YAML)


def run_cells(client, images, root: Path, runs_dir: Path, run_id: str, n: int):
    """N cells (one task, one arm, agent floor, condition present, seeds 0..N-1) at concurrency 1."""
    tasks, arms = load_all_tasks(root), load_all_arms(root)
    grid = GridSpec(name="overhead", tasks=("noop",), arms=("bare",), agents=("floor",), seeds=n,
                    conditions=("present",))
    plan = plan_run(grid, root / "(benchmark grid)", tasks, arms, images, runs_dir, run_id)
    ledger = open_run(plan, lock_document(plan, images, client, root))
    ctx = TrialContext(client, plan.run_id, plan.run_dir, images, tasks, arms)
    t0 = time.monotonic()
    summary = execute(ctx, ledger, plan.cells, 1, show_progress=False)
    elapsed = time.monotonic() - t0
    return plan, summary, ledger.rows(), elapsed


def time_bare_runs(client, tag: str, run_id: str, n: int) -> list[float]:
    """n sequential `docker run --rm --network none <tag> true` through the SDK."""
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        client.containers.run(tag, ["true"], network_mode="none", remove=True, labels={RUN_LABEL: run_id})
        times.append(time.monotonic() - t0)
    return times


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def stage_split(run_dir: Path, row: dict) -> dict | None:
    """Split one cell's wall time using the transcript's init/result timestamps and checker_seconds."""
    path = run_dir / "cells" / row["cell_id"] / "transcript.jsonl"
    if not path.exists() or row["checker_seconds"] is None:
        return None
    events = {e["type"]: e["t"] for e in map(json.loads, path.read_text().splitlines())}
    if "init" not in events or "result" not in events:
        return None
    setup = events["init"] - epoch(row["started_at"])
    agent = events["result"] - events["init"]
    checker = row["checker_seconds"]
    return {"setup": setup, "agent": agent, "export": row["wall_seconds"] - setup - agent - checker,
            "checker": checker, "not_checker": row["wall_seconds"] - checker}


def median_of(splits: list[dict], key: str) -> float:
    return statistics.median(s[key] for s in splits)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20, help="N: cells to run (and 2N bare runs to time)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (run folder and ledger) and print it")
    parser.add_argument("--quick", action="store_true", help=f"--cells {QUICK_CELLS}")
    args = parser.parse_args()
    n = QUICK_CELLS if args.quick else args.cells

    run_id = f"bench-overhead-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    client = connect()
    images = ensure_images(client, log=lambda m: print(m, file=sys.stderr))
    tmp = tempfile.mkdtemp(prefix="memgrid-bench-overhead-")
    root, runs_dir = Path(tmp) / "project", Path(tmp) / "runs"
    make_project(root)
    load_before, others = os.getloadavg()[0], foreign_containers(client, run_id)
    try:
        # One untimed bare run so the first timed one does not pay for a cold engine cache.
        time_bare_runs(client, images.base.tag, run_id, 1)
        plan, summary, rows, elapsed = run_cells(client, images, root, runs_dir, run_id, n)
        splits = [s for s in (stage_split(plan.run_dir, r) for r in rows if r["final"]) if s]
        bare = time_bare_runs(client, images.base.tag, run_id, 2 * n)
    finally:
        leftovers = cleanup(client, run_id)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    load_after = os.getloadavg()[0]
    final = [r for r in rows if r["final"]]
    passed = sum(bool(r["checker_passed"]) for r in final)
    walls = [r["wall_seconds"] for r in final]
    cell_median = statistics.median(walls)
    bare_median = statistics.median(bare)

    print(f"overhead: {len(plan.cells)} cells (task noop, arm bare, agent floor, condition present), concurrency 1, "
          f"{len(final)} final, {passed} checker passes, {len(rows) - len(final)} harness errors, "
          f"{leftovers} containers left over; run id {run_id}")
    print(f"host: {os.cpu_count()} CPUs, 1-min load average {load_before:.2f} before, {load_after:.2f} after; "
          f"{others} other memgrid containers running at the start")
    print(f"cell wall (ledger wall_seconds): median {cell_median:.3f} s, min {min(walls):.3f} s, max {max(walls):.3f} s")
    print(f"cell wall (execute elapsed / N): {elapsed / n:.3f} s ({elapsed:.2f} s for {n} cells)")
    print(f"bare docker run (base image, true, --network none): median {bare_median:.3f} s over {len(bare)} runs, "
          f"min {min(bare):.3f} s, max {max(bare):.3f} s")
    stages = [r["checker_seconds"] for r in final if r["checker_seconds"] is not None]
    if stages:
        rest = [r["wall_seconds"] - r["checker_seconds"] for r in final if r["checker_seconds"] is not None]
        print(f"stage split (median): checker {statistics.median(stages):.3f} s, everything else "
              f"{statistics.median(rest):.3f} s")
    if splits:
        print(f"  of which (median): setup = bundle + sandbox create/start/put + verify {median_of(splits, 'setup'):.3f} s, "
              f"agent {median_of(splits, 'agent'):.3f} s, export + sandbox removal {median_of(splits, 'export'):.3f} s")
    print(f"harness overhead per cell = cell - 2 x bare = {cell_median - 2 * bare_median:.3f} s "
          f"(with elapsed / N: {elapsed / n - 2 * bare_median:.3f} s)")
    if args.keep:
        print(f"kept: {tmp}")
    ratio = cell_median / (2 * bare_median)
    print(f"figure: ratio = cell / (two bare runs) = {ratio:.2f} (elapsed / N: {elapsed / n / (2 * bare_median):.2f}); "
          f"target <= 1.5: {'met' if ratio <= 1.5 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
