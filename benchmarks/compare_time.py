"""Time `memgrid compare` on two synthetic 100,800-row runs of one grid (report_time.py's ledgers, other draws).

A script, not a test. Every arm is in both runs, so compare pairs every agent x condition x arm: each pair's
rows with a 10,000-resample task bootstrap on both bases, then the terminal table and the HTML page.

    .venv/bin/python benchmarks/compare_time.py [--tasks 40] [--seeds 24] [--quick]
"""

import argparse
import io
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402

from report_time import sized_arguments, write_run  # noqa: E402
from runner.results.compare import compare_runs, print_terminal, write_html  # noqa: E402


def main() -> None:
    args, agents, resamples = sized_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    tmp = Path(tempfile.mkdtemp(prefix="memgrid-compare-bench-"))
    try:
        rows = len(write_run(tmp / "v1", agents, args.tasks, args.seeds, random.Random(7)))
        write_run(tmp / "v2", agents, args.tasks, args.seeds, random.Random(8))
        print(f"ledgers: 2 x {rows:,} rows")
        t0 = time.perf_counter()
        comparison = compare_runs("v1", "v2", tmp, resamples=resamples)
        t1 = time.perf_counter()
        print_terminal(comparison, Console(file=io.StringIO(), width=130))
        write_html(comparison, tmp / "compare.html")
        t2 = time.perf_counter()
        print(f"pairing and statistics: {t1 - t0:.2f} s ({len(comparison.groups)} agent x condition x arm rows x 2 bases, "
              f"{resamples:,} bootstrap resamples each)")
        print(f"terminal table and html: {t2 - t1:.2f} s")
    finally:
        shutil.rmtree(tmp)
    print(f"figure: compare time on 2 x {rows:,} rows: {t2 - t0:.2f} s")


if __name__ == "__main__":
    main()
