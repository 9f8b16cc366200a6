"""What the Docker benchmarks share: cleanup by run label, a count of other runs skewing timings, a grid run in a
throwaway runs folder, the bare `docker run`s a cell's overhead is measured against, and a throwaway project with
one no-op task."""

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from runner.env.containers import RUN_LABEL
from runner.env.sandbox import remove_run_containers


def cleanup(client, run_id: str) -> int:
    """Remove this run's containers by its run label; returns how many were left over."""
    left = len(client.containers.list(all=True, ignore_removed=True, filters={"label": f"{RUN_LABEL}={run_id}"}))
    remove_run_containers(client, run_id)
    return left


def foreign_containers(client, run_id: str) -> int:
    """memgrid containers of other runs (a test suite, another grid) sharing the engine: they skew the timings."""
    return sum(c.labels.get(RUN_LABEL) != run_id for c in client.containers.list(ignore_removed=True, filters={"label": RUN_LABEL}))


def run_and_summarise(client, grid, run_id: str, root: Path, summarise) -> None:
    """Run `grid` one cell at a time (as `memgrid grid` would) into a temp runs folder, summarise its run folder,
    then remove its containers and the folder."""
    from runner.exec.job import run_grid  # the controller, imported only by the benchmarks that run cells

    runs = Path(tempfile.mkdtemp(prefix=f"memgrid-{run_id}-"))
    try:
        print(f"other memgrid containers on the engine: {foreign_containers(client, run_id)}")
        run_grid(grid, Path("(benchmark)"), root=root, run_id=run_id, runs_dir=runs, concurrency=1, progress=False,
                 log=lambda m: None)
        summarise(runs / run_id)
    finally:
        cleanup(client, run_id)
        shutil.rmtree(runs, ignore_errors=True)


def bare_runs(client, tag: str, run_id: str, n: int) -> list[float]:
    """n sequential `docker run --rm --network none <tag> true` through the SDK: the floor of a container run."""
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        client.containers.run(tag, ["true"], network_mode="none", remove=True, labels={RUN_LABEL: run_id})
        times.append(time.monotonic() - t0)
    return times


def spread(values: list[float], digits: int = 2) -> str:
    """'median (min-max)' of a benchmark's repetitions."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


NOOP_TASK = """\
id: noop
title: A no-op task for measuring harness overhead
prompt: Do nothing.
fact:
  summary: There is no fact.
  terms: ["nothing"]
conditions: [present]
checker:
  command: ["true"]
  timeout_seconds: 30
detector:
  command: ["echo", '{"fired": []}']
  timeout_seconds: 30
limits:
  agent_seconds: 60
"""

BARE_ARM = """\
name: bare
kind: none
description: Nothing besides the repository and the prompt.
"""


def noop_project(root: Path, naive: dict[str, str]) -> None:
    """A throwaway project root: the task `noop` (checker and detector always pass, one fixture file) with
    `naive` as its naive reference (path -> text; empty: nothing to write), and the arm `bare`."""
    task = root / "tasks" / "noop"
    files = {task / "task.yaml": NOOP_TASK, task / "fixture" / "README.md": "noop\n",
             task / "oracle" / "check.py": "import sys\nsys.exit(0)\n",
             task / "references" / "informed" / "answer.txt": "informed\n", root / "arms" / "bare" / "arm.yaml": BARE_ARM}
    files.update({task / "references" / "naive" / path: text for path, text in naive.items()})
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (task / "references" / "naive").mkdir(parents=True, exist_ok=True)
