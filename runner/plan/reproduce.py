"""Reproduce a preregistered run: what the original ran on, what drifted since, and how far the outcomes agree.

The original is either its run folder (run.json and the ledger: every digest, and each cell's
outcome) or, for a reviewer without it, the results record appended to the preregistration (the
input digests and per agent/arm/condition counts).
"""

import shlex
from dataclasses import dataclass
from pathlib import Path

from runner.errors import UserError
from runner.results.ledger import Ledger, latest_attempts
from runner.results.run_lock import load_lock
from runner.plan.prereg import Prereg, read_results
from runner.plan.spec import DEFAULT_SUITE, GridSpec
from runner.exec.run import lock_differences


@dataclass
class Original:
    source: str  # where the reference came from, for the printout
    run_id: str
    lock: dict | None  # run.json, when the run folder is at hand
    record: dict | None  # the appended results record otherwise
    rows: list[dict] | None  # the original ledger's latest attempts, when at hand
    counts: dict[str, dict]  # "<agent>/<arm>/<condition>" -> {"cells", "admitted", "passed", "damaged"}


def load_original(prereg: Prereg, run_dir: Path | None) -> Original:
    if run_dir is not None:
        lock = load_lock(run_dir)
        ledger = run_dir / "ledger.parquet"
        if not ledger.is_file():
            raise UserError(f"{run_dir}: no ledger.parquet: fix: give a run folder whose grid finished, or omit --run "
                            "to reproduce from the results appended to the preregistration")
        rows = list(latest_attempts(Ledger(run_dir).saved_rows()).values())
        return Original(f"run folder {run_dir}", lock["run_id"], lock, None, rows, counts_by_group(rows))
    records = read_results(prereg.path)
    if not records:
        raise UserError(f"{prereg.path}: no results appended below the marker: fix: give the original run folder with "
                        "--run, or append its results first (memgrid report RUN --append-to-prereg FILE)")
    record = records[-1]
    for field in ("run_id", "inputs", "per_arm_condition"):
        if field not in record:
            raise UserError(f"{prereg.path}: the last results record has no '{field}': fix: give the original run "
                            "folder with --run")
    return Original(f"results record {len(records)} of {prereg.path}", record["run_id"], None, record, None,
                    record["per_arm_condition"])


def reads_and_runs(grid: GridSpec) -> list[str]:
    """What reproducing this grid will read from the project and run in sandboxes, one line each, to print before
    anything runs: a preregistration may be someone else's, and its grid names programs (command agents) and
    the files handed to them."""
    if grid.protocol == "coding":
        folder = "tasks/" if grid.suite == DEFAULT_SUITE else f"tasks/{grid.suite}/"
        units = (f"every task under {folder}" + ("" if grid.suite == DEFAULT_SUITE else f" (suite {grid.suite})")
                 if grid.tasks == "all" else ", ".join(f"{folder}{t}/" for t in grid.tasks))
    elif grid.protocol == "planted":
        units = "every task under tasks/planted/" if grid.tasks == "all" else ", ".join(f"tasks/planted/{t}/" for t in grid.tasks)
    else:
        units = f"the {grid.protocol} protocol's generated units" + (f" ({grid.cases} cases)" if grid.cases else "")
    lines = [f"protocol {grid.protocol}, {grid.seeds} seed(s), conditions {', '.join(grid.conditions)}, network {grid.network}",
             f"tasks: {units}",
             f"arms: {', '.join(f'arms/{a}/' for a in grid.arms)}"]
    for name in grid.agents:
        spec = grid.command_agents.get(name)
        if spec is None:
            lines.append(f"agent {name}: memgrid's own" + (f", on model{'s' if len(grid.models) > 1 else ''} "
                                                           f"{', '.join(grid.models)}" if name == "claude-code" and grid.models else ""))
        else:
            lines.append(f"agent {name}: runs {shlex.join(spec['command'])} with the files "
                         f"{', '.join(spec.get('files', [])) or '(none)'}")
    return lines


def _recipe_changes(before: dict, after: dict) -> list[str]:
    return [f"image recipe '{k}' {(before.get(k) or 'absent')[:19]} -> {(after.get(k) or 'absent')[:19]}"
            for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]


def _by_recipe(reference: dict, lock: dict) -> dict:
    """When both runs name their images' recipes, images compare by recipe: an image rebuilt from the
    same recipe on another machine has another id (build times are part of it) and is not drift."""
    inputs = {**reference["inputs"], "images": lock["inputs"].get("images", {})}
    if "model_image" in inputs.get("agent", {}):
        inputs["agent"] = {**inputs["agent"], "model_image": lock["inputs"].get("agent", {}).get("model_image")}
    now = lock["inputs"].get("by_model", {})
    if inputs.get("by_model"):  # a grid of several models: each model's model image, as above
        inputs["by_model"] = {m: {**given, **({"model_image": now.get(m, {}).get("model_image")} if "model_image" in given
                                             else {})} for m, given in inputs["by_model"].items()}
    return {**reference, "inputs": inputs}


def _agent_changes(agent: str, before: dict | None, after: dict | None) -> list[str]:
    """Model agents' runs: the pinned CLI and the model (and its price) are inputs like any digest."""
    before, after = before or {}, after or {}
    changes = []
    for field in ("cli", "model"):
        if before.get(field) != after.get(field):
            changes.append(f"{agent} {field} {before.get(field)!r} -> {after.get(field)!r}")
    return changes


def _per_model(lock: dict, key: str) -> dict:
    """An agent's entry in a lock by model: a grid of several models keeps one per model (exec.job.agent_lock_entries),
    a grid of one its entry alone (under None)."""
    entry = lock.get(key)
    if not entry:
        return {}
    return entry if (lock.get("grid") or {}).get("models") else {None: entry}


def drift(original: Original, prereg: Prereg, lock: dict) -> list[str]:
    """Every input of the new run that differs from the original's, by name."""
    reference = original.lock if original.lock is not None else original.record
    recipes = reference.get("image_recipes") and lock.get("image_recipes")
    if original.lock is not None:
        changes = lock_differences(_by_recipe(original.lock, lock) if recipes else original.lock, lock)
        for kind, key in (("instructions", "sha256"), *(() if recipes else (("arm_images", "id"),))):
            before, after = original.lock.get(kind, {}), lock.get(kind, {})
            for name in sorted(set(before) | set(after)):
                b, a = before.get(name, {}).get(key), after.get(name, {}).get(key)
                if b != a:
                    changes.append(f"{kind} '{name}' {key} {(b or 'absent')[:19]} -> {(a or 'absent')[:19]}")
        frozen = (original.lock.get("preregistration") or {}).get("sha256")
    else:
        # The record holds no grid: the frozen preregistration it names stands for it.
        record = {"grid": lock["grid"], "inputs": original.record["inputs"]}
        changes = lock_differences(_by_recipe(record, lock) if recipes else record, lock)
        if not recipes:
            before, after = original.record.get("image_tags") or {}, lock.get("image_tags") or {}
            changes += [f"image tag '{k}' {before.get(k)} -> {after.get(k)}" for k in sorted(set(before) | set(after))
                        if before.get(k) != after.get(k)]
        frozen = original.record.get("preregistration_sha256")
    if recipes:
        changes += _recipe_changes(reference["image_recipes"], lock["image_recipes"])
    for agent, key in (("claude-code", "claude_code"), ("codex", "codex")):
        before, after = _per_model(reference, key), _per_model(lock, key)
        for model in sorted(set(before) | set(after), key=str):
            changes += _agent_changes(agent if model is None else f"{agent} on model {model}", before.get(model),
                                      after.get(model))
    if frozen is not None and frozen != prereg.frozen_sha256:
        changes.append(f"preregistration {prereg.path.name} above the marker sha256 {frozen[:19]} -> {prereg.frozen_sha256[:19]}")
    return changes


def counts_by_group(rows: list[dict]) -> dict[str, dict]:
    groups: dict[str, dict] = {}
    for r in rows:
        g = groups.setdefault(f"{r['agent']}/{r['arm']}/{r['condition']}", {"cells": 0, "admitted": 0, "passed": 0, "damaged": 0})
        g["cells"] += 1
        g["admitted"] += bool(r["admitted"])
        g["passed"] += bool(r["admitted"] and r["checker_passed"])
        g["damaged"] += bool(r["admitted"] and r["outcome"] == "damaged")
    return groups


def _outcome(row: dict | None) -> str:
    if row is None:
        return "missing"
    if not row["admitted"]:
        return "discarded"
    return "pass" if row["checker_passed"] else "fail"


def cell_agreement(original_rows: list[dict], rows: list[dict]) -> tuple[int, int]:
    """(cells with the same outcome, cells in either run). Cells pair up by their coordinates, not their
    ids: an id includes the input digests, so under allowed drift the same cell gets a new id."""
    def key(r):
        return r["task"], r["arm"], r["seed"], r["condition"], r["agent"]

    before, after = {key(r): r for r in original_rows}, {key(r): r for r in rows}
    cells = set(before) | set(after)
    return sum(_outcome(before.get(k)) == _outcome(after.get(k)) for k in cells), len(cells)


def group_agreement(original: dict[str, dict], reproduced: dict[str, dict]) -> tuple[int, int]:
    """(agent/arm/condition groups with equal admitted and passed counts, groups in either run)."""
    groups = set(original) | set(reproduced)
    same = sum(bool(original.get(g)) and bool(reproduced.get(g)) and
               (original[g]["admitted"], original[g]["passed"]) == (reproduced[g]["admitted"], reproduced[g]["passed"])
               for g in groups)
    return same, len(groups)
