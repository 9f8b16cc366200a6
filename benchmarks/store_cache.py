"""The store cache against ingest: recall's store of one condition (present, seed 0), ingested into an empty cache
(cold: its container, its write path, the freeze and the cache write), then the same store taken by a second run from
the cache (warm: read, verified against its digest, copied into the run folder). Side by side, R repetitions, each
with an empty cache; the figure is warm / cold. A product's ingest takes minutes to hours where recall's takes
seconds, so the saving grows with the product; the warm time is what every later run pays instead.

    .venv/bin/python benchmarks/store_cache.py [--scale 4900] [--repeat 3] [--quick]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from _engine import cleanup, spread

from runner.arms.ingest import ensure_stores
from runner.corpus.build import build, load_settings
from runner.env.engine import connect
from runner.env.images import ensure_arm_image, ensure_images
from runner.plan.spec import load_all_arms, load_suite_tasks

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=4900, help="haystack documents of the condition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 documents, one repetition")
    args = parser.parse_args()
    if args.quick:
        args.scale, args.repeat = 200, 1
    client = connect()
    images = ensure_images(client, log=lambda m: None)
    arm = load_all_arms(ROOT)["recall"]
    recall = {"recall": ensure_arm_image(client, arm.root, images.sandbox, log=lambda m: None)}
    run_id = f"bench-store-cache-{uuid.uuid4().hex[:8]}"
    cold, warm = [], []
    with tempfile.TemporaryDirectory(prefix="memgrid-bench-store-cache-") as tmp:
        settings = replace(load_settings(ROOT), scale=args.scale)
        build(settings, list(load_suite_tasks(ROOT).values()), ("present",), (0,), Path(tmp) / "corpus", log=lambda m: None)

        class Built:
            def condition_dir(self, condition, seed):
                return settings.condition_dir(condition, seed, Path(tmp) / "corpus")

        try:
            for i in range(args.repeat):
                os.environ["MEMGRID_CACHE"] = str(Path(tmp) / f"cache-{i}")
                logs = []
                t0 = time.monotonic()
                first = ensure_stores(client, [arm], [("present", 0)], Built(), Path(tmp) / f"cold-{i}", recall,
                                      run_id=run_id, log=logs.append)
                cold.append(time.monotonic() - t0)
                t0 = time.monotonic()
                second = ensure_stores(client, [arm], [("present", 0)], Built(), Path(tmp) / f"warm-{i}", recall,
                                       run_id=run_id, log=logs.append)
                warm.append(time.monotonic() - t0)
                key = ("recall", "present", 0)
                if second[key].source != "cache" or second[key].digest != first[key].digest:
                    print(f"the second run did not take the cached store: {logs}", file=sys.stderr)
                    sys.exit(1)
        finally:
            cleanup(client, run_id)
    store = first[("recall", "present", 0)]
    print(f"recall, present seed 0, {store.report['corpus_documents']} documents, store {store.report['bytes'] / 2**20:.1f} MiB, "
          f"{args.repeat} repetitions")
    print(f"cold (ingest + freeze + cache write): {spread(cold)} s")
    print(f"warm (cache read + verify + copy):    {spread(warm)} s")
    print(f"figure: warm / cold = {statistics.median(warm) / statistics.median(cold):.3f} "
          f"({statistics.median(cold) / statistics.median(warm):.0f}x less time once the store is cached)")


if __name__ == "__main__":
    main()
