"""The statistics every comparison of cells uses: Wilson rates, paired contrasts (arm minus baseline over cells
paired by task and seed) with a task-cluster bootstrap interval and an exact McNemar p, and the paired frames they
are computed on. One run's analysis (analysis.py), the view by model (by_model.py) and the comparison of
two runs (compare.py) all judge with these."""

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import bootstrap
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

DEFAULT_MIN_EFFECT = 0.10
RESAMPLES = 10_000
FEW_TASKS = 5
BOOTSTRAP_SEED = 20_240_601
TOKEN_CLASSES = ("tokens_fresh_input", "tokens_cache_read", "tokens_cache_creation", "tokens_output")


@dataclass(frozen=True)
class Rate:
    passed: int
    n: int
    rate: float | None
    low: float | None  # Wilson 95 %
    high: float | None
    reason: str | None = None  # why rate is None


@dataclass(frozen=True)
class PairedStat:
    """arm minus baseline over cells paired by (task, seed) within one agent and condition."""
    pairs: int
    tasks: int
    both: int  # both passed
    arm_only: int
    base_only: int
    neither: int
    delta: float | None  # mean of pass(arm) - pass(baseline)
    low: float | None  # task-cluster bootstrap, percentile 95 %
    high: float | None
    p_mcnemar: float | None  # exact, on the discordant pairs
    label: str | None  # noise | positive | negative
    reason: str | None = None  # why any of the above is None


@dataclass(frozen=True)
class Contrast:
    name: str  # "recall - claude_md"
    arm: str
    baseline: str
    agent: str
    condition: str
    kind: str  # primary | diagnostic
    measures: str  # what the difference means
    pp: PairedStat
    itt: PairedStat


def wilson(passed: int, n: int) -> Rate:
    if n == 0:
        return Rate(passed, n, None, None, None, "no cells")
    low, high = proportion_confint(passed, n, alpha=0.05, method="wilson")
    return Rate(passed, n, passed / n, float(low), float(high))


def noise_label(delta: float | None, min_effect: float) -> str | None:
    if delta is None:
        return None
    if abs(delta) < min_effect - 1e-12:  # a delta exactly at the minimum effect counts as an effect
        return "noise"
    return "positive" if delta > 0 else "negative"


def cluster_bootstrap(tasks: np.ndarray, diffs: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    """Percentile 95 % CI of the mean paired difference, resampling whole tasks with replacement
    (cells of one task share its difficulty, so they are not independent draws)."""
    codes, _ = pd.factorize(tasks)
    sums = np.bincount(codes, weights=diffs)
    counts = np.bincount(codes).astype(float)

    def ratio(s, n, axis=-1):
        return s.sum(axis=axis) / n.sum(axis=axis)

    result = bootstrap((sums, counts), ratio, paired=True, vectorized=True, n_resamples=resamples,
                       method="percentile", rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_stat(tasks: np.ndarray, arm_pass: np.ndarray, base_pass: np.ndarray, min_effect: float,
                resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> PairedStat:
    a, b = np.asarray(arm_pass, dtype=bool), np.asarray(base_pass, dtype=bool)
    both, arm_only = int((a & b).sum()), int((a & ~b).sum())
    base_only, neither = int((~a & b).sum()), int((~a & ~b).sum())
    n, n_tasks = len(a), len(set(tasks))
    if n == 0:
        return PairedStat(0, 0, 0, 0, 0, 0, None, None, None, None, None, "no paired cells")
    diffs = a.astype(float) - b.astype(float)
    delta = float(diffs.mean())
    reasons = []
    low = high = p = None
    if n_tasks < 2:
        reasons.append(f"no bootstrap interval: {n_tasks} task (needs at least 2 to resample tasks)")
    else:
        low, high = cluster_bootstrap(np.asarray(tasks), diffs, resamples, seed)
        if n_tasks < FEW_TASKS:  # a percentile interval over so few clusters is narrower than the truth
            reasons.append(f"only {n_tasks} tasks: the bootstrap interval is rough")
    if arm_only + base_only == 0:
        reasons.append("no McNemar p: no discordant pairs")
    else:
        p = float(mcnemar([[both, arm_only], [base_only, neither]], exact=True).pvalue)
    return PairedStat(n, n_tasks, both, arm_only, base_only, neither, delta, low, high, p,
                      noise_label(delta, min_effect), "; ".join(reasons) or None)


def paired_frames(df: pd.DataFrame, columns: tuple[str, ...] = ("passed", "admitted")) -> dict[tuple[str, str], pd.DataFrame]:
    """Per (agent, condition): one row per (task, seed), columns (column, arm). Cells that share
    their coordinates (selftest's canaries: one arm, broken several ways) have no one partner: they count in
    the rates but pair with nothing."""
    out = {}
    for (agent, condition), g in df.groupby(["agent", "condition"], sort=True):
        g = g[~g.duplicated(["task", "seed", "arm"], keep=False)]
        out[(agent, condition)] = g.set_index(["task", "seed", "arm"])[list(columns)].unstack("arm")
    return out


def sum_or_none(series: pd.Series) -> int | None:
    """The sum of the values observed; None when none is (a token class no cell reported is unobserved, not 0)."""
    observed = series.dropna()
    return int(observed.sum()) if len(observed) else None
