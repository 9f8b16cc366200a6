"""Where a reader cell's time goes, arm by arm, side by side in one run: bare, fs_grep and recall (or the arms given)
over the same tasks, one cell at a time, each cell's wall time split into its parts.

The parts, from the ledger and each cell's transcript: the sandbox's start (`container_start`; 0 when the local
executor started it ahead, beside the previous cell's checker, which the cell's wall time then leaves out), the
bundle's verification in the sandbox (`verify`: its manifest's digests, the arm's required paths), the reader
(`agent`: the exec of memgrid-reader), inside it the reader's own clock (its events' `at`): its start to the arm's
first event (an mcp arm: its server started and connected; others: the memory opened), the search (to the search or
pick event), the reads (the `get` calls, to the last tool call) and the rest (pick, apply, exit); then the export of
the workspace, the checker (`checker_seconds`) and what none of these covers (the bundle's build on the controller,
which for fs_grep holds the condition's corpus; the gate, the records, the scheduler).
Medians per arm, and each arm's wall time as a ratio to bare's. The concurrency is 1, so no cell waits for another.

    .venv/bin/python benchmarks/cell_parts.py [--arms bare,fs_grep,recall] [--tasks N] [--seeds 1] [--condition present] [--quick]
"""

import argparse
import json
import statistics
import sys
import uuid
from pathlib import Path

from _engine import run_and_summarise

from runner.env.engine import connect
from runner.plan.spec import grid_from_dict, load_suite_tasks

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("wall", "container_start", "verify", "agent", "to_connected", "search", "reads", "rest", "export", "checker",
         "unaccounted")


def reader_parts(events: list[dict]) -> dict[str, float]:
    """The reader's own clock: its first arm event (init), the search (search or pick), the last tool call, the end."""
    at = {e["type"]: e["at"] for e in events if "at" in e}  # the last of each type
    first = next((e["at"] for e in events if "at" in e and e["type"] != "channel"), 0.0)
    end = max((e["at"] for e in events if "at" in e), default=0.0)
    searched = next((e["at"] for e in events if e.get("type") in ("search", "pick") and "at" in e), first)
    calls = [e["at"] for e in events if e.get("type") == "tool_call" and "at" in e]
    read = max(calls) if calls and max(calls) > searched else searched
    return {"to_connected": at.get("init", first), "search": searched - at.get("init", first), "reads": read - searched,
            "rest": end - read}


def cell_parts(run_dir: Path, row: dict) -> dict[str, float]:
    timings = json.loads(row["timings"] or "{}")
    events = [json.loads(line) for line in (run_dir / "cells" / row["cell_id"] / "transcript.jsonl").open()]
    parts = {"wall": row["wall_seconds"], "container_start": 0.0 if timings.get("started_ahead") else
             timings.get("container_start", 0.0), "verify": timings.get("verify", 0.0),
             "agent": timings.get("agent", 0.0), **reader_parts(events),
             "export": timings.get("export", 0.0), "checker": row.get("checker_seconds") or 0.0}
    parts["unaccounted"] = (parts["wall"] - parts["container_start"] - parts["verify"] - parts["agent"] - parts["export"]
                            - parts["checker"])
    return parts


def summarise(arms: list[str]):
    def show(run_dir: Path) -> None:
        rows = [json.loads(line) for line in (run_dir / "ledger.jsonl").open()]
        rows = [r for r in rows if r["final"] and r["admitted"]]
        by_arm = {a: [cell_parts(run_dir, r) for r in rows if r["arm"] == a] for a in arms}
        medians = {a: {p: statistics.median(c[p] for c in cells) for p in PARTS} for a, cells in by_arm.items() if cells}
        print(f"{'part (median s)':<18}" + "".join(f"{a:>14}" for a in medians))
        for part in PARTS:
            print(f"{part:<18}" + "".join(f"{medians[a][part]:>14.3f}" for a in medians))
        base = medians.get(arms[0], {}).get("wall")
        if base:
            print(f"{'wall / ' + arms[0]:<18}" + "".join(f"{medians[a]['wall'] / base:>14.2f}" for a in medians))
            print("figure: median cell wall time / " + arms[0] + "'s: " +
                  ", ".join(f"{a} {medians[a]['wall'] / base:.2f}" for a in medians if a != arms[0]))
        print(f"cells admitted per arm: {', '.join(f'{a} {len(c)}' for a, c in by_arm.items())}; the reader's parts "
              "(to_connected .. rest) are inside agent")
    return show


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", default="bare,fs_grep,recall", help="comma-separated; the first is the baseline")
    parser.add_argument("--tasks", type=int, default=6, help="how many of the suite's tasks (in name order)")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--condition", default="present")
    parser.add_argument("--quick", action="store_true", help="one task")
    args = parser.parse_args()
    if args.quick:
        args.tasks, args.seeds = 1, 1
    arms = args.arms.split(",")
    tasks = sorted(t.id for t in load_suite_tasks(ROOT).values() if args.condition in t.conditions)[:args.tasks]
    if not tasks:
        sys.exit(f"no task of this checkout runs in condition {args.condition}")
    grid = grid_from_dict({"name": "cell-parts", "tasks": tasks, "arms": arms, "agents": ["reader"], "seeds": args.seeds,
                           "conditions": [args.condition]}, Path("(benchmark)"))
    print(f"{len(tasks)} tasks x {len(arms)} arms x {args.seeds} seed(s), condition {args.condition}, reader, "
          "concurrency 1")
    run_and_summarise(connect(), grid, f"bench-cell-parts-{uuid.uuid4().hex[:8]}", ROOT, summarise(arms))


if __name__ == "__main__":
    main()
