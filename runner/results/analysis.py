"""Analysis of one run's ledger: rates, paired contrasts, harm and costs as typed results.

Only the latest attempt of each cell counts, and only when it is final (a non-final latest
attempt is a harness failure that a resume reruns). Every statistic that cannot be computed
honestly from the sample is None with a reason; nothing is filled in with a zero.

Two bases sit side by side everywhere a rate is quoted:
- intention-to-treat (ITT): every cell; a discarded cell counts as a failure;
- per-protocol (PP): admitted cells only (the gate's verdict: discarded, not scored).
An agent that ended with an error (exit non-zero, timeout, its own error) is admitted and scored; each group
counts those cells (`agent_endings`), since an agent cannot choose to leave the per-protocol base.
Contrasts and predictions are judged per-protocol; the ITT figures are beside them to show
what the discards could have changed.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from runner.agents.base import BUDGET_EXHAUSTED, ERROR_ENDINGS
from runner.errors import UserError
from runner.results.ledger import Ledger, latest_attempts
from runner.results.by_model import ModelEffect, ModelSpend, across_models, spend_by_model
from runner.results.run_lock import load_lock
from runner.results.stats import (BOOTSTRAP_SEED, DEFAULT_MIN_EFFECT, RESAMPLES, TOKEN_CLASSES, Contrast, PairedStat,
                                  Rate, paired_frames, paired_stat, sum_or_none, wilson)

# The coding protocol's analysis by arm: the baseline every ranked memory arm is compared with, the
# floor harm is measured against, the diagnostic arms that are never ranked (DESIGN.md), and the
# diagnostic contrasts as (minuend, subtrahend, what the difference measures) from the coding-suite spec.
BASELINE = "claude_md"
FLOOR = "bare"
DIAGNOSTIC_ARMS = frozenset({"recall_prefetch", "oracle_memory"})
DIAGNOSTICS = (
    ("oracle_memory", "claude_md", "headroom"),
    ("recall", "claude_md", "natural lift"),
    ("recall_prefetch", "claude_md", "prefetch lift"),
    ("oracle_memory", "recall", "access gap"),
    ("recall_prefetch", "recall", "query gap"),
)
OUTCOMES = ("solved", "neutral_failure", "damaged", "ambiguous")


@dataclass(frozen=True)
class GroupStats:
    """One agent x arm x condition."""
    agent: str
    arm: str
    condition: str
    cells: int
    admitted: int
    passed: int
    itt: Rate
    pp: Rate
    discards: dict[str, int]  # reason -> cells
    outcomes: dict[str, int]  # outcome class -> admitted cells
    # The damage detector's own rate: admitted cells whose outcome is `damaged` over admitted cells it
    # scored. Unlike harm against bare it needs no paired bare cell, so it shows damage bare cannot.
    damage: Rate
    # Admitted cells whose agent ended with an error (exit_nonzero, timeout, error), by ending: scored as they ended.
    agent_endings: dict[str, int] = field(default_factory=dict)

    @property
    def agent_errors(self) -> int:
        return sum(self.agent_endings.values())


@dataclass(frozen=True)
class Omitted:
    name: str
    reason: str


@dataclass(frozen=True)
class HarmStats:
    """Damage against bare: an admitted cell failing where the paired bare cell solved."""
    agent: str
    arm: str
    condition: str
    pairs: int  # both cells admitted
    harmed: int  # bare solved, arm failed
    helped: int  # bare failed, arm solved
    net_harm: float | None  # (harmed - helped) / pairs
    reason: str | None = None


@dataclass(frozen=True)
class CostStats:
    agent: str
    arm: str
    cells: int
    passed: int
    tokens: dict[str, int | None]  # class -> sum; None when no cell observed it
    tokens_observed_cells: int  # cells with at least one observed class
    tokens_total: int | None
    cost_usd: float | None
    cost_reason: str | None
    cli_cost_usd: float | None  # the CLI's own figure, unverified; None when absent
    wall_seconds: float
    wall_seconds_mean: float
    success_per_million_tokens: float | None


@dataclass
class IngestStats:
    """One arm's own ingest over this run: its frozen stores (one per condition and seed), what they cost."""
    arm: str
    stores: int
    documents: int  # summed over the stores, as the product reported them read back
    seconds: float  # summed
    store_mib: float  # mean per store: the frozen tar each cell of that store receives
    tokens: int | None  # the product's model tokens; None: not observed (no store report carries them)


@dataclass
class Analysis:
    run_id: str
    run_dir: Path | None
    lock: dict  # run.json
    min_effect: float
    resamples: int
    seed: int
    cells: int
    groups: list[GroupStats]
    contrasts: list[Contrast]
    diagnostics: list[Contrast]
    omitted: list[Omitted]
    harm: list[HarmStats]
    costs: list[CostStats]
    ingest: list[IngestStats]
    agents: list[str] = field(default_factory=list)  # grid order, so every table and figure agrees
    arms: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    has_cli_cost: bool = False
    # (agent, arm, condition, cells) whose session reached a cap (error_class budget_exhausted): scored, and named
    budget_exhausted: list[tuple[str, str, str, int]] = field(default_factory=list)
    # a grid of several models: each contrast of an agent on each of its models side by side (by_model.py)
    across_models: list[ModelEffect] = field(default_factory=list)
    spend_by_model: list[ModelSpend] = field(default_factory=list)

    def contrast(self, name: str, condition: str, agent: str) -> Contrast | None:
        key = _normalise_contrast(name)
        for c in self.contrasts + self.diagnostics:
            if c.name == key and c.condition == condition and c.agent == agent:
                return c
        return None


# ---------------------------------------------------------------- loading

def load_cells(run_dir: Path) -> pd.DataFrame:
    """The latest attempt of every finished cell, with `passed` (admitted and checker passed)."""
    ledger = Ledger(run_dir)
    if not (ledger.journal.is_file() or ledger.parquet.is_file()):
        raise UserError(f"{run_dir}: no ledger.jsonl or ledger.parquet: fix: run `memgrid grid --run-id {run_dir.name}` first")
    cells = [r for r in latest_attempts(ledger.saved_rows()).values() if r["final"]]
    if not cells:
        raise UserError(f"{ledger.journal}: no finished cells in the ledger: fix: run or resume the grid "
                        f"(`memgrid grid --run-id {run_dir.name}`)")
    return cells_frame(cells)


def cells_frame(cells: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(cells)
    df["admitted"] = df["admitted"].astype(bool)
    df["passed"] = df["admitted"] & df["checker_passed"].map(lambda v: v is True or v == 1.0)
    return df


def ingest_reports(run_dir: Path) -> list[IngestStats]:
    """Per arm with an ingest, from the store reports runner.arms.ingest wrote under stores/."""
    found: dict[str, list[dict]] = {}
    for report in sorted((run_dir / "stores").glob("*/*/report.json")):
        try:
            found.setdefault(report.parent.parent.name, []).append(json.loads(report.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    out = []
    for arm, reports in sorted(found.items()):
        tokens = [r["model_tokens"] for r in reports if isinstance(r.get("model_tokens"), (int, float))]
        out.append(IngestStats(arm, len(reports), sum(int(r.get("documents") or 0) for r in reports),
                               sum(float(r.get("seconds") or 0.0) for r in reports),
                               sum(int(r.get("bytes") or 0) for r in reports) / len(reports) / 2**20,
                               int(sum(tokens)) if tokens else None))
    return out


# ---------------------------------------------------------------- statistics

# ---------------------------------------------------------------- per group

def damage_rate(outcomes: pd.Series) -> Rate:
    """The damage detector's rate over admitted cells' outcomes: damaged over those it scored."""
    scored = int(outcomes.notna().sum())
    if not scored:
        return Rate(0, 0, None, None, None, "no admitted cell was scored")
    return wilson(int((outcomes == "damaged").sum()), scored)


def group_stats(df: pd.DataFrame) -> list[GroupStats]:
    out = []
    for (agent, arm, condition), g in df.groupby(["agent", "arm", "condition"], sort=True):
        admitted = g[g["admitted"]]
        passed = int(g["passed"].sum())
        discards = g.loc[~g["admitted"], "discard_reason"].fillna("unknown").value_counts()
        outcomes = admitted["outcome"].fillna("unscored").value_counts()
        damage = damage_rate(admitted["outcome"])
        ended = admitted["agent_ended"] if "agent_ended" in admitted.columns else pd.Series(dtype=object)
        endings = ended[ended.isin(ERROR_ENDINGS)].value_counts()
        out.append(GroupStats(agent, arm, condition, len(g), len(admitted), passed,
                              itt=wilson(passed, len(g)), pp=wilson(passed, len(admitted)),
                              discards={str(k): int(v) for k, v in sorted(discards.items())},
                              outcomes={str(k): int(v) for k, v in outcomes.items()},
                              damage=damage, agent_endings={str(k): int(v) for k, v in sorted(endings.items())}))
    return out


def paired_bases(wide: pd.DataFrame, arm: str, baseline: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of a paired frame a contrast is judged on: (per-protocol: both cells admitted, intention-to-treat:
    both cells ran, a discarded one counting as a failure)."""
    both_ran = wide[("passed", arm)].notna() & wide[("passed", baseline)].notna()
    itt = wide[both_ran]
    return itt[itt[("admitted", arm)].astype(bool) & itt[("admitted", baseline)].astype(bool)], itt


def paired_rows_stat(rows: pd.DataFrame, arm: str, baseline: str, min_effect: float, resamples: int,
                     seed: int) -> PairedStat:
    """`paired_stat` over rows of a paired frame, the task of each row its cluster."""
    return paired_stat(rows.index.get_level_values("task").to_numpy(), rows[("passed", arm)].astype(bool).to_numpy(),
                       rows[("passed", baseline)].astype(bool).to_numpy(), min_effect, resamples, seed)


def _contrast(wide: pd.DataFrame, arm: str, baseline: str, agent: str, condition: str, kind: str, measures: str,
              min_effect: float, resamples: int, seed: int) -> Contrast:
    pp, itt = (paired_rows_stat(rows, arm, baseline, min_effect, resamples, seed) for rows in paired_bases(wide, arm, baseline))
    return Contrast(f"{arm} - {baseline}", arm, baseline, agent, condition, kind, measures, pp, itt)


def contrasts(df: pd.DataFrame, min_effect: float, resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED,
              arms: list[str] | None = None) -> tuple[list[Contrast], list[Contrast], list[Omitted]]:
    """Primary contrasts (every ranked arm against claude_md) and the spec's diagnostic ones."""
    arms = arms or list(dict.fromkeys(df["arm"]))
    wides = paired_frames(df)
    primary, diagnostic, omitted = [], [], []
    if BASELINE not in arms:
        omitted.append(Omitted(f"* - {BASELINE}", f"the baseline arm {BASELINE} is not in this run"))
    else:
        for arm in arms:
            if arm == BASELINE or arm in DIAGNOSTIC_ARMS:
                continue
            for (agent, condition), wide in wides.items():
                if ("passed", arm) in wide.columns and ("passed", BASELINE) in wide.columns:
                    primary.append(_contrast(wide, arm, BASELINE, agent, condition, "primary", f"{arm} against the baseline",
                                             min_effect, resamples, seed))
    for arm, baseline, measures in DIAGNOSTICS:
        missing = [a for a in (arm, baseline) if a not in arms]
        if missing:
            omitted.append(Omitted(f"{arm} - {baseline}", f"{' and '.join(missing)} not in this run ({measures})"))
            continue
        for (agent, condition), wide in wides.items():
            if ("passed", arm) in wide.columns and ("passed", baseline) in wide.columns:
                diagnostic.append(_contrast(wide, arm, baseline, agent, condition, "diagnostic", measures,
                                            min_effect, resamples, seed))
    return primary, diagnostic, omitted


def harm(df: pd.DataFrame) -> list[HarmStats]:
    """Per agent x arm x condition, against bare. Never pooled across conditions: a harm under
    `superseded` and a rescue under `present` are different facts, not a wash."""
    out = []
    for (agent, condition), wide in paired_frames(df).items():
        if ("passed", FLOOR) not in wide.columns:
            continue
        for arm in wide["passed"].columns:
            if arm == FLOOR:
                continue
            both = wide[wide[("admitted", arm)].fillna(False).astype(bool) & wide[("admitted", FLOOR)].fillna(False).astype(bool)]
            arm_pass, bare_pass = both[("passed", arm)].astype(bool), both[("passed", FLOOR)].astype(bool)
            harmed, helped = int((bare_pass & ~arm_pass).sum()), int((~bare_pass & arm_pass).sum())
            pairs = len(both)
            out.append(HarmStats(agent, arm, condition, pairs, harmed, helped,
                                 (harmed - helped) / pairs if pairs else None,
                                 None if pairs else "no cell pair with both this arm and bare admitted"))
    return out


def costs(df: pd.DataFrame) -> list[CostStats]:
    """Per agent x arm over every finished cell, admitted or not: a discarded session still cost
    its tokens and time."""
    has_cli = "cli_cost_usd" in df.columns and bool(df["cli_cost_usd"].notna().any())
    out = []
    for (agent, arm), g in df.groupby(["agent", "arm"], sort=True):
        tokens = {c: sum_or_none(pd.to_numeric(g[c], errors="coerce")) for c in TOKEN_CLASSES}
        observed_cells = int(g[list(TOKEN_CLASSES)].notna().any(axis=1).sum())
        total = None if all(v is None for v in tokens.values()) else sum(v or 0 for v in tokens.values())
        usd = pd.to_numeric(g["cost_usd"], errors="coerce")
        unpriced = int(usd.isna().sum())
        cost_usd = None if unpriced else float(usd.sum())
        cost_reason = f"{unpriced} of {len(g)} cells unpriced" if unpriced else None
        cli = None
        if has_cli:
            cli_values = pd.to_numeric(g["cli_cost_usd"], errors="coerce")
            cli = None if cli_values.isna().any() else float(cli_values.sum())
        passed = int(g["passed"].sum())
        wall = pd.to_numeric(g["wall_seconds"], errors="coerce")
        out.append(CostStats(agent, arm, len(g), passed, tokens, observed_cells, total, cost_usd, cost_reason, cli,
                             float(wall.sum()), float(wall.mean()),
                             passed / total * 1e6 if total else None))
    return out


# ---------------------------------------------------------------- entry points

def grid_order(values, preferred) -> list[str]:
    """The values present, in the grid's order (run.json), then any the grid does not name, sorted."""
    present = list(dict.fromkeys(sorted(values)))
    return [v for v in preferred if v in present] + [v for v in present if v not in preferred]


def analyse_frame(df: pd.DataFrame, lock: dict, run_dir: Path | None = None, min_effect: float | None = None,
                  resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED, ingest: list[IngestStats] = ()) -> Analysis:
    min_effect = DEFAULT_MIN_EFFECT if min_effect is None else float(min_effect)
    grid = lock.get("grid", {})
    models = grid.get("models") or []
    # each agent, then each of its players on the grid's models (agent@model), in the grid's order
    agents = grid_order(df["agent"].unique(), [p for a in grid.get("agents", []) for p in (a, *(f"{a}@{m}" for m in models))])
    arms = grid_order(df["arm"].unique(), grid.get("arms", []))
    conditions = grid_order(df["condition"].unique(), grid.get("conditions", []))

    def key(x) -> tuple:
        return agents.index(x.agent), conditions.index(x.condition) if hasattr(x, "condition") else 0, arms.index(x.arm)

    primary, diagnostic, omitted = contrasts(df, min_effect, resamples, seed, arms)
    run_id = lock.get("run_id") or (run_dir.name if run_dir else str(df["run_id"].iloc[0]))
    return Analysis(run_id, run_dir, lock, min_effect, resamples, seed, len(df),
                    sorted(group_stats(df), key=lambda g: (agents.index(g.agent), arms.index(g.arm), conditions.index(g.condition))),
                    sorted(primary, key=key),
                    sorted(diagnostic, key=lambda c: (agents.index(c.agent), conditions.index(c.condition))), omitted, sorted(harm(df), key=key),
                    sorted(costs(df), key=key), list(ingest), agents, arms, conditions,
                    # the ledger always carries the column now; show it only where a CLI reported a figure
                    has_cli_cost="cli_cost_usd" in df.columns and bool(df["cli_cost_usd"].notna().any()),
                    budget_exhausted=_budget_exhausted(df, agents, arms, conditions),
                    across_models=across_models(df, sorted(primary, key=key) + sorted(diagnostic, key=key), models,
                                                min_effect, resamples, seed),
                    spend_by_model=spend_by_model(df, models))


def _budget_exhausted(df: pd.DataFrame, agents, arms, conditions) -> list[tuple[str, str, str, int]]:
    if "error_class" not in df.columns:
        return []
    capped = df[df["error_class"] == BUDGET_EXHAUSTED].groupby(["agent", "arm", "condition"]).size()
    return sorted(((a, b, c, int(n)) for (a, b, c), n in capped.items()),
                  key=lambda x: (agents.index(x[0]), arms.index(x[1]), conditions.index(x[2])))


def analyse(run_dir: Path, min_effect: float | None = None, resamples: int = RESAMPLES,
            seed: int = BOOTSTRAP_SEED) -> Analysis:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder: fix: give a run id under runs/ (ls runs/) or a run folder path")
    lock = load_lock(run_dir)
    return analyse_frame(load_cells(run_dir), lock, run_dir, min_effect, resamples, seed, ingest_reports(run_dir))


# ---------------------------------------------------------------- predictions

@dataclass(frozen=True)
class ScoredPrediction:
    id: str
    text: str
    contrast: str
    condition: str | None
    agent: str | None
    expect: str
    verdict: str  # confirmed | refuted | inconclusive
    delta: float | None
    low: float | None
    high: float | None
    why: str


def _normalise_contrast(name: str) -> str:
    # arm names hold no hyphen, so "recall-claude_md", "recall − claude_md" all mean one contrast
    return " - ".join(part.strip() for part in str(name).replace("\u2212", "-").split("-"))


def score_predictions(analysis: Analysis, predictions: list[dict], min_effect: float | None = None) -> list[ScoredPrediction]:
    """Score each preregistered prediction against its contrast's per-protocol delta and 95 % CI.

    With m = min_effect, delta the mean paired difference and [lo, hi] its task-cluster interval:
    - expect "positive": confirmed if delta >= m and lo > 0 (an effect of at least the minimum
      size whose interval excludes zero); refuted if hi < m (the interval rules out an effect
      as large as the minimum); otherwise inconclusive.
    - expect "negative": the mirror image: confirmed if delta <= -m and hi < 0; refuted if lo > -m.
    - expect "null": confirmed if -m < lo and hi < m (the whole interval inside the noise band);
      refuted if the positive or the negative rule above confirms an effect; otherwise inconclusive.
    A prediction whose contrast, condition or agent is not in the run, or whose delta or interval
    is None (no pairs, fewer than 2 tasks), is inconclusive with that reason.
    """
    m = analysis.min_effect if min_effect is None else float(min_effect)
    return [_score_one(analysis, p, m) for p in predictions]


def _score_one(analysis: Analysis, p: dict, m: float) -> ScoredPrediction:
    expect = str(p.get("expect", "")).strip().lower()
    name, condition, agent = _normalise_contrast(p.get("contrast", "")), p.get("condition"), p.get("agent")
    if p.get("model") and f"{agent}@{p['model']}" in analysis.agents:  # a grid of several models: that model's player
        agent = f"{agent}@{p['model']}"

    def verdict(v: str, why: str, stat: PairedStat | None = None) -> ScoredPrediction:
        return ScoredPrediction(str(p.get("id", "")), str(p.get("text", "")), name, condition, agent, expect, v,
                                stat.delta if stat else None, stat.low if stat else None, stat.high if stat else None, why)

    if expect not in ("positive", "negative", "null"):
        return verdict("inconclusive", f"expect {expect!r} is not positive, negative or null")
    c = analysis.contrast(name, condition, agent)
    if c is None:
        return verdict("inconclusive", f"no contrast {name} for agent {agent} under condition {condition} in this run")
    s = c.pp
    if s.delta is None or s.low is None or s.high is None:
        return verdict("inconclusive", s.reason or "no interval", s)
    positive = s.delta >= m - 1e-12 and s.low > 0
    negative = s.delta <= -m + 1e-12 and s.high < 0
    span = f"delta {s.delta:+.3f}, CI [{s.low:+.3f}, {s.high:+.3f}], minimum effect {m:.2f}"
    if expect == "positive":
        if positive:
            return verdict("confirmed", f"{span}: at least the minimum effect, interval above 0", s)
        if s.high < m:
            return verdict("refuted", f"{span}: the interval excludes an effect of the minimum size", s)
    elif expect == "negative":
        if negative:
            return verdict("confirmed", f"{span}: at least the minimum effect downward, interval below 0", s)
        if s.low > -m:
            return verdict("refuted", f"{span}: the interval excludes a drop of the minimum size", s)
    else:
        if -m < s.low and s.high < m:
            return verdict("confirmed", f"{span}: the whole interval inside the noise band", s)
        if positive or negative:
            return verdict("refuted", f"{span}: an effect of at least the minimum size, interval excludes 0", s)
    return verdict("inconclusive", f"{span}: the interval is too wide to decide", s)


def fmt_rate(r: Rate) -> str:
    if r.rate is None:
        return "-"
    return f"{r.rate:.2f} [{r.low:.2f}, {r.high:.2f}]"

