"""Wall time of the task validity check over the whole suite, and how many containers it ran.

    .venv/bin/python benchmarks/task_check.py [--concurrency 2] [--quick]

--quick checks the first task only (its static audits and every one of its references through the checker).
"""

import argparse
import time
from pathlib import Path

from runner.env.engine import connect
from runner.env.images import ensure_images
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.tasks.check import artifact_variants, check_behaviour, containment_findings, transcript_findings

from _engine import foreign_containers

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="the first task only")
    args = parser.parse_args()
    tasks = list(load_all_tasks(ROOT).values())[:1 if args.quick else None]
    client = connect()
    images = ensure_images(client, log=print)
    # the check's own run id is made inside check_behaviour: every memgrid container now is another run's
    print(f"other memgrid containers on the engine: {foreign_containers(client, '')}")
    t0 = time.monotonic()
    static = containment_findings(tasks, list(load_all_arms(ROOT).values())) + [f for t in tasks for f in transcript_findings(t)]
    static_s = time.monotonic() - t0
    t0 = time.monotonic()
    behaviour = check_behaviour(client, images, tasks, args.concurrency)
    behaviour_s = time.monotonic() - t0
    graded = sum(len(artifact_variants(t)) for t in tasks)
    failed = [f for f in static + behaviour if not f.passed]
    print(f"static audits: {len(static)} rules in {static_s:.2f} s")
    print(f"behaviour: {graded} artifacts graded in checker containers (concurrency {args.concurrency}) in {behaviour_s:.1f} s "
          f"({behaviour_s / graded:.2f} s each)")
    print(f"figure: task check of {len(tasks)} tasks: {static_s + behaviour_s:.1f} s wall, {len(failed)} failed rules")


if __name__ == "__main__":
    main()
