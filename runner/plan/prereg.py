"""Preregistrations: preregistration/NNN-slug.md, frozen above a marker line, results appended below it.

The file is YAML front matter (the question, predictions, endpoints, contrasts, exclusion rules,
sizing, minimum effect, the full grid and prices), a free-text body, then MARKER. Everything above
the marker is what was committed before the run; its sha256 goes into each run's run.json and
each appended results record, so an edit after the fact shows as drift instead of passing silently.
"""

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from runner.errors import SpecError, UserError
from runner.plan.spec import GridSpec, grid_from_dict, parse_yaml, read_spec_bytes, spec_text, validate

MARKER = "<!-- memgrid:frozen: everything above this line is the preregistration; results are appended below it -->"
FOLDER = "preregistration"
RESULTS_FENCE = "```json memgrid-results"
NAME = re.compile(r"^(\d{3})-([a-z0-9][a-z0-9-]{0,59})\.md$")
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,59}$")


@dataclass(frozen=True)
class Prereg:
    path: Path
    question: str
    predictions: tuple[dict, ...]  # as written: {id, text, contrast: "<arm> - <arm>", condition, agent, expect}
    endpoints: tuple[str, ...]  # the first is the primary endpoint
    contrasts: tuple[str, ...]
    exclusion_rules: tuple[str, ...]
    sizing_text: str
    cells: int  # sizing: the number of cells the grid expands to
    min_effect: float
    grid: GridSpec
    prices: dict
    frozen_sha256: str  # of the bytes above the marker line


def _split(path: Path, data: bytes) -> tuple[int, int]:
    """(start, end) byte offsets of the marker line, end past its newline."""
    offset = 0
    for line in data.splitlines(keepends=True):
        if line.rstrip(b"\r\n") == MARKER.encode():
            return offset, offset + len(line)
        offset += len(line)
    raise SpecError(path, "(marker)", "has no frozen marker line",
                    f"end the preregistration with this exact line, results go below it: {MARKER}")


def _front_matter(path: Path, text: str) -> dict:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SpecError(path, "(front matter)", "does not start with a '---' line",
                        "put the YAML fields between a first line '---' and a closing '---' line")
    try:
        close = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise SpecError(path, "(front matter)", "has no closing '---' line", "close the YAML fields with a '---' line") from None
    return parse_yaml(path, "\n".join(lines[1:close]), first_line=2, top="(front matter)")


def _todo(value, where: str = "") -> str | None:
    """The first field still holding the template's TODO placeholder."""
    if isinstance(value, str) and value.lstrip().startswith("TODO"):
        return where or "(top level)"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, sub in items:
        found = _todo(sub, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key))
        if found:
            return found
    return None


def frozen_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return data[:_split(path, data)[0]]


def load_prereg(path: Path) -> Prereg:
    path = Path(path)
    data = read_spec_bytes(path, missing_fix="give a file under preregistration/ (memgrid prereg new SLUG writes one)")
    start, _ = _split(path, data)
    fields = _front_matter(path, spec_text(path, data[:start]))
    placeholder = _todo(fields)
    if placeholder:
        raise SpecError(path, placeholder, "still holds the template's TODO", "replace the TODO with the real value")
    for p in fields["predictions"] if isinstance(fields.get("predictions"), list) else ():
        if isinstance(p, dict) and "expect" in p and p["expect"] is None:
            p["expect"] = "null"  # YAML reads a bare `null` as None; it means "no effect" here
    validate(fields, "prereg", path)

    if fields["grid"].get("prices") and fields["prices"] and fields["grid"]["prices"] != fields["prices"]:
        raise SpecError(path, "prices", "differs from grid.prices", "give the prices in one place, the top-level prices")
    try:
        grid = grid_from_dict({**fields["grid"], **({"prices": fields["prices"]} if fields["prices"] else {})}, path)
    except SpecError as e:
        where = e.field if e.field.startswith("prices") and fields["prices"] else \
            "grid" if e.field == "(top level)" else f"grid.{e.field}"
        raise SpecError(path, where, e.problem, e.fix) from None

    predictions = tuple(fields["predictions"])
    for i, p in enumerate(predictions):
        for arm in p["contrast"].split(" - "):
            if arm not in grid.arms:
                raise SpecError(path, f"predictions[{i}].contrast", f"names arm '{arm}', which the grid does not run",
                                f"use arms of grid.arms: {', '.join(grid.arms)}")
        if p["condition"] not in grid.conditions:
            raise SpecError(path, f"predictions[{i}].condition", f"'{p['condition']}' is not among grid.conditions",
                            f"use one of: {', '.join(grid.conditions)}")
        if p["agent"] not in grid.agents:
            raise SpecError(path, f"predictions[{i}].agent", f"'{p['agent']}' is not among grid.agents",
                            f"use one of: {', '.join(grid.agents)}")
        check_prediction_model(p, grid, path, f"predictions[{i}]")
    ids = [p["id"] for p in predictions]
    if len(set(ids)) != len(ids):
        raise SpecError(path, "predictions", "repeats a prediction id", "give each prediction its own id")
    for i, contrast in enumerate(fields["contrasts"]):
        for arm in contrast.split(" - "):
            if arm not in grid.arms:
                raise SpecError(path, f"contrasts[{i}]", f"names arm '{arm}', which the grid does not run",
                                f"use arms of grid.arms: {', '.join(grid.arms)}")

    return Prereg(path=path, question=fields["question"], predictions=predictions, endpoints=tuple(fields["endpoints"]),
                  contrasts=tuple(fields["contrasts"]), exclusion_rules=tuple(fields["exclusion_rules"]),
                  sizing_text=fields["sizing"]["text"], cells=fields["sizing"]["cells"], min_effect=float(fields["min_effect"]),
                  grid=grid, prices=fields["prices"], frozen_sha256=hashlib.sha256(data[:start]).hexdigest())


def check_prediction_model(p: dict, grid: GridSpec, path: Path, where: str) -> None:
    """A prediction on a model agent of a grid of several models names its model (the cells it is judged on are
    that model's player's, agent@model); a model named is one the grid runs its agent on."""
    from runner.agents.registry import agent_class  # the agents package builds on plan; only this check needs it

    model, needs = p.get("model"), agent_class(p["agent"], grid.command_agents).needs_model
    if model is not None and not needs:
        raise SpecError(path, f"{where}.model", f"is set, and agent {p['agent']} runs on no model", "remove it")
    if model is not None and model not in grid.models:
        raise SpecError(path, f"{where}.model", f"'{model}' is not among the grid's models",
                        f"use one of: {', '.join(grid.models) or '(none: the grid names no model)'}")
    if model is None and needs and len(grid.models) > 1:
        raise SpecError(path, f"{where}.model", f"is missing: the grid runs {p['agent']} on {len(grid.models)} models, "
                        "each judged apart", f"name one of: {', '.join(grid.models)}")


def count_cells(grid: GridSpec, root: Path, where: Path) -> int:
    """How many cells the grid expands to in this checkout (the real expansion, with placeholder digests)."""
    from runner.plan.grid import GridInputs, expand, select
    from runner.plan.spec import grid_tasks, load_all_arms
    from runner.protocols.registry import protocol_named

    tasks, arms, protocol = grid_tasks(root, grid, where), load_all_arms(root), protocol_named(grid.protocol, where)
    task_ids, arm_names = select(grid, protocol, tasks, arms, where)
    inputs = GridInputs({t: "" for t in task_ids}, {a: "" for a in arm_names}, {}, {})
    return len(expand(grid, task_ids, tasks, inputs, pairs=protocol.pairs(grid, task_ids, tasks),
                      plays=lambda arm, agent: protocol.plays(arms[arm], agent)))


def check_sizing(prereg: Prereg, root: Path) -> None:
    try:
        n = count_cells(prereg.grid, root, prereg.path)
    except SpecError as e:  # the grid's fields sit under grid: in a preregistration
        raise SpecError(prereg.path, f"grid.{e.field}", e.problem, e.fix) from None
    if n != prereg.cells:
        raise SpecError(prereg.path, "sizing.cells", f"says {prereg.cells} but the grid expands to {n} cells here",
                        f"set sizing.cells to {n} in a new preregistration, or restore the tasks the grid was sized for")


def check_location(root: Path, path: Path) -> None:
    """A preregistration outside preregistration/ would escape check_clean."""
    if Path(path).resolve().parent != (Path(root) / FOLDER).resolve():
        raise UserError(f"{path}: not in {Path(root) / FOLDER}: fix: keep preregistrations in {FOLDER}/ "
                        "(memgrid prereg new SLUG writes one there)")


def check_clean(root: Path) -> None:
    """Refuse unless preregistration/ is committed as it is: a run must start from a preregistration
    anyone can check out at the run's git commit."""
    folder = Path(root) / FOLDER
    try:
        inside = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UserError(f"{root}: git did not answer ({e}): fix: install git; a preregistered run needs a git checkout") from None
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        raise UserError(f"{root}: not a git checkout: fix: run preregistered grids from a git clone of the project, "
                        f"with {FOLDER}/ committed")
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all", "--", f"{FOLDER}/"],
                            capture_output=True, text=True, timeout=30)
    if status.returncode != 0:
        raise UserError(f"{folder}: git status failed: {status.stderr.strip()}: fix: repair the checkout")
    dirty = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    if dirty:
        raise UserError(f"{folder}: uncommitted changes in {', '.join(dirty)}: fix: commit them (git add {FOLDER}/ && "
                        "git commit) before a preregistered run, so the run's git commit holds what was preregistered")


def append_results(path: Path, markdown: str, record: dict) -> None:
    """Append `markdown` and `record` (a ```json memgrid-results block) below the marker. The bytes above
    the marker are checked unchanged in the new file before it atomically replaces the old one."""
    path = Path(path)
    before = path.read_bytes()
    start, end = _split(path, before)
    record = {**record, "preregistration_sha256": hashlib.sha256(before[:start]).hexdigest()}
    block = f"{RESULTS_FENCE}\n{json.dumps(record, indent=2, sort_keys=True, default=_plain)}\n```\n"
    gap = b"" if before.endswith(b"\n") else b"\n"
    after = before + gap + f"\n{markdown.strip()}\n\n{block}".encode()

    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(after)
    written = tmp.read_bytes()
    if written[:end] != before[:end] or _split(tmp, written)[1] != end or read_results(tmp)[-1] != json.loads(json.dumps(record, default=_plain)):
        tmp.unlink()
        raise UserError(f"{path}: appending results would change the preregistration above the marker: fix: report this as a bug")
    if path.read_bytes() != before:
        tmp.unlink()
        raise UserError(f"{path}: changed while results were appended: fix: run the command again")
    os.replace(tmp, path)


def _plain(value):
    """Numbers from parquet arrive as numpy scalars; JSON wants plain ones."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def read_results(path: Path) -> list[dict]:
    """Every results record appended below the marker, oldest first."""
    path = Path(path)
    data = path.read_bytes()
    lines = data[_split(path, data)[1]:].decode("utf-8").splitlines()
    records, i = [], 0
    while i < len(lines):
        if lines[i].strip() == RESULTS_FENCE:
            try:
                close = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            except StopIteration:
                raise SpecError(path, f"results block {len(records) + 1}", "has no closing ``` line",
                                "restore the block as memgrid wrote it (git checkout the file)") from None
            try:
                records.append(json.loads("\n".join(lines[i + 1:close])))
            except json.JSONDecodeError as e:
                raise SpecError(path, f"results block {len(records) + 1}", f"is not valid JSON ({e.msg})",
                                "restore the block as memgrid wrote it (git checkout the file)") from None
            i = close
        i += 1
    return records


def new_prereg(root: Path, slug: str) -> Path:
    """Write preregistration/NNN-slug.md (the next free NNN) from the template."""
    if not SLUG.match(slug):
        raise UserError(f"prereg new {slug!r}: not a slug: fix: use lower-case letters, digits and '-', e.g. recall-vs-claude-md")
    folder = Path(root) / FOLDER
    folder.mkdir(exist_ok=True)
    numbers = [int(m.group(1)) for p in folder.iterdir() if (m := NAME.match(p.name))]
    taken = [p.name for p in folder.iterdir() if (m := NAME.match(p.name)) and m.group(2) == slug]
    if taken:
        raise UserError(f"{folder / taken[0]}: slug '{slug}' is taken: fix: choose another slug")
    path = folder / f"{max(numbers, default=0) + 1:03d}-{slug}.md"
    from runner.plan.spec import load_grid, preset_path

    default = load_grid(preset_path("default"))
    path.write_text(TEMPLATE.format(cells=count_cells(default, root, preset_path("default")), marker=MARKER), encoding="utf-8")
    return path


TEMPLATE = """---
# A preregistration: fill in every TODO, commit this file, then run it with
#   memgrid grid --prereg {{this file}}
# Everything above the marker line at the end is frozen once committed: the run records its sha256
# and results are only ever appended below the marker (memgrid report RUN --append-to-prereg FILE).
# To change the plan after committing, write a new preregistration (memgrid prereg new SLUG).

# The question the grid answers, in one or two sentences.
question: "TODO: e.g. Does the recall arm lift the reader's checker pass rate over claude_md when the fact is present?"

# What you expect before seeing any result. contrast: "<arm> - <arm>" (pass rate of the first minus the
# second, arms of grid.arms); condition and agent pick the cells; expect: positive, negative or null
# (null: no difference larger than min_effect).
predictions:
  - id: P1
    text: "TODO: e.g. recall passes more tasks than claude_md under present"
    contrast: "recall - claude_md"
    condition: present
    agent: reader
    expect: positive

# Ordered; the first is the primary endpoint the predictions are judged on.
#   checker_pass: the task's checker passes the artifact (among admitted cells)
#   damage: an admitted cell fails a task that bare solved under the same condition
endpoints: [checker_pass, damage]

# The arm differences to report, each "<arm> - <arm>" (arms of grid.arms).
contrasts:
  - "recall - claude_md"
  - "oracle_memory - claude_md"
  - "oracle_memory - recall"

# Which cells are excluded from scoring, decided now. The gate discards a cell (admitted = false)
# when a proof of its treatment fails; discarded cells are counted and reported, never scored.
exclusion_rules:
  - "Cells the gate discards (a failed treatment proof, a tampered bundle, a harness error after retries) are excluded from pass rates and reported by discard reason."
  - "TODO: any further rule, or delete this line"

# Why this many cells are enough, and the number of cells the grid expands to (memgrid checks it
# against the expansion before the run starts). {cells} is the count for the grid below as written.
sizing:
  text: "TODO: e.g. 12 tasks x 1 seed per arm and condition; the reader is deterministic, so one seed measures it"
  cells: {cells}

# The smallest difference in pass rate (0 to 1) that counts as an effect; smaller deltas are reported as noise.
min_effect: 0.10

# The full grid spec that runs (fields as in runner/defaults/default.yaml; memgrid arm list and
# memgrid task list show the names). No command-line option can narrow it. A paid run may add
# budget_usd: N (stop starting cells before the priced spend passes N; memgrid grid --max-usd overrides
# it) and limits: {{max_turns: N, max_output_tokens: N}} (per-session caps).
grid:
  name: default
  tasks: all
  arms: [bare, placebo, claude_md, fs_grep, recall, recall_prefetch, oracle_memory]
  agents: [reader]
  seeds: 1
  conditions: [present, absent, superseded, contradictory, adjacent]
  network: none

# Model prices per million tokens for agents that use a model, e.g.
#   my-model: {{input: 3, output: 15, cache_read: 0.3, cache_creation: 3.75, as_of: 2026-11-01, source: https://...}}
# {{}} for LLM-free agents.
prices: {{}}
---

# TODO: title

Why this question, what earlier runs (if any) informed the predictions, and anything a reader of
the results should know before seeing them.

{marker}
"""
