"""`memgrid grid --estimate`: what a grid's model cells will cost, before any runs.

The tokens come from an earlier run of the same cells (matched by task, arm, condition, seed and agent):
- a live run of the same model: its tokens per class as observed; the range spans the cheapest and the
  dearest cell of the same task and arm in that run;
- else a scripted-model run: its token counts of prompts, tools and memory results are real (the CLI sent
  them). The point reads each request's predecessor's prompt from cache and writes the rest, as a provider
  with prompt caching bills; the low end reads every request but the first wholly from cache, the high end
  pays every input token at the dearer of fresh input and cache write (no cache hit). The scripted model's
  answers are not a live model's: output is the stated allowance per cell, at least what the scripted
  session's own tool calls took (the low end); the high end is the cell's output cap when limits set one,
  else twice the allowance. An agent whose requests stand alone (the personal protocol's answerer: one request
  per question, no history resent) reads nothing from cache: its input is fresh input at every end of the range.
A planned cell the source run lacks is costed at the mean of the source's cells of the same arm.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from runner.agents.registry import agent_class
from runner.env.model_endpoint import SCRIPTED, is_scripted
from runner.errors import UserError
from runner.plan.players import agent_of, model_of
from runner.plan.spec import GridSpec, grid_tasks, load_all_arms
from runner.protocols.registry import protocol_named
from runner.results.costs import price_for
from runner.results.ledger import Ledger, latest_attempts
from runner.results.run_lock import load_lock

CLASSES = ("fresh_input", "cache_read", "cache_creation", "output")
DEFAULT_OUTPUT_ALLOWANCE = 2000  # output tokens per cell: a small coding session's edits and replies


@dataclass(frozen=True)
class Estimate:
    model: str
    source: str  # which run the tokens come from, and how it was read
    cells: int  # the grid's model cells
    matched: int  # of them, found in the source run
    tokens: dict[str, int]  # class -> tokens, the point estimate
    usd: float
    usd_low: float
    usd_high: float
    price_source: str


Key = tuple[str, str, str, int, str]  # task, arm, condition, seed, agent


def planned_cells(grid: GridSpec, grid_path, root: Path) -> list[Key]:
    """The coordinates of the grid's cells whose agent needs a model (no image or digest needed): the pairs of arm
    and agent the protocol plays, as the run expands them (a submission beside baselines answers for itself)."""
    tasks = grid_tasks(root, grid, grid_path)
    protocol = protocol_named(grid.protocol, grid_path)
    arms = load_all_arms(root)
    units = protocol.unit_ids(grid, tasks, grid_path)
    pairs = protocol.pairs(grid, units, tasks)
    agents = [a for a in grid.agents if agent_class(a, grid.command_agents).needs_model]
    return [(unit, arm, condition, seed, agent) for seed in range(grid.seeds) for unit, condition in pairs
            for agent in agents for arm in grid.arms if protocol.plays(arms[arm], agent)]


def _rows(run_dir: Path, model: str) -> dict[Key, dict]:
    """The run's finished cells with observed tokens on `model`, keyed by their agent: in a run of several models,
    the cells of its players on `model` alone (claude-code@m is claude-code's cell on m)."""
    return {(r["task"], r["arm"], r["condition"], r["seed"], agent_of(r["agent"])): r
            for r in latest_attempts(Ledger(run_dir).saved_rows()).values()
            if r["final"] and r["tokens_fresh_input"] is not None and model_of(r["agent"]) in (None, model)}


def run_models(run_dir: Path) -> list[str]:
    grid = load_lock(run_dir).get("grid", {})
    return grid.get("models") or [grid.get("model")]


def find_source(runs_dir: Path, model: str, planned: list[Key]) -> tuple[Path, bool]:
    """The newest run under runs_dir with cells of this grid: a live run of `model` first, else a scripted one.
    Returns (its folder, whether it is live)."""
    wanted = set(planned)
    candidates = []
    for lock_path in sorted(runs_dir.glob("*/run.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        grid = json.loads(lock_path.read_text()).get("grid", {})
        ran = grid.get("models") or [grid.get("model")]
        live = model in ran
        if (live or SCRIPTED in ran) and wanted & set(_rows(lock_path.parent, model if live else SCRIPTED)):
            candidates.append((live, lock_path.parent))
    live = [c for c in candidates if c[0]]
    if not (live or candidates):
        raise UserError(f"{runs_dir}: no earlier run has cells of this grid to estimate from: fix: run the same grid "
                        f"with --model scripted first (offline, no spend), or pass --estimate-from RUN")
    return (live or candidates)[0][1], bool(live)


def _cached_split(requests: list[int]) -> tuple[int, int]:
    """(cache read, cache write) of a session's requests under prompt caching: each request reads the previous
    one's prompt from cache and writes what is new."""
    read = sum(min(prev, cur) for prev, cur in zip(requests, requests[1:]))
    return read, sum(requests) - read


def _scripted_requests(run_dir: Path, row: dict) -> list[int]:
    """Input tokens of each generation request of a scripted cell, in order (from the model server's record)."""
    path = run_dir / "cells" / row["cell_id"] / "model_requests.jsonl"
    if not path.is_file():
        return [row["tokens_fresh_input"]]
    requests = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r["input_tokens"] for r in requests if r.get("step") not in ("count_tokens", "refused")]


def estimate_models(grid: GridSpec, grid_path, root: Path, runs_dir: Path, allowance: int = DEFAULT_OUTPUT_ALLOWANCE,
                    source_run: Path | None = None) -> list[Estimate]:
    """Each live model's estimate, in the grid's order (a scripted model costs nothing and has none); a grid of one
    model is that model's. Each is read from its own source run: a live run of that model, else a scripted one."""
    live = [m for m in grid.models if not is_scripted(m)] if len(grid.models) > 1 else list(grid.models)
    if not live:
        raise UserError(f"{grid_path}: models {', '.join(grid.models)} cost nothing: fix: give the live models to "
                        "estimate (--model ID,ID, with their prices in the spec)")
    return [estimate(grid.for_model(m), grid_path, root, runs_dir, allowance, source_run) for m in live]


def estimate(grid: GridSpec, grid_path, root: Path, runs_dir: Path, allowance: int = DEFAULT_OUTPUT_ALLOWANCE,
             source_run: Path | None = None) -> Estimate:
    """One model's estimate (`grid` of one model: a grid of several is estimated per model, `estimate_models`)."""
    if not grid.model or is_scripted(grid.model):
        raise UserError(f"{grid_path}: model {grid.model or '(none)'} costs nothing: fix: give the live model to estimate "
                        "(--model ID, with its prices in the spec)")
    price = price_for(grid.model, grid.prices, grid_path)
    planned = planned_cells(grid, grid_path, root)
    if not planned:
        raise UserError(f"{grid_path}: no agent of this grid uses a model: fix: add claude-code or codex to agents, or drop --estimate")
    if source_run is None:
        source_run, live = find_source(runs_dir, grid.model, planned)
    else:
        live = grid.model in run_models(source_run)
    rows = _rows(source_run, grid.model if live else SCRIPTED)
    by_arm: dict[str, list[dict]] = {}
    for (_, arm, *_rest), r in rows.items():
        by_arm.setdefault(arm, []).append(r)
    cap = grid.limits.max_output_tokens
    tokens = dict.fromkeys(CLASSES, 0.0)
    usd = low = high = 0.0
    matched = 0
    chained = independent = False  # which kinds of model requests the estimate read
    for key in planned:
        if key in rows:
            matched += 1
            stand_ins = [rows[key]]
        elif key[1] in by_arm:
            stand_ins = by_arm[key[1]]
        else:
            raise UserError(f"{source_run}: has no cell of arm {key[1]} to estimate from: fix: run the grid on the "
                            "scripted model first (--model scripted), or pass --estimate-from a run that has it")
        share = 1 / len(stand_ins)
        for r in stand_ins:
            if live:
                cost = price.cost_of(*(r[f"tokens_{c}"] or 0 for c in CLASSES))
                same = [x for x in rows.values() if (x["task"], x["arm"]) == (r["task"], r["arm"])]
                costs = [price.cost_of(*(x[f"tokens_{c}"] or 0 for c in CLASSES)) for x in same]
                for c in CLASSES:
                    tokens[c] += share * (r[f"tokens_{c}"] or 0)
                usd, low, high = usd + share * cost, low + share * min(costs), high + share * max(costs)
                continue
            acted = r["tokens_output"] or 0  # what the scripted session's own tool calls and replies took
            output = max(allowance, acted)
            out_high = max(cap if cap is not None else 2 * allowance, acted)
            tokens["output"] += share * output
            if agent_class(r["agent"], grid.command_agents).independent_requests:
                fresh = sum(r[f"tokens_{c}"] or 0 for c in ("fresh_input", "cache_read", "cache_creation"))
                tokens["fresh_input"] += share * fresh
                usd += share * price.cost_of(fresh, 0, 0, output)
                low += share * price.cost_of(fresh, 0, 0, acted)
                high += share * price.cost_of(fresh, 0, 0, out_high)
                independent = True
                continue
            requests = _scripted_requests(source_run, r)
            read, write = _cached_split(requests)
            tokens["cache_read"] += share * read
            tokens["cache_creation"] += share * write
            dear, cheap = max(price.input, price.cache_creation), min(price.input, price.cache_creation)
            usd += share * price.cost_of(0, read, write, output)
            chained = True
            # at best every request after the first reads all of its prompt from cache; at worst none does
            low += share * (requests[0] * cheap + (sum(requests) - requests[0]) * price.cache_read + acted * price.output) / 1e6
            high += share * (sum(requests) * dear + out_high * price.output) / 1e6
    read_as = [*(["a session's, read as a provider with prompt caching would"] if chained else []),
               *(["each answer request's, as fresh input (they stand alone)"] if independent else [])]
    kind = (f"live run {source_run.name} of {grid.model}" if live else
            f"scripted-model run {source_run.name} (input tokens as the agent sent them: {'; '.join(read_as)}; "
            f"output: an allowance of {allowance:,} tokens per cell)")
    return Estimate(grid.model, kind, len(planned), matched, {c: round(v) for c, v in tokens.items()}, round(usd, 4), round(low, 4),
                    round(high, 4), f"{price.as_of}, {price.source}")
