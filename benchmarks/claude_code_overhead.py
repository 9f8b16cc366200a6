"""The claude-code cell overhead: K claude-code cells with a no-op session on the scripted model against
3 x K bare `docker run`s, repeated R times side by side.

The no-op session: a throwaway task `noop` (one fixture file, an empty naive reference, checker and
detector that always pass) under the arm `bare`, agent claude-code, model `scripted`, through the same
path as `memgrid grid`. The real Claude Code CLI starts in the sandbox with no MCP server and sends its
requests through the gateway to the scripted model server, which answers the first one with its final
message and no tool call (the naive solution has no file to write); the CLI prints its result and exits.
The rest of the cell is a grid's cell, nothing stubbed or skipped: its own internal network, the
gateway and the scripted model server (the model server route-guarded by a helper container), the
sandbox (route-guarded too, its bundle verified inside it), the gate's proofs from the gateway's record,
the export, the checker container, the removals. Each cell must be admitted and show exactly one model
turn and no tool call (the script exits 1 otherwise: it would not be measuring a no-op session).

The floor is three bare `docker run --rm --network none <base image> true` through the SDK, one after
the other, per cell: each repetition runs its K cells (concurrency 1, a fresh run folder), then its 3K
bare runs at once after them on the same engine, and its ratio is the median cell wall time over three
median bare runs; the figure is the median of the repetitions' ratios with their spread. The split
beside it: setup (network, sidecars and sandbox started side by side, both guarded, bundle verified:
until the CLI may start), the CLI's own exec (its start to init, and the session), and the rest
(the records, the export, the checker). Everything runs in a temp dir under its own run id and is
removed by its run label.

    .venv/bin/python benchmarks/claude_code_overhead.py [--cells 5] [--repeat 5] [--quick]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

from runner.env.engine import connect
from runner.env.images import ensure_images
from runner.exec.job import run_grid
from runner.plan.spec import grid_from_dict
from runner.results.ledger import latest_attempts

from _engine import bare_runs, cleanup, foreign_containers, noop_project, spread

TARGET = 1.5


def model_turns(cell_dir: Path) -> tuple[int, int]:
    """(model turns, tool calls) the scripted model served in a cell, from its own record."""
    requests = [json.loads(l) for l in (cell_dir / "model_requests.jsonl").read_text().splitlines() if l.strip()]
    turns = [r for r in requests if r.get("step") not in ("count_tokens", "refused")]
    return len(turns), sum(len(r.get("calls", [])) for r in turns)


def run_cells(root: Path, runs: Path, run_id: str, k: int) -> list[dict]:
    grid = grid_from_dict({"name": "bench-cc-overhead", "tasks": ["noop"], "arms": ["bare"], "agents": ["claude-code"],
                           "seeds": k, "conditions": ["present"], "model": "scripted"}, Path("(benchmark)"))
    run_grid(grid, Path("(benchmark)"), root=root, run_id=run_id, runs_dir=runs, concurrency=1, progress=False,
             log=lambda m: None)
    return list(latest_attempts([json.loads(l) for l in (runs / run_id / "ledger.jsonl").open()]).values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=5, help="K: claude-code cells per repetition (and 3K bare runs)")
    parser.add_argument("--repeat", type=int, default=5, help="R: repetitions, each its cells then its bare runs")
    parser.add_argument("--quick", action="store_true", help="--cells 1 --repeat 1")
    args = parser.parse_args()
    k, repeat = (1, 1) if args.quick else (args.cells, args.repeat)
    client = connect()
    images = ensure_images(client, log=lambda m: print(m, file=sys.stderr))
    run_id = f"bench-cc-overhead-{uuid.uuid4().hex[:8]}"
    tmp = Path(tempfile.mkdtemp(prefix="memgrid-bench-cc-overhead-"))
    noop_project(tmp / "project", {})
    print(f"other memgrid containers on the engine: {foreign_containers(client, run_id)}; "
          f"1-min load average {os.getloadavg()[0]:.2f}")
    reps, timings, broken = [], [], []
    try:
        bare_runs(client, images.base.tag, run_id, 1)  # untimed: the first timed run does not pay for a cold cache
        for i in range(repeat):
            runs = tmp / f"runs-{i}"
            rows = run_cells(tmp / "project", runs, run_id, k)
            bare = bare_runs(client, images.base.tag, run_id, 3 * k)
            for r in rows:
                turns, calls = model_turns(runs / run_id / "cells" / r["cell_id"])
                if not r["admitted"] or turns != 1 or calls:
                    broken.append(f"cell {r['cell_id']}: admitted {r['admitted']} ({r['discard_reason']}: "
                                  f"{r['error_detail']}), {turns} model turns, {calls} tool calls")
                timings.append({**json.loads(r["timings"] or "{}"), "wall": r["wall_seconds"]})
            cell = statistics.median(r["wall_seconds"] for r in rows)
            without_cli = statistics.median(t["wall"] - t.get("exec", 0.0) for t in timings[-len(rows):])
            reps.append((cell, statistics.median(bare), without_cli))
            print(f"repetition {i + 1}/{repeat}: {len(rows)} cells, median {cell:.2f} s; bare run median "
                  f"{reps[-1][1]:.3f} s (min {min(bare):.3f}, max {max(bare):.3f}); ratio {cell / (3 * reps[-1][1]):.2f}; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        leftovers = cleanup(client, run_id)
        shutil.rmtree(tmp, ignore_errors=True)

    def med(key):
        values = [t[key] for t in timings if t.get(key) is not None]
        return statistics.median(values) if values else float("nan")

    after = [t["wall"] - t["setup"] - t["exec"] for t in timings if t.get("setup") is not None and t.get("exec") is not None]
    print(f"split (median of {len(timings)} cells): wall {med('wall'):.2f} s = setup {med('setup'):.2f} s (sidecars "
          f"{med('sidecars_start'):.2f} s beside sandbox start {med('container_start'):.2f} s + its guard "
          f"{med('network_guard'):.2f} s) + CLI exec {med('exec'):.2f} s (start to init {med('cli_to_init'):.2f} s, "
          f"session {med('session'):.2f} s) + records, export, checker {statistics.median(after) if after else float('nan'):.2f} s")
    harness = [w / (3 * b) for _, b, w in reps]
    print(f"without the CLI's own exec (the harness's share): {spread(harness)} x three bare runs; "
          f"{leftovers} containers left over")
    for line in broken:
        print(f"NOT a no-op session: {line}")
    ratios = [c / (3 * b) for c, b, _ in reps]
    print(f"figure: claude-code no-op cell / (three bare runs) = {spread(ratios)} (median of {repeat} repetitions, "
          f"min-max); target <= {TARGET}: {'met' if statistics.median(ratios) <= TARGET else 'NOT met'}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
