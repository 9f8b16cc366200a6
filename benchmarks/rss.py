"""Controller peak RSS while expanding and ledgering a 2,000-cell grid, dry (no containers, no Docker).

Two child processes, so each measurement is clean: one only imports the runner modules (the baseline),
the other also expands a synthetic grid, appends a synthetic LedgerRow per cell to a Ledger in a temp
dir, compacts it to parquet and reads that back with pandas. Peak RSS is ru_maxrss (KiB on Linux).

    .venv/bin/python benchmarks/rss.py [--tasks 20] [--seeds 5]
"""

import argparse
import json
import resource
import subprocess
import sys
import time

TARGET_MB = 300
ARMS = ("bare", "claude_md")
AGENTS = ("floor", "ceiling")


def import_runner() -> None:
    """Everything a `memgrid grid` controller imports, plus pandas for the read-back."""
    import pandas  # noqa: F401
    import runner.cli  # noqa: F401
    import runner.grid  # noqa: F401
    import runner.ledger  # noqa: F401
    import runner.run  # noqa: F401
    import runner.spec  # noqa: F401


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child_baseline() -> dict:
    t0 = time.monotonic()
    import_runner()
    return {"peak_kib": peak_kib(), "import_seconds": time.monotonic() - t0}


def synthetic_tasks(n: int) -> dict:
    from pathlib import Path

    from runner.spec import CONDITIONS, CheckerSpec, TaskSpec

    return {f"task_{i:03d}": TaskSpec(id=f"task_{i:03d}", title=f"Synthetic task {i}", prompt="Implement it. " * 40,
                                      fact_summary="A synthetic fact.", fact_terms=("synthetic",), conditions=CONDITIONS,
                                      checker=CheckerSpec(("python3", "/oracle/check.py", "/artifact")),
                                      agent_seconds=600, root=Path(f"/nonexistent/tasks/task_{i:03d}"))
            for i in range(n)}


def synthetic_row(cell, run_id: str):
    from runner.ledger import LedgerRow

    proofs = [{"name": "bundle_verified", "passed": True, "detail": f"7 files match {'ab' * 6}"},
              {"name": "agent_ok", "passed": True, "detail": f"{cell.agent} finished without error"}]
    passed = cell.agent == "ceiling"
    return LedgerRow(
        run_id=run_id, cell_id=cell.cell_id, attempt=1, final=True, task=cell.task, arm=cell.arm, seed=cell.seed,
        condition=cell.condition, agent=cell.agent, order_index=cell.order_index, model=None,
        sandbox_image="sha256:" + "1" * 64, checker_image="sha256:" + "2" * 64, bundle_digest="3" * 64,
        store_digest=None, started_at="2026-01-01T00:00:00.000+00:00", ended_at="2026-01-01T00:00:00.700+00:00",
        wall_seconds=0.7, admitted=True, discard_reason=None, gate_proofs=json.dumps(proofs),
        checker_passed=passed, checker_exit_code=0 if passed else 1,
        checker_detail="exit 0" if passed else "exit 1: AssertionError: expected 2024-03-01T12:00:00.000Z",
        checker_seconds=0.3, outcome="solved" if passed else "neutral_failure", tokens_fresh_input=None,
        tokens_cache_read=None, tokens_cache_creation=None, tokens_output=None, cost_usd=None, cli_cost_usd=None, timings=None,
        error_class=None, error_detail=None)


def child_grid(n_tasks: int, seeds: int) -> dict:
    import tempfile
    from pathlib import Path

    t0 = time.monotonic()
    import_runner()
    import pandas as pd

    from runner.grid import GridInputs, expand, select
    from runner.ledger import Ledger
    from runner.spec import CONDITIONS, ArmSpec, GridSpec

    out = {"import_seconds": time.monotonic() - t0, "after_import_kib": peak_kib()}
    tasks = synthetic_tasks(n_tasks)
    arms = {a: ArmSpec(a, "none", "synthetic arm", "", (), Path(f"/nonexistent/arms/{a}")) for a in ARMS}
    grid = GridSpec(name="rss", tasks="all", arms=ARMS, agents=AGENTS, seeds=seeds, conditions=CONDITIONS)
    inputs = GridInputs(tasks={t: "a" * 64 for t in tasks}, arms={a: "b" * 64 for a in arms},
                        images={"base": "sha256:" + "c" * 64, "sandbox": "sha256:" + "d" * 64,
                                "checker": "sha256:" + "e" * 64})

    t0 = time.monotonic()
    task_ids, _ = select(grid, tasks, arms, Path("(synthetic grid)"))
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
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="synthetic tasks (each has all 5 conditions)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds; cells = tasks x 5 conditions x 2 arms x 2 agents x seeds")
    parser.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()

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
    print(f"peak RSS = {mib(grid['peak_kib'])} ({peak_mb:.1f} MB; the grid adds {mib(added)} over the baseline); "
          f"target <= {TARGET_MB} MB: {'met' if peak_mb <= TARGET_MB else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
