"""Harness overhead per cell: N no-op cells through the real runner vs. 2 x N bare `docker run ... true`,
repeated R times.

A cell starts two containers (the sandbox and the checker), so the floor it is compared with is two
bare runs of the base image, one after the other. Each repetition runs its N cells (agent floor, a
throwaway task whose checker is `true`, concurrency 1) into a fresh run folder, then its 2N bare runs
at once after them on the same engine, so the load the engine is under (other runs, test suites) weighs
on both halves of that repetition's ratio alike; the figure is the median of the repetitions' ratios,
with their spread. A cell's time is `execute`'s elapsed time / N: the local executor starts the next
cell's sandbox while a cell's checker runs, so the ledger's `wall_seconds` of a cell that took such a
sandbox leaves out its start (printed beside it, with how many cells took one); elapsed / N counts
everything between the first cell's start and the last cell's end, the scheduler and ledger included.
Everything is written to a temp dir; every container carries the label memgrid.run=<run id> and is
removed by that label at the end.

    .venv/bin/python benchmarks/overhead.py [--cells 20] [--repeat 5] [--keep] [--quick]
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
from runner.plan.spec import GridSpec, load_all_arms, load_all_tasks
from runner.exec.trial import TrialContext
from runner.protocols.registry import PROTOCOLS

from _engine import bare_runs, cleanup, foreign_containers, noop_project, spread

QUICK_CELLS = 2  # two cells: a median, and the second cell starts on a warm engine
QUICK_REPEAT = 2  # two repetitions: the median and spread are computed as in a full run
TARGET = 1.2


def run_cells(client, images, root: Path, runs_dir: Path, run_id: str, n: int):
    """N cells (one task, one arm, agent floor, condition present, seeds 0..N-1) at concurrency 1."""
    tasks, arms = load_all_tasks(root), load_all_arms(root)
    grid = GridSpec(name="overhead", tasks=("noop",), arms=("bare",), agents=("floor",), seeds=n,
                    conditions=("present",))
    plan = plan_run(grid, root / "(benchmark grid)", tasks, arms, images, runs_dir, run_id)
    ledger = open_run(plan, lock_document(plan, images, client, root))
    ctx = TrialContext(client, plan.run_id, plan.run_dir, images, tasks, arms, protocol=PROTOCOLS["coding"])
    t0 = time.monotonic()
    execute(ctx, ledger, plan.cells, 1, show_progress=False)
    elapsed = time.monotonic() - t0
    return plan, ledger.rows(), elapsed


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
    return {"setup": setup, "agent": agent, "export": row["wall_seconds"] - setup - agent - checker, "checker": checker}


def median_of(splits: list[dict], key: str) -> float:
    return statistics.median(s[key] for s in splits)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20, help="N: cells per repetition (and 2N bare runs)")
    parser.add_argument("--repeat", type=int, default=5, help="R: repetitions, each its cells then its bare runs")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (run folders and ledgers) and print it")
    parser.add_argument("--quick", action="store_true", help=f"--cells {QUICK_CELLS} --repeat {QUICK_REPEAT}")
    args = parser.parse_args()
    n, repeat = (QUICK_CELLS, QUICK_REPEAT) if args.quick else (args.cells, args.repeat)

    run_id = f"bench-overhead-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    client = connect()
    images = ensure_images(client, log=lambda m: print(m, file=sys.stderr))
    tmp = tempfile.mkdtemp(prefix="memgrid-bench-overhead-")
    root = Path(tmp) / "project"
    noop_project(root, {"answer.txt": "naive\n"})
    load_before, others = os.getloadavg()[0], foreign_containers(client, run_id)
    reps, rows, splits = [], [], []
    try:
        # One untimed bare run so the first timed one does not pay for a cold engine cache.
        bare_runs(client, images.base.tag, run_id, 1)
        for i in range(repeat):
            plan, rep_rows, elapsed = run_cells(client, images, root, Path(tmp) / f"runs-{i}", run_id, n)
            bare = bare_runs(client, images.base.tag, run_id, 2 * n)
            final = [r for r in rep_rows if r["final"]]
            rows += rep_rows
            splits += [s for s in (stage_split(plan.run_dir, r) for r in final) if s]
            walls = [r["wall_seconds"] for r in final]
            reps.append({"cell": statistics.median(walls), "elapsed": elapsed / n, "bare": statistics.median(bare)})
            rep = reps[-1]
            print(f"repetition {i + 1}/{repeat}: elapsed / N {rep['elapsed']:.3f} s (wall_seconds median {rep['cell']:.3f}, "
                  f"min {min(walls):.3f}, max {max(walls):.3f}); bare run median {rep['bare']:.3f} s (min {min(bare):.3f}, "
                  f"max {max(bare):.3f}); ratio {rep['elapsed'] / (2 * rep['bare']):.2f} (wall_seconds: "
                  f"{rep['cell'] / (2 * rep['bare']):.2f}); load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        leftovers = cleanup(client, run_id)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    final = [r for r in rows if r["final"]]
    passed = sum(bool(r["checker_passed"]) for r in final)
    ahead = sum(bool(json.loads(r["timings"] or "{}").get("started_ahead")) for r in final)
    print(f"overhead: {repeat} x {n} cells (task noop, arm bare, agent floor, condition present), concurrency 1, "
          f"{len(final)} final, {passed} checker passes, {len(rows) - len(final)} harness errors, "
          f"{leftovers} containers left over; {ahead} cells took a sandbox started ahead; run id {run_id}")
    print(f"host: {os.cpu_count()} CPUs, 1-min load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{others} other memgrid containers running at the start")
    if splits:
        print(f"stage split (median over all cells, of wall_seconds): setup = bundle + sandbox start (unless started ahead) + verify "
              f"{median_of(splits, 'setup'):.3f} s, agent {median_of(splits, 'agent'):.3f} s, export + disk check + removals "
              f"{median_of(splits, 'export'):.3f} s, checker (its container started ahead: inputs + grade) "
              f"{median_of(splits, 'checker'):.3f} s")
    overheads = [r["elapsed"] - 2 * r["bare"] for r in reps]
    print(f"harness overhead per cell = elapsed / N - 2 x bare: median {spread(overheads, 3)} s")
    if args.keep:
        print(f"kept: {tmp}")
    ratios = [r["elapsed"] / (2 * r["bare"]) for r in reps]
    wall_ratios = [r["cell"] / (2 * r["bare"]) for r in reps]
    print(f"figure: ratio = cell (elapsed / N) / (two bare runs) = {spread(ratios)} (median of {repeat} repetitions, "
          f"min-max); wall_seconds median: {spread(wall_ratios)}; target <= {TARGET}: "
          f"{'met' if statistics.median(ratios) <= TARGET else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
