"""Memora at its own scale: per period, `memgrid task import --format memora` seconds, then each persona's store
built through an arm's own ingest exactly as a personal cell's build phase builds it (recall by default; seconds,
sessions, MiB), then the same stores taken from the store cache, as every later cell of the persona and period
takes them, side by side in one run.

Nothing is read from or written to your store cache (a private one in a temp dir, removed with the imported
suites); every container carries memgrid.run=<run id> and is removed by that label.

    .venv/bin/python benchmarks/memora_scale.py --memora PATH [--periods weekly,monthly,quarterly] [--arm recall]

PATH: a Memora checkout or its data/ (github.com/geniesinc/Memora; `fetch` gives a mirror). --quick: the tests'
fixture in Memora's layout (tests/data/memora: two personas), weekly only.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from runner.env.engine import connect
from runner.env.images import ensure_arm_image, ensure_images
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms
from runner.protocols.registry import PROTOCOLS
from runner.sources import memora

from _engine import cleanup, foreign_containers

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "memora"
PROTOCOL = PROTOCOLS["personal"]


def quiet(message: str) -> None:
    pass


def build_period(ctx: TrialContext, folder: Path, period: str, arm: str) -> list[dict]:
    """Each persona's store of the period: built, then taken from the cache; one row a persona."""
    rows = []
    for unit_row in memora.provenance_of(folder)["units"]:
        persona = unit_row["persona"]
        unit = memora.hosted_unit(folder, persona, period)
        cell = CellSpec(persona, arm, 0, period, "reader", f"{arm}-{persona}-{period}", 0)
        seconds = []
        for _ in ("built", "cached"):
            t = time.monotonic()
            _, report, decision = PROTOCOL.build(ctx, cell, unit, ctx.arms[arm], {}, [])
            seconds.append(time.monotonic() - t)
            if not decision.admitted:
                raise RuntimeError(f"{arm} {persona} {period}: the build was not admitted ({decision.discard_reason}): "
                                   f"{report.get('log_tail', '')[-200:]}")
        rows.append({"persona": persona, "sessions": len(unit.records), "built": seconds[0], "cached": seconds[1],
                     "mib": report["bytes"] / 2**20, "source": report["source"]})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memora", type=Path, help="a Memora checkout or its data/")
    parser.add_argument("--periods", default="weekly,monthly,quarterly")
    parser.add_argument("--arm", default="recall", help="an arm with an ingest (mcp kind)")
    parser.add_argument("--quick", action="store_true", help="the tests' fixture, weekly")
    args = parser.parse_args()
    source = FIXTURE if args.quick else args.memora
    if args.quick:
        args.periods = "weekly"
    if source is None:
        print("memora_scale.py: --memora is missing: fix: give a Memora checkout or its data/ (or --quick)",
              file=sys.stderr)
        return 2
    run_id = f"bench-memora-{datetime.now():%Y%m%d-%H%M%S}"
    scratch = Path(tempfile.mkdtemp(prefix="memgrid-bench-memora-"))
    os.environ["MEMGRID_CACHE"] = str(scratch / "store-cache")  # builds are real: no store of yours stands in
    client = connect()
    try:
        images = ensure_images(client, log=quiet)
        arms = load_all_arms(REPO)
        if args.arm not in arms or arms[args.arm].ingest is None:
            print(f"memora_scale.py: --arm {args.arm}: not an arm with an ingest: fix: name one, e.g. recall",
                  file=sys.stderr)
            return 2
        image = ensure_arm_image(client, arms[args.arm].root, images.sandbox, log=quiet)
        project = scratch / "project"
        (project / "tasks").mkdir(parents=True)
        ctx = TrialContext(client, run_id, scratch / "run", images, {}, arms, images_by_arm={args.arm: image},
                           protocol=PROTOCOL, root=project)
        print(f"{args.arm} stores of Memora from {source}; other memgrid containers on the engine: "
              f"{foreign_containers(client, run_id)}")
        figures = []
        for period in args.periods.split(","):
            t = time.monotonic()
            result = memora.import_memora(source, project, f"memora_{period}", periods=(period,), log=quiet)
            imported = time.monotonic() - t
            if result.refusals or not result.plans:
                print(f"{period}: import refused {len(result.refusals)} units, hosted {len(result.plans)}")
                return 1
            rows = build_period(ctx, project / "tasks" / f"memora_{period}", period, args.arm)
            sessions = sum(r["sessions"] for r in rows)
            built, cached = sum(r["built"] for r in rows), sum(r["cached"] for r in rows)
            print(f"{period}: import {imported:.1f} s ({len(rows)} personas, {sessions} sessions); {args.arm} stores "
                  f"built in {built:.1f} s ({1000 * built / sessions:.1f} ms a session, median "
                  f"{statistics.median(r['built'] for r in rows):.1f} s a persona, median "
                  f"{statistics.median(r['mib'] for r in rows):.2f} MiB), from the store cache in {cached:.1f} s "
                  f"({built / max(cached, 1e-3):.0f}x faster)")
            figures.append(f"{period} import {imported:.1f} s, build {built:.1f} s "
                           f"({1000 * built / sessions:.1f} ms a session)")
        print(f"figure: {args.arm} on Memora: {'; '.join(figures)}")
        return 0
    finally:
        cleanup(client, run_id)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
