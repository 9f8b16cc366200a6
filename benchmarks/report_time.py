"""Time `memgrid report` on a synthetic 100,000-row ledger: analysis, then the HTML page.

A script, not a test. Writes a fake run folder (run.json, ledger.jsonl, ledger.parquet) in a
temp dir with realistic columns: several agents, arms, conditions, tasks and seeds; gate
discards on the memory arms; tokens and prices on the model agent only (None elsewhere).

    .venv/bin/python benchmarks/report_time.py [--tasks 40] [--seeds 24] [--keep] [--quick]
"""

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import asdict, fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner.results.analysis import analyse  # noqa: E402
from runner.results.stats import RESAMPLES, paired_stat  # noqa: E402
from runner.results.ledger import Ledger, LedgerRow  # noqa: E402
from runner.results.report import write_html  # noqa: E402

ARMS = ["bare", "placebo", "claude_md", "fs_grep", "recall", "recall_prefetch", "oracle_memory"]
CONDITIONS = ["present", "absent", "superseded", "contradictory", "adjacent"]
AGENTS = ["reader", "floor", "claude-code"]
BASE_RATE = {"bare": 0.15, "placebo": 0.15, "claude_md": 0.25, "fs_grep": 0.35, "recall": 0.5, "recall_prefetch": 0.55,
             "oracle_memory": 0.8}
DISCARD = {"recall": 0.04, "recall_prefetch": 0.02, "fs_grep": 0.01}
# 3 tasks: every contrast still gets its task bootstrap; claude-code: the token and cost columns stay exercised
QUICK = {"tasks": 3, "seeds": 1, "resamples": 1_000, "agents": ["claude-code"]}


def synthetic_rows(agents: list[str], tasks: int, seeds: int, rng: random.Random) -> list[LedgerRow]:
    rows = []
    for agent in agents:
        for t in range(tasks):
            difficulty = rng.uniform(-0.2, 0.2)  # tasks differ: what the cluster bootstrap is for
            for seed in range(seeds):
                for condition in CONDITIONS:
                    for arm in ARMS:
                        cell = f"{agent}-{t}-{seed}-{condition}-{arm}"
                        admitted = rng.random() >= DISCARD.get(arm, 0.0)
                        rate = BASE_RATE[arm] + difficulty - (0.2 if condition in ("absent", "adjacent") else 0.0)
                        passed = admitted and rng.random() < max(0.0, min(1.0, rate))
                        outcome = None if not admitted else "solved" if passed else rng.choice(
                            ["neutral_failure", "neutral_failure", "damaged", "ambiguous"])
                        model = agent == "claude-code"
                        fresh, read, created, out = (rng.randint(2_000, 9_000), rng.randint(10_000, 90_000),
                                                     rng.randint(1_000, 8_000), rng.randint(500, 4_000)) if model else (None,) * 4
                        values = {f.name: None for f in fields(LedgerRow)}  # newer optional columns: unobserved
                        if "cli_cost_usd" in values and model:
                            values["cli_cost_usd"] = round(rng.uniform(0.01, 0.4), 4)
                        values.update(
                            run_id="bench", cell_id=cell, attempt=1, final=True, task=f"task_{t:03d}", arm=arm, seed=seed,
                            condition=condition, agent=agent, order_index=len(rows), model="sonnet" if model else None,
                            sandbox_image="sha256:" + "a" * 64, checker_image="sha256:" + "b" * 64,
                            bundle_digest="c" * 64, store_digest="d" * 64 if arm.startswith("recall") else None,
                            started_at="2026-11-29T12:00:00+00:00", ended_at="2026-11-29T12:00:09+00:00",
                            wall_seconds=rng.uniform(0.5, 90.0 if model else 3.0), admitted=admitted,
                            discard_reason=None if admitted else rng.choice(["mcp_not_connected", "tools_not_listed"]),
                            gate_proofs=json.dumps([{"name": "bundle_verified", "passed": True, "detail": "ok"}]),
                            checker_passed=passed if admitted else None, checker_exit_code=(0 if passed else 1) if admitted else None,
                            checker_detail="SUMMARY: 8/8 cases passed" if passed else "SUMMARY: 0/8 cases passed",
                            checker_seconds=0.4, outcome=outcome, damage_fired="[]", tokens_fresh_input=fresh,
                            tokens_cache_read=read, tokens_cache_creation=created, tokens_output=out,
                            cost_usd=round(rng.uniform(0.01, 0.4), 4) if model else None,
                            error_class=None, error_detail=None)
                        rows.append(LedgerRow(**values))
    return rows


def write_run(run_dir: Path, agents: list[str], tasks: int, seeds: int, rng: random.Random) -> list[LedgerRow]:
    """A run folder of synthetic rows: run.json, ledger.jsonl and ledger.parquet."""
    run_dir.mkdir(parents=True)
    rows = synthetic_rows(agents, tasks, seeds, rng)
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "created_at": "2026-11-29T12:00:00+00:00", "cells": len(rows), "git_commit": None,
        "grid": {"name": "bench", "agents": agents, "arms": ARMS, "conditions": CONDITIONS, "seeds": seeds,
                 "tasks": [f"task_{t:03d}" for t in range(tasks)], "network": "none"},
        "inputs": {"tasks": {}, "arms": {}, "images": {}, "corpora": {}}, "image_tags": {}}))
    # Ledger.append fsyncs per row (crash safety); 100k fsyncs would time the disk, not the report.
    with open(run_dir / "ledger.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(asdict(r), sort_keys=True) + "\n" for r in rows)
    Ledger(run_dir).compact()
    return rows


def sized_arguments(parser: argparse.ArgumentParser) -> tuple[argparse.Namespace, list[str], int]:
    """The parser's arguments with --tasks, --seeds and --quick, and the agents and bootstrap resamples they size."""
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=24)  # 3 agents x 40 x 24 x 5 x 7 = 100,800 rows
    parser.add_argument("--quick", action="store_true", help=f"smallest ledger that still bootstraps every contrast: {QUICK}")
    args = parser.parse_args()
    if args.quick:
        args.tasks, args.seeds = QUICK["tasks"], QUICK["seeds"]
        return args, QUICK["agents"], QUICK["resamples"]
    return args, AGENTS, RESAMPLES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="Keep the temp run folder and print its path.")
    args, agents, resamples = sized_arguments(parser)
    tmp = Path(tempfile.mkdtemp(prefix="memgrid-report-bench-"))
    run_dir = tmp / "bench"
    rows = write_run(run_dir, agents, args.tasks, args.seeds, random.Random(7))
    print(f"ledger: {len(rows):,} rows, {(run_dir / 'ledger.jsonl').stat().st_size / 1e6:.1f} MB journal")

    import numpy as np

    gen = np.random.default_rng(1)
    tasks = np.repeat([f"task_{t:03d}" for t in range(args.tasks)], args.seeds)
    arm, base = gen.integers(0, 2, len(tasks)), gen.integers(0, 2, len(tasks))
    tb = time.perf_counter()
    paired_stat(tasks, arm, base, 0.1, resamples)
    print(f"bootstrap: {(time.perf_counter() - tb) * 1000:.0f} ms for one contrast ({len(tasks)} pairs, {args.tasks} tasks, "
          f"{resamples:,} resamples, with the exact McNemar test)")

    t0 = time.perf_counter()
    analysis = analyse(run_dir, resamples=resamples)
    t1 = time.perf_counter()
    page = write_html(analysis, run_dir / "report.html")
    t2 = time.perf_counter()
    contrasts = len(analysis.contrasts) + len(analysis.diagnostics)
    print(f"analysis: {t1 - t0:.2f} s ({contrasts} contrasts x 2 bases, {analysis.resamples:,} bootstrap resamples each)")
    print(f"html: {t2 - t1:.2f} s ({page.stat().st_size / 1e6:.2f} MB)")
    if args.keep:
        print(f"kept: {run_dir}")
    else:
        import shutil

        shutil.rmtree(tmp)
    print(f"figure: report time on {len(rows):,} rows: {t2 - t0:.2f} s (target <= 20 s)")


if __name__ == "__main__":
    main()
