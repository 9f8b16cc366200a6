"""Cells per minute on the local executor vs dask with one worker vs dask with two, side by side in one run,
and the dask overhead per cell (submit on the controller -> the worker taking the job).

Every executor runs the same cells (the throughput grid: 2 tasks x arms bare, claude_md x agents floor,
ceiling, condition present) with the same number of cells in flight (--slots): local at that concurrency,
dask with one worker of `cells=slots` and with two workers of `cells=slots/2`. The dask clusters are
LocalClusters on this machine, their workers on this machine's engine. Each run goes to its own temp runs
dir under its own run id; its containers carry memgrid.run=<run id> and are removed by that label.

    .venv/bin/python benchmarks/executors.py [--cells 40] [--slots 2] [--quick]

--quick: 2 cells, on local and on dask with two workers (dask with one runs the same code).
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from runner.env.engine import connect
from runner.env.images import ensure_images
from runner.exec.executors import ExecutorSettings

from throughput import make_grid, trimmed_run

REPO = Path(__file__).resolve().parent.parent
QUICK_CELLS = 2


def run_once(client, images, root: Path, grid, target: int, label: str, settings: ExecutorSettings) -> dict:
    run = trimmed_run(client, images, root, grid, target, f"executors-{label}", settings.concurrency, settings)
    final = [r for r in run.rows if r["final"]]
    return {"label": label, "cells": run.cells, "elapsed": run.elapsed, "final": len(final), "rows": len(run.rows),
            "passed": sum(bool(r["checker_passed"]) for r in final), "leftovers": run.leftovers, "others": run.others,
            "executor": run.summary.executor or {}}


def dask_run(client, images, root, grid, target, workers: int, slots: int) -> dict:
    from distributed import LocalCluster

    per_worker = max(1, slots // workers)
    started = time.monotonic()
    with LocalCluster(n_workers=workers, threads_per_worker=per_worker, resources={"cells": per_worker},
                      dashboard_address=None, processes=True) as cluster:
        cluster_seconds = time.monotonic() - started
        result = run_once(client, images, root, grid, target, f"dask{workers}",
                          ExecutorSettings("dask", slots, cluster.scheduler_address, log=lambda m: print(m, file=sys.stderr)))
    result["cluster_seconds"] = cluster_seconds
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=40)
    parser.add_argument("--slots", type=int, default=2, help="cells in flight, the same for every executor")
    parser.add_argument("--tasks", default="cli_exit_codes,slug_ids")
    parser.add_argument("--quick", action="store_true", help="2 cells, local and dask with two workers")
    args = parser.parse_args()
    if args.quick:
        args.cells = QUICK_CELLS

    root = Path(os.environ.get("MEMGRID_ROOT", REPO)).resolve()
    task_ids = [t.strip() for t in args.tasks.split(",") if t.strip()]
    grid = make_grid(task_ids, args.cells)
    client = connect()
    images = ensure_images(client, log=lambda m: print(m, file=sys.stderr))

    results = [run_once(client, images, root, grid, args.cells, "local", ExecutorSettings("local", args.slots))]
    results += [dask_run(client, images, root, grid, args.cells, n, args.slots) for n in ((2,) if args.quick else (1, 2))]
    print(f"executors: {results[0]['cells']} cells each (tasks {','.join(task_ids)} x arms bare,claude_md x agents "
          f"floor,ceiling, condition present), {args.slots} in flight; {os.cpu_count()} CPUs, one engine")
    broken = False
    for r in results:
        per_minute = 60 * r["cells"] / r["elapsed"]
        line = (f"{r['label']}: {r['elapsed']:.1f} s, {per_minute:.1f} cells/min; {r['final']} final of {r['rows']} rows, "
                f"{r['passed']} passed, {r['leftovers']} containers left over, {r['others']} other memgrid containers")
        overheads = r["executor"].get("submit_to_start_s")
        if overheads:
            line += (f"; submit->start median {1000 * statistics.median(overheads):.0f} ms, max "
                     f"{1000 * max(overheads):.0f} ms; cells per node {r['executor']['nodes']}; cluster start "
                     f"{r['cluster_seconds']:.1f} s")
        print(line)
        broken |= r["final"] != r["cells"] or r["rows"] != r["cells"]
    local = 60 * results[0]["cells"] / results[0]["elapsed"]
    print("figure: cells/min " + ", ".join(f"{r['label']} {60 * r['cells'] / r['elapsed']:.1f}" for r in results)
          + f"; dask2/local {60 * results[-1]['cells'] / results[-1]['elapsed'] / local:.2f}; dask submit->start median "
          + ", ".join(f"{r['label']} {1000 * statistics.median(r['executor']['submit_to_start_s']):.0f} ms"
                      for r in results[1:] if r["executor"].get("submit_to_start_s")))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
