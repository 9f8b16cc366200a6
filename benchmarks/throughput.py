"""Throughput at concurrency 1 vs 2 on a ~40-cell grid of the shipped tasks (arms bare and claude_md,
agents floor and ceiling, condition present).

Each concurrency runs the same cells into its own fresh temp runs dir under its own run id; every
container carries memgrid.run=<run id> and is removed by that label at the end.

    .venv/bin/python benchmarks/throughput.py [--cells 40] [--tasks cli_exit_codes,slug_ids] [--concurrency 1,2] [--quick]

--quick: the first task, one seed, trimmed to 2 cells: each concurrency still runs two cells, so c2 overlaps them.
"""

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from runner.env.engine import connect
from runner.env.images import ensure_images
from runner.exec.run import execute, lock_document, open_run, plan_run
from runner.plan.spec import GridSpec, load_all_arms, load_all_tasks
from runner.exec.trial import TrialContext
from runner.protocols.registry import PROTOCOLS

from _engine import cleanup, foreign_containers

REPO = Path(__file__).resolve().parent.parent
ARMS = ("bare", "claude_md")
AGENTS = ("floor", "ceiling")
CONDITIONS = ("present",)
QUICK_CELLS = 2


def make_grid(task_ids: list[str], target: int) -> GridSpec:
    per_seed = len(task_ids) * len(ARMS) * len(AGENTS) * len(CONDITIONS)
    return GridSpec(name="throughput", tasks=tuple(task_ids), arms=ARMS, agents=AGENTS,
                    seeds=math.ceil(target / per_seed), conditions=CONDITIONS)


@dataclass
class TrimmedRun:
    run_id: str
    cells: int
    elapsed: float
    rows: list
    summary: object  # exec.run.RunSummary
    leftovers: int
    others: int


def trimmed_run(client, images, root: Path, grid: GridSpec, target: int, label: str, concurrency: int,
                executor=None) -> TrimmedRun:
    """One fresh run of the grid trimmed to `target` cells, in its own temp dir, its containers removed by its
    run label; `executor`: exec.executors.ExecutorSettings (default: the local thread pool)."""
    tasks, arms = load_all_tasks(root), load_all_arms(root)
    run_id = f"bench-{label}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    runs_dir = Path(tempfile.mkdtemp(prefix=f"memgrid-bench-{label}-"))
    others = foreign_containers(client, run_id)
    try:
        plan = plan_run(grid, root / "(benchmark grid)", tasks, arms, images, runs_dir, run_id)
        cells = plan.cells[:target]
        ledger = open_run(plan, lock_document(plan, images, client, root))
        ctx = TrialContext(client, plan.run_id, plan.run_dir, images, tasks, arms, protocol=PROTOCOLS["coding"])
        t0 = time.monotonic()
        summary = execute(ctx, ledger, cells, concurrency, show_progress=False, executor=executor)
        elapsed = time.monotonic() - t0
        rows = ledger.rows()
    finally:
        leftovers = cleanup(client, run_id)
        shutil.rmtree(runs_dir, ignore_errors=True)
    return TrimmedRun(run_id, len(cells), elapsed, rows, summary, leftovers, others)


def run_once(client, images, root: Path, grid: GridSpec, target: int, concurrency: int) -> dict:
    """One fresh run of the grid (trimmed to `target` cells) at one concurrency, in its own temp dir."""
    load_before = os.getloadavg()[0]
    run = trimmed_run(client, images, root, grid, target, f"throughput-c{concurrency}", concurrency)
    final = [r for r in run.rows if r["final"]]
    return {"run_id": run.run_id, "concurrency": concurrency, "cells": run.cells, "elapsed": run.elapsed,
            "final": len(final), "errors": len(run.rows) - len(final), "leftovers": run.leftovers,
            "admitted": sum(r["admitted"] for r in final),
            "floor_passed": sum(bool(r["checker_passed"]) for r in final if r["agent"] == "floor"),
            "ceiling_passed": sum(bool(r["checker_passed"]) for r in final if r["agent"] == "ceiling"),
            "ceiling": sum(r["agent"] == "ceiling" for r in final),
            "median_wall": statistics.median(r["wall_seconds"] for r in final) if final else float("nan"),
            "interrupted": run.summary.interrupted, "load": (load_before, os.getloadavg()[0]), "others": run.others}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=40, help="grid size to aim for (seeds are rounded up, then trimmed)")
    parser.add_argument("--tasks", default="cli_exit_codes,slug_ids",
                        help="comma-separated task ids, or 'all' (2 tasks x 2 arms x 2 agents x 5 seeds = 40)")
    parser.add_argument("--concurrency", default="1,2", help="comma-separated concurrencies, run in this order")
    parser.add_argument("--quick", action="store_true", help="the first task, one seed, 2 cells per concurrency")
    args = parser.parse_args()

    root = Path(os.environ.get("MEMGRID_ROOT", REPO)).resolve()
    all_tasks = load_all_tasks(root)
    task_ids = sorted(all_tasks) if args.tasks == "all" else [t.strip() for t in args.tasks.split(",") if t.strip()]
    if args.quick:
        task_ids, args.cells = sorted(all_tasks)[:1], QUICK_CELLS
    grid = make_grid(task_ids, args.cells)
    levels = [int(c) for c in args.concurrency.split(",")]

    client = connect()
    images = ensure_images(client, log=lambda m: print(m, file=sys.stderr))
    results = [run_once(client, images, root, grid, args.cells, c) for c in levels]

    n_cells = results[0]["cells"]
    full = grid.seeds * len(task_ids) * len(ARMS) * len(AGENTS) * len(CONDITIONS)
    print(f"throughput: {n_cells} cells = tasks {','.join(task_ids)} x arms {','.join(ARMS)} x agents "
          f"{','.join(AGENTS)} x {grid.seeds} seeds x condition present"
          + (f" (trimmed from {full})" if n_cells < full else "")
          + f"; {os.cpu_count()} CPUs on the host, root {root}")
    for r in results:
        print(f"concurrency {r['concurrency']}: {r['elapsed']:.2f} s, {r['cells'] / r['elapsed']:.3f} cells/s "
              f"({r['elapsed'] / r['cells']:.3f} s per cell, median cell wall {r['median_wall']:.3f} s); {r['final']} final, {r['admitted']} admitted, "
              f"floor passed {r['floor_passed']}, ceiling passed {r['ceiling_passed']}/{r['ceiling']}, "
              f"{r['errors']} harness errors, {r['leftovers']} containers left over; "
              f"1-min load {r['load'][0]:.2f} -> {r['load'][1]:.2f}, {r['others']} other memgrid containers at the start")
    if len(results) >= 2:
        first, last = results[0], results[-1]
        ratio = (last["cells"] / last["elapsed"]) / (first["cells"] / first["elapsed"])
        print(f"figure: ratio c{last['concurrency']}/c{first['concurrency']} = {ratio:.2f} (cells/s at concurrency "
              f"{last['concurrency']} over cells/s at concurrency {first['concurrency']})")
    else:
        only = results[0]
        print(f"figure: {only['cells'] / only['elapsed']:.3f} cells/s at concurrency {only['concurrency']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
