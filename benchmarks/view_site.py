"""Page weight and build time of `memgrid view` for a run folder.

A script, not a test. Builds the site of RUN into a temp dir (the run folder is only read) and prints its
size (all files; the index; the largest and the median cell page) and how long the build took. Without
--run it builds a synthetic run of the default grid's shape (12 tasks x 7 arms x 5 conditions, 420 cells),
each cell carrying the recorded claude-code session of tests/data/claude_stream/, so the timelines are real.

    .venv/bin/python benchmarks/view_site.py [--run runs/ID] [--keep] [--quick]
"""

import argparse
import gzip
import json
import shutil
import statistics
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runner.results.ledger import Ledger, LedgerRow  # noqa: E402
from runner.results.view import build_site  # noqa: E402

STREAM = REPO / "tests" / "data" / "claude_stream" / "recall_connected.jsonl"
ARMS = ["bare", "placebo", "claude_md", "fs_grep", "recall", "recall_prefetch", "oracle_memory"]
CONDITIONS = ["present", "absent", "superseded", "contradictory", "adjacent"]


def synthetic_run(run_dir: Path, tasks: int) -> Path:
    run_dir.mkdir(parents=True)
    names = [f"task_{t:02d}" for t in range(tasks)]
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_dir.name, "created_at": "2026-12-01T00:00:00+00:00", "cells": tasks * len(ARMS) * len(CONDITIONS),
        "grid": {"name": "bench", "agents": ["claude-code"], "arms": ARMS, "conditions": CONDITIONS, "seeds": 1,
                 "tasks": names, "network": "none", "model": "scripted"},
        "inputs": {"tasks": {}, "arms": {}, "images": {}, "corpora": {}}, "image_tags": {}}))
    stream = gzip.compress(STREAM.read_bytes())
    proofs = [{"name": "mcp_connected", "passed": True, "detail": "server recall: connected"}]
    ledger = Ledger(run_dir)
    ledger.open()
    with open(ledger.journal, "w", encoding="utf-8") as journal:  # one write: the fsync per row would time the disk
        for i, (task, condition, arm) in enumerate((t, c, a) for t in names for c in CONDITIONS for a in ARMS):
            cell_id = f"{i:016x}"
            cell_dir = run_dir / "cells" / cell_id
            cell_dir.mkdir(parents=True)
            (cell_dir / "claude.stream.jsonl.gz").write_bytes(stream)
            (cell_dir / "proof.json").write_text(json.dumps({"admitted": True, "discard_reason": None, "proofs": proofs}))
            (cell_dir / "checker.log").write_text("SUMMARY: 2/8 cases passed\n")
            values = {f.name: None for f in fields(LedgerRow)}
            values.update(run_id=run_dir.name, cell_id=cell_id, attempt=1, final=True, task=task, arm=arm, seed=0,
                          condition=condition, agent="claude-code", order_index=i, sandbox_image="sha256:" + "a" * 64,
                          checker_image="sha256:" + "b" * 64, started_at="2026-12-01T00:00:00+00:00",
                          ended_at="2026-12-01T00:00:09+00:00", wall_seconds=9.0, admitted=True, gate_proofs=json.dumps(proofs),
                          checker_passed=False, outcome="neutral_failure", tokens_fresh_input=140_000, tokens_output=800,
                          tokens_cache_read=0, tokens_cache_creation=0, cost_usd=0.0)
            journal.write(json.dumps(values, sort_keys=True) + "\n")
    ledger.compact()
    return run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="A run folder (default: a synthetic 420-cell run)")
    parser.add_argument("--keep", action="store_true", help="Keep the site and print its path.")
    parser.add_argument("--quick", action="store_true", help="a synthetic run of one task (35 cells)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memgrid-view-bench-"))
    run_dir = args.run or synthetic_run(tmp / "bench-run", 1 if args.quick else 12)
    site = build_site(run_dir, tmp / "site", REPO)
    cells = [p.stat().st_size for p in (site.index.parent / "cells").glob("*.html")]
    largest = max((site.index.parent / "cells").glob("*.html"), key=lambda p: p.stat().st_size)
    print(f"run: {run_dir} ({len(cells)} cell pages)")
    print(f"index.html: {site.index.stat().st_size / 1e3:.0f} kB; cell pages: median {statistics.median(cells) / 1e3:.1f} kB, "
          f"largest {largest.stat().st_size / 1e3:.1f} kB ({largest.name})")
    if args.keep:
        print(f"kept: {site.index}")
    else:
        shutil.rmtree(tmp)
    print(f"figure: site of {len(cells)} cells: {site.bytes / 1e6:.1f} MB ({site.pages} pages, plots, report), "
          f"built in {site.seconds:.1f} s")


if __name__ == "__main__":
    main()
