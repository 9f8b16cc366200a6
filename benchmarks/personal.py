"""Personal cells per minute, and where a personal cell's wall time goes: build (the arm's ingest), search,
answer (each a container) and the judges on the controller, per arm, measured in the same cells.

Runs the reader over bare, oracle_memory, full_context and recall on the first persons of the personal
corpus into a temp runs dir; every container carries memgrid.run=<run id> and is removed by that label.

    .venv/bin/python benchmarks/personal.py [--persons 3] [--horizons weekly,monthly,quarterly] [--concurrency 2] [--quick]

--quick: one person, weekly, arms bare and recall.
"""

import argparse
import json
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
from runner.results.ledger import latest_attempts

from _engine import cleanup, foreign_containers

REPO = Path(__file__).resolve().parent.parent
STEPS = ("build", "search", "answer", "judge")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persons", type=int, default=3)
    parser.add_argument("--horizons", default="weekly,monthly,quarterly")
    parser.add_argument("--arms", default="bare,oracle_memory,full_context,recall")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="one person, weekly, bare and recall")
    args = parser.parse_args()
    if args.quick:
        args.persons, args.horizons, args.arms = 1, "weekly", "bare,recall"
    run_id = f"bench-personal-{datetime.now():%Y%m%d-%H%M%S}"
    runs = Path(tempfile.mkdtemp(prefix="memgrid-bench-"))
    client = connect()
    others = foreign_containers(client, run_id)
    grid = grid_from_dict({"name": "bench-personal", "protocol": "personal", "cases": args.persons,
                           "arms": args.arms.split(","), "agents": ["reader"], "seeds": 1,
                           "conditions": args.horizons.split(","), "network": "none"}, Path("benchmarks/personal.py"))
    try:
        t0 = time.monotonic()
        outcome = run_grid(grid, Path("(benchmark grid)"), root=REPO, run_id=run_id, runs_dir=runs,
                           concurrency=args.concurrency, progress=False, log=lambda m: None)
        wall = time.monotonic() - t0
        ledger = [json.loads(line) for line in (outcome.run_dir / "ledger.jsonl").open()]
        rows = [r for r in latest_attempts(ledger).values() if r["final"]]
    finally:
        cleanup(client, run_id)
        shutil.rmtree(runs, ignore_errors=True)
    if not rows or any(not r["admitted"] for r in rows):
        print(f"cells lost or discarded: {[(r['arm'], r['discard_reason']) for r in rows if not r['admitted']]}")
        return 1
    print(f"{len(rows)} personal cells ({args.persons} persons x {args.horizons} x {args.arms}), reader, "
          f"concurrency {args.concurrency}, other containers on the engine: {others}")
    print(f"figure: {len(rows) / wall * 60:.1f} personal cells per minute (wall {wall:.0f} s, images and corpus ready)")
    for arm in args.arms.split(","):
        cells = [r for r in rows if r["arm"] == arm]
        timings = [json.loads(r["timings"] or "{}") for r in cells]
        medians = {s: statistics.median(t.get(s, 0.0) for t in timings) for s in STEPS}
        cell_wall = statistics.median(r["wall_seconds"] for r in cells)
        split = " · ".join(f"{s} {medians[s]:.2f} s ({medians[s] / cell_wall:.0%})" for s in STEPS)
        print(f"{arm}: median cell {cell_wall:.2f} s: {split}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
