"""Planted cells per minute, and where a planted cell's wall time goes: the plant and forget harness steps
(two extra containers of the arm's image) against the session and the check, measured in the same cells.

Runs the reader over recall on the planted tasks under off and on (the real cell path: plant through
recall-admin, session, hidden check, forget) into a temp runs dir; every container carries
memgrid.run=<run id> and is removed by that label at the end.

    .venv/bin/python benchmarks/planted.py [--tasks 5] [--concurrency 2] [--quick]

--quick: one task, condition on, one cell.
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
from runner.exec.job import run_grid
from runner.plan.spec import grid_from_dict
from runner.protocols.registry import PROTOCOLS
from runner.results.ledger import latest_attempts

from _engine import cleanup, foreign_containers

REPO = Path(__file__).resolve().parent.parent
STEPS = ("plant", "session", "check", "forget")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5, help="how many planted tasks (sorted by id)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="one task, condition on")
    args = parser.parse_args()

    root = Path(os.environ.get("MEMGRID_ROOT", REPO)).resolve()
    tasks = sorted(PROTOCOLS["planted"].tasks(root))[:1 if args.quick else args.tasks]
    conditions = ["on"] if args.quick else ["off", "on"]
    grid = grid_from_dict({"name": "bench-planted", "protocol": "planted", "tasks": tasks, "arms": ["recall"],
                           "agents": ["reader"], "seeds": 1, "conditions": conditions}, Path("(benchmark grid)"))
    client = connect()
    run_id = f"bench-planted-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    runs_dir = Path(tempfile.mkdtemp(prefix="memgrid-bench-planted-"))
    others = foreign_containers(client, run_id)
    try:
        t0 = time.monotonic()
        outcome = run_grid(grid, Path("(benchmark grid)"), root=root, run_id=run_id, runs_dir=runs_dir,
                           concurrency=args.concurrency, progress=False, log=lambda m: print(m, file=sys.stderr))
        elapsed = time.monotonic() - t0
        rows = list(latest_attempts([json.loads(l) for l in (outcome.run_dir / "ledger.jsonl").open()]).values())
    finally:
        leftovers = cleanup(client, run_id)
        shutil.rmtree(runs_dir, ignore_errors=True)
    results = [json.loads(r["result"]) for r in rows if r["result"]]
    cell_seconds = [r["wall_seconds"] for r in rows]
    # Cells per minute over the span the cells ran (first start to last end), not the run's: the run also
    # builds images before its first cell.
    span = (max(datetime.fromisoformat(r["ended_at"]) for r in rows)
            - min(datetime.fromisoformat(r["started_at"]) for r in rows)).total_seconds() if rows else 0.0
    per_minute = 60 * len(rows) / span if span else 0.0
    medians = {s: statistics.median(r["step_seconds"][s] for r in results if s in r.get("step_seconds", {}))
               for s in STEPS if any(s in r.get("step_seconds", {}) for r in results)}
    harness = sum(medians.get(s, 0) for s in ("plant", "forget"))
    wall = statistics.median(cell_seconds) if cell_seconds else float("nan")
    print(f"planted: {len(rows)} cells = {len(tasks)} tasks x {','.join(conditions)} x recall x reader, concurrency "
          f"{args.concurrency}; {sum(r['admitted'] for r in rows)} admitted, "
          f"{sum(bool(r['checker_passed']) for r in rows)} passed; run {elapsed:.1f} s with setup; "
          f"{leftovers} containers left over, {others} other memgrid containers at the start; {os.cpu_count()} CPUs")
    print("median seconds per step: " + ", ".join(f"{s} {v:.2f}" for s, v in medians.items()) + f"; cell wall {wall:.2f}")
    print(f"figure: {per_minute:.1f} planted cells/min at concurrency {args.concurrency}; plant + forget = "
          f"{100 * harness / wall:.0f} % of a cell's median wall time")
    return 0 if rows and all(r["final"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
