"""The two CLI agents side by side: a codex cell's time against a claude-code cell's, in one run.

Runs one grid whose agents are claude-code and codex (the same tasks, arms and condition, the scripted model)
through the same path as `memgrid grid`, so both agents' cells share the machine's load, then prints per agent
the medians of a cell's wall time, the CLI's start to its first event (claude-code: init; codex: its thread
started) and the session (that event to the CLI's exit), admission and passes, and the ratio of the two agents'
median wall times. With --run it summarises an existing run folder instead (any grid listing both agents).

    .venv/bin/python benchmarks/agents.py [--arms bare,recall] [--run RUN_DIR] [--quick]

--quick runs one task on arm bare (no corpus, no store ingest): two cells.
"""

import argparse
import json
import statistics
import uuid
from pathlib import Path

from runner.env.engine import connect
from runner.plan.spec import grid_from_dict, load_all_tasks
from runner.results.ledger import latest_attempts

from _engine import run_and_summarise

REPO = Path(__file__).resolve().parent.parent
AGENTS = ("claude-code", "codex")


def median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def summarise(run_dir: Path) -> None:
    rows = list(latest_attempts([json.loads(l) for l in (run_dir / "ledger.jsonl").open()]).values())
    by_agent = {a: [r for r in rows if r["agent"] == a] for a in AGENTS}
    print(f"{len(rows)} cells in {run_dir.name}")
    print(f"{'agent':12} {'cells':>5} {'admitted':>8} {'passed':>6} {'wall':>7} {'cli->first':>10} {'session':>8}")
    walls = {}
    for agent, cells in by_agent.items():
        timings = [json.loads(r["timings"]) if r["timings"] else {} for r in cells]
        walls[agent] = median([r["wall_seconds"] for r in cells])
        print(f"{agent:12} {len(cells):5} {sum(r['admitted'] for r in cells):8} "
              f"{sum(bool(r['admitted'] and r['checker_passed']) for r in cells):6} {walls[agent]!s:>7} "
              f"{median([t.get('cli_to_init') for t in timings])!s:>10} {median([t.get('session') for t in timings])!s:>8}")
    if all(walls.values()):
        print(f"figure: median cell wall time codex {walls['codex']} s vs claude-code {walls['claude-code']} s "
              f"(ratio {walls['codex'] / walls['claude-code']:.2f}), same grid, same run")
    else:
        print("figure: no ratio: a run with cells of both agents is needed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", help="comma-separated arms (default bare,recall; bare with --quick)")
    parser.add_argument("--run", type=Path, help="summarise this existing run folder instead of running cells")
    parser.add_argument("--quick", action="store_true", help="one task, arm bare")
    args = parser.parse_args()
    if args.run:
        summarise(args.run)
        return
    arms = (args.arms or ("bare" if args.quick else "bare,recall")).split(",")
    tasks = sorted(load_all_tasks(REPO))[:1] if args.quick else "all"
    grid = grid_from_dict({"name": "bench-agents", "tasks": tasks, "arms": arms, "agents": list(AGENTS), "seeds": 1,
                           "conditions": ["present"], "model": "scripted"}, Path("(benchmark)"))
    run_and_summarise(connect(), grid, f"bench-agents-{uuid.uuid4().hex[:8]}", REPO, summarise)


if __name__ == "__main__":
    main()
