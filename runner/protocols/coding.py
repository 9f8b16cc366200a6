"""The coding protocol: one read-only session over the condition's memory, one artifact, one checker.

A unit is a task folder (tasks/<id>); a cell is task x condition x arm x agent x seed. The session
runs once (phase "session"), the workspace is exported and graded by the task's checker in its own
container, and the damage detector names a wrong rule the artifact applied. Its analysis is
results/analysis.py (baselines, floors, paired contrasts) and its report results/report.py.

Files land in runs/<run_id>/cells/<cell_id>/: bundle.manifest, transcript.jsonl, proof.json,
export.json, artifact.tar, checker.log, verdict.json.
"""

import json
import threading
import time
from dataclasses import asdict, replace

from runner.agents.base import ReferenceChannel
from runner.agents.reference import task_options
from runner.agents.registry import agent_class
from runner.arms.ingest import ensure_stores
from runner.arms.kinds import kind_of
from runner.digest import tree_digest
from runner.env.archive import Entry, pack
from runner.env.bundle import Bundle, build_bundle, tree_entries
from runner.env.sandbox import MIB
from runner.exec.trial import (SETUP_SECONDS, VERIFY_SECONDS, PhaseSpec, TrialContext, agent_config, behind, cell_memory,
                               cell_failure, new_row, now, run_phase, session_fields, store_of, write_json)
from runner.grading import gate
from runner.env.overlap import Ahead
from runner.grading.checker import CheckerContainer, checker_bound, checker_spec, outcome_of, run_checker
from runner.plan.grid import CellSpec
from runner.plan.spec import GridSpec, TaskSpec, provider, suite_of_task
from runner.protocols.base import Protocol
from runner.results.ledger import LedgerRow



def reader_channel(task: TaskSpec) -> ReferenceChannel:
    """The reader's options (the fact's terms, each wrong rule's markers) and the solution of each."""
    options = task_options(task)
    entries = [Entry("options.json", json.dumps(options, indent=1).encode())]
    for option in ["naive", *options]:
        slug = option.replace("/", "__")
        entries += [Entry(f"solutions/{slug}/{e.path.removeprefix('s/')}", e.data, e.mode)
                    for e in tree_entries(task.reference(option), "s")]
    return ReferenceChannel("options", tuple(entries), (), {"options": options})


class CodingProtocol(Protocol):
    name = "coding"
    reads = ("tasks", "arms")
    ahead = True
    description = ("A coding task per cell under a corpus condition: one session over the arm's memory, "
                   "the workspace graded by the task's hidden checker, damage detected by name.")

    def units(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> dict[str, str]:
        ids = sorted(tasks) if grid.tasks == "all" else list(grid.tasks)
        return {t: tree_digest(tasks[t].root) for t in ids}

    def pairs(self, grid: GridSpec, units: list[str], tasks: dict[str, TaskSpec]) -> list[tuple[str, str]]:
        return [(t, c) for t in units for c in grid.conditions if c in tasks[t].conditions]

    def fixture(self, root, unit: str):
        suite = suite_of_task(root, unit) if (root / "tasks").is_dir() else None  # the viewer may run away from a checkout
        folder = suite.tasks_dir / unit / "fixture" if suite else None
        return folder if folder and folder.is_dir() else None

    def reads_corpus(self) -> bool:
        return True

    def stores(self, client, arms, pairs, settings, run_dir, images_by_arm, *, run_id, log=print, embedder=None,
               parallel=1, build=None) -> dict:
        """Each arm's own ingest of each condition's corpus, frozen; every cell gets a fresh copy."""
        return ensure_stores(client, arms, pairs, settings, run_dir, images_by_arm, run_id=run_id, log=log,
                             embedder=embedder, parallel=parallel, build=build) if pairs else {}

    def bundle(self, ctx: TrialContext, cell: CellSpec) -> Bundle:
        task, arm = ctx.tasks[cell.task], ctx.arms[cell.arm]
        config = agent_config(cell, arm, provider(arm, ctx.arms))
        store = store_of(ctx, cell).entries if kind_of(arm).ingests else ()
        extra = agent_class(cell.agent, ctx.command_agents).bundle_entries(arm, config)
        return build_bundle(task, arm, config, kind_of(arm).memory_entries(arm, cell_memory(ctx, cell, store)) + extra)

    def job_bundle(self, ctx: TrialContext, cell: CellSpec) -> Bundle:
        """Built here, where the corpora and the frozen stores are; the node runs its one phase from it."""
        return self.bundle(ctx, cell)

    def job_stores(self, ctx: TrialContext, cell: CellSpec) -> dict:
        arm = ctx.arms[cell.arm]
        if not kind_of(arm).ingests:
            return {}
        key = (provider(arm, ctx.arms).name, cell.condition, cell.seed)
        return {key: replace(ctx.stores[key], entries=())}  # its files are in the bundle; the row needs its digest and report

    def run_cell(self, ctx: TrialContext, cell: CellSpec, attempt: int, bundle: Bundle | None = None) -> LedgerRow:
        task, arm = ctx.tasks[cell.task], ctx.arms[cell.arm]
        cell_dir = ctx.run_dir / "cells" / cell.cell_id
        cell_dir.mkdir(parents=True, exist_ok=True)
        started_at, t0 = now(), time.monotonic()
        row = new_row(ctx, cell, attempt)

        def finish(**updates) -> LedgerRow:
            row.update(updates)
            return LedgerRow(**row, started_at=started_at, ended_at=now(), wall_seconds=round(time.monotonic() - t0, 3))

        # The checker's container starts now, beside the sandbox, so its start overlaps the session; it
        # sleeps until the artifact is exported, at most as long as the whole cell may take.
        checker = CheckerContainer(ctx.client, ctx.images.checker.tag, checker_spec(task), run_id=ctx.run_id,
                                   cell_id=cell.cell_id, limits=ctx.limits,
                                   lifetime=SETUP_SECONDS + task.agent_seconds + VERIFY_SECONDS + 60 + checker_bound(task))
        ahead = Ahead("the checker container's start", checker.start)
        removals = []  # the cell's removals under way, the sandbox's and the checker's
        try:
            if bundle is None and ctx.ahead is not None:  # built with the sandbox started ahead for this cell
                bundle = ctx.ahead.bundle(cell)
            bundle = bundle or self.bundle(ctx, cell)
            row["bundle_digest"] = bundle.digest
            store_report = None
            if kind_of(arm).ingests:
                row["store_digest"] = store_of(ctx, cell).digest
                store_report = store_of(ctx, cell).report
            (cell_dir / "bundle.manifest").write_text(bundle.manifest)
            ctx.check_cancel()
            phase = PhaseSpec("session", task.prompt, bundle, cell_dir, task.agent_seconds, reader_channel(task),
                              artifact_bytes=task.artifact_mib * MIB, disk_mib=task.disk_mib, store_report=store_report)
            session = run_phase(ctx, cell, phase, attempt)
            try:
                row.update(session_fields(session))
                decision = session.decision
                if not decision.admitted:
                    # A wiring failure gets another attempt (at most MAX_ATTEMPTS), decided on the gate alone.
                    retry = decision.discard_reason in gate.WIRING and attempt < gate.MAX_ATTEMPTS
                    return finish(final=not retry)  # discarded, not scored
                ctx.check_cancel()
                export = session.exported
                write_json(cell_dir / "export.json", export.record())
                if export.too_large:
                    # The agent's own doing: a scored failure; the checker never sees a partial artifact.
                    detail = (f"the workspace passed the artifact cap of {export.cap_bytes // MIB} MiB at "
                              f"{export.over_cap_path} (export stopped there)")
                    return finish(checker_passed=False, checker_detail=detail, outcome="neutral_failure",
                                  error_class="artifact_too_large", error_detail=detail)
                artifact = list(export.entries)
                (cell_dir / "artifact.tar").write_bytes(pack(artifact))
                ahead.result(SETUP_SECONDS)
                verdict, log = run_checker(ctx.client, ctx.images.checker.tag, task, artifact,
                                           run_id=ctx.run_id, cell_id=cell.cell_id, container=checker)
            finally:
                removals.append(session.remover)
            (cell_dir / "checker.log").write_text(log)
            write_json(cell_dir / "verdict.json", asdict(verdict))
            return finish(checker_passed=verdict.passed, checker_exit_code=verdict.exit_code,
                          checker_detail=verdict.detail, checker_seconds=verdict.seconds,
                          outcome=outcome_of(verdict, cell.condition),
                          damage_fired=None if verdict.fired is None else json.dumps(list(verdict.fired)),
                          error_class="checker_timeout" if verdict.timed_out else row["error_class"])
        except Exception as e:
            return finish(**cell_failure(ctx, e))
        finally:
            # After its start has ended: a start still creating the container removes it itself, and the
            # run waits for this removal, not for the start.
            removals.append(threading.Thread(target=lambda: (ahead.wait(SETUP_SECONDS), checker.stop()), daemon=True))
            removals[-1].start()
            behind(ctx, removals)
