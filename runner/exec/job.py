"""One grid, start to finish, without the command line: `memgrid grid` and `memgrid reproduce` both run this.

The steps run in the order a run needs them: images, corpora, the plan, arm images, the lock
(run.json), the arms' stores, then the cells. Printing and exit codes stay with the caller.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from runner.env.doctor import space_warnings
from runner.env.engine import connect
from runner.env.images import arm_image_needed, ensure_arm_image, ensure_derived, ensure_images
from runner.agents.command import load_command_agents
from runner.agents.registry import agent_class, grid_players
from runner.plan.grid import check_agent_names
from runner.plan.players import Player
from runner.protocols.registry import protocol_named
from runner.results.ledger import Ledger, latest_attempts
from runner.plan.preflight import check_grid
from runner.plan.prereg import Prereg
from runner.exec.executors import ExecutorSettings, executor_class
from runner.arms.ingest import store_costs
from runner.exec.run import (RunPlan, RunSummary, amend_lock, check_run_id, corpus_pairs, execute, lock_document,
                             open_run, plan_run, sigterm_as_interrupt)
from runner.env.model_endpoint import unservable
from runner.errors import SpecError
from runner.results.costs import price_for
from runner.plan.spec import GridSpec, grid_tasks, image_arm, load_all_arms, provider
from runner.exec.trial import TrialContext
from runner.sources.registry import SOLUTIONS


@dataclass
class GridOutcome:
    plan: RunPlan
    summary: RunSummary
    unfinished: int  # cells without a final ledger row: harness errors a rerun of the same run id retries

    @property
    def run_dir(self) -> Path:
        return self.plan.run_dir


@dataclass
class PreparedRun:
    """A run ready for its cells: the plan, the locked run folder with its ledger, the cells' context."""
    plan: RunPlan
    ledger: Ledger
    ctx: TrialContext


def run_grid(grid_spec: GridSpec, grid_path: Path, *, root: Path, run_id: str | None, runs_dir: Path,
             concurrency: int, progress: bool, log: Callable[[str], None], prereg: Prereg | None = None,
             verify_lock: Callable[[dict], None] | None = None) -> GridOutcome:
    """`prereg`: the preregistration the grid comes from, recorded in run.json. `verify_lock`: sees the
    new run's lock before anything is written or run, and raises to refuse it (reproduce's drift check)."""
    executor = ExecutorSettings(grid_spec.executor, concurrency, grid_spec.scheduler, log)
    executor_class(executor.name, grid_path).check(executor, grid_spec.protocol, grid_path)
    run = prepare_run(grid_spec, grid_path, root=root, run_id=run_id, runs_dir=runs_dir, concurrency=concurrency,
                      log=log, prereg=prereg, verify_lock=verify_lock, executor=executor)
    where = f"executor dask at {executor.scheduler}" if executor.name == "dask" else f"concurrency {concurrency}"
    log(f"run {run.plan.run_id}: {len(run.plan.cells)} cells, {where} -> {run.plan.run_dir}")
    summary = execute(run.ctx, run.ledger, run.plan.cells, concurrency, show_progress=progress, budget_usd=grid_spec.budget_usd,
                      executor=executor, budgets_usd=grid_spec.budgets_usd)
    unfinished = summary.total - len({r["cell_id"] for r in run.ledger.rows() if r["final"]})
    if not unfinished:  # a run's own verdict over all its cells, never over part of them
        run.ctx.protocol.after_run(run.ctx, [r for r in latest_attempts(run.ledger.rows()).values() if r["final"]],
                                   log=log)
    return GridOutcome(run.plan, summary, unfinished)


def prepare_run(grid_spec: GridSpec, grid_path: Path, *, root: Path, run_id: str | None, runs_dir: Path,
                concurrency: int, log: Callable[[str], None], prereg: Prereg | None = None,
                verify_lock: Callable[[dict], None] | None = None,
                executor: ExecutorSettings | None = None) -> PreparedRun:
    """Everything before the first cell: inputs checked, images, corpora, the plan, arm images, the lock
    (run.json), the arms' stores (ingested where the executor runs cells)."""
    executor = executor or ExecutorSettings(concurrency=concurrency, log=log)
    checked = check_inputs(grid_spec, grid_path, root)
    all_tasks, all_arms, protocol, command_agents = checked.tasks, checked.arms, checked.protocol, checked.command_agents
    if run_id is not None:  # before any engine work, as every other input
        check_run_id(run_id)
    client = connect(concurrency=concurrency)
    for warning in space_warnings(client, runs_dir):
        log(warning)
    images = ensure_images(client, log=log)

    pairs = corpus_pairs(grid_spec, all_arms)
    memory, corpora, settings = None, {}, None
    if pairs:
        from runner.corpus.build import MemorySource, ensure_built, load_settings

        settings = load_settings(root, grid_spec.suite)
        corpora = ensure_built(settings, list(all_tasks.values()), pairs, log=log)
        memory = MemorySource(settings, locked=corpora)

    chosen_arms = [all_arms[a] for a in grid_spec.arms]
    runs_on = {a.name: provider(a, all_arms) for a in chosen_arms}  # prefetch arms run on the arm they use
    builds = {p.name: image_arm(p, all_arms) for p in runs_on.values()}  # an arm may run in another arm's image
    arm_images = {name: ensure_arm_image(client, source.root, images.sandbox, log=log)
                  for name, source in builds.items() if arm_image_needed(source.root)}
    # The shared embedder's image, built only when an arm of the grid embeds through it.
    embedder = (ensure_derived(client, "embedder", images.base, log=log)
                if any(p.embedder == "shared" for p in runs_on.values()) else None)
    prepared, inputs = [], {}  # inputs: each model's agent inputs (None: the grid's one model)
    for player in grid_players(grid_spec, command_agents):
        setup = agent_class(player.agent, command_agents).prepare_grid(
            client, grid_spec.for_model(player.model) if player.model else grid_spec, grid_path, images, arm_images,
            log=log)
        if setup is not None:
            prepared.append((player, setup))
            inputs.setdefault(player.model, {}).update(setup.inputs())
    agent_setups = {player.name: setup for player, setup in prepared}
    plan = plan_run(grid_spec, grid_path, all_tasks, all_arms, images, runs_dir.resolve(), run_id, corpora,
                    inputs.pop(None, {}), command_agents, embedder=embedder, by_model=inputs)

    protocol_setup = protocol.prepare(client, grid_spec, grid_path, images, log=log)
    lock = lock_document(plan, images, client, root, chosen_arms, arm_images, embedder)
    lock.update(agent_lock_entries(prepared))
    lock.update(protocol.lock_entries(protocol_setup))
    if prereg is not None:
        lock["preregistration"] = {"path": _relative(prereg.path, root), "sha256": prereg.frozen_sha256}
    if verify_lock is not None:
        verify_lock(lock)
    ledger = open_run(plan, lock)

    with sigterm_as_interrupt(), executor_class(executor.name).store_builder(
            executor, client, run_id=plan.run_id, embedder=embedder, log=log) as (build, parallel):
        stores = protocol.stores(client, list(runs_on.values()), pairs, settings, plan.run_dir, arm_images,
                                 run_id=plan.run_id, log=log, embedder=embedder and embedder.tag, parallel=parallel,
                                 build=build)
    costs = store_costs(stores)
    if costs:
        amend_lock(plan.run_dir, lambda lock: lock.update(stores=costs))
    ctx = TrialContext(client, plan.run_id, plan.run_dir, images, all_tasks, all_arms, memory, stores, arm_images,
                       agent_setups, disk_mib=grid_spec.disk_mib, command_agents=command_agents, protocol=protocol,
                       session_limits=grid_spec.limits, protocol_setup=protocol_setup, embedder=embedder,
                       root=root)
    return PreparedRun(plan, ledger, ctx)


def agent_lock_entries(prepared: list[tuple[Player, object]]) -> dict:
    """What run.json records of the agents' setups (each setup's `lock_entries`): prices merged by model; in a
    grid of several models an agent's entry holds one per model (`claude_code: {scripted: .., scripted-skim: ..}`)."""
    entries: dict = {}
    for player, setup in prepared:
        for key, value in setup.lock_entries().items():
            if key == "prices":
                entries.setdefault("prices", {}).update(value)
            elif player.model is not None:
                entries.setdefault(key, {})[player.model] = value
            else:
                entries[key] = value
    return entries


@dataclass(frozen=True)
class CheckedInputs:
    """What a grid reads before any engine work, every check passed: its tasks, the arms, its protocol and agents."""
    tasks: dict
    arms: dict
    protocol: object
    command_agents: dict


def check_inputs(grid_spec: GridSpec, grid_path: Path, root: Path) -> CheckedInputs:
    """Every check of a grid's inputs that needs no engine, in the order a run makes them; the first problem is
    raised as one line (a run, and `memgrid grid --check`, which stops here)."""
    all_tasks, all_arms = grid_tasks(root, grid_spec, grid_path), load_all_arms(root)
    check_grid(grid_spec, protocol_named(grid_spec.protocol, grid_path), grid_path, all_tasks, all_arms)
    protocol, command_agents = check_agents(grid_spec, grid_path, root, all_arms)
    check_turn_caps(grid_spec, grid_path, all_tasks, command_agents)
    check_models(grid_spec, grid_path, command_agents)
    for model in grid_spec.budgets_usd:  # a cap per model: of a grid that runs each model's cells apart
        if len(grid_spec.models) < 2:
            raise SpecError(grid_path, f"budgets_usd.{model}", "is set on a grid of one model", "use budget_usd")
        if model not in grid_spec.models:
            raise SpecError(grid_path, f"budgets_usd.{model}", "names no model of the grid",
                            f"name models of: {', '.join(grid_spec.models)}")
    capped = "budget_usd" if grid_spec.budget_usd is not None else "budgets_usd" if grid_spec.budgets_usd else None
    if capped and not any(agent_class(a, command_agents).needs_model for a in grid_spec.agents):
        raise SpecError(grid_path, capped, "is set, but no agent of this grid has a priced model, so no spend "
                        "can be counted against it", f"drop {capped} (and --max-usd), or run a model agent (claude-code)")
    return CheckedInputs(all_tasks, all_arms, protocol, command_agents)


def check_models(grid: GridSpec, grid_path: Path, command_agents: dict) -> None:
    """Each model a model agent of the grid runs on, before any engine work: priced when live (a live model without
    prices is refused by name), and one the agent can reach (a model of another provider's family, refused by name
    with the agent). The key is checked where the run starts (model_cli.model_price), as it is read there."""
    for player in grid_players(grid, command_agents):
        cls = agent_class(player.agent, command_agents)
        for model in (player.model,) if player.model else grid.models if player.needs_model else ():
            price_for(model, grid.prices, grid_path)
            why = unservable(model, cls.api)
            if why:
                raise SpecError(grid_path, "models" if len(grid.models) > 1 else "model", f"pairs the {cls.name} agent "
                                f"with a model it cannot reach: {why}", "run the model with an agent that speaks its "
                                "provider's API (claude-code, answerer-anthropic: Anthropic; codex, answerer: OpenAI), "
                                "or set MEMGRID_MODEL_UPSTREAM to a compatible endpoint that serves it")


def check_agents(grid: GridSpec, grid_path: Path, root: Path, arms: dict) -> tuple:
    """The grid's protocol, and its agents by name (built-in or its own command agents), refused by name
    when unknown or unable to play the protocol; the protocol then checks the arms it can host."""
    protocol = protocol_named(grid.protocol, grid_path)
    command_agents = load_command_agents(grid.command_agents, root, grid_path, SOLUTIONS)
    check_agent_names(grid, grid_path)
    protocol.check(grid, grid_path, arms, {a: agent_class(a, command_agents) for a in grid.agents})
    return protocol, command_agents


def check_turn_caps(grid: GridSpec, grid_path: Path, tasks: dict, command_agents: dict) -> None:
    """A turn cap the grid or one of its tasks sets, refused by name for an agent that cannot enforce it (codex):
    run anyway, its sessions would go past the cap unsaid."""
    uncapped = [a for a in grid.agents if not agent_class(a, command_agents).turn_cap]
    if not uncapped:
        return
    fix = f"cap its sessions with limits.max_output_tokens (the model gateway enforces it), or drop {uncapped[0]}"
    if grid.limits.max_turns is not None:
        raise SpecError(grid_path, "limits.max_turns", f"is set, and the {uncapped[0]} agent has no turn cap", fix)
    ids = grid.tasks if isinstance(grid.tasks, tuple) else tuple(tasks)
    capped = next((tasks[t] for t in ids if t in tasks and tasks[t].session_limits.max_turns is not None), None)
    if capped is not None:
        raise SpecError(capped.root / "task.yaml", "limits.max_turns", f"is set, and the {uncapped[0]} agent of grid "
                        f"{grid.name} has no turn cap", fix)


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path.resolve())
