"""Controller peak RSS while expanding and ledgering a 2,000-cell grid, dry (no containers, no Docker).

Two child processes, so each measurement is clean: one only imports the runner modules (the baseline),
the other also expands a synthetic grid, appends a synthetic LedgerRow per cell to a Ledger in a temp
dir, compacts it to parquet and reads that back with pandas. Peak RSS is ru_maxrss (KiB on Linux).
The synthetic tasks and arms are copies of shipped ones, so they keep up with the spec's fields.

    .venv/bin/python benchmarks/rss.py [--tasks 20] [--seeds 5] [--quick]
"""

import argparse
import dataclasses
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_MB = 300
QUICK = {"tasks": 2, "seeds": 1}
ARMS = ("bare", "claude_md")
AGENTS = ("floor", "ceiling")


def import_runner() -> None:
    """Everything a `memgrid grid` controller imports, plus pandas for the read-back."""
    import pandas  # noqa: F401
    import runner.cli  # noqa: F401
    import runner.plan.grid  # noqa: F401
    import runner.results.ledger  # noqa: F401
    import runner.exec.run  # noqa: F401
    import runner.plan.spec  # noqa: F401


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child_baseline() -> dict:
    t0 = time.monotonic()
    import_runner()
    return {"peak_kib": peak_kib(), "import_seconds": time.monotonic() - t0}


def synthetic_tasks(n: int) -> dict:
    """n copies of the first shipped task under new ids, each supporting every condition."""
    from runner.plan.spec import CONDITIONS, load_all_tasks

    template = next(iter(load_all_tasks(REPO).values()))
    return {f"task_{i:03d}": dataclasses.replace(template, id=f"task_{i:03d}", conditions=CONDITIONS,
                                                 root=Path(f"/nonexistent/tasks/task_{i:03d}"))
            for i in range(n)}


def synthetic_row(cell, run_id: str):
    from runner.results.ledger import LedgerRow

    proofs = [{"name": "bundle_verified", "passed": True, "detail": f"7 files match {'ab' * 6}"},
              {"name": "agent_ended", "passed": True, "detail": f"{cell.agent} finished without error"}]
    passed = cell.agent == "ceiling"
    values = {f.name: None for f in dataclasses.fields(LedgerRow)}  # columns added since: unobserved
    values.update(
        run_id=run_id, cell_id=cell.cell_id, attempt=1, final=True, task=cell.task, arm=cell.arm, seed=cell.seed,
        condition=cell.condition, agent=cell.agent, order_index=cell.order_index,
        sandbox_image="sha256:" + "1" * 64, checker_image="sha256:" + "2" * 64, bundle_digest="3" * 64,
        started_at="2026-01-01T00:00:00.000+00:00", ended_at="2026-01-01T00:00:00.700+00:00",
        wall_seconds=0.7, admitted=True, gate_proofs=json.dumps(proofs),
        checker_passed=passed, checker_exit_code=0 if passed else 1,
        checker_detail="exit 0" if passed else "exit 1: AssertionError: expected 2024-03-01T12:00:00.000Z",
        checker_seconds=0.3, outcome="solved" if passed else "neutral_failure", damage_fired="[]")
    return LedgerRow(**values)


def child_grid(n_tasks: int, seeds: int) -> dict:
    import tempfile

    t0 = time.monotonic()
    import_runner()
    import pandas as pd

    from runner.plan.grid import GridInputs, expand, select
    from runner.results.ledger import Ledger
    from runner.plan.spec import CONDITIONS, GridSpec, load_all_arms
    from runner.protocols.registry import PROTOCOLS

    out = {"import_seconds": time.monotonic() - t0, "after_import_kib": peak_kib()}
    tasks = synthetic_tasks(n_tasks)
    shipped = load_all_arms(REPO)
    arms = {a: shipped[a] for a in ARMS}
    grid = GridSpec(name="rss", tasks="all", arms=ARMS, agents=AGENTS, seeds=seeds, conditions=CONDITIONS)
    inputs = GridInputs(tasks={t: "a" * 64 for t in tasks}, arms={a: "b" * 64 for a in arms},
                        images={"base": "sha256:" + "c" * 64, "sandbox": "sha256:" + "d" * 64,
                                "checker": "sha256:" + "e" * 64}, corpora={})

    t0 = time.monotonic()
    task_ids, _ = select(grid, PROTOCOLS["coding"], tasks, arms, Path("(synthetic grid)"))
    cells = expand(grid, task_ids, tasks, inputs)
    out["expand_seconds"], out["cells"], out["after_expand_kib"] = time.monotonic() - t0, len(cells), peak_kib()
    out["unique_ids"] = len({c.cell_id for c in cells})

    with tempfile.TemporaryDirectory(prefix="memgrid-bench-rss-") as tmp:
        run_dir = Path(tmp) / "bench-rss"
        run_dir.mkdir()
        ledger = Ledger(run_dir)
        ledger.open()
        t0 = time.monotonic()
        for cell in cells:
            ledger.append(synthetic_row(cell, run_dir.name))
        out["append_seconds"], out["after_append_kib"] = time.monotonic() - t0, peak_kib()
        out["journal_bytes"] = ledger.journal.stat().st_size

        t0 = time.monotonic()
        path = ledger.compact()
        out["compact_seconds"], out["after_compact_kib"] = time.monotonic() - t0, peak_kib()
        out["parquet_bytes"] = path.stat().st_size

        t0 = time.monotonic()
        frame = pd.read_parquet(path)
        out["read_seconds"], out["read_rows"] = time.monotonic() - t0, len(frame)
    out["peak_kib"] = peak_kib()
    return out


def run_child(*args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
    if proc.returncode != 0:  # the child's own traceback says what broke; a CalledProcessError would not
        sys.exit(f"rss: the measured child {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="synthetic tasks (each has all 5 conditions)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds; cells = tasks x 5 conditions x 2 arms x 2 agents x seeds")
    parser.add_argument("--quick", action="store_true", help=f"smallest grid that runs every step: {QUICK}")
    parser.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.tasks, args.seeds = QUICK["tasks"], QUICK["seeds"]

    if args.child is not None:  # inside a measured subprocess: print one JSON line and leave
        result = child_baseline() if args.child == ["baseline"] else child_grid(args.tasks, args.seeds)
        print(json.dumps(result))
        return 0

    base = run_child("baseline")
    grid = run_child("grid", "--tasks", str(args.tasks), "--seeds", str(args.seeds))
    added = grid["peak_kib"] - base["peak_kib"]
    print(f"rss: {grid['cells']} cells ({args.tasks} tasks x 5 conditions x 2 arms x 2 agents x {args.seeds} seeds), "
          f"{grid['unique_ids']} unique cell ids, {grid['read_rows']} rows read back")
    print(f"baseline (import runner + pandas only): peak RSS {mib(base['peak_kib'])}, import {base['import_seconds']:.2f} s")
    print(f"grid child peak RSS after: import {mib(grid['after_import_kib'])}, expand {mib(grid['after_expand_kib'])}, "
          f"append {mib(grid['after_append_kib'])}, compact {mib(grid['after_compact_kib'])}, read back {mib(grid['peak_kib'])}")
    print(f"wall: expand {grid['expand_seconds']:.3f} s, append {grid['append_seconds']:.3f} s "
          f"({grid['append_seconds'] / grid['cells'] * 1000:.2f} ms/row, fsync each), compact {grid['compact_seconds']:.3f} s, "
          f"read back {grid['read_seconds']:.3f} s; journal {grid['journal_bytes'] / 1e6:.2f} MB, "
          f"parquet {grid['parquet_bytes'] / 1e6:.2f} MB")
    peak_mb = grid["peak_kib"] * 1024 / 1e6
    print(f"figure: peak RSS = {mib(grid['peak_kib'])} ({peak_mb:.1f} MB; the grid adds {mib(added)} over the baseline); "
          f"target <= {TARGET_MB} MB: {'met' if peak_mb <= TARGET_MB else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
