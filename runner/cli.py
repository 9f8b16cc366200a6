"""The `memgrid` command line (typer). Errors a user can fix print one line and exit 2."""

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from .errors import UserError

app = typer.Typer(help="memgrid: run every arm x task x seed x condition cell of a memory benchmark in its own "
                       "container, prove the treatment, grade the artifact, and ledger it all.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
images_app = typer.Typer(help="Build the content-addressed images (base, sandbox, checker).", no_args_is_help=True)
task_app = typer.Typer(help="The tasks under tasks/.", no_args_is_help=True)
arm_app = typer.Typer(help="The arms under arms/.", no_args_is_help=True)
app.add_typer(images_app, name="images")
app.add_typer(task_app, name="task")
app.add_typer(arm_app, name="arm")

console = Console()
err = Console(stderr=True)


def project_root() -> Path:
    return Path(os.environ.get("MEMGRID_ROOT", ".")).resolve()


def _csv(value: Optional[str]) -> Optional[tuple[str, ...]]:
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else None


@app.command()
def doctor(runs_dir: Path = typer.Option(Path("runs"), help="Where runs are written.")):
    """Check the engine, its API version, the images and free disk; print the fix for each problem."""
    from .doctor import run_checks

    checks = run_checks(runs_dir)
    table = Table("check", "status", "detail", "fix")
    for c in checks:
        table.add_row(c.name, "[green]ok" if c.ok else "[red]missing", c.detail, c.fix)
    console.print(table)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


@images_app.command("build")
def images_build():
    """Build base, sandbox and checker images; only what changed is rebuilt. Offline, the base
    image is built with debootstrap from the host's Debian mirror (set MEMGRID_BASE_SOURCE to force)."""
    from .engine import connect
    from .images import ensure_images

    images = ensure_images(connect(), log=lambda m: err.print(f"[dim]{m}"))
    for ref in (images.base, images.sandbox, images.checker):
        console.print(f"{ref.role:8} {ref.tag}  {ref.id[:19]}")


@app.command()
def grid(
    spec: Optional[Path] = typer.Option(None, "--spec", help="Grid spec YAML (default: the embedded default grid)."),
    tasks: Optional[str] = typer.Option(None, help="Comma-separated task ids (overrides the spec)."),
    arms: Optional[str] = typer.Option(None, help="Comma-separated arm names (overrides the spec)."),
    seeds: Optional[int] = typer.Option(None, min=1, help="Number of seeds 0..N-1 (overrides the spec)."),
    conditions: Optional[str] = typer.Option(None, help="Comma-separated conditions (overrides the spec)."),
    agent: Optional[str] = typer.Option(None, help="Run only this agent (floor, ceiling)."),
    run_id: Optional[str] = typer.Option(None, help="Resume this run, or name a new one (default: timestamp-gridname)."),
    concurrency: int = typer.Option(min(2, os.cpu_count() or 1), min=1, max=64, help="Cells in flight at once."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
    progress: bool = typer.Option(True, help="Show the progress bar."),
):
    """Run a grid: every cell in its own container, proofs, checker verdicts and a parquet ledger.

    Re-running with an existing --run-id resumes it: finished cells are skipped, unfinished ones
    rerun, and changed inputs are refused. Ctrl-C stops scheduling and keeps the ledger consistent.
    """
    from dataclasses import replace

    from .engine import connect
    from .images import ensure_images
    from .run import execute, lock_document, open_run, plan_run
    from .spec import default_grid_path, load_all_arms, load_all_tasks, load_grid
    from .trial import TrialContext

    root = project_root()
    grid_path = spec or default_grid_path()
    grid_spec = load_grid(grid_path)
    overrides = {k: v for k, v in {"tasks": _csv(tasks), "arms": _csv(arms), "seeds": seeds,
                                    "conditions": _csv(conditions), "agents": (agent,) if agent else None}.items() if v}
    grid_spec = replace(grid_spec, **overrides)
    from .spec import validate
    validate({**grid_spec.as_dict()}, "grid", Path("(command line)") if overrides else grid_path)
    all_tasks, all_arms = load_all_tasks(root), load_all_arms(root)
    client = connect(concurrency=concurrency)
    images = ensure_images(client, log=lambda m: err.print(f"[dim]{m}"))
    plan = plan_run(grid_spec, grid_path, all_tasks, all_arms, images, runs_dir.resolve(), run_id)
    ledger = open_run(plan, lock_document(plan, images, client, root))
    ctx = TrialContext(client, plan.run_id, plan.run_dir, images, all_tasks, all_arms)
    err.print(f"run {plan.run_id}: {len(plan.cells)} cells, concurrency {concurrency} -> {plan.run_dir}")
    summary = execute(ctx, ledger, plan.cells, concurrency, show_progress=progress)
    _print_summary(plan.run_dir)
    console.print(f"run folder: {plan.run_dir}")
    console.print(f"ledger:     {plan.run_dir / 'ledger.parquet'}")
    if summary.skipped:
        console.print(f"resumed: {summary.skipped} cells already finished were skipped")
    if summary.interrupted:
        err.print(f"[yellow]interrupted; resume with: memgrid grid --run-id {plan.run_id}")
        raise typer.Exit(130)
    unfinished = summary.total - len({r['cell_id'] for r in ledger.rows() if r['final']})
    if unfinished:
        err.print(f"[red]{unfinished} cells hit harness errors (see error_detail); rerun them with: memgrid grid --run-id {plan.run_id}")
        raise typer.Exit(1)


def _print_cells(run_dir: Path, arm: Optional[str], discarded: bool, as_json: bool = False) -> None:
    from .ledger import Ledger, latest_attempts

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


def _print_summary(run_dir: Path) -> None:
    """Per agent x arm x condition: cells, admitted, passed, pass rate among admitted."""
    from .ledger import Ledger, latest_attempts

    groups: dict[tuple, list[dict]] = {}
    for r in latest_attempts(Ledger(run_dir).rows()).values():
        groups.setdefault((r["agent"], r["arm"], r["condition"]), []).append(r)
    table = Table("agent", "arm", "condition", "cells", "admitted", "passed", "pass rate", title=f"run {run_dir.name}")
    for (agent_, arm_, cond), rows in sorted(groups.items()):
        admitted = [r for r in rows if r["admitted"]]
        passed = sum(bool(r["checker_passed"]) for r in admitted)
        rate = f"{passed / len(admitted):.2f}" if admitted else "-"
        table.add_row(agent_, arm_, cond, str(len(rows)), str(len(admitted)), str(passed), rate)
    console.print(table)


@app.command()
def cells(
    run: str = typer.Argument(..., help="Run id (a folder under --runs-dir) or a run folder path."),
    discarded: bool = typer.Option(False, "--discarded", help="Only cells the gate discarded."),
    arm: Optional[str] = typer.Option(None, help="Only this arm."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
    runs_dir: Path = typer.Option(Path("runs"), help="Where run folders are written."),
):
    """List a run's cells (latest attempt of each): identity, admission, verdict."""
    run_dir = Path(run) if Path(run).is_dir() else runs_dir / run
    if not (run_dir / "run.json").is_file():
        raise UserError(f"{run_dir}: no run.json: fix: give a run id under {runs_dir}/ or a run folder")
    _print_cells(run_dir, arm, discarded, as_json)


@task_app.command("list")
def task_list():
    """List the tasks with their conditions."""
    from .spec import load_all_tasks

    table = Table("task", "title", "conditions")
    for t in load_all_tasks(project_root()).values():
        table.add_row(t.id, t.title, ", ".join(t.conditions))
    console.print(table)


@arm_app.command("list")
def arm_list():
    """List the arms with their kind."""
    from .spec import load_all_arms

    table = Table("arm", "kind", "description")
    for a in load_all_arms(project_root()).values():
        table.add_row(a.name, a.kind, a.description)
    console.print(table)


def main() -> None:
    try:
        app()
    except UserError as e:
        err.print(f"memgrid: {e}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(e.exit_code)
