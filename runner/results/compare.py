"""`memgrid compare RUN_A RUN_B`: one arm in two runs (v1 in A, v2 in B), cell against cell.

Cells pair by (task, condition, seed, agent), the way the report pairs two arms within a run, and on the
same cells: the latest attempt of each, final ones only (a non-final latest attempt is a harness failure
a resume reruns, so that cell is in neither run's analysis and counts as unpaired). Discarded cells are
treated as the report treats them: the delta, its interval, McNemar and the pass and damage rates are
judged per-protocol (both cells of a pair admitted); the intention-to-treat delta (every pair, a discarded
cell counted as a failure) is beside it to show what the discards could have changed.

Two runs only compare when they ran the same tasks on the same corpora, grid, images and agent inputs;
the compared arms' own digests are expected to differ (that is the comparison). What else differs is
drift: refused unless allowed, and then named at the top of every output.
"""

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from runner.errors import UserError
from runner.exec.run import resolve_run_dir
from runner.plan.grid import corpus_key
from runner.results.analysis import damage_rate, grid_order, load_cells, paired_bases, paired_rows_stat
from runner.results.stats import BOOTSTRAP_SEED, DEFAULT_MIN_EFFECT, RESAMPLES, PairedStat, Rate, paired_frames, wilson
from runner.results.page import CSS, escape, html_table, write_page
from runner.results.report import _delta, _p, _rt
from runner.results.run_lock import load_lock

# The two sides' labels in the one frame both runs' cells are paired in (arm names never hold a colon).
SIDE_A, SIDE_B = "run:A", "run:B"
PAIR_KEY = ["agent", "condition", "task", "seed"]
GRID_FIELDS = ("tasks", "conditions", "seeds", "agents", "model", "models")  # what makes two runs' cells the same cells


@dataclass(frozen=True)
class ArmPair:
    a: str  # the arm's name in run A
    b: str  # its name in run B (recall -> recall_v2), or the same name

    @property
    def name(self) -> str:
        return self.a if self.a == self.b else f"{self.a} -> {self.b}"


@dataclass(frozen=True)
class PairedGroup:
    """One agent x condition x arm pair: run B's cells against run A's, paired by (task, seed).

    `pp` and `itt` are B minus A: their `arm_only` counts pairs only B passed (McNemar's c), `base_only`
    pairs only A passed (b). The rates are over the per-protocol pairs, so pass_b - pass_a is `pp.delta`."""
    agent: str
    condition: str
    arms: ArmPair
    pass_a: Rate
    pass_b: Rate
    damage_a: Rate  # damaged over the per-protocol pairs the damage detector scored
    damage_b: Rate
    pp: PairedStat
    itt: PairedStat
    only_a: int  # run A's cells with no partner in run B
    only_b: int


@dataclass(frozen=True)
class Comparison:
    run_a: str
    run_b: str
    arms: list[ArmPair]
    groups: list[PairedGroup]
    drift: list[str]  # inputs that differ beyond the compared arms; empty unless --allow-drift let them through
    arm_digests: list[str]  # each compared arm's digest in both runs: expected to differ
    min_effect: float
    resamples: int
    seed: int

    @property
    def unpaired_a(self) -> int:
        return sum(g.only_a for g in self.groups)

    @property
    def unpaired_b(self) -> int:
        return sum(g.only_b for g in self.groups)


# ---------------------------------------------------------------- pairing

def parse_arm(spec: str) -> ArmPair:
    a, _, b = spec.partition(":")
    if not a.strip() or (":" in spec and not b.strip()):
        raise UserError(f"--arm {spec!r}: not an arm name or A:B: fix: give --arm recall, or --arm recall:recall_v2 "
                        "to pair run A's recall with run B's recall_v2")
    return ArmPair(a.strip(), (b or a).strip())


def arm_pairs(spec: str | None, arms_a: list[str], arms_b: list[str], run_a: str, run_b: str) -> list[ArmPair]:
    """The arms to compare: --arm's pair, or every arm with finished cells in both runs (run A's grid order)."""
    if spec is None:
        common = [ArmPair(a, a) for a in arms_a if a in arms_b]
        if not common:
            raise UserError(f"runs {run_a} and {run_b} have no arm in common (A: {', '.join(arms_a)}; B: "
                            f"{', '.join(arms_b)}): fix: pair a renamed arm with --arm A_ARM:B_ARM")
        return common
    pair = parse_arm(spec)
    for name, run, arms in ((pair.a, run_a, arms_a), (pair.b, run_b, arms_b)):
        if name not in arms:
            raise UserError(f"--arm {spec}: run {run} has no finished cell of arm '{name}' (its arms: "
                            f"{', '.join(arms)}): fix: name an arm of that run")
    return [pair]


def side_by_side(cells_a: pd.DataFrame, cells_b: pd.DataFrame, pair: ArmPair) -> pd.DataFrame:
    """The pair's cells of both runs in one frame, the arm column naming the run, so the report's within-run
    pairing (paired_frames) pairs them across runs."""
    return pd.concat([cells_a[cells_a["arm"] == pair.a].assign(arm=SIDE_A),
                      cells_b[cells_b["arm"] == pair.b].assign(arm=SIDE_B)], ignore_index=True)


def paired_keys(side: pd.DataFrame) -> pd.DataFrame:
    """The (agent, condition, task, seed) both runs finished."""
    a = side.loc[side["arm"] == SIDE_A, PAIR_KEY].drop_duplicates()
    return a.merge(side.loc[side["arm"] == SIDE_B, PAIR_KEY].drop_duplicates(), on=PAIR_KEY)


# ---------------------------------------------------------------- drift

def _short(digest) -> str:
    return str(digest or "absent")[:19]


def _grid_field_drift(name: str, a, b) -> str | None:
    if isinstance(a, list) and isinstance(b, list):  # a list's order changes no cell: name what only one run has
        only_a, only_b = [v for v in a if v not in b], [v for v in b if v not in a]
        if not (only_a or only_b):
            return None
        return f"grid {name}: " + "; ".join(f"{', '.join(map(str, only))} only in run {side}"
                                            for side, only in (("A", only_a), ("B", only_b)) if only)
    return None if a == b else f"grid {name}: {a!r} in run A, {b!r} in run B"


def lock_drift(lock_a: dict, lock_b: dict, keys: pd.DataFrame) -> list[str]:
    """What differs between the runs' locks that bears on the paired cells: the grid's fields that make
    cells the same cells, each paired task's digest, the corpus of each paired (condition, seed), the
    shared images (the checker grades) and the agent inputs (model, CLI pin). One line each."""
    grid_a, grid_b = lock_a.get("grid", {}), lock_b.get("grid", {})
    inputs_a, inputs_b = lock_a.get("inputs", {}), lock_b.get("inputs", {})
    out = [line for name in GRID_FIELDS if (line := _grid_field_drift(name, grid_a.get(name), grid_b.get(name)))]

    def differ(kind: str, label: str, names) -> None:
        before, after = inputs_a.get(kind, {}), inputs_b.get(kind, {})
        out.extend(f"{label} '{name}' digest {_short(before.get(name))} in run A, {_short(after.get(name))} in run B"
                   for name in names if before.get(name) != after.get(name))

    differ("tasks", "task", sorted(set(keys["task"])))
    corpora = set(inputs_a.get("corpora", {})) | set(inputs_b.get("corpora", {}))
    differ("corpora", "corpus", sorted(k for k in {corpus_key(c, int(s)) for c, s in zip(keys["condition"], keys["seed"])}
                                       if k in corpora))
    differ("images", "image", sorted(set(inputs_a.get("images", {})) | set(inputs_b.get("images", {}))))
    differ("agent", "agent input", sorted(set(inputs_a.get("agent", {})) | set(inputs_b.get("agent", {}))))
    by_a, by_b = inputs_a.get("by_model", {}), inputs_b.get("by_model", {})
    for model in sorted(set(by_a) | set(by_b)):  # a grid of several models: each model's agent inputs
        before, after = by_a.get(model, {}), by_b.get(model, {})
        out.extend(f"agent input '{name}' of model {model} digest {_short(before.get(name))} in run A, "
                   f"{_short(after.get(name))} in run B" for name in sorted(set(before) | set(after))
                   if before.get(name) != after.get(name))
    return out


def arm_digest_lines(lock_a: dict, lock_b: dict, pairs: list[ArmPair]) -> list[str]:
    arms_a, arms_b = lock_a.get("inputs", {}).get("arms", {}), lock_b.get("inputs", {}).get("arms", {})
    out = []
    for p in pairs:
        a, b = arms_a.get(p.a), arms_b.get(p.b)
        out.append(f"arm {p.name}: digest {_short(a)} in run A, {_short(b)} in run B: "
                   + ("expected to differ, this is what is compared" if a != b
                      else "the same in both runs: the two runs ran the same arm"))
    return out


def refuse_drift(drift: list[str], run_a: str, run_b: str) -> None:
    if drift:
        raise UserError("\n".join(f"run {run_b} against run {run_a}: {line}: fix: compare runs of the same inputs, or "
                                  "pass --allow-drift to compare anyway (the output then names what drifted)"
                                  for line in drift))


# ---------------------------------------------------------------- statistics

def paired_groups(side: pd.DataFrame, pair: ArmPair, min_effect: float, resamples: int, seed: int) -> list[PairedGroup]:
    columns = ("passed", "admitted", "outcome")
    counts = side.groupby(["agent", "condition", "arm"]).size()
    out = []
    for (agent, condition), wide in paired_frames(side, columns).items():
        n_a, n_b = int(counts.get((agent, condition, SIDE_A), 0)), int(counts.get((agent, condition, SIDE_B), 0))
        # an agent and condition one run never ran gets that side's columns empty, so it pairs nothing
        wide = wide.reindex(columns=pd.MultiIndex.from_product([columns, (SIDE_A, SIDE_B)]))
        pp_rows, itt_rows = paired_bases(wide, SIDE_B, SIDE_A)
        stat_pp, stat_itt = (paired_rows_stat(rows, SIDE_B, SIDE_A, min_effect, resamples, seed)
                             for rows in (pp_rows, itt_rows))

        def rates(side_label: str) -> tuple[Rate, Rate]:
            return (wilson(int(pp_rows[("passed", side_label)].astype(bool).sum()), len(pp_rows)),
                    damage_rate(pp_rows[("outcome", side_label)]))

        (pass_a, damage_a), (pass_b, damage_b) = rates(SIDE_A), rates(SIDE_B)
        out.append(PairedGroup(agent, condition, pair, pass_a, pass_b, damage_a, damage_b, stat_pp, stat_itt,
                               n_a - stat_itt.pairs, n_b - stat_itt.pairs))
    return out


def compare_runs(run_a: str, run_b: str, runs_dir: Path = Path("runs"), arm: str | None = None,
                 allow_drift: bool = False, min_effect: float | None = None, resamples: int = RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> Comparison:
    dir_a, dir_b = resolve_run_dir(run_a, runs_dir), resolve_run_dir(run_b, runs_dir)
    lock_a, lock_b = load_lock(dir_a), load_lock(dir_b)
    id_a, id_b = lock_a.get("run_id") or dir_a.name, lock_b.get("run_id") or dir_b.name
    for run_id, lock in ((id_a, lock_a), (id_b, lock_b)):
        protocol = lock.get("grid", {}).get("protocol", "coding")
        if protocol != "coding":  # the pass, damage and pairing below are the coding protocol's analysis
            raise UserError(f"run {run_id} is a {protocol} run: fix: compare two coding runs (memgrid report prints "
                            f"a {protocol} run's own summary)")
    cells_a, cells_b = load_cells(dir_a), load_cells(dir_b)
    pairs = arm_pairs(arm, grid_order(cells_a["arm"].unique(), lock_a.get("grid", {}).get("arms", [])),
                      grid_order(cells_b["arm"].unique(), lock_b.get("grid", {}).get("arms", [])), id_a, id_b)
    sides = {p: side_by_side(cells_a, cells_b, p) for p in pairs}
    keys = pd.concat([paired_keys(side) for side in sides.values()], ignore_index=True)
    if keys.empty:
        raise UserError(f"runs {id_a} and {id_b}: no cell of {', '.join(p.name for p in pairs)} pairs across them "
                        "by (task, condition, seed, agent): fix: compare runs of the same grid")
    drift = lock_drift(lock_a, lock_b, keys)
    if not allow_drift:
        refuse_drift(drift, id_a, id_b)
    min_effect = DEFAULT_MIN_EFFECT if min_effect is None else float(min_effect)
    grid = lock_a.get("grid", {})
    groups = [g for p, side in sides.items() for g in paired_groups(side, p, min_effect, resamples, seed)]
    agents = grid_order({g.agent for g in groups}, grid.get("agents", []))
    conditions = grid_order({g.condition for g in groups}, grid.get("conditions", []))
    groups.sort(key=lambda g: (agents.index(g.agent), conditions.index(g.condition), pairs.index(g.arms)))
    return Comparison(id_a, id_b, pairs, groups, drift, arm_digest_lines(lock_a, lock_b, pairs), min_effect, resamples, seed)


# ---------------------------------------------------------------- output

def _rate(r: Rate) -> str:
    return "–" if r.rate is None else f"{r.rate:.2f}"


def _wilson(r: Rate) -> str:
    return "–" if r.rate is None else f"{r.rate:.2f} [{r.low:.2f}, {r.high:.2f}] ({r.passed}/{r.n})"


def _unpaired_line(c: Comparison) -> str:
    return (f"unpaired cells: {c.unpaired_a} of run A and {c.unpaired_b} of run B have no partner in the other run "
            "(by task, condition, seed and agent); they are in no figure above")


def _terminal_table(c: Comparison, pair: ArmPair) -> Table:
    # pass and damage as A/B, one column each: separate columns would pass make's 130 (the page has them apart)
    table = _rt("agent", "condition", "n", "pass A/B", "delta B−A [95% CI]", "McNemar", "b/c", "label",
                "ITT", "damage A/B", "unpaired",
                title=f"arm {pair.name}: B against A over n cells paired by (task, seed), both cells admitted; b/c = pairs "
                      "only A / only B passed; ITT = the delta with a discarded cell as a failure; unpaired = cells of "
                      "A / of B with no partner")
    for g in c.groups:
        if g.arms != pair:
            continue
        colour = {"positive": "green", "negative": "red"}.get(g.pp.label or "", "dim")
        table.add_row(g.agent, g.condition, str(g.pp.pairs), f"{_rate(g.pass_a)}/{_rate(g.pass_b)}", _delta(g.pp), _p(g.pp),
                      f"{g.pp.base_only}/{g.pp.arm_only}", f"[{colour}]{g.pp.label or '–'}",
                      "–" if g.itt.delta is None else f"{g.itt.delta:+.2f}", f"{_rate(g.damage_a)}/{_rate(g.damage_b)}",
                      f"{g.only_a}/{g.only_b}")
    return table


def print_terminal(c: Comparison, console: Console) -> None:
    def line(text: str, style: str | None = None) -> None:
        console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)

    for drifted in c.drift:
        line(f"drift allowed: {drifted}", "yellow")
    line(f"run {c.run_b} (B) against run {c.run_a} (A) · minimum effect {c.min_effect:.2f} · "
         f"bootstrap {c.resamples:,} task resamples (seed {c.seed})", "bold")
    for digests in c.arm_digests:
        line(digests)
    for pair in c.arms:
        console.print(_terminal_table(c, pair))
    reasons: dict[str, int] = {}
    for g in c.groups:
        for reason in filter(None, (g.pp.reason or "").split("; ")):
            reasons[reason] = reasons.get(reason, 0) + 1
    for reason, n in reasons.items():
        line(f"  note: {reason} ({n} of {len(c.groups)} rows)", "dim")
    line(_unpaired_line(c))


def render_html(c: Comparison) -> str:
    rows = [[g.agent, g.condition, g.arms.name, g.pp.pairs, g.pp.tasks, _wilson(g.pass_a), _wilson(g.pass_b), _delta(g.pp),
             _p(g.pp), g.pp.base_only, g.pp.arm_only, (escape(g.pp.label or "–"), g.pp.label or ""), _delta(g.itt),
             _wilson(g.damage_a), _wilson(g.damage_b), g.only_a, g.only_b, (escape(g.pp.reason or ""), "wrap")]
            for g in c.groups]
    table = html_table(["agent", "condition", "arm", "pairs", "tasks", "pass A [Wilson 95 %]", "pass B [Wilson 95 %]",
                    "delta B − A [95 % CI]", "McNemar p", "A only", "B only", "label", "delta ITT [95 % CI]",
                    "damage A", "damage B", "unpaired A", "unpaired B", "note"],
                   rows, numeric={3, 4, 9, 10, 15, 16}, table_id="compare")
    drift = ("<ul id=\"drift\">" + "".join(f"<li class=\"bad\">{escape(line)}</li>" for line in c.drift) + "</ul>"
             if c.drift else "<p id=\"drift\">none: the same tasks, corpora, grid, images and agent inputs</p>")
    return "\n".join([
        f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>memgrid compare {escape(c.run_b)} against "
        f"{escape(c.run_a)}</title><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><style>{CSS}</style>"
        "</head><body>",
        f"<h1>memgrid compare: run <code id=\"run-b\">{escape(c.run_b)}</code> (B) against run <code id=\"run-a\">"
        f"{escape(c.run_a)}</code> (A)</h1>",
        f"<p class=\"meta\">minimum effect {c.min_effect:.2f} · bootstrap {c.resamples:,} task resamples, seed {c.seed}</p>",
        f"<h2>Drift allowed</h2>{drift}",
        "<h2>Compared arms</h2><ul id=\"arms\">" + "".join(f"<li>{escape(line)}</li>" for line in c.arm_digests) + "</ul>",
        "<h2>B against A</h2><p class=\"note\">Cells paired by (task, seed) within an agent and condition; delta = mean "
        "pass(B) − pass(A) over pairs whose two cells were admitted, 95 % interval from a task-cluster bootstrap; exact "
        "McNemar on the discordant pairs (A only: A passed, B failed; B only: the reverse). Pass and damage rates are over "
        f"the same admitted pairs; ITT counts a discarded cell as a failure. |delta| below {c.min_effect:.2f} is labelled "
        f"noise.</p>{table}",
        f"<p id=\"unpaired\" class=\"note\">{escape(_unpaired_line(c))}</p>",
        "</body></html>"])


def write_html(c: Comparison, path: Path) -> Path:
    return write_page(path, render_html(c))


def write_json(c: Comparison, path: Path) -> Path:
    record = {**asdict(c), "unpaired_a": c.unpaired_a, "unpaired_b": c.unpaired_b}
    return write_page(path, json.dumps(record, indent=1) + "\n")
