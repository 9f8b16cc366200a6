"""Corpus figures: build time for one condition x seed and for all five, verify time, size on disk,
and the BM25 probe (hit@1 / hit@10 of the fact documents with the task prompt as the query).

Builds into a temp dir; nothing under corpus/build/ is touched.

    .venv/bin/python benchmarks/corpus_build.py [--seeds 0,1] [--quick]
"""

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from runner.corpus.build import build, load_settings, locus_findings, probe, verify_dir
from runner.plan.spec import CONDITIONS, load_all_tasks

ROOT = Path(__file__).resolve().parent.parent
QUICK_SCALE = 200  # haystack documents per condition x seed in --quick (every tier still drawn)


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0", help="comma-separated seeds to build and probe")
    parser.add_argument("--quick", action="store_true",
                        help=f"a haystack of {QUICK_SCALE} documents instead of corpus.yaml's scale")
    args = parser.parse_args()
    seeds = tuple(int(s) for s in args.seeds.split(","))
    settings, tasks = load_settings(ROOT), list(load_all_tasks(ROOT).values())
    if args.quick:
        settings = dataclasses.replace(settings, scale=QUICK_SCALE)
    print(f"corpus: {len(tasks)} tasks, scale {settings.scale}, seeds {list(seeds)}")
    with tempfile.TemporaryDirectory(prefix="memgrid-bench-corpus-") as tmp:
        out = Path(tmp)
        t0 = time.monotonic()
        build(settings, tasks, ("present",), seeds[:1], out, log=lambda m: None)
        one = time.monotonic() - t0
        print(f"figure: build one condition x seed (present, seed {seeds[0]}, haystack of {settings.scale} included): "
              f"{one:.1f} s (target <= 30 s at scale {load_settings(ROOT).scale})")
        t0 = time.monotonic()
        build(settings, tasks, CONDITIONS, seeds, out, log=lambda m: None)
        every = time.monotonic() - t0
        print(f"build all {len(CONDITIONS)} conditions x {len(seeds)} seeds: {every:.1f} s "
              f"({every / (len(CONDITIONS) * len(seeds)):.1f} s per condition x seed; the haystack is made once per seed)")
        dirs = [settings.condition_dir(c, s, out) for s in seeds for c in CONDITIONS]
        t0 = time.monotonic()
        problems = [p for d in dirs for p in verify_dir(d)]
        verify = time.monotonic() - t0
        print(f"verify {len(dirs)} corpora: {verify:.1f} s ({verify / len(dirs):.2f} s each), {len(problems)} problems")
        t0 = time.monotonic()
        leaks = [p for d in dirs for p in locus_findings(d, tasks)]
        print(f"fact-term locus audit: {time.monotonic() - t0:.1f} s, {len(leaks)} leaks")
        sizes = [disk_bytes(d) for d in dirs]
        docs = [len(list((d / "docs").glob("*.jsonl"))) for d in dirs]
        print(f"documents per condition x seed: min {min(docs)}, max {max(docs)}; size on disk per condition x seed: "
              f"median {statistics.median(sizes) / 2**20:.1f} MiB, all {sum(sizes) / 2**20:.1f} MiB")
        t0 = time.monotonic()
        results = probe(settings, tasks, CONDITIONS, seeds, out)
        print(f"BM25 probe ({time.monotonic() - t0:.1f} s), query = task prompt, fact documents of each task:")
        for condition in CONDITIONS:
            rows = [r for r in results if r.condition == condition]
            if not rows:
                print(f"  {condition:14} no fact documents planted")
                continue
            print(f"  {condition:14} n={len(rows):3}  hit@1 {sum(r.hit(1) for r in rows) / len(rows):.2f}  "
                  f"hit@10 {sum(r.hit(10) for r in rows) / len(rows):.2f}")
        print(f"figure: overall hit@1 {sum(r.hit(1) for r in results) / len(results):.2f}, "
              f"hit@10 {sum(r.hit(10) for r in results) / len(results):.2f} (must stay < 1.0)")


if __name__ == "__main__":
    main()
