"""kill -9 of the controller at random points of a grid, resumed each time: lost cells, duplicated
cells and outcome agreement against an uninterrupted run of the same grid.

The real CLI runs as a subprocess (`memgrid grid ... --run-id R --runs-dir TMP`). First one
uninterrupted run (the reference); then the same grid under another run id, killed with SIGKILL
after a seeded random delay and resumed with the same run id, until --kills kills have landed, then
resumed until it completes. Each delay is drawn from [0, startup + 2 x the remaining cells' fair
share of the remaining kills], so the kills spread over the whole grid (some land during startup).
After each kill the containers carrying the run's label are counted (resume removes them); at the
end every container of both runs is removed by label and the temp runs folder is deleted.

    .venv/bin/python benchmarks/kill9_resume.py [--kills 20] [--seed 0] [--quick] [--keep]

Default grid: reader x 12 tasks x arms bare, placebo, claude_md, fs_grep, oracle_memory x present
= 60 cells (the present seed-0 corpus is built once, cached in corpus/build/). Tasks, arms and the
corpus come from MEMGRID_ROOT if set (e.g. a copy of tasks/, arms/ and corpus/ that other work on the
checkout cannot rebuild under the run), else from this checkout. --quick: 2 tasks x
bare, claude_md = 4 cells, 2 kills, no corpus. Exits 1 when a cell is lost or duplicated,
an outcome differs, or a resume fails.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq

from runner.env.engine import connect
from runner.results.ledger import Ledger
from runner.env.containers import RUN_LABEL

from _engine import cleanup

REPO = Path(__file__).resolve().parent.parent
ROOT = Path(os.environ.get("MEMGRID_ROOT", REPO)).resolve()  # tasks, arms and corpus; a snapshot shields the run from edits
FULL_ARMS = ("bare", "placebo", "claude_md", "fs_grep", "oracle_memory")
QUICK_ARMS = ("bare", "claude_md")  # no corpus arm: --quick never builds a corpus
QUICK_TASKS = ("cli_exit_codes", "slug_ids")
RUN_TIMEOUT = 1800  # seconds one uninterrupted controller may take before the benchmark gives up


@dataclass
class Kill:
    delay: float  # seconds after the controller started
    finished_before: int  # cells with a final row when the kill landed
    containers: int  # containers of the run just after the kill
    running: int  # of which running
    stray_processes: bool  # the controller's process group outlived it


@dataclass
class Interrupted:
    kills: list[Kill] = field(default_factory=list)
    starts: int = 0
    wall: float = 0.0
    failures: list[str] = field(default_factory=list)  # resumes that ended neither killed nor complete
    skip_mismatches: list[str] = field(default_factory=list)


def memgrid_binary() -> Path:
    for candidate in (REPO / ".venv/bin/memgrid", Path(sys.executable).parent / "memgrid"):
        if candidate.is_file():
            return candidate
    sys.exit("kill9_resume: no memgrid console script next to this python or in .venv/bin: fix: run `make setup`")


def grid_args(args: argparse.Namespace, run_id: str, runs_dir: Path) -> list[str]:
    tasks = ["--tasks", ",".join(QUICK_TASKS)] if args.quick else []  # else the preset's: every shipped task
    return [str(memgrid_binary()), "grid", *tasks, "--arms", ",".join(QUICK_ARMS if args.quick else FULL_ARMS),
            "--conditions", "present", "--seeds", "1", "--agent", "reader", "--run-id", run_id,
            "--runs-dir", str(runs_dir), "--no-progress"]


def start(argv: list[str], log: Path) -> subprocess.Popen:
    """The console script is a python script run directly, so the child is the controller itself;
    its own session lets us see whether anything outlived it."""
    env = {**os.environ, "MEMGRID_ROOT": str(ROOT), "PYTHONUNBUFFERED": "1"}
    with open(log, "a") as out:
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def output_since(log: Path, mark: int) -> str:
    """What the controllers wrote after byte offset `mark` (the tables are not ASCII: offsets are bytes)."""
    return log.read_bytes()[mark:].decode(errors="replace")


def controller_is_python(pid: int) -> bool:
    try:
        return "python" in Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:
        return False


def kill9(proc: subprocess.Popen) -> tuple[bool, bool]:
    """SIGKILL the controller. Returns (killed: False when it had finished on its own first, stray: something
    else of its process group outlived it, then killed too)."""
    if proc.poll() is None:
        if controller_is_python(proc.pid):
            os.kill(proc.pid, signal.SIGKILL)  # unreaped: should it exit meanwhile, the pid stays its zombie's
        elif proc.poll() is None:
            sys.exit(f"kill9_resume: pid {proc.pid} is not a python process: the kill would miss the controller")
    killed = proc.wait(timeout=30) == -signal.SIGKILL
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # only our own child's group: a survivor would skew the next resume
        return killed, True
    except ProcessLookupError:
        return killed, False


def identity(row: dict) -> tuple:
    """A cell across the two runs: its id hashes image ids too, and those can change between them."""
    return row["task"], row["arm"], row["seed"], row["condition"], row["agent"]


def final_counts(run_dir: Path) -> Counter:
    return Counter(identity(r) for r in Ledger(run_dir).rows() if r["final"])


def run_containers(client, run_id: str) -> tuple[int, int]:
    found = client.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})
    return len(found), sum(c.get("State") == "running" for c in found)


@dataclass
class Reference:
    wall: float
    cells_span: float  # first cell start to last cell end (the summary and report come after)
    startup: float  # a resume's controller start to its first scheduling: imports, images, corpus verify, lock


def reference_run(args, runs_dir: Path, run_id: str, log: Path) -> Reference:
    mark, t0_wall, t0 = log.stat().st_size if log.exists() else 0, time.time(), time.monotonic()
    proc = start(grid_args(args, run_id, runs_dir), log)
    rc = proc.wait(timeout=RUN_TIMEOUT)
    wall = time.monotonic() - t0
    if rc != 0:
        sys.exit(f"kill9_resume: the reference run failed (exit {rc}); its output: {log}\n{output_since(log, mark)[-3000:]}")
    rows = Ledger(runs_dir / run_id).rows()
    first = min(datetime.fromisoformat(r["started_at"]).timestamp() for r in rows)
    last = max(datetime.fromisoformat(r["ended_at"]).timestamp() for r in rows)
    built = "building " in output_since(log, mark)  # a corpus or image build no resume pays again
    startup = startup_probe(args, runs_dir, run_id, log, len(rows)) if built else max(0.0, first - t0_wall)
    return Reference(wall, last - first, startup)


def startup_probe(args, runs_dir: Path, run_id: str, log: Path, rows: int) -> float:
    """Resume the finished reference run and time its start to the line it prints just before scheduling;
    it must rerun nothing."""
    mark = log.stat().st_size
    t0 = time.monotonic()
    proc = start(grid_args(args, run_id, runs_dir), log)
    startup = None
    while proc.poll() is None:
        if startup is None and f"run {run_id}: " in output_since(log, mark):
            startup = time.monotonic() - t0
        time.sleep(0.05)
    output = output_since(log, mark)
    if proc.returncode != 0 or startup is None or len(Ledger(runs_dir / run_id).rows()) != rows \
            or skipped_line(output) != rows:
        sys.exit(f"kill9_resume: resuming the finished reference run failed (exit {proc.returncode}, ledger rows "
                 f"{rows} -> {len(Ledger(runs_dir / run_id).rows())}); its output: {log}\n{output[-3000:]}")
    return startup


def skipped_line(log_text: str) -> int:
    """The 'resumed: N cells already finished were skipped' count of the last controller's output."""
    for line in reversed(log_text.splitlines()):
        if line.startswith("resumed: "):
            return int(line.split()[1])
    return 0


def interrupted_run(args, client, runs_dir: Path, run_id: str, total: int, startup: float, per_cell: float,
                    log: Path) -> Interrupted:
    """Start, kill after a random delay, resume with the same run id; once the kills are spent, resume until a
    controller finishes on its own (exit 0), so the last one also compacts the ledger and writes the report."""
    rng = random.Random(args.seed)
    run_dir = runs_dir / run_id
    result = Interrupted()
    t0 = time.monotonic()
    while len(result.failures) < 3:
        finished = len(final_counts(run_dir)) if run_dir.exists() else 0
        killing = len(result.kills) < args.kills
        share = 2 * (total - finished) * per_cell / (args.kills - len(result.kills) + 1)
        delay = rng.uniform(0, startup + share) if killing else None
        mark = log.stat().st_size if log.exists() else 0
        proc = start(grid_args(args, run_id, runs_dir), log)
        result.starts += 1
        try:
            rc = proc.wait(timeout=delay if killing else RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            before = len(final_counts(run_dir)) if run_dir.exists() else 0
            killed, stray = kill9(proc)
            if not killing:
                result.failures.append(f"start {result.starts} did not finish within {RUN_TIMEOUT} s")
                break
            if killed:
                result.kills.append(Kill(delay, before, *run_containers(client, run_id), stray))
                continue
            rc = proc.returncode
        except BaseException:  # Ctrl-C of the benchmark: the controller must not outlive it
            kill9(proc)
            raise
        output = output_since(log, mark)
        if finished and skipped_line(output) != finished:
            result.skip_mismatches.append(f"start {result.starts}: {finished} cells final before it, "
                                          f"{skipped_line(output)} reported skipped")
        if rc == 0 and "Traceback" not in output:
            break
        last = output.strip().splitlines()[-1] if output.strip() else "(no output)"
        result.failures.append(f"start {result.starts} (after {len(result.kills)} kills) exited {rc}: {last}")
    result.wall = time.monotonic() - t0
    return result


def outcomes(run_dir: Path) -> dict[tuple, tuple]:
    """Per cell, what a reader compares: outcome, admitted, discard reason, checker verdict."""
    return {identity(r): (r["outcome"], r["admitted"], r["discard_reason"], r["checker_passed"])
            for r in Ledger(run_dir).rows() if r["final"]}


def failing_proof(run_dir: Path, cell: tuple) -> str:
    """The resumed cell's first failing gate proof, by name and detail ("" when it has none): why it was
    discarded, which the run folder (kept only with --keep) would otherwise be the only record of."""
    row = next((r for r in Ledger(run_dir).rows() if r["final"] and identity(r) == cell), None)
    failed = next((p for p in json.loads(row["gate_proofs"] or "[]") if not p["passed"]), None) if row else None
    return f"; its {failed['name']} proof: {failed['detail'][:300]}" if failed else ""


def input_changes(ref_dir: Path, run_dir: Path) -> list[str]:
    """Inputs (task, arm, image, corpus digests) that differ between the two runs' locks: another process
    rebuilding images or editing a task on the same checkout makes the comparison one of different cells."""
    a, b = (json.loads((d / "run.json").read_text())["inputs"] for d in (ref_dir, run_dir))
    changes = []
    for kind in sorted(set(a) | set(b)):
        before, after = a.get(kind, {}), b.get(kind, {})
        changes += [f"{kind} {name}" for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]
    return changes


def parquet_matches_journal(run_dir: Path) -> bool:
    journal = Ledger(run_dir).rows()
    table = pq.read_table(run_dir / "ledger.parquet").to_pylist()
    return [(r["cell_id"], r["attempt"]) for r in table] == [(r["cell_id"], r["attempt"]) for r in journal]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=None, help="kills to land (default 20; 2 with --quick)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill delays")
    parser.add_argument("--quick", action="store_true", help="4 cells, 2 kills, no corpus: well under a minute")
    parser.add_argument("--keep", action="store_true", help="keep the temp runs folder (its path is printed)")
    args = parser.parse_args()
    if args.kills is None:
        args.kills = 2 if args.quick else 20
    if args.kills < 0:
        parser.error("--kills must be 0 or more")

    client = connect()
    stamp = f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    ref_id, run_id = f"bench-kill9-ref-{stamp}", f"bench-kill9-{stamp}"
    runs_dir = Path(tempfile.mkdtemp(prefix="memgrid-bench-kill9-"))
    log = runs_dir / "controller.log"
    try:
        ref = reference_run(args, runs_dir, ref_id, log)
        reference = outcomes(runs_dir / ref_id)
        total = json.loads((runs_dir / ref_id / "run.json").read_text())["cells"]
        if len(reference) != total:
            sys.exit(f"kill9_resume: the reference run recorded {len(reference)} of {total} cells; see {log}")
        per_cell = ref.cells_span / total
        tasks = "quick: " + ",".join(QUICK_TASKS) if args.quick else "all tasks"
        print(f"kill9_resume: {total} cells ({tasks} x arms {','.join(QUICK_ARMS if args.quick else FULL_ARMS)} x present "
              f"x reader), seed {args.seed}, root {ROOT}; reference run {ref.wall:.1f} s (cells {ref.cells_span:.1f} s; "
              f"a resume's startup {ref.startup:.1f} s)")

        result = interrupted_run(args, client, runs_dir, run_id, total, ref.startup, per_cell, log)
        run_dir = runs_dir / run_id
        counts = final_counts(run_dir)
        resumed = outcomes(run_dir)
        lost = [c for c in reference if c not in counts]
        duplicated = [c for c, n in counts.items() if n > 1]
        foreign = [c for c in counts if c not in reference]
        agree = sum(resumed.get(c) == o for c, o in reference.items())
        harness_rows = sum(1 for r in Ledger(run_dir).rows() if not r["final"])
        for k, kill in enumerate(result.kills, 1):
            print(f"kill {k}: after {kill.delay:.2f} s, {kill.finished_before}/{total} cells final, "
                  f"{kill.containers} containers of the run left ({kill.running} running)"
                  + ("; processes of its group outlived it" if kill.stray_processes else ""))
        for problem in result.failures + result.skip_mismatches:
            print(f"defect: {problem}")
        for c in lost + duplicated + foreign:
            print(f"defect: cell {'/'.join(map(str, c))}: {counts.get(c, 0)} final rows")
        for c in (c for c, o in reference.items() if c in resumed and resumed[c] != o):
            print(f"defect: cell {'/'.join(map(str, c))}: reference {reference[c]} vs resumed {resumed[c]}"
                  + failing_proof(run_dir, c))
        changed = input_changes(runs_dir / ref_id, run_dir)
        if changed:
            print(f"warning: the runs' inputs differ ({', '.join(changed)}): something changed the checkout or the "
                  "images during the benchmark; rerun it on a quiet checkout")
        tracebacks = log.read_bytes().count(b"Traceback")  # killed controllers' output included
        if tracebacks:
            print(f"defect: {tracebacks} tracebacks in the controllers' output ({log}; --keep keeps it)")
        journal_ok = parquet_matches_journal(run_dir)
        if not journal_ok:
            print("defect: ledger.parquet does not hold the journal's rows")
        alive = max((k.containers for k in result.kills), default=0)
        print(f"controller starts: {result.starts}; harness-error rows (non-final): {harness_rows}; "
              f"parquet matches journal: {journal_ok}; containers of the run after the last resume: "
              f"{run_containers(client, run_id)[0]}")
        print(f"figure: kills performed: {len(result.kills)}")
        print(f"figure: cells lost: {len(lost)} of {total}")
        print(f"figure: cells duplicated: {len(duplicated)} of {total}")
        print(f"figure: outcome agreement with the uninterrupted run: {agree}/{total}")
        print(f"figure: total wall time: {result.wall:.1f} s killed and resumed ({result.starts} controller starts) "
              f"vs {ref.wall:.1f} s uninterrupted")
        print(f"figure: max containers of the run alive after a kill: {alive}")
        bad = (lost or duplicated or foreign or agree != total or result.failures or result.skip_mismatches
               or tracebacks or not journal_ok)
        return 1 if bad else 0
    finally:
        left = cleanup(client, ref_id) + cleanup(client, run_id)
        if left:
            print(f"removed {left} leftover containers by label {RUN_LABEL}")
        if args.keep:
            print(f"kept: {runs_dir}")
        else:
            shutil.rmtree(runs_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
