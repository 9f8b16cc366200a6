"""The protocol seam: what a cell of a memory benchmark is, the phases it runs, how it is scored.

A protocol declares
- its units (coding: tasks; two-session: generated cases), each with a digest that enters the cell
  id, and the (unit, condition) pairs a grid expands into cells;
- how it checks a grid before anything runs (agents it can play, arms it can host);
- `run_cell`: its phases, each a fresh hardened container from a bundle verified inside it
  (`exec.trial.run_phase`), with only the arm's store passing from one phase to the next (its
  digest recorded after the phase and checked before the next starts), and its scoring;
- its result record, stored in the ledger's `result` column as JSON beside the common columns;
- its analysis, printed after a run and in the report.
"""

from typing import ClassVar

from runner.arms.kinds import kind_of
from runner.errors import SpecError
from runner.plan.spec import ArmSpec, GridSpec, TaskSpec


class Protocol:
    name: ClassVar[str]
    description: ClassVar[str]
    # The checkout's folders its cells read once their job is made (the project archive a worker on another
    # node unpacks); None: its cells run only on the controller's machine, for the reason `local_only` gives.
    reads: ClassVar[tuple[str, ...] | None] = None
    local_only: ClassVar[str] = "its cells read this checkout's files"
    ahead: ClassVar[bool] = False  # a cell is one sandbox from bundle(ctx, cell): the local executor may start it early
    # What a cell's checker_passed means in the progress line; None: the protocol scores cells otherwise, so
    # the line shows no such count rather than a 0 that reads as failure.
    passed_label: ClassVar[str | None] = "passed"
    runs_submissions: ClassVar[bool] = False  # it runs a benchmark submission's own scripts (arms/kinds.py)
    # Whether the cell's agent itself talks to the arm's memory server (personal: the harness searches it and the
    # agent answers from what was released), so that only an MCP client can play an arm with a server.
    agent_uses_server: ClassVar[bool] = True

    def unit_ids(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> list[str]:
        """The grid's unit ids, each checked by name (a coding task under tasks/ by default)."""
        task_ids = sorted(tasks) if grid.tasks == "all" else list(grid.tasks)
        for t in task_ids:
            if t not in tasks:
                raise SpecError(grid_path, "tasks", f"names unknown task '{t}'", f"use one of: {', '.join(sorted(tasks))}")
        return task_ids

    def units(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> dict[str, str]:
        """The grid's units by id, each with the digest of everything that defines it."""
        raise NotImplementedError

    def pairs(self, grid: GridSpec, units: list[str], tasks: dict[str, TaskSpec]) -> list[tuple[str, str]]:
        """The (unit, condition) pairs a seed runs, in order."""
        raise NotImplementedError

    def reads_corpus(self) -> bool:
        """Whether its cells may read the coding corpora (arms of a corpus kind)."""
        return False

    def plays(self, arm: ArmSpec, agent: str) -> bool:
        """Whether the grid's cells pair this arm with this agent: every pair, unless the protocol's arm answers for
        itself (personal: a submission answers with its own script, every other arm through the grid's agents)."""
        return True

    def check(self, grid: GridSpec, grid_path, arms: dict[str, ArmSpec], agent_classes: dict) -> None:
        """Refuse, by name, an agent that cannot play this protocol."""
        for name in grid.arms:
            if name in arms and kind_of(arms[name]).submission and not self.runs_submissions:
                raise SpecError(grid_path, "arms", f"names '{name}', a {arms[name].kind} arm, which the {self.name} "
                                "protocol cannot run", "grid it in the personal protocol (protocol: personal)")
        for name, cls in agent_classes.items():
            if cls.protocols is not None and self.name not in cls.protocols:
                raise SpecError(grid_path, "agents", f"names '{name}', which plays only the {', '.join(cls.protocols)} "
                                f"protocol, not {self.name}", "remove it, or use reader or a command agent")
            hooked = [a for a in grid.arms if a in arms and arms[a].hooks and self.plays(arms[a], name)]
            if hooked and not cls.runs_hooks:
                raise SpecError(grid_path, "agents", f"names '{name}', which does not run arm '{hooked[0]}''s hooks: "
                                "each of its cells would be discarded hook_not_fired",
                                f"grid '{hooked[0]}' with an agent that runs hooks (reader), or remove that arm")
            served = [a for a in grid.arms if a in arms and kind_of(arms[a]).own_server(arms[a]) is not None
                      and self.plays(arms[a], name)]
            if served and self.agent_uses_server and not cls.mcp_client:
                raise SpecError(grid_path, "agents", f"names '{name}', which cannot connect to arm '{served[0]}''s MCP "
                                "server: each of its cells would be discarded mcp_server_failed",
                                f"grid '{served[0]}' with an MCP client (reader, claude-code, codex), or remove that arm")

    def unisolated(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> dict[str, str]:
        """The units whose checkers are not isolated, each with why: a grid grades one only when it names it under
        unisolated_checkers (coding: a task.yaml's checker.unisolated)."""
        return {t: spec.checker.unisolated for t, spec in tasks.items() if spec.checker.unisolated}

    def graded_unisolated(self, grid: GridSpec, tasks: dict[str, TaskSpec], task_ids: list[str], grid_path) -> dict[str, str]:
        """Those the grid's cells grade (what run.json records)."""
        from runner.plan.preflight import unisolated_graded

        return unisolated_graded(grid, tasks, task_ids)

    def prepare(self, client, grid: GridSpec, grid_path, images, log=print):
        """What the protocol needs for the whole run before any cell (images, checked keys); kept in the
        TrialContext. None: nothing."""
        return None

    def lock_entries(self, setup) -> dict:
        """What run.json records of the protocol's own set-up (its judges' prompts and digests)."""
        return {}

    def stores(self, client, arms: list[ArmSpec], pairs, settings, run_dir, images_by_arm: dict, *, run_id: str,
               log=print, embedder: str | None = None, parallel: int = 1, build=None) -> dict:
        """The stores its cells start from, keyed (arm, condition, seed); `embedder`: the shared embedder's
        image, for arms with `embedder: shared`; `parallel`: how many to ingest at once (the run's concurrency);
        `build`: where a store is ingested (runner.arms.ingest.StoreBuild; default: this engine)."""
        return {}

    def run_cell(self, ctx, cell, attempt: int, bundle=None):
        raise NotImplementedError

    def job_bundle(self, ctx, cell):
        """The bundle a cell's job carries, built on the controller; None: its phases build their bundles on
        the node, from the project archive and `job_stores`, each verified inside its sandbox as here."""
        return None

    def job_stores(self, ctx, cell) -> dict:
        """The stores a cell's job carries, keyed as ctx.stores; a store whose files the job bundle already
        holds travels without them (its digest and report only)."""
        return {}

    def after_run(self, ctx, rows: list[dict], log=print) -> None:
        """What the protocol does once a run's cells are done (a resumed run's too), over each cell's final row:
        e.g. a hosted benchmark's own grader, its output kept in the run folder. Nothing by default."""
        return None

    def run_tables(self, run_dir) -> list[tuple[str, list[str], list[list[str]], str]]:
        """Tables of what `after_run` kept in the run folder, printed after the summary: (title, columns, rows,
        a note under it)."""
        return []

    def summary(self, rows: list[dict], planned: int | None = None) -> list[dict]:
        """One line per group for the end of a run: what the protocol measures, by arm and agent; a line's
        `flags` name what a reader must not miss (a canary caught). `rows`: the run's final rows; `planned`: the
        cells its lock plans (None: not known), for a figure defined on a whole run alone (a benchmark's reward)."""
        raise NotImplementedError

    def summary_table(self, summary: list[dict]) -> tuple[list[str], list[list[str]]]:
        """The summary as a table's columns and rows of text."""
        raise NotImplementedError

    def extra_tables(self, summary: list[dict]) -> list[tuple[str, list[str], list[list[str]], str]]:
        """Tables printed after the summary: (title, columns, rows, a note under it)."""
        return []

    def fixture(self, root, unit: str):
        """The folder a unit's workspace starts from in this checkout (the viewer diffs the artifact against
        it); None: its cells have no fixture, or the unit is gone."""
        return None

    def report_html(self, run_id: str, lock: dict, summary: list[dict]) -> str | None:
        """Its own self-contained HTML page for `memgrid report --html`; None: it has none."""
        return None

    def page(self, run_dir, lock: dict, summary: list[dict]) -> str:
        """The run's HTML page (`memgrid report`, the viewer's report.html): its own, or else the tables the terminal
        prints after a run, what `after_run` kept among them (a hosted suite's own grader)."""
        own = self.report_html(run_dir.name, lock, summary)
        if own is not None:
            return own
        from runner.results.page import tables_page

        tables = [("summary", *self.summary_table(summary), ""), *self.extra_tables(summary), *self.run_tables(run_dir)]
        flags = [f"{s['agent']} x {s['arm']}: {f}" for s in summary for f in s.get("flags", ())]
        return tables_page(self.name, run_dir.name, lock, flags, tables)
