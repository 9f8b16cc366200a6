"""A run (Harbor's job): resolve inputs, lock them in run.json, expand, schedule, ledger, resume.

Resuming an existing run id skips every cell with a final ledger row and reruns the rest;
changed inputs are refused with a message naming each change.
"""

import errno
import fcntl
import json
import os
import platform
import re
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from runner.arms.kinds import kind_of
from runner import __version__
from runner.env.bundle import arm_instructions
from runner.digest import sha256_bytes, sha256_json, tree_digest
from runner.errors import DiskFull, UserError
from runner.grading.gate import HARNESS_ERROR, MAX_ATTEMPTS, RETRIED
from runner.plan.grid import CellSpec, GridInputs, arm_order, corpus_key, expand, select
from runner.plan.players import model_of
from runner.env.images import IMAGES_DIR, ImageRef, ImageSet, context_digest, image_recipes
from runner.results.ledger import Ledger, LedgerRow, finished_cells, latest_attempts
from runner.plan.spec import ArmSpec, GridSpec, TaskSpec, image_arm, other_suites_tasks
from runner.protocols.registry import protocol_named
from runner.agents.registry import grid_players
from runner.exec.executors import Executor, ExecutorSettings, open_executor
from runner.exec.trial import DISK_FULL, TrialContext, disk_full, write_json


@dataclass
class RunPlan:
    run_id: str
    run_dir: Path
    grid: GridSpec
    task_ids: list[str]
    inputs: GridInputs
    cells: list[CellSpec]
    unisolated_checkers: dict[str, str]  # the graded tasks whose checkers are not isolated -> why (opted in by name)


@dataclass
class RunSummary:
    run_id: str
    run_dir: Path
    total: int
    skipped: int
    recorded: int
    interrupted: bool
    budget_stop: dict | None = None  # why the run stopped scheduling at its budget (as recorded in run.json)
    executor: dict | None = None  # what the executor reports (a distributed one: cells per node, submit -> start)


@dataclass
class Budget:
    """The run's spend cap at its prices. A cell starts only while the priced spend of finished cells plus
    every cell in flight, each costed at the dearest cell so far, stays within it; until one cell is priced,
    only one is in flight. A cell whose cost went unobserved counts at that dearest cost too."""
    limit_usd: float
    spent_usd: float = 0.0
    dearest_usd: float | None = None  # the most one recorded cell cost

    def add(self, cost_usd: float | None) -> None:
        if cost_usd is not None:
            self.dearest_usd = max(self.dearest_usd or 0.0, cost_usd)
        self.spent_usd += cost_usd if cost_usd is not None else (self.dearest_usd or 0.0)

    def allows(self, in_flight: int) -> bool:
        if self.dearest_usd is None:
            return in_flight == 0 and self.spent_usd < self.limit_usd
        return self.spent_usd + (in_flight + 1) * self.dearest_usd <= self.limit_usd

    def stop_record(self, cells_left: int) -> dict:
        return {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "budget_usd": self.limit_usd,
                "spent_usd": round(self.spent_usd, 6), "dearest_cell_usd": self.dearest_usd, "cells_left": cells_left,
                "detail": f"spent ${self.spent_usd:.4f} of ${self.limit_usd:.4f}; the next cell, costed at the dearest "
                          f"so far (${self.dearest_usd or 0:.4f}), would pass it; {cells_left} cells not started"}


@dataclass
class SpendCaps:
    """The run's spend caps: over all its cells (budget_usd) and, in a grid of several models, over each model's
    (budgets_usd). A cell starts only while every cap it counts against allows it; a model whose cap holds its cells
    back leaves the other models' cells to run."""
    total: Budget | None = None
    per_model: dict[str, Budget] = field(default_factory=dict)

    @classmethod
    def of(cls, budget_usd: float | None, budgets_usd: dict | None) -> "SpendCaps | None":
        if budget_usd is None and not budgets_usd:
            return None
        return cls(None if budget_usd is None else Budget(budget_usd),
                   {m: Budget(usd) for m, usd in (budgets_usd or {}).items()})

    def add(self, agent: str, cost_usd: float | None) -> None:
        """A finished cell's cost, against the total and its model's cap (`agent`: the cell's player)."""
        if self.total is not None:
            self.total.add(cost_usd)
        if model_of(agent) in self.per_model:
            self.per_model[model_of(agent)].add(cost_usd)

    def allows(self, agent: str, in_flight: list[str]) -> bool:
        """Whether a cell of this player may start beside the cells in flight (their players)."""
        if self.total is not None and not self.total.allows(len(in_flight)):
            return False
        cap = self.per_model.get(model_of(agent))
        return cap is None or cap.allows(sum(model_of(a) == model_of(agent) for a in in_flight))

    def stop_record(self, left: list[str]) -> dict:
        """Why the run stopped with cells left (their players): the total's record when it is what stopped, and
        each model's whose cap holds its cells back."""
        total_stopped = self.total is not None and not self.total.allows(0)
        held = {m: cap for m, cap in self.per_model.items() if any(model_of(a) == m for a in left) and not cap.allows(0)}
        record = (self.total.stop_record(len(left)) if total_stopped else
                  {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cells_left": len(left)})
        if held:
            record["models"] = {m: {**cap.stop_record(sum(model_of(a) == m for a in left)), "budget_usd": cap.limit_usd}
                                for m, cap in held.items()}
        record["detail"] = "; ".join([*([record["detail"]] if total_stopped else []),
                                      *(f"model {m}: {r['detail']}" for m, r in record.get("models", {}).items())])
        return record


RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def default_run_id(grid: GridSpec) -> str:
    return f"{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}-{grid.name}"


def git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def corpus_pairs(grid: GridSpec, arms: dict[str, ArmSpec]) -> list[tuple[str, int]]:
    """The (condition, seed) corpora a grid's cells read; none when no arm is of a corpus kind, or its
    protocol reads no corpus."""
    if not protocol_named(grid.protocol).reads_corpus() or not any(kind_of(arms[a]).reads_corpus
                                                                    for a in grid.arms if a in arms):
        return []
    return [(c, s) for s in range(grid.seeds) for c in grid.conditions]


def check_run_id(run_id: str) -> None:
    """A run id names a folder under the runs dir: a plain name, never a path."""
    if not RUN_ID.match(run_id):
        raise UserError(f"--run-id {run_id!r}: not a plain folder name: fix: use letters, digits, '.', '_' and '-' "
                        "(at most 100), starting with a letter or digit")


def plan_run(grid: GridSpec, grid_path, tasks: dict[str, TaskSpec], arms: dict[str, ArmSpec], images: ImageSet,
             runs_dir: Path, run_id: str | None, corpora: dict[tuple[str, int], str] | None = None,
             agent_inputs: dict[str, str] | None = None, command_agents: dict | None = None,
             embedder: ImageRef | None = None, by_model: dict[str, dict[str, str]] | None = None) -> RunPlan:
    """`embedder`: the shared embedder's image when an arm uses it (its id joins the images every cell id hashes);
    `agent_inputs`: the model agents' inputs (a grid of one model), `by_model`: each model's (a grid of several)."""
    run_id = run_id or default_run_id(grid)
    check_run_id(run_id)
    command_agents = command_agents or {}
    protocol = protocol_named(grid.protocol, grid_path)
    _, arm_names = select(grid, protocol, tasks, arms, grid_path)
    units = protocol.units(grid, tasks, grid_path)
    task_ids = list(units)
    # the arms' checkout (arms/<name>/ of it) and its other suites' tasks, read once rather than once per arm
    foreign = {root: other_suites_tasks(root, grid.suite) for root in {arms[a].root.parent.parent for a in arm_names}}
    inputs = GridInputs(tasks=units,
                        arms={a: arm_digest(arms[a], arms, foreign[arms[a].root.parent.parent]) for a in arm_names},
                        images=images.ids() | ({"embedder": embedder.id} if embedder else {}),
                        corpora={corpus_key(c, s): d for (c, s), d in sorted((corpora or {}).items())},
                        agent=dict(agent_inputs or {}), by_model=dict(by_model or {}))
    corpus_arms = frozenset(a for a in arm_names if kind_of(arms[a]).reads_corpus and protocol.reads_corpus())
    cells = expand(grid, task_ids, tasks, inputs, corpus_arms, grid_players(grid, command_agents),
                   protocol.pairs(grid, task_ids, tasks),
                   lambda arm, agent: protocol.plays(arms[arm], agent))
    return RunPlan(run_id, runs_dir / run_id, grid, task_ids, inputs, cells,
                   protocol.graded_unisolated(grid, tasks, task_ids, grid_path))


def arm_digest(arm: ArmSpec, arms: dict[str, ArmSpec], foreign_tasks: frozenset[str] = frozenset()) -> str:
    """An arm folder's digest; an arm that runs in another arm's image also hashes that folder, which defines it.
    `foreign_tasks`: tasks of other suites than the grid's, whose per-task files (files: tasks/{task}/...) the
    digest leaves out, so importing a suite (which writes claude_md's and placebo's files for its tasks) changes no
    cell id of another suite."""
    source = image_arm(arm, arms)
    own = tree_digest(arm.root, per_task_paths(arm, foreign_tasks))
    return own if source is arm else sha256_json([own, tree_digest(source.root)])


def per_task_paths(arm: ArmSpec, task_ids) -> tuple[str, ...]:
    """The arm's files for these tasks (its files whose source names {task}), relative to the arm's folder."""
    return tuple(sorted(f.source.replace("{task}", t) for f in arm.files if "{task}" in f.source for t in task_ids))


def embedders(arms: list[ArmSpec], embedder: ImageRef | None) -> dict[str, dict]:
    """Per arm, the embedder its cells use: the shared sidecar's image and model files, or the product's own
    (the model files its image carries out of pinned wheels; "none" when it carries none)."""
    from runner.arms.ingest import model_files, own_embedder

    shared = None if embedder is None else {
        "kind": "shared", "image": {"tag": embedder.tag, "id": embedder.id},
        "recipe": sha256_json(context_digest(IMAGES_DIR / "embedder")), "model_files": model_files(IMAGES_DIR / "embedder")}
    return {a.name: shared if a.embedder == "shared" else own_embedder(a) for a in sorted(arms, key=lambda a: a.name)}


def lock_document(plan: RunPlan, images: ImageSet, client, root: Path, arms: list[ArmSpec] = (),
                  arm_images: dict | None = None, embedder: ImageRef | None = None) -> dict:
    version = client.version()
    instructions = {a.name: arm_instructions(a).encode() for a in arms}
    return {
        "run_id": plan.run_id,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "grid": {**plan.grid.as_dict(), "tasks": plan.task_ids},
        "inputs": plan.inputs.as_dict(),
        "image_tags": images.tags(),
        "image_recipes": image_recipes(client, images, sorted({root / "arms" / ref.role.removeprefix("arm:")
                                                                for ref in (arm_images or {}).values()})),
        "arm_images": {name: {"tag": ref.tag, "id": ref.id} for name, ref in sorted((arm_images or {}).items())},
        "embedders": embedders(list(arms), embedder),
        "instructions": {name: {"bytes": len(text), "sha256": sha256_bytes(text)} for name, text in sorted(instructions.items())},
        "arm_order": {str(s): arm_order(plan.grid.arms, s) for s in range(plan.grid.seeds)},
        "cells": len(plan.cells),
        "versions": {"memgrid": __version__, "python": platform.python_version(),
                     "docker_engine": version.get("Version"), "docker_api": version.get("ApiVersion")},
        "git_commit": git_commit(root),
        "prices": None,
        # a lock without unisolated checkers stays as it was before they could be imported
        **({"unisolated_checkers": plan.unisolated_checkers} if plan.unisolated_checkers else {}),
    }


def lock_differences(old: dict, new: dict) -> list[str]:
    """What changed between a run's lock and the inputs now, by name."""
    changes = []
    for key in sorted((set(old["grid"]) | set(new["grid"])) - {"budget_usd", "budgets_usd"}):  # a resume may raise them
        if old["grid"].get(key) != new["grid"].get(key):
            changes.append(f"grid.{key}: {old['grid'].get(key)!r} -> {new['grid'].get(key)!r}")
    for model in sorted(set(old["inputs"].get("by_model", {})) & set(new["inputs"].get("by_model", {}))):
        before, after = old["inputs"]["by_model"][model], new["inputs"]["by_model"][model]
        changes += [f"agent input '{name}' of model {model} digest {(before.get(name) or 'absent')[:19]} -> "
                    f"{(after.get(name) or 'absent')[:19]}" for name in sorted(set(before) | set(after))
                    if before.get(name) != after.get(name)]
    for kind in ("tasks", "arms", "images", "corpora", "agent"):
        before, after = old["inputs"].get(kind, {}), new["inputs"].get(kind, {})
        for name in sorted(set(before) | set(after)):
            if before.get(name) != after.get(name):
                b, a = (before.get(name) or "absent")[:19], (after.get(name) or "absent")[:19]
                label = {"corpora": "corpus", "agent": "agent input"}.get(kind, kind[:-1])
                changes.append(f"{label} '{name}' digest {b} -> {a}")
    return changes


def resolve_run_dir(run: str, runs_dir: Path) -> Path:
    """A run given as an id under runs_dir or as a folder path; it must hold the run's lock."""
    run_dir = Path(run) if Path(run).is_dir() else runs_dir / run
    if not (run_dir / "run.json").is_file():
        raise UserError(f"{run_dir}: no run.json: fix: give a run id under {runs_dir}/ (ls {runs_dir}) or a run folder path")
    return run_dir


_CONTROLLER_LOCKS: dict[Path, int] = {}  # run folder -> the open descriptor that holds its flock


def claim_run(run_dir: Path) -> None:
    """One controller per run: a second `memgrid grid --run-id` on a running run would remove the
    first one's containers and append to its ledger. The flock is the kernel's, so it goes with the
    process however it ends (kill -9 included) and a resume after a crash is never refused."""
    run_dir = run_dir.resolve()
    if run_dir in _CONTROLLER_LOCKS:
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / "controller.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise UserError(f"{run_dir}: run {run_dir.name} is being run by another memgrid process (pid {holder}): "
                        "fix: wait for it to finish (or stop it), or start a new run (omit --run-id)") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _CONTROLLER_LOCKS[run_dir] = fd


def open_run(plan: RunPlan, lock: dict) -> Ledger:
    """Create the run folder and lock, or check an existing lock still matches (resume)."""
    claim_run(plan.run_dir)
    lock_path = plan.run_dir / "run.json"
    if lock_path.exists():
        old = json.loads(lock_path.read_text())
        changes = lock_differences(old, lock)
        if changes:
            raise UserError(f"run {plan.run_id} was started with other inputs ({'; '.join(changes)}): "
                            f"fix: start a new run (omit --run-id) or restore the inputs")
    else:
        plan.run_dir.mkdir(parents=True, exist_ok=True)
        tmp = lock_path.with_suffix(".json.tmp")
        write_json(tmp, lock)
        os.replace(tmp, lock_path)
    ledger = Ledger(plan.run_dir)
    ledger.open()
    return ledger


def _counts_text(counts: dict, passed_label: str | None) -> str:
    passed = f" · {passed_label} {counts['passed']}" if passed_label else ""
    return f"admitted {counts['admitted']}{passed} · errors {counts['errors']}"


def _progress(show: bool) -> Progress:
    console = Console()
    if not console.is_terminal:  # plain lines (see on_row) should not wrap at rich's 80-column default
        console = Console(width=130)
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[counts]}"),
                    TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[nodes]}"),
                    console=console,
                    disable=not show or not console.is_terminal)


class Scheduler:
    """Keeps at most `executor.slots` cells in flight and records each finished one before scheduling
    the next, so a kill loses only the cells in flight. One final row per cell id: an attempt that
    finishes for a cell already final (a distributed executor ran it twice) is not recorded."""

    def __init__(self, ctx: TrialContext, ledger: Ledger, executor: Executor, on_row, caps: SpendCaps | None = None,
                 final: set[str] = frozenset()):
        self.ctx, self.ledger, self.executor, self.on_row = ctx, ledger, executor, on_row
        self.caps = caps
        self.in_flight = {}
        self.recorded = 0
        self.budget_stop: dict | None = None
        self.final = set(final)
        self.queue: list[CellSpec] = []  # cells not yet submitted, the next one last
        executor.upcoming = self.upcoming

    def record(self, row: LedgerRow) -> None:
        if row.cell_id in self.final:
            return
        if row.final:
            self.final.add(row.cell_id)
        self.ledger.append(row)
        self.recorded += 1
        if self.caps is not None:
            self.caps.add(row.agent, row.cost_usd)
        self.on_row(row)

    def _next(self) -> int | None:
        """Where in the queue the next cell the caps allow is (the queue's end first); None: none is."""
        if self.caps is None:
            return len(self.queue) - 1 if self.queue else None
        flying = [c.agent for c in self.in_flight.values()]
        return next((i for i in range(len(self.queue) - 1, -1, -1) if self.caps.allows(self.queue[i].agent, flying)), None)

    def upcoming(self) -> CellSpec | None:
        """The cell this scheduler submits next (an executor may start its sandbox ahead); None: none."""
        i = None if self.budget_stop is not None else self._next()
        return None if i is None else self.queue[i]

    def run(self, pending: list[CellSpec], attempts: dict[str, int]) -> None:
        self.queue = queue = list(reversed(pending))
        while True:
            while len(self.in_flight) < self.executor.slots and queue and self.budget_stop is None:
                i = self._next()
                if i is None:
                    if not self.in_flight:  # nothing left that could free room: this is where the run stops
                        self.budget_stop = self.caps.stop_record([c.agent for c in queue])
                    break
                cell = queue.pop(i)
                self.in_flight[self.executor.submit(cell, attempts.get(cell.cell_id, 0) + 1)] = cell
            if not self.in_flight:
                return
            for handle in self.executor.wait(list(self.in_flight), timeout=1.0):
                cell = self.in_flight.pop(handle)
                row = self.executor.result(handle)
                self.record(row)
                if row.error_class == DISK_FULL:  # the cell could not write its own files: nor can the next ones
                    raise OSError(errno.ENOSPC, row.error_detail)
                if row.discard_reason in RETRIED and not row.final and row.attempt < MAX_ATTEMPTS \
                        and not self.ctx.cancel.is_set():
                    self.in_flight[self.executor.submit(cell, row.attempt + 1)] = cell

    def stop(self) -> None:
        """Ctrl-C: schedule nothing more, remove the run's containers, keep only cells that really finished."""
        self.ctx.cancel.set()
        self.executor.cancel(list(self.in_flight))
        self.executor.remove_containers()
        for handle in self.in_flight:
            try:
                row = self.executor.result(handle, timeout=120)
            except Exception:  # Cancelled, or the removal broke the cell: it reruns on resume
                continue
            if row.final:
                try:
                    self.record(row)
                except OSError as e:  # a full disk: the cell reruns on resume
                    if not disk_full(e):
                        raise
        self.executor.remove_containers()


@contextmanager
def sigterm_as_interrupt():
    """`kill`, a CI timeout or a batch system stops the run the way Ctrl-C does: no new cells, this run's
    containers removed, the ledger consistent. A grid started as a background job of a script cannot be
    stopped with SIGINT at all (the shell leaves it ignored). The previous handler is back once it has
    fired, so a second SIGTERM during the clean-up kills outright. Python takes signals only on the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def execute(ctx: TrialContext, ledger: Ledger, cells: list[CellSpec], concurrency: int, show_progress: bool = True,
            budget_usd: float | None = None, executor: ExecutorSettings | None = None,
            budgets_usd: dict | None = None) -> RunSummary:
    """`executor`: where the cells run (default: the local thread pool, `concurrency` at a time); `budget_usd`,
    `budgets_usd`: the run's spend caps (SpendCaps)."""
    rows = ledger.rows()
    caps = SpendCaps.of(budget_usd, budgets_usd)
    if caps is not None:
        for r in rows:  # what the run spent before this resume counts against its caps
            caps.add(r["agent"], r.get("cost_usd"))
    done = finished_cells(rows)
    attempts: dict[str, int] = {}
    for r in rows:
        attempts[r["cell_id"]] = max(attempts.get(r["cell_id"], 0), r["attempt"])
    pending = [c for c in cells if c.cell_id not in done]
    settings = executor or ExecutorSettings(concurrency=concurrency)

    counts = {"admitted": 0, "passed": 0, "errors": 0}
    for r in latest_attempts(rows).values():
        if r["final"]:
            counts["admitted"] += r["admitted"]
            counts["passed"] += bool(r["checker_passed"])
    interrupted = False
    full: OSError | None = None  # the disk the run writes to filled up
    try:
        with open_executor(ctx, settings, pending) as runner, _progress(show_progress) as progress:
            # A previous controller that died leaves its containers behind; they belong to no live cell.
            runner.remove_containers()
            label = ctx.protocol.passed_label
            bar = progress.add_task(ctx.run_id, total=len(cells), completed=len(cells) - len(pending), nodes="",
                                    counts=_counts_text(counts, label))

            # Without a terminal (CI, make | tee) the bar cannot redraw: print a plain line every tenth.
            plain = show_progress and not progress.console.is_terminal
            step, started = max(1, len(pending) // 10), time.monotonic()

            def on_row(row: LedgerRow) -> None:
                counts["admitted"] += row.admitted
                counts["passed"] += bool(row.checker_passed)
                counts["errors"] += row.discard_reason == HARNESS_ERROR
                # A distributed executor's nodes, each with its cells running / attempts done.
                nodes = "nodes " + ", ".join(f"{n} {r}/{d}" for n, (r, d) in runner.nodes().items()) if runner.nodes() else ""
                progress.update(bar, advance=1 if row.final else 0, nodes=nodes, counts=_counts_text(counts, label))
                done = int(progress.tasks[0].completed)
                if plain and (scheduler.recorded % step == 0 or done == len(cells)):
                    progress.console.print(f"{ctx.run_id}: {done}/{len(cells)} cells · {_counts_text(counts, label)} · "
                                           f"{time.monotonic() - started:.0f}s" + (f" · {nodes}" if nodes else ""),
                                           highlight=False)

            scheduler = Scheduler(ctx, ledger, runner, on_row, caps, done)
            try:
                with sigterm_as_interrupt():
                    scheduler.run(pending, attempts)
            except KeyboardInterrupt:
                interrupted = True
                progress.console.print("[yellow]interrupted: no new cells; removing this run's containers…")
                scheduler.stop()
            except OSError as e:
                if not disk_full(e):
                    raise
                full = e
                progress.console.print("[red]the disk is full: no new cells; removing this run's containers…")
                scheduler.stop()
            stats = runner.stats()
    finally:
        try:
            ledger.compact()  # whatever escaped, the parquet matches the journal
        except OSError as e:  # on a full disk the journal is the record; the resume writes the parquet
            if not disk_full(e):
                raise
            full = full or e
    if full is not None:
        raise DiskFull(disk_full_line(ctx, len(cells), len(finished_cells(ledger.rows())), full))
    if scheduler.budget_stop is not None:
        record_budget_stop(ctx.run_dir, scheduler.budget_stop)
    return RunSummary(ctx.run_id, ctx.run_dir, len(cells), len(cells) - len(pending), scheduler.recorded, interrupted,
                      scheduler.budget_stop, stats or None)


def disk_full_line(ctx: TrialContext, total: int, finished: int, e: OSError) -> str:
    what = f"writing {e.filename}" if e.filename else (e.strerror or str(e))
    return (f"run {ctx.run_id} stopped: no space left on the disk of {ctx.run_dir} ({what}); {finished} of {total} cells "
            "are finished and kept in its ledger, the cells in flight rerun on resume: fix: free space on that disk (old "
            f"runs/ folders), then run the same command again: its run id {ctx.run_id} resumes the run")


def amend_lock(run_dir: Path, change: Callable[[dict], None]) -> None:
    """Apply `change` to run.json atomically: what a run learns after its lock (a budget stop, its stores'
    costs) goes beside the inputs, never into what a resume compares (grid and inputs)."""
    path = run_dir / "run.json"
    lock = json.loads(path.read_text())
    change(lock)
    tmp = path.with_suffix(".json.tmp")
    write_json(tmp, lock)
    os.replace(tmp, path)


def record_budget_stop(run_dir: Path, stop: dict) -> None:
    """Append the stop to run.json's `budget_stops`: the lock says the run stopped at its budget."""
    amend_lock(run_dir, lambda lock: lock.setdefault("budget_stops", []).append(stop))
