"""The `memgrid` command line (typer). Errors a user can fix print one line and exit 2."""

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from runner.errors import UserError
from runner.plan.spec import DEFAULT_SUITE, project_root
from runner.results.run_lock import load_lock
from runner.sources import registry as sources  # the formats' names and help: the CLI names none itself



def command_group(help: str, **options) -> typer.Typer:
    """A command group with plain (click's) help: rich help printed each flag as `<bool>`, as if it took a value."""
    return typer.Typer(rich_markup_mode=None, help=help, no_args_is_help=True, **options)


app = command_group("memgrid: run every arm x task x seed x condition cell of a memory benchmark in its own container, "
                    "prove the treatment, grade the artifact, and ledger it all.",
                    add_completion=False, pretty_exceptions_enable=False)
images_app = command_group("Build the content-addressed images (base, sandbox, checker).")
task_app = command_group("The tasks under tasks/.")
corpus_app = command_group("The condition corpora of each task suite, under corpus/build/ (memgrid's own) and "
                           "corpus/suites/<suite>/build/ (generated; digests committed).")
arm_app = command_group("The arms under arms/.")
app.add_typer(images_app, name="images")
app.add_typer(task_app, name="task")
app.add_typer(arm_app, name="arm")
app.add_typer(corpus_app, name="corpus")
protocol_app = command_group("The protocols a grid runs (its spec's `protocol` field).")
app.add_typer(protocol_app, name="protocol")
stores_app = command_group("The store cache: frozen stores kept outside runs/ by everything that determines them "
                           "($MEMGRID_CACHE, else ~/.cache/memgrid), reused by any run with the same inputs.")
app.add_typer(stores_app, name="stores")


def _chosen_stores(arm: Optional[str], keys: Optional[str]):
    from runner.arms import store_cache

    held = store_cache.entries()
    wanted = _csv(keys) or ()
    unknown = [k for k in wanted if not any(s.key.startswith(k) for s in held)]
    if unknown:
        raise UserError(f"--keys: no cached store's key starts with {', '.join(unknown)}: fix: use a key memgrid stores list shows")
    return [s for s in held if (arm is None or s.inputs["arm"] == arm) and (not wanted or any(s.key.startswith(k) for k in wanted))]


@stores_app.command("list")
def stores_list(arm: Optional[str] = typer.Option(None, help="Only this arm's stores.")):
    """Every cached store: its key, arm, condition, seed, documents, size, when it was ingested and last used."""
    import datetime

    from runner.arms import store_cache

    chosen = _chosen_stores(arm, None)
    table = Table("key", "arm", "condition", "seed", "documents", "MiB", "ingest s", "last used",
                  title=f"store cache: {store_cache.stores_dir()}")
    for s in chosen:
        table.add_row(s.key[:12], s.inputs["arm"], s.inputs["condition"], str(s.inputs["seed"]),
                      f"{s.report.get('documents')} of {s.report.get('corpus_documents')}", f"{s.bytes / 2**20:.1f}",
                      str(s.report.get("seconds")), datetime.datetime.fromtimestamp(s.last_used).strftime("%Y-%m-%d %H:%M"))
    console.print(table)
    console.print(f"{len(chosen)} stores, {sum(s.bytes for s in chosen) / 2**20:.1f} MiB")


@stores_app.command("prune")
def stores_prune(
    unused_days: float = typer.Option(30.0, "--unused-days", min=0.0, help="Remove stores no run has used for this many days."),
    arm: Optional[str] = typer.Option(None, help="Only this arm's stores."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be removed; remove nothing."),
):
    """Remove cached stores unused for --unused-days (default 30), and any set aside for failing their digest check;
    a later run that needs one ingests it again."""
    from runner.arms import store_cache

    old = [s for s in _chosen_stores(arm, None) if time.time() - s.last_used >= unused_days * 86400]
    for bad in store_cache.set_aside():  # they failed their digest check and are never read
        if not dry_run:
            shutil.rmtree(bad)
        console.print(f"{'would remove' if dry_run else 'removed'} {bad.name} (set aside: did not match its digest)",
                      markup=False, highlight=False)
    for s in old:
        if not dry_run:
            store_cache.remove(s.key)
        console.print(f"{'would remove' if dry_run else 'removed'} {s.key[:12]} {s.label} ({s.bytes / 2**20:.1f} MiB)",
                      markup=False, highlight=False)
    console.print(f"{'would remove' if dry_run else 'removed'} {len(old)} stores, {sum(s.bytes for s in old) / 2**20:.1f} MiB")


@stores_app.command("export")
def stores_export(
    out: Path = typer.Argument(..., help="The archive to write (e.g. stores.tar)."),
    arm: Optional[str] = typer.Option(None, help="Only this arm's stores (default: every cached store)."),
    keys: Optional[str] = typer.Option(None, help="Comma-separated keys (or their first characters) to export."),
    images: bool = typer.Option(False, "--images", help="Carry the images the stores were ingested in (docker save): a "
                                "store's key holds its image's id, and an image built on another machine from the same "
                                "recipe gets another id, so there its stores would be ingested again."),
):
    """Write cached stores into one archive that memgrid stores import on another machine verifies and adds.

    Example: memgrid stores export mms.tar --arm mcp_memory_service --images"""
    from runner.arms import store_cache

    chosen = _chosen_stores(arm, keys)
    if not chosen:
        raise UserError("stores export: no cached store matches: fix: run a grid first, or check --arm (memgrid stores list)")
    saved = _saved_images(store_cache.image_ids(chosen)) if images else []
    size = store_cache.export(chosen, out, saved)
    console.print(f"exported {len(chosen)} stores" + (f" and {len(saved)} images" if saved else "") +
                  f" ({size / 2**20:.1f} MiB) to {out}")


def _saved_images(ids: list[str]) -> list:
    """Each image by id from this engine, saved under its memgrid tags (the tags another machine's run looks for)."""
    import docker

    from runner.arms.store_cache import SavedImage
    from runner.env.engine import connect
    from runner.env.images import save_image

    client, saved = connect(), []
    for image_id in ids:
        try:
            tags = tuple(t for t in client.images.get(image_id).tags if t.startswith("memgrid-"))
        except docker.errors.ImageNotFound:
            tags = ()
        if not tags:
            raise UserError(f"stores export --images: image {image_id[:19]} is no longer on this engine: fix: export "
                            "without --images, or build the arm's image again and re-run its grid")
        saved.append(SavedImage(image_id, tags, save_image(client, tags[0])))
    return saved


@stores_app.command("import")
def stores_import(archive: Path = typer.Argument(..., help="An archive memgrid stores export wrote.")):
    """Add the stores of an exported archive to this machine's cache, each verified first (its store against its
    digest, its key against its inputs); a grid whose inputs match then ingests nothing."""
    from runner.arms import store_cache

    if not archive.is_file():
        raise UserError(f"{archive}: does not exist: fix: give the path of an archive memgrid stores export wrote")
    added, present, loaded = store_cache.import_archive(archive, _load_image)
    for tag in loaded:
        console.print(f"loaded image {tag}")
    console.print(f"imported {len(added)} stores into {store_cache.stores_dir()}" + (f"; {len(present)} were already there" if present else ""))


def _load_image(archive: bytes, tags: tuple[str, ...], image_id: str) -> str | None:
    """docker load into this machine's engine, every tag then on the loaded id; None when that is so, else why not."""
    from runner.env.engine import connect
    from runner.env.images import load_image

    client = connect()
    problem = load_image(client, archive, tags[0], image_id)
    if problem is None:
        for tag in tags[1:]:
            repository, _, name = tag.rpartition(":")
            client.images.get(image_id).tag(repository, name)
    return problem


@protocol_app.command("list")
def protocol_list():
    """Each protocol memgrid runs: its name (for --protocol and the spec's `protocol` field) and what a cell of it is."""
    from runner.protocols.registry import DEFAULT, PROTOCOLS

    table = Table("protocol", "what a cell is", title="protocols")
    for name, p in PROTOCOLS.items():
        table.add_row(name + (" (default)" if name == DEFAULT else ""), p.description)
    console.print(table)

# Piped output (make, CI logs) gets a fixed, wide layout instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 130)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 130)


def progress_log(message: str) -> None:
    """Setup steps (image builds, corpus builds, ingests), dimmed on stderr."""
    err.print(f"[dim]{message}")


def _csv(value: Optional[str]) -> Optional[tuple[str, ...]]:
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else None


@app.command()
def doctor(runs_dir: Path = typer.Option(Path("runs"), help="Where runs are written.")):
    """Check the engine, the images, free disk and leftover containers, each with the grids that need it and the
    narrowest fix. Exits 1 only when something stops the default grid (an image it lacks is built by its first run)."""
    from runner.env.doctor import DEFAULT_GRID, default_grid_runs, run_checks
    from runner.exec.check import check_spec
    from runner.plan.spec import load_grid, preset_path

    root, default = project_root(), preset_path("default")
    checks = run_checks(runs_dir, root, set(check_spec(load_grid(default), default, root).images))
    table = Table("check", "status", "needed by", "detail", "fix")
    for c in checks:
        colour = "green" if c.ok else "red" if c.blocking else "yellow"
        table.add_row(c.name, f"[{colour}]{c.status}", c.needed_by, c.detail, c.fix)
    console.print(table)
    if not default_grid_runs(checks):
        console.print("the default grid cannot run here: fix the rows marked missing", markup=False, highlight=False)
        raise typer.Exit(1)
    unbuilt = [c for c in checks if not c.ok and c.needed_by == DEFAULT_GRID]
    console.print("the default grid can run here (make grid)" + (
        f"; its first run builds {len(unbuilt)} image(s) it lacks" if unbuilt else ""), markup=False, highlight=False)


@images_app.command("build")
def images_build(
    jobs: Optional[int] = typer.Option(None, "--jobs", min=1, max=8,
                                       help="Images built at once, each as soon as the images it is built over are "
                                            "ready (default 3; 1: one after another)."),
):
    """Build base, sandbox and checker images, every arm's own image, the model sidecars' image and
    the claude-code and codex layers (each a pinned CLI, fetched from the npm registry and checksum-verified)
    over the sandbox and each arm image; only what changed is rebuilt. Offline, the base image is built with debootstrap from the host's Debian mirror (set
    MEMGRID_BASE_SOURCE to force); Python packages are resolved on the host from pinned requirements.
    Each image is listed with the seconds it took (near 0 when it was already built)."""
    from runner.agents.registry import cli_agents
    from runner.env.engine import connect
    from runner.env.image_builds import BUILDS_AT_ONCE, image_steps, run_steps
    from runner.env.images import arm_image_needed
    from runner.plan.spec import load_all_arms

    client = connect()
    arm_dirs = [a.root for a in load_all_arms(project_root()).values() if arm_image_needed(a.root)]
    jobs = jobs or BUILDS_AT_ONCE
    started = time.monotonic()
    built = run_steps(image_steps(client, arm_dirs, cli_agents(), log=progress_log), jobs)
    for b in built.values():
        console.print(f"{b.ref.role:24} {b.ref.tag:36} {b.ref.id[:19]} {b.seconds:7.1f}s")
    console.print(f"{len(built)} images ready in {time.monotonic() - started:.1f}s, {jobs} at a time "
                  f"({sum(b.seconds for b in built.values()):.1f}s of builds)")


@app.command()
def grid(
    spec: Optional[Path] = typer.Option(None, "--spec", help="Grid spec YAML (instead of a preset)."),
    preset: str = typer.Option("default", help="A shipped grid: default (reader x all arms x all conditions), "
                                               "harness (floor/ceiling), full (the reader x every task, arm and "
                                               "condition, 2 seeds), two-session "
                                               "(the two-session recall protocol: reader and stubs), planted (the "
                                               "planted-memory protocol: reader over recall and its canary), personal "
                                               "(the personal-memory protocol: 20 persons x 3 horizons over bare, "
                                               "oracle_memory, full_context and recall; FAMA), products (default with the four "
                                               "third-party products added; hours of ingest per product here)."),
    protocol: Optional[str] = typer.Option(None, help="The protocol to run (memgrid protocol list); without --spec, "
                                                      "its own preset. Default: the spec's (coding)."),
    tasks: Optional[str] = typer.Option(None, help="Comma-separated task ids (overrides the spec)."),
    suite: Optional[str] = typer.Option(None, help="The task suite whose tasks and corpus a coding grid runs (memgrid "
                                                   "task list shows them; overrides the spec's, default memgrid)."),
    arms: Optional[str] = typer.Option(None, help="Comma-separated arm names (overrides the spec)."),
    seeds: Optional[int] = typer.Option(None, min=1, help="Number of seeds 0..N-1 (overrides the spec)."),
    conditions: Optional[str] = typer.Option(None, help="Comma-separated conditions (overrides the spec)."),
    agent: Optional[str] = typer.Option(None, help="Run only this agent: floor, ceiling, reader (LLM-free), "
                                                   "claude-code (the real Claude Code CLI), codex (the real Codex CLI), "
                                                   "extractive and answerer (the personal protocol's LLM-free and model "
                                                   "answerers), or one of the spec's command_agents."),
    model: Optional[str] = typer.Option(None, help="The model claude-code, codex and answerer run on: 'scripted' (the shipped scripted model "
                                                   "server: offline, no spend, a wiring smoke before a paid run), "
                                                   "'scripted-skim' (the same server as a weaker model) or a real "
                                                   "model id (needs ANTHROPIC_API_KEY for claude-code, OPENAI_API_KEY "
                                                   "for codex and answerer, and prices in the spec). Comma-separated "
                                                   "for several: each model agent's cells run once per model, named "
                                                   "agent@model (overrides the spec's model or models)."),
    run_id: Optional[str] = typer.Option(None, help="Resume this run, or name a new one (default: timestamp-gridname)."),
    concurrency: int = typer.Option(min(2, os.cpu_count() or 1), min=1, max=64,
                                    help="Cells in flight at once, and before them, stores ingested at once."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
    progress: bool = typer.Option(True, help="Show the progress bar."),
    prereg: Optional[Path] = typer.Option(None, "--prereg", help="Run the grid of this committed preregistration "
                                                                 "(preregistration/NNN-slug.md); no other grid option may change it."),
    estimate: bool = typer.Option(False, "--estimate", help="Print the grid's expected tokens per class and USD (with a "
                                  "range and where it comes from: an earlier live run of the model, else a scripted-model run "
                                  "of the same cells plus --output-allowance) and exit without running."),
    check: bool = typer.Option(False, "--check", help="Check the spec as a run would (every name, the suite and what it "
                               "hosts, the agents, the images) and print its cells; exit without building or running "
                               "anything, and without an engine."),
    estimate_from: Optional[Path] = typer.Option(None, "--estimate-from", help="The run folder --estimate reads (default: "
                                                 "the newest matching run under --runs-dir)."),
    output_allowance: int = typer.Option(2000, "--output-allowance", min=1, help="Output tokens per cell --estimate assumes "
                                         "when it estimates from a scripted-model run."),
    executor: Optional[str] = typer.Option(None, "--executor", help="Where cells run: local (threads on this machine's "
                                           "engine, the default) or dask (a dask.distributed cluster, each worker on its "
                                           "own node's engine; with --scheduler). Overrides the spec's executor."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="The dask scheduler's address, tcp://HOST:8786 "
                                            "(overrides the spec's scheduler)."),
    max_usd: Optional[float] = typer.Option(None, "--max-usd", min=0.0, help="Stop starting cells once the priced spend "
                                            "of finished cells plus the cells in flight would pass this (overrides the spec's "
                                            "budget_usd; resume with a higher one to go on)."),
):
    """Run a grid: every cell in its own container, proofs, checker verdicts and a parquet ledger.

    Re-running with an existing --run-id resumes it: finished cells are skipped, unfinished ones
    rerun, and changed inputs are refused. Ctrl-C (or SIGTERM) stops scheduling and keeps the ledger consistent.
    """
    from dataclasses import replace

    from runner.plan.grid import check_names
    from runner.exec.job import run_grid
    from runner.protocols.registry import protocol_named
    from runner.plan.spec import grid_tasks, load_all_arms, load_grid, preset_path

    root = project_root()
    if prereg is not None:
        from runner.plan.prereg import check_clean, check_location, check_sizing, load_prereg

        given = [name for name, value in (("--spec", spec), ("--tasks", tasks), ("--suite", suite), ("--arms", arms), ("--seeds", seeds),
                                          ("--conditions", conditions), ("--agent", agent), ("--model", model))
                 if value is not None] + (["--protocol"] if protocol is not None else [])
        if given or preset != "default":
            raise UserError(f"{prereg}: {', '.join(given or ['--preset'])} would change a preregistered grid: fix: drop "
                            "it, or preregister the grid you mean to run (memgrid prereg new SLUG)")
        preregistration = load_prereg(prereg)
        check_location(root, prereg)
        check_clean(root)
        check_sizing(preregistration, root)
        grid_of = replace(preregistration.grid, budget_usd=max_usd) if max_usd is not None else preregistration.grid
        grid_of = _where_cells_run(grid_of, executor, scheduler)
        if check:
            _print_check(grid_of, prereg, root, run_id, concurrency)
            return
        outcome = run_grid(grid_of, prereg, root=root, run_id=run_id, runs_dir=runs_dir, concurrency=concurrency,
                           progress=progress, log=progress_log, prereg=preregistration)
        _finish_grid(outcome, f"memgrid grid --prereg {prereg} --run-id {outcome.plan.run_id}")
        return
    if protocol is not None:
        protocol_named(protocol)
        if spec is None and preset == "default" and protocol != "coding":
            preset = protocol
    grid_path = spec or preset_path(preset)
    grid_spec = load_grid(grid_path)
    if protocol is not None and protocol != grid_spec.protocol:
        raise UserError(f"{grid_path}: its protocol is {grid_spec.protocol}, not {protocol}: fix: drop --protocol, "
                        f"or give a spec of the {protocol} protocol")
    overrides = {k: v for k, v in {"tasks": _csv(tasks), "suite": suite, "arms": _csv(arms), "seeds": seeds,
                                    "conditions": _csv(conditions), "agents": (agent,) if agent else None,
                                    "models": _csv(model), "budget_usd": max_usd}.items() if v}
    grid_spec = _where_cells_run(replace(grid_spec, **overrides), executor, scheduler)
    suite_tasks = grid_tasks(root, grid_spec, Path("(command line)"), "--suite") if suite else \
        grid_tasks(root, grid_spec, grid_path)
    check_names(grid_spec, protocol_named(grid_spec.protocol, grid_path), grid_path, suite_tasks, load_all_arms(root),
                frozenset(overrides))
    if check:
        _print_check(grid_spec, grid_path, root, run_id, concurrency)
        return
    if estimate:
        _print_estimate(grid_spec, grid_path, root, runs_dir, output_allowance, estimate_from)
        return
    outcome = run_grid(grid_spec, grid_path, root=root, run_id=run_id, runs_dir=runs_dir,
                       concurrency=concurrency, progress=progress, log=progress_log)
    _finish_grid(outcome, f"memgrid grid --run-id {outcome.plan.run_id}")


def _print_check(grid_spec, grid_path: Path, root: Path, run_id: Optional[str], concurrency: int) -> None:
    """--check: the run's engine-free checks and its shape; each cell-less condition, task or arm one line on stderr
    (exit 2)."""
    from runner.exec.check import check_spec

    checked = check_spec(grid_spec, grid_path, root, run_id, concurrency)
    for line in checked.lines(grid_path):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    for problem in checked.problems:
        err.print(f"memgrid: {problem}", markup=False, highlight=False, soft_wrap=True)
    if checked.problems:
        raise typer.Exit(2)


def _where_cells_run(grid_spec, executor: Optional[str], scheduler: Optional[str]):
    """The spec with --executor / --scheduler applied (neither is an input of the run's lock)."""
    from dataclasses import replace

    from runner.exec.executors import executor_class

    if executor is not None:
        executor_class(executor)
        grid_spec = replace(grid_spec, executor=executor)
    if scheduler is not None:
        if not re.match(r"^(tcp|tls)://[^\s/]+:[0-9]{1,5}$", scheduler):
            raise UserError(f"--scheduler {scheduler!r}: not a dask scheduler address: fix: give it as tcp://HOST:8786")
        grid_spec = replace(grid_spec, scheduler=scheduler)
    return grid_spec


def _print_estimate(grid_spec, grid_path: Path, root: Path, runs_dir: Path, allowance: int, source: Optional[Path]) -> None:
    from runner.exec.run import resolve_run_dir
    from runner.plan.estimate import CLASSES, estimate_models

    estimates = estimate_models(grid_spec, grid_path, root, runs_dir, allowance,
                                resolve_run_dir(str(source), runs_dir) if source else None)
    for e in estimates:
        table = Table("token class", "tokens", title=f"estimate for {e.cells} {e.model} cells")
        for c in CLASSES:
            table.add_row(c.replace("_", " "), f"{e.tokens[c]:,}")
        console.print(table)
        console.print(f"USD: {e.usd:,.2f} (range {e.usd_low:,.2f} – {e.usd_high:,.2f}) at prices of {e.price_source}",
                      markup=False, highlight=False)
        console.print(f"from the {e.source}; {e.matched} of {e.cells} cells matched by task, arm, condition, seed and "
                      "agent (the rest at the mean of their arm's)", markup=False, highlight=False, soft_wrap=True)
    if len(estimates) > 1:
        console.print(f"USD in total, {len(estimates)} models ({', '.join(e.model for e in estimates)}): "
                      f"{sum(e.usd for e in estimates):,.2f} (range {sum(e.usd_low for e in estimates):,.2f} – "
                      f"{sum(e.usd_high for e in estimates):,.2f})", markup=False, highlight=False, soft_wrap=True)
    scripted = [m for m in grid_spec.models if m not in {e.model for e in estimates}]
    if scripted:
        console.print(f"{', '.join(scripted)}: scripted (offline), no spend", markup=False, highlight=False)


def _finish_grid(outcome, resume: str) -> None:
    """The summary tables and where things are; exit 130 when interrupted, 1 when cells hit harness errors.
    `resume`: the command that resumes this run."""
    run_dir, summary = outcome.run_dir, outcome.summary
    protocol = outcome.plan.grid.protocol
    if protocol == "coding":
        _print_summary(run_dir)
        _print_locations(run_dir)
        _write_grid_report(run_dir)
    else:
        rows = _print_protocol_summary(run_dir, protocol)
        _print_locations(run_dir)
        console.print(f"report:     {_write_protocol_page(run_dir, protocol, rows)}")  # as `memgrid report` writes it
    if summary.skipped:
        console.print(f"resumed: {summary.skipped} cells already finished were skipped")
    if summary.interrupted:
        err.print(f"[yellow]interrupted; resume with: {resume}")
        raise typer.Exit(130)
    if summary.budget_stop is not None:
        held = summary.budget_stop.get("models")
        how = (f"raise budgets_usd for {', '.join(held)} in the spec, then {resume}" if held and "budget_usd" not in
               summary.budget_stop else f"{resume} --max-usd <a higher budget>")
        err.print(f"[yellow]stopped at its budget: {summary.budget_stop['detail']}; go on with: {how}", highlight=False)
        raise typer.Exit(1)
    if outcome.unfinished:
        err.print(f"[red]{outcome.unfinished} cells hit harness errors (see error_detail); rerun them with: {resume}")
        raise typer.Exit(1)


def _print_locations(run_dir: Path) -> None:
    console.print(f"run folder: {run_dir}")
    console.print(f"ledger:     {run_dir / 'ledger.parquet'}")


def _write_grid_report(run_dir: Path) -> None:
    """The HTML report after every grid; a run with no finished cell yet has none, and says why."""
    from runner.results.analysis import analyse
    from runner.results.report import write_html

    try:
        console.print(f"report:     {write_html(analyse(run_dir), run_dir / 'report.html')}")
    except UserError as e:
        err.print(f"[yellow]no report: {e}", highlight=False)


@app.command()
def report(
    run: str = typer.Argument(..., help="Run id (a folder under --runs-dir) or a run folder path."),
    html: Optional[Path] = typer.Option(None, "--html", help="Where to write the HTML page (default: RUN/report.html)."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
    append_to_prereg: Optional[Path] = typer.Option(None, "--append-to-prereg", help="Append the results table, the scored "
                                                    "predictions and a machine-readable record below this preregistration's marker."),
    min_effect: Optional[float] = typer.Option(None, "--min-effect", min=0.0, max=1.0, help="Smallest delta that is not noise "
                                               "(default: the preregistration's, else 0.10)."),
):
    """A run's analysis, as tables here and as a self-contained HTML page with plots. Coding: rates with Wilson intervals (intention-to-treat beside per-protocol), paired contrasts against claude_md (task-cluster bootstrap, exact McNemar), the damage detector's rate and harm against bare, discards and costs. Other protocols: their own summary (two-session: recall rates; planted: Memory Utility Index, lanes, injection; personal: FAMA per arm and horizon with bootstrap intervals over persons, beside the published rows)."""
    from runner.exec.run import resolve_run_dir
    from runner.results.report import make_report

    protocol = load_lock(resolve_run_dir(run, runs_dir))["grid"].get("protocol", "coding")
    if protocol != "coding":  # its own summary; the coding report's contrasts and plots do not apply
        if append_to_prereg is not None:
            raise UserError(f"run {run}: --append-to-prereg reports coding runs; this run is {protocol}: fix: drop it")
        run_dir = resolve_run_dir(run, runs_dir)
        console.print(f"report: {_write_protocol_page(run_dir, protocol, _print_protocol_summary(run_dir, protocol), html)}")
        return
    result = make_report(run, runs_dir, html, append_to_prereg, min_effect, console)
    console.print(f"report: {result.html_path}")
    if append_to_prereg is not None:
        console.print(f"results appended to {append_to_prereg} ({len(result.scored)} predictions scored)")


@app.command()
def compare(
    run_a: str = typer.Argument(..., metavar="RUN_A", help="The earlier run (v1): a run id under --runs-dir or a run folder path."),
    run_b: str = typer.Argument(..., metavar="RUN_B", help="The run to compare against it (v2), the same way."),
    arm: Optional[str] = typer.Option(None, "--arm", metavar="A[:B]", help="Compare run A's arm A with run B's arm B "
                                      "(recall:recall_v2, a renamed arm), or one name in both; default: every arm with "
                                      "finished cells in both runs."),
    allow_drift: bool = typer.Option(False, "--allow-drift", help="Compare even when tasks, corpora, the grid, images or "
                                     "agent inputs differ; every drifted thing is then named at the top of each output."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the comparison as a self-contained HTML page here."),
    as_json: Optional[Path] = typer.Option(None, "--json", help="Also write the comparison as JSON here."),
    min_effect: Optional[float] = typer.Option(None, "--min-effect", min=0.0, max=1.0, help="Smallest delta that is not "
                                               "noise (default 0.10)."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
):
    """Is run B better than run A on the same cells? Pairs the two runs' cells by task, condition, seed and agent,
    and per agent x condition x arm prints pass and damage rates side by side, the paired delta B − A with its
    task-cluster bootstrap 95 % interval, exact McNemar on the discordant pairs, and the cells left unpaired.
    Judged as the report judges contrasts: over pairs whose two cells were admitted, the intention-to-treat delta
    beside it. Refuses (exit 2, one line per difference) runs whose task, corpus, grid, image or agent-input digests
    differ, unless --allow-drift; the compared arms' own digests are expected to differ.

    Example: memgrid compare 20261129-recall-v1 20261206-recall-v2 --arm recall:recall_v2 --html compare.html"""
    from runner.results.compare import compare_runs, print_terminal, write_html, write_json

    comparison = compare_runs(run_a, run_b, runs_dir, arm, allow_drift, min_effect)
    print_terminal(comparison, console)
    if html is not None:
        console.print(f"html: {write_html(comparison, html)}", markup=False, highlight=False)
    if as_json is not None:
        console.print(f"json: {write_json(comparison, as_json)}", markup=False, highlight=False)


@app.command("export")
def export_run(
    run: str = typer.Argument(..., help="Run id (a folder under --runs-dir) or a run folder path."),
    fmt: str = typer.Option(..., "--format", help=sources.exports_help()),
    output: Path = typer.Option(..., "--output", help="The folder the records are written under (created if missing; "
                                                      "a file another run or tool wrote there is never replaced)."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
):
    """A run in the records a hosted benchmark's own tools read, so they can score memgrid's results and be checked
    against memgrid's report. Only final, scored cells are written; each left out is listed with why."""
    from runner.exec.run import resolve_run_dir
    from runner.sources.registry import export_format

    source = export_format(fmt)
    result = source.export(resolve_run_dir(run, runs_dir), output, log=progress_log)
    for cell, why in result.skipped.items():
        err.print(f"left out {cell}: {why}", markup=False, highlight=False)
    files = "" if len(result.written) == result.records else f" in {len(result.written)} files"
    console.print(f"wrote {result.records} records{files} under {output}, left out {len(result.skipped)} cells",
                  markup=False, highlight=False, soft_wrap=True)
    if result.next:
        console.print(f"next: {result.next}", markup=False, highlight=False, soft_wrap=True)


def _print_cells(run_dir: Path, arm: Optional[str], discarded: bool, as_json: bool = False) -> None:
    from runner.results.ledger import Ledger, latest_attempts

    rows = sorted(latest_attempts(Ledger(run_dir).rows()).values(), key=lambda r: r["order_index"])
    if arm:
        rows = [r for r in rows if r["arm"] == arm]
    if discarded:
        rows = [r for r in rows if not r["admitted"]]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table("cell", "task", "arm", "seed", "condition", "agent", "admitted", "passed", "detail", "secs",
                  title=f"{run_dir.name}: {len(rows)} cells")
    for r in rows:
        passed = {True: "[green]pass", False: "[red]fail", None: "-"}[r["checker_passed"]]
        detail = r["discard_reason"] or r["error_class"] or r["checker_detail"] or ""
        table.add_row(r["cell_id"], r["task"], r["arm"], str(r["seed"]), r["condition"], r["agent"],
                      "yes" if r["admitted"] else "[yellow]no", passed, detail[:60], f"{r['wall_seconds']:.1f}")
    console.print(table)


def _write_protocol_page(run_dir: Path, name: str, summary: list[dict], html: Optional[Path] = None) -> Path:
    """The protocol's HTML page (default RUN/report.html): its own, or its tables (Protocol.page)."""
    from runner.protocols.registry import protocol_named

    page = protocol_named(name).page(run_dir, load_lock(run_dir), summary)
    path = html or run_dir / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def _print_protocol_summary(run_dir: Path, name: str) -> list[dict]:
    """The protocol's own summary: its measure per agent x arm with a Wilson 95 % interval; kept as summary.json."""
    from runner.protocols.registry import protocol_named
    from runner.results.ledger import Ledger, latest_attempts

    protocol = protocol_named(name)
    lock = load_lock(run_dir)
    rows = protocol.summary([r for r in latest_attempts(Ledger(run_dir).rows()).values() if r["final"]], lock.get("cells"))
    (run_dir / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    columns, lines = protocol.summary_table(rows)
    table = Table(*columns, title=f"run {run_dir.name} ({name})")
    for line in lines:
        table.add_row(*line)
    console.print(table)
    for title, columns, lines, note in [*protocol.extra_tables(rows), *protocol.run_tables(run_dir)]:
        extra = Table(*columns, title=title)
        for line in lines:
            extra.add_row(*line)
        console.print(extra)
        console.print(note)
    for r in rows:
        for flag in r.get("flags", ()):
            console.print(f"[red]FLAG[/red] {r['agent']} x {r['arm']}: {flag}")
    _print_agent_errors(latest_attempts(Ledger(run_dir).rows()).values())
    return rows


def _print_agent_errors(rows) -> None:
    """Per agent x arm, admitted cells whose agent ended with an error: scored as they ended, never discarded."""
    from runner.results.ledger import agent_error_counts

    counts = agent_error_counts(list(rows))
    if not counts:
        return
    table = Table("agent", "arm", "admitted", "agent ended with an error (scored)", "how",
                  title="agent ended with an error: admitted and scored as it left its work, never discarded")
    for agent_, arm_, admitted, n, how in counts:
        table.add_row(agent_, arm_, str(admitted), str(n), how)
    console.print(table)


def _print_summary(run_dir: Path) -> None:
    """Per agent x arm x condition: cells, admitted, passed, damaged, pass rate among admitted, and the admitted
    cells whose agent ended with an error (scored as they ended)."""
    from runner.agents.base import ERROR_ENDINGS
    from runner.results.ledger import Ledger, latest_attempts
    from runner.results.report import unisolated_lines

    groups: dict[tuple, list[dict]] = {}
    for r in latest_attempts(Ledger(run_dir).rows()).values():
        groups.setdefault((r["agent"], r["arm"], r["condition"]), []).append(r)
    table = Table("agent", "arm", "condition", "cells", "admitted", "passed", "damaged", "pass rate", "agent err. (scored)",
                  title=f"run {run_dir.name}")
    for (agent_, arm_, cond), rows in sorted(groups.items()):
        admitted = [r for r in rows if r["admitted"]]
        passed = sum(bool(r["checker_passed"]) for r in admitted)
        damaged = sum(r["outcome"] == "damaged" for r in admitted)
        errors = sum(r.get("agent_ended") in ERROR_ENDINGS for r in admitted)
        rate = f"{passed / len(admitted):.2f}" if admitted else "-"
        table.add_row(agent_, arm_, cond, str(len(rows)), str(len(admitted)), str(passed), str(damaged), rate, str(errors))
    console.print(table)
    for line in unisolated_lines(load_lock(run_dir)):
        console.print(line, style="yellow", markup=False, highlight=False)
    discards: dict[tuple[str, str], int] = {}
    for rows in groups.values():
        for r in rows:
            if not r["admitted"]:
                discards[(r["arm"], r["discard_reason"])] = discards.get((r["arm"], r["discard_reason"]), 0) + 1
    if discards:
        why = Table("arm", "discard reason", "cells", title="discarded, not scored (memgrid cells RUN --discarded)")
        for (arm_, reason), n in sorted(discards.items()):
            why.add_row(arm_, reason, str(n))
        console.print(why)


@app.command()
def cells(
    run: str = typer.Argument(..., help="Run id (a folder under --runs-dir) or a run folder path."),
    discarded: bool = typer.Option(False, "--discarded", help="Only cells the gate discarded."),
    arm: Optional[str] = typer.Option(None, help="Only this arm."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
):
    """List a run's cells (latest attempt of each): identity, admission, verdict."""
    from runner.exec.run import resolve_run_dir

    _print_cells(resolve_run_dir(run, runs_dir), arm, discarded, as_json)


@app.command()
def view(
    run: str = typer.Argument(..., help="Run id (a folder under --runs-dir) or a run folder path."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where the site is written (default: RUN/site)."),
    serve: bool = typer.Option(False, "--serve", help="Then serve it on http://127.0.0.1:PORT until Ctrl-C."),
    port: int = typer.Option(8765, min=1024, max=65535, help="The port --serve listens on (this machine only)."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
):
    """A static site of the run to click through: summary and plots, every cell in a table filterable by arm,
    task, condition, agent, outcome and discard reason (sortable by wall time and tokens), and one page per
    cell: identity and digests, every gate proof with its evidence, the session as a timeline (tools, MCP
    servers, tool calls, model requests, tokens per step), the checker's verdict and log, the damage
    detector's finding and the artifact's diff against the fixture. Works from file:// (no external assets)."""
    from runner.exec.run import resolve_run_dir
    from runner.results.view import build_site
    from runner.results.view import serve as serve_site

    run_dir = resolve_run_dir(run, runs_dir)
    site = build_site(run_dir, out or run_dir / "site", project_root())
    console.print(f"site: {site.index} ({site.pages} pages, {site.bytes / 1e6:.1f} MB, {site.seconds:.1f} s)",
                  markup=False, highlight=False)
    if serve:
        console.print(f"serving http://127.0.0.1:{port}/index.html (Ctrl-C stops)", markup=False, highlight=False)
        try:
            serve_site(site.index.parent, port)
        except KeyboardInterrupt:
            pass


cell_app = command_group("One cell of a run.")
app.add_typer(cell_app, name="cell")


@cell_app.command("show")
def cell_show(
    run: str = typer.Argument(..., help="Run id (a folder under --runs-dir) or a run folder path."),
    cell: str = typer.Argument(..., help="Cell id (a unique prefix is enough)."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
):
    """Why a cell was admitted or discarded: identity, digests, every gate proof, the checker's
    verdict and log tail, tokens, and the session's events in order."""
    from runner.results.ledger import Ledger
    from runner.exec.run import resolve_run_dir

    run_dir = resolve_run_dir(run, runs_dir)
    rows = [r for r in Ledger(run_dir).rows() if r["cell_id"].startswith(cell)]
    ids = sorted({r["cell_id"] for r in rows})
    if len(ids) != 1:
        raise UserError(f"{run_dir}: cell '{cell}' matches {len(ids)} cells{': ' + ', '.join(ids[:5]) if ids else ''}: "
                        "fix: give more of the id (memgrid cells RUN lists them)")
    attempts = sorted(rows, key=lambda r: r["attempt"])
    row = attempts[-1]
    console.print(f"[bold]cell {row['cell_id']}[/] of run {row['run_id']}: task {row['task']} · arm {row['arm']} · "
                  f"seed {row['seed']} · condition {row['condition']} · agent {row['agent']}")
    console.print(f"bundle {row['bundle_digest']} · store {row['store_digest']} · sandbox image {row['sandbox_image'][:19]}")
    verdict = "[green]admitted" if row["admitted"] else f"[yellow]discarded: {row['discard_reason']}"
    console.print(f"attempts {len(attempts)} ({', '.join(str(r['discard_reason'] or 'admitted') for r in attempts)}) · "
                  f"{verdict}[/] · {row['wall_seconds']:.1f}s")
    listed = json.loads(row["gate_proofs"])
    phased = any("phase" in p for p in listed)  # a protocol of several phases names each proof's
    proofs = Table(*(["phase"] if phased else []), "proof", "passed", "detail", title="gate proofs (latest attempt)")
    for p in listed:
        proofs.add_row(*([p.get("phase", "")] if phased else []), p["name"], "[green]yes" if p["passed"] else "[red]no",
                       p["detail"])
    console.print(proofs)
    if row.get("result"):
        console.print(f"result ({row.get('protocol')}): {row['result']}", markup=False, highlight=False)
    if row["checker_passed"] is None:
        console.print(f"checker: not run ({row['checker_detail'] or 'the cell was discarded, not scored'})")
    else:
        console.print(f"checker: {'pass' if row['checker_passed'] else 'fail'} · {row['checker_detail']} · "
                      f"outcome {row['outcome']} · damage detector fired {row['damage_fired']}")
    tokens = [row[k] for k in ("tokens_fresh_input", "tokens_cache_read", "tokens_cache_creation", "tokens_output")]
    console.print("tokens: " + ("not observed (no model)" if all(t is None for t in tokens) else
                                f"fresh {tokens[0]} · cache read {tokens[1]} · cache creation {tokens[2]} · output {tokens[3]}"))
    cell_dir = run_dir / "cells" / row["cell_id"]
    export = cell_dir / "export.json"
    if export.is_file():
        record = json.loads(export.read_text())
        console.print(f"export: {record['files']} files, {record['file_bytes']:,} bytes (cap {record['cap_bytes']:,})"
                      + (f" · over the cap at {record['over_cap_path']}, not graded" if record["too_large"] else ""),
                      markup=False, highlight=False)
        for d in record["dropped"][:20]:  # links and special files never reach the checker
            console.print(f"  dropped {d['kind']:9} {d['path']} {d['detail']}".rstrip(), markup=False, highlight=False)
        if more := len(record["dropped"][20:]) + record.get("dropped_unlisted", 0):
            console.print(f"  ... and {more:,} more dropped ({len(record['dropped']):,} named in {export})", markup=False,
                          highlight=False)
    log = cell_dir / "checker.log"
    if log.is_file():
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        console.print("checker.log (last lines):\n  " + "\n  ".join(tail), markup=False, highlight=False)
    for name in ("prefetch.jsonl", "transcript.jsonl", "step1/transcript.jsonl", "step2/transcript.jsonl"):
        path = cell_dir / name
        if not path.is_file():
            continue
        console.print(f"[bold]{name}[/] (events in order):")
        for line in path.read_text().splitlines():
            event = json.loads(line)
            detail = {k: v for k, v in event.items() if k not in ("type", "t", "options")}
            console.print(f"  {event['type']:10} {json.dumps(detail, sort_keys=True)[:150]}", markup=False, highlight=False)


SUITE_HELP = "The task suite (memgrid task list shows them; default: memgrid, the tasks directly under tasks/)."


@task_app.command("list")
def task_list(suite: Optional[str] = typer.Option(None, help="List only this suite's tasks (default: every suite).")):
    """List the tasks of each suite with their conditions (a hosted benchmark's units with their protocol)."""
    from runner.plan.spec import load_suite_tasks, load_suites, suite_named
    from runner.sources.registry import source_format

    root = project_root()
    suites = [suite_named(root, suite)] if suite else list(load_suites(root).values())
    table = Table("suite", "task", "title", "conditions")
    for s in suites:
        if s.protocol != "coding":
            for unit, title in source_format(s.source.get("format", "")).hosted_units(s.tasks_dir):
                table.add_row(s.name, unit, title, f"(protocol {s.protocol})")
            continue
        for t in load_suite_tasks(root, s).values():
            table.add_row(s.name, t.id, t.title, ", ".join(t.conditions))
    console.print(table)


@task_app.command("check")
def task_check(
    task_id: Optional[str] = typer.Argument(None, help="Check one task (default: every task of the suite)."),
    suite: Optional[str] = typer.Option(None, help=SUITE_HELP + " Containment is audited within the suite."),
    static_only: bool = typer.Option(False, "--static", help="Only the file audits, no containers."),
    unisolated_checkers: Optional[str] = typer.Option(None, "--unisolated-checkers", help="Comma-separated ids of "
                                                      "tasks whose checkers are not isolated (task.yaml checker.unisolated) "
                                                      "to grade anyway; without it such a task is refused unless --static."),
):
    """Prove each task is about memory: fixture and naive fail, informed passes, each damaged
    reference fails with its detector firing (all through the real checker container); each fact
    term appears only in its own fact transcripts."""
    from runner.plan.grid import check_unisolated_names
    from runner.plan.preflight import refuse_unisolated
    from runner.plan.spec import DEFAULT_SUITE, load_all_arms, load_suite_tasks, suite_named, suite_of_task
    from runner.tasks.check import (arm_findings, check_behaviour, containment_findings, source_notes,
                                    task_aware_coverage, transcript_findings)

    root = project_root()
    home = suite_of_task(root, task_id) if task_id is not None and suite is None else None
    chosen_suite = suite_named(root, suite or (home.name if home else DEFAULT_SUITE))
    if chosen_suite.protocol == "planted":
        return planted_task_check(chosen_suite, task_id, static_only)
    tasks = load_suite_tasks(root, chosen_suite)
    if task_id is not None and task_id not in tasks:
        raise UserError(f"task '{task_id}' is not a task of suite '{chosen_suite.name}': fix: use one of {', '.join(sorted(tasks))}")
    chosen = [tasks[task_id]] if task_id else list(tasks.values())
    accepted = _csv(unisolated_checkers) or ()
    check_unisolated_names(accepted, {t: s.checker.unisolated for t, s in tasks.items() if s.checker.unisolated},
                           set(tasks), Path("(command line)"), "--unisolated-checkers")
    if not static_only:  # the hack canaries and references are graded by the task's checker
        refuse_unisolated(chosen, accepted, "task check",
                          lambda t: f"check it with --static, or accept its checker by naming it: --unisolated-checkers {t}")
    arms = list(load_all_arms(root).values())
    findings = containment_findings(list(tasks.values()), arms)
    findings = [f for f in findings if f.task in {t.id for t in chosen}]
    findings += [f for t in chosen for f in transcript_findings(t) + arm_findings(t, arms)]
    if not static_only:
        from runner.env.engine import connect
        from runner.env.images import ensure_images

        client = connect()
        err.print(f"grading {len(chosen)} tasks' references in checker containers…")
        findings += check_behaviour(client, ensure_images(client, log=progress_log), chosen)
    failed = [f for f in findings if not f.passed]
    table = Table("task", "rules", "failed", "task-aware canaries", title=f"task check: {len(chosen)} tasks")
    for t in chosen:
        mine = [f for f in findings if f.task == t.id]
        bad = [f for f in mine if not f.passed]
        covered = "not run (--static)" if static_only else ("no entry" if task_aware_coverage(t) else f"on {t.entry.function}")
        table.add_row(t.id, str(len(mine)), "[green]0" if not bad else f"[red]{len(bad)}", covered)
    console.print(table)
    if not static_only:  # a task the task-aware set never attacked is said so, not passed over
        for t in chosen:
            if (why := task_aware_coverage(t)) is not None:
                err.print(f"NOTE {t.id}: {why}", markup=False, highlight=False, soft_wrap=True)
    for t in chosen:  # what an imported task brings from its source is reported, not hidden and not "fixed"
        for note in source_notes(t):
            err.print(f"NOTE {t.id}: {note}", markup=False, highlight=False, soft_wrap=True)
    for f in failed:
        err.print(f"FAIL {f.task}: {f.rule}: {f.file}: {f.detail}", markup=False, highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


def planted_task_check(suite, task_id: str | None, static_only: bool) -> None:
    """SMRITI's corpus tests and memgrid's rules over a hosted planted suite (protocols/planted/check.py)."""
    from runner.protocols.planted import check as planted_check
    from runner.protocols.registry import PROTOCOLS
    from runner.sources.registry import HostedSuite

    tasks = PROTOCOLS["planted"].tasks(project_root(), HostedSuite(suite.name, suite.source.get("format", "")))
    if task_id is not None and task_id not in tasks:
        raise UserError(f"task '{task_id}' is not a task of suite '{suite.name}': fix: use one of {', '.join(sorted(tasks))}")
    chosen = [tasks[task_id]] if task_id else list(tasks.values())
    findings = [f for t in chosen for f in planted_check.static_findings(t)]
    notes: list[str] = []
    if not static_only:
        from runner.env.engine import connect
        from runner.env.images import ensure_images

        client = connect()
        err.print(f"running {len(chosen)} tasks' checks in checker containers…")
        graded, notes = planted_check.behaviour(client, ensure_images(client, log=progress_log), chosen)
        findings += graded
    failed = [f for f in findings if not f.passed]
    table = Table("task", "rules", "failed", title=f"task check: {len(chosen)} tasks of suite {suite.name}")
    for t in chosen:
        mine = [f for f in findings if f.task == t.id]
        bad = [f for f in mine if not f.passed]
        table.add_row(t.id, str(len(mine)), "[green]0" if not bad else f"[red]{len(bad)}")
    console.print(table)
    for note in notes:
        err.print(f"NOTE {note}", markup=False, highlight=False, soft_wrap=True)
    for f in failed:
        err.print(f"FAIL {f.task}: {f.rule}: {f.file}: {f.detail}", markup=False, highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


# Each format's import option (sources.base.SourceFormat.options) and its flag here; tests/test_cli checks the two agree.
IMPORT_OPTIONS = {"render": "--render-unrecorded", "periods": "--periods", "personas": "--personas"}


@task_app.command("import")
def task_import(
    path: Path = typer.Argument(..., help=sources.sources_help()),
    fmt: str = typer.Option(sources.DEFAULT_FORMAT, "--format", help=sources.formats_help()),
    suite: Optional[str] = typer.Option(None, help="The suite the source is written into, tasks/<suite>/, created if "
                                                   "new (default: the format's, e.g. its name). Never memgrid's own: an "
                                                   "import changes no other suite's benchmark."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be imported or refused; write nothing."),
    render_unrecorded: bool = typer.Option(False, "--render-unrecorded", help=sources.option_help("render")),
    periods: Optional[str] = typer.Option(None, help=sources.option_help("periods")),
    personas: Optional[str] = typer.Option(None, help=sources.option_help("personas")),
):
    """Host a published benchmark as a suite of its own, unchanged (one line per unit: imported or refused, and
    why). The last lines say what to do next."""
    from runner.sources.registry import source_format

    source = source_format(fmt)
    given = {"render": render_unrecorded or None, "periods": _csv(periods), "personas": _csv(personas)}
    options = {name: value for name, value in given.items() if value is not None}
    for name in options:
        if name not in source.options:
            raise UserError(f"{IMPORT_OPTIONS[name]}: format {fmt} has no such option — fix: drop it")
    suite = suite or source.default_suite(path)
    result = source.import_source(path, project_root(), suite, dry_run=dry_run, **options)
    verb = "would import" if dry_run else "imported"
    for plan in result.plans:
        console.print(("(dry run) " if dry_run else "") + plan.line(), markup=False, highlight=False, soft_wrap=True)
        if unisolated := plan.unisolated_line():
            err.print(unisolated, markup=False, highlight=False, soft_wrap=True)
    for refusal in result.refusals:
        err.print(refusal.line(), markup=False, highlight=False, soft_wrap=True)
    for created in result.created:
        console.print(f"new suite {suite}: wrote {created}", markup=False, highlight=False)
    console.print(f"{verb} {len(result.plans)} into suite {suite}, refused {len(result.refusals)}", soft_wrap=True)
    closing = source.closing_lines(result, suite, dry_run)
    for line in closing:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if result.plans and not dry_run:
        print_next_run(source, suite, said_next=any(line.startswith("next:") for line in closing))
    if result.refusals:
        raise typer.Exit(1)


def print_next_run(source, suite: str, said_next: bool = False) -> None:
    """After an import: the grid spec that runs the suite (or, where none runs it as it stands and the format's own
    closing lines gave no next step, what to write), and the export its benchmark's own tools read."""
    import yaml

    spec = source.grid_example(project_root() / "tasks" / suite, suite)
    if spec is not None:
        console.print("a grid that runs it (save it as grid.yaml, check it with memgrid grid --spec grid.yaml --check, "
                      "then run it: memgrid grid --spec grid.yaml):", markup=False, highlight=False, soft_wrap=True)
        console.print("  " + yaml.safe_dump(spec, sort_keys=False, width=100, default_flow_style=None).rstrip().replace("\n", "\n  "),
                      markup=False, highlight=False, soft_wrap=True)
    elif not said_next:  # no spec runs it as it stands (the format's closing lines say why): the user writes one
        console.print(f"next: write a grid spec with protocol: {source.protocol} and suite: {suite} (memgrid protocol list; "
                      f"runner/schemas/grid.schema.json), then check it: memgrid grid --spec grid.yaml --check",
                      markup=False, highlight=False, soft_wrap=True)
    if source.export_about:
        console.print(f"after the run: memgrid export RUN --format {source.name} --output DIR writes "
                      f"{source.export_about}; it prints the command of the benchmark's own tool",
                      markup=False, highlight=False, soft_wrap=True)


@corpus_app.command("build")
def corpus_build(
    conditions: Optional[str] = typer.Option(None, help="Comma-separated conditions (default: all five)."),
    seeds: Optional[str] = typer.Option(None, help="Comma-separated seeds (default: corpus/corpus.yaml)."),
    check: bool = typer.Option(False, "--check", help="Rebuild in a scratch folder and compare with the suite's digests.yaml; writes nothing."),
    suite: str = typer.Option(DEFAULT_SUITE, help=SUITE_HELP),
):
    """Generate each condition x seed corpus (haystack + the tasks' plants) with its sha256 manifest."""
    import time

    from runner.corpus.build import build, check as check_corpus, load_settings, save_digests
    from runner.plan.spec import CONDITIONS, load_suite_tasks

    root = project_root()
    settings, tasks = load_settings(root, suite), list(load_suite_tasks(root, suite).values())
    conds = _csv(conditions) or CONDITIONS
    for c in conds:
        if c not in CONDITIONS:
            raise UserError(f"--conditions: unknown condition '{c}': fix: use {', '.join(CONDITIONS)}")
    seed_list = tuple(int(x) for x in _csv(seeds)) if seeds else None
    t0 = time.monotonic()
    log = progress_log
    if check:
        problems = check_corpus(settings, tasks, conds, seed_list, log=log)
        for p in problems:
            err.print(f"MISMATCH {p}", markup=False)
        console.print(f"corpus check: {'ok' if not problems else f'{len(problems)} mismatches'} in {time.monotonic() - t0:.1f}s")
        if problems:
            raise typer.Exit(1)
        return
    digests = build(settings, tasks, conds, seed_list, log=log)
    save_digests(settings, tasks, digests)
    console.print(f"built {sum(len(v) for v in digests.values())} corpora in {time.monotonic() - t0:.1f}s under {settings.build_dir}; "
                  f"digests in {settings.digests_path}")


@corpus_app.command("verify")
def corpus_verify(suite: str = typer.Option(DEFAULT_SUITE, help=SUITE_HELP)):
    """Check every built corpus of the suite byte for byte against its manifest, and that its fact terms stay in their
    fact documents (another suite's terms are not its business)."""
    import time

    from runner.corpus.build import load_settings, locus_findings, verify_dir
    from runner.plan.spec import load_suite_tasks

    root = project_root()
    settings, tasks = load_settings(root, suite), list(load_suite_tasks(root, suite).values())
    built = sorted(p for p in settings.build_dir.glob("*/seed-*") if p.is_dir())
    if not built:
        raise UserError(f"{settings.build_dir}: nothing built: fix: run 'memgrid corpus build'")
    t0 = time.monotonic()
    problems = [p for d in built for p in verify_dir(d) + locus_findings(d, tasks)]
    for p in problems:
        err.print(f"FAIL {p}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"verified {len(built)} corpora in {time.monotonic() - t0:.1f}s: {'ok' if not problems else f'{len(problems)} problems'}")
    if problems:
        raise typer.Exit(1)


@corpus_app.command("probe")
def corpus_probe(as_json: bool = typer.Option(False, "--json", help="Print each task's rank as JSON."),
                 suite: str = typer.Option(DEFAULT_SUITE, help=SUITE_HELP)):
    """Retrieval difficulty: BM25 with each task's prompt as the query; hit@1 and hit@10 of its fact documents."""
    from runner.corpus.build import load_settings, probe
    from runner.plan.spec import load_suite_tasks

    root = project_root()
    results = probe(load_settings(root, suite), list(load_suite_tasks(root, suite).values()))
    if as_json:
        sys.stdout.write(json.dumps([r.__dict__ for r in results], indent=1) + "\n")
        return
    table = Table("condition", "queries", "hit@1", "hit@10", title="BM25 probe (query = task prompt)")
    for condition in sorted({r.condition for r in results}):
        rows = [r for r in results if r.condition == condition]
        table.add_row(condition, str(len(rows)), f"{sum(r.hit(1) for r in rows) / len(rows):.2f}",
                      f"{sum(r.hit(10) for r in rows) / len(rows):.2f}")
    if results:
        table.add_row("all", str(len(results)), f"{sum(r.hit(1) for r in results) / len(results):.2f}",
                      f"{sum(r.hit(10) for r in results) / len(results):.2f}")
    console.print(table)


@arm_app.command("list")
def arm_list():
    """List the arms with their kind."""
    from runner.plan.spec import load_all_arms

    table = Table("arm", "kind", "description")
    for a in load_all_arms(project_root()).values():
        table.add_row(a.name, a.kind, a.description)
    console.print(table)


@arm_app.command("add")
def arm_add(
    name: str = typer.Argument(..., help="The new arm's name: lower-case letters, digits and underscores."),
    kind: str = typer.Option("mcp", "--kind", help="mcp (an MCP memory server over its own store), "
                                                   "files (a file per task in the workspace), none, or "
                                                   "memora-submission (Memora's build.sh, search.sh and answer.sh)."),
    from_npm: Optional[str] = typer.Option(None, "--from-npm", metavar="PACKAGE@VERSION",
                                           help="Wrap this published npm MCP server, pinned with the "
                                                "registry's integrity in package-lock.json (npm on this machine)."),
    from_pypi: Optional[str] = typer.Option(None, "--from-pypi", metavar="PACKAGE==VERSION",
                                            help="Wrap this published PyPI MCP server, it and every dependency "
                                                 "pinned with PyPI's sha256 in requirements.txt (pip on this machine)."),
):
    """Write a scaffold arms/NAME/. Alone, it passes 'memgrid arm check NAME' unchanged. With --from-npm or
    --from-pypi it wraps a published MCP server: the image, the pins with the registry's checksums, the server's
    start, arm.yaml, an ingest stub and VENDOR.md; fill in what is marked TODO, then run 'memgrid arm check NAME'.

    Example (npm): memgrid arm add graph_memory --from-npm @modelcontextprotocol/server-memory@2026.8.31

    Example (PyPI): memgrid arm add memdb --from-pypi agentmemdb==0.1.0"""
    from runner.arms.check import scaffold

    root = project_root()
    for path in scaffold(root, name, kind, npm=from_npm, pypi=from_pypi):
        console.print(f"wrote {path.relative_to(root)}", markup=False, highlight=False)
    todo = "fill in what is marked TODO in arm.yaml, server.sh and ingest.py" if from_npm or from_pypi else \
        "edit arms/{name}/arm.yaml (every field is explained there)"
    console.print(f"next: {todo.format(name=name)}, then: memgrid arm check {name}",
                  markup=False, highlight=False, soft_wrap=True)


@arm_app.command("check")
def arm_check(
    name: str = typer.Argument(..., help="The arm to check (a folder under arms/)."),
    run_id: Optional[str] = typer.Option(None, "--run-id", hidden=True, help="Label its containers with this run id."),
):
    """Preflight an arm without a model: arm.yaml, its image, and for an mcp arm the ingest of a tiny
    corpus and the reader agent against its server. One line per step; exit 1 on any problem (a malformed
    arm.yaml: one line and exit 2, like every spec error)."""
    from runner.arms.check import check_arm
    from runner.plan.spec import load_arm

    arm_dir = project_root() / "arms" / name
    if (arm_dir / "arm.yaml").is_file():
        load_arm(arm_dir)  # a malformed arm.yaml is bad input (one line, exit 2), not a failed preflight step
    report = check_arm(project_root(), name, run_id=run_id,
                       emit=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True),
                       log=progress_log)
    if not report.ok:
        raise typer.Exit(1)


prereg_app = command_group("Preregistrations under preregistration/.")
app.add_typer(prereg_app, name="prereg")


@prereg_app.command("new")
def prereg_new(slug: str = typer.Argument(..., help="Lower-case words joined by '-', e.g. recall-vs-claude-md.")):
    """Write preregistration/NNN-SLUG.md (next free NNN) from a template whose comments explain every field."""
    from runner.plan.prereg import new_prereg

    root = project_root()
    path = new_prereg(root, slug)
    console.print(f"wrote {path.relative_to(root)}", markup=False, highlight=False)
    console.print(f"next: fill in every TODO, commit it, then: memgrid grid --prereg {path.relative_to(root)}",
                  markup=False, highlight=False, soft_wrap=True)


@app.command()
def reproduce(
    prereg: Path = typer.Argument(..., help="The preregistration whose grid to run again (preregistration/NNN-slug.md)."),
    run: Optional[str] = typer.Option(None, "--run", help="The original run (an id under --runs-dir or a folder); "
                                                          "default: the last results record appended to the preregistration."),
    allow_drift: bool = typer.Option(False, "--allow-drift", help="Run even when inputs differ from the original's."),
    run_id: Optional[str] = typer.Option(None, help="The new run's id (default: timestamp-gridname-reproduce)."),
    concurrency: int = typer.Option(min(2, os.cpu_count() or 1), min=1, max=64, help="Cells in flight at once."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
    progress: bool = typer.Option(True, help="Show the progress bar."),
):
    """Run a preregistered grid again into a new run: refuse (before any cell runs) when a task, arm, image,
    corpus, instruction text or the preregistration differs from the original run's, then print original
    vs reproduced passed/admitted per agent x arm x condition and how far they agree."""
    from runner.exec.job import run_grid
    from runner.plan.prereg import load_prereg
    from runner.plan.reproduce import cell_agreement, counts_by_group, drift, group_agreement, load_original, reads_and_runs
    from runner.exec.run import default_run_id, resolve_run_dir

    root = project_root()
    preregistration = load_prereg(prereg)
    original = load_original(preregistration, resolve_run_dir(run, runs_dir) if run else None)
    drifted: list[str] = []

    def refuse_drift(lock: dict) -> None:
        drifted.extend(drift(original, preregistration, lock))
        if drifted and not allow_drift:
            commit = (original.lock or original.record).get("git_commit") or "the original run's commit"
            raise UserError(f"{prereg}: inputs differ from run {original.run_id} ({'; '.join(drifted)}): fix: check out "
                            f"{commit} (and rebuild what it builds), or pass --allow-drift to run anyway")

    err.print(f"reproducing run {original.run_id} from its {original.source}")
    # Before anything runs: every path it names is then checked to stay inside the project (plan.spec.inside_project).
    err.print("it will read and run:\n  " + "\n  ".join(reads_and_runs(preregistration.grid)), markup=False, highlight=False)
    outcome = run_grid(preregistration.grid, prereg, root=root, run_id=run_id or f"{default_run_id(preregistration.grid)}-reproduce",
                       runs_dir=runs_dir, concurrency=concurrency, progress=progress, log=progress_log,
                       prereg=preregistration, verify_lock=refuse_drift)
    resume = f"memgrid reproduce {prereg} --run-id {outcome.plan.run_id}" + (f" --run {run}" if run else "") + \
        (" --allow-drift" if allow_drift else "")
    if outcome.summary.interrupted:
        err.print(f"[yellow]interrupted; resume with: {resume}")
        raise typer.Exit(130)
    from runner.results.ledger import Ledger, latest_attempts

    rows = list(latest_attempts(Ledger(outcome.run_dir).rows()).values())
    reproduced = counts_by_group(rows)
    table = Table("agent", "arm", "condition", "original passed/admitted", "reproduced passed/admitted", "same",
                  title=f"run {original.run_id} vs its reproduction {outcome.plan.run_id}")
    for group in sorted(set(original.counts) | set(reproduced)):
        before, after = original.counts.get(group), reproduced.get(group)
        same = bool(before and after) and (before["passed"], before["admitted"]) == (after["passed"], after["admitted"])
        table.add_row(*group.split("/"), f"{before['passed']}/{before['admitted']}" if before else "-",
                      f"{after['passed']}/{after['admitted']}" if after else "-", "yes" if same else "[red]no")
    console.print(table)
    if original.rows is not None:
        same, total = cell_agreement(original.rows, rows)
        console.print(f"agreement: {same}/{total} cells ({same / total:.2f}) have the same outcome (pass, fail or discarded)")
    else:
        same, total = group_agreement(original.counts, reproduced)
        console.print(f"agreement: {same}/{total} agent/arm/condition groups ({same / total:.2f}) have the same passed "
                      "and admitted counts (per-cell agreement needs the original run folder: --run)")
    for change in drifted:
        err.print(f"[yellow]drift allowed: {change}")
    console.print(f"run folder: {outcome.run_dir}")
    if outcome.unfinished:
        err.print(f"[red]{outcome.unfinished} cells hit harness errors (see error_detail); rerun them with: {resume}")
        raise typer.Exit(1)


@app.command()
def selftest(runs_dir: Path = typer.Option(Path("runs"), help="Where its run folder (selftest-*) is written.")):
    """Before a paid run: prove on this machine that the gate and the sandbox still work. Runs the
    reference agents (floor must fail, ceiling must pass), canary cells of the real claude-code and codex
    agents on the scripted model with one piece of wiring broken each (server never attaches, tools deferred
    (claude-code), memory tool denied or withheld, another arm's tools present; the gate must discard each), the planted protocol's
    canary (recall_fallback, whose namespace hook serves a default namespace, must be flagged), and escape probes
    inside a real cell (host reachability, route out, gateway paths, disk budget, artifact cap, links,
    output flood). One line per check, PASS or FAIL with what was tried; exit 1 on any FAIL. Offline,
    no spend, about two minutes once the images are built."""
    from runner.env.selftest import run_selftest

    started = time.monotonic()
    checks = run_selftest(project_root(), runs_dir,
                          emit=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True),
                          log=progress_log)
    failed = [c for c in checks if not c.passed]
    console.print(f"selftest: {len(checks) - len(failed)} passed, {len(failed)} failed in {time.monotonic() - started:.0f}s"
                  " (memgrid cell show RUN CELL explains a cell; the run folder is under --runs-dir)")
    if failed:
        raise typer.Exit(1)


def main() -> None:
    try:
        app()
    except UserError as e:
        err.print(f"memgrid: {e}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(e.exit_code)
