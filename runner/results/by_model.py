"""A grid of several models, by model: does a memory effect hold across models (each contrast of an agent on each
of its models side by side, and how far each model's effect differs from the first model's, never pooled), and
what each model's sessions cost.

An agent on several models is one player per model (`claude-code@scripted-skim`, runner.plan.players), so each
contrast is already judged within one model. This module sets a contrast's models beside each other and adds the
interaction: over the (task, seed) pairs where all four cells were admitted (the arm and its baseline, on both
models), the mean of (arm - baseline on the model) - (arm - baseline on the first model), with a task-cluster
bootstrap interval as every contrast has. One model's delta is never averaged with another's.
"""

from dataclasses import dataclass

import numpy as np
import pandas as pd

from runner.plan.players import agent_of, model_of
from runner.results.stats import (BOOTSTRAP_SEED, FEW_TASKS, RESAMPLES, TOKEN_CLASSES, Contrast, PairedStat,
                                  cluster_bootstrap, noise_label, paired_frames, sum_or_none)


@dataclass(frozen=True)
class Interaction:
    """A model's effect minus the first model's, over the pairs admitted on both."""
    pairs: int
    tasks: int
    delta: float | None
    low: float | None  # task-cluster bootstrap, percentile 95 %
    high: float | None
    label: str | None  # noise | positive | negative (against the minimum effect)
    reason: str | None = None  # why any of the above is None, or rough


@dataclass(frozen=True)
class ModelEffect:
    """One contrast of one agent under one condition, on each of the agent's models."""
    agent: str  # the agent, without a model
    name: str  # "recall - claude_md"
    condition: str
    kind: str  # primary | diagnostic
    models: tuple[str, ...]  # in the grid's order; the first is what the others are set against
    effects: tuple[PairedStat, ...]  # per model: the contrast, per-protocol
    interactions: tuple[Interaction | None, ...]  # per model: its effect minus the first's (None for the first)


@dataclass(frozen=True)
class ModelSpend:
    """Every finished cell on one model, admitted or not (a discarded session still cost its tokens and time)."""
    model: str
    cells: int
    passed: int
    tokens: dict[str, int | None]  # class -> sum; None when no cell observed it
    cost_usd: float | None  # None when any cell is unpriced
    cost_reason: str | None
    wall_seconds: float


def interaction(tasks: np.ndarray, diffs: np.ndarray, min_effect: float, resamples: int, seed: int) -> Interaction:
    n, n_tasks = len(diffs), len(set(tasks))
    if n == 0:
        return Interaction(0, 0, None, None, None, None, "no (task, seed) pair admitted on both models")
    delta = float(diffs.mean())
    if n_tasks < 2:
        return Interaction(n, n_tasks, delta, None, None, noise_label(delta, min_effect),
                           f"no bootstrap interval: {n_tasks} task (needs at least 2 to resample tasks)")
    low, high = cluster_bootstrap(tasks, diffs, resamples, seed)
    return Interaction(n, n_tasks, delta, low, high, noise_label(delta, min_effect),
                       f"only {n_tasks} tasks: the bootstrap interval is rough" if n_tasks < FEW_TASKS else None)


def _admitted_effect(wide: pd.DataFrame, arm: str, baseline: str) -> pd.Series:
    """Per (task, seed) where both cells were admitted: pass(arm) - pass(baseline)."""
    both = wide[wide[("admitted", arm)].fillna(False).astype(bool) & wide[("admitted", baseline)].fillna(False).astype(bool)]
    return both[("passed", arm)].astype(float) - both[("passed", baseline)].astype(float)


def across_models(df: pd.DataFrame, contrasts: list[Contrast], models: list[str], min_effect: float,
                  resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> list[ModelEffect]:
    """Every contrast of an agent played on two or more models, its models side by side in `models`' order (the
    grid's), with each model's interaction against the first; `contrasts`: primary ones before diagnostic ones."""
    wides = paired_frames(df)
    grouped: dict[tuple[str, str, str], dict[str, Contrast]] = {}
    for c in contrasts:  # a diagnostic contrast may be a primary one again (recall - claude_md): the same pairs, once
        model = model_of(c.agent)
        if model is not None:
            grouped.setdefault((agent_of(c.agent), c.name, c.condition), {}).setdefault(model, c)
    out = []
    for (agent, name, condition), by_model in grouped.items():
        played = [m for m in models if m in by_model]
        if len(played) < 2:
            continue
        first = by_model[played[0]]
        base_effect = _admitted_effect(wides[(first.agent, condition)], first.arm, first.baseline)
        interactions: list[Interaction | None] = [None]
        for m in played[1:]:
            c = by_model[m]
            effect = _admitted_effect(wides[(c.agent, condition)], c.arm, c.baseline)
            joined = pd.concat([effect.rename("model"), base_effect.rename("first")], axis=1, join="inner")
            interactions.append(interaction(joined.index.get_level_values("task").to_numpy(),
                                            (joined["model"] - joined["first"]).to_numpy(), min_effect, resamples, seed))
        out.append(ModelEffect(agent, name, condition, first.kind, tuple(played),
                               tuple(by_model[m].pp for m in played), tuple(interactions)))
    return out


def spend_by_model(df: pd.DataFrame, models: list[str]) -> list[ModelSpend]:
    """Each of the grid's models' cells summed, in `models`' order; none for a grid of one model."""
    if len(models) < 2:
        return []
    out = []
    for model in models:
        g = df[df["agent"].map(model_of) == model]
        if not len(g):
            continue
        usd = pd.to_numeric(g["cost_usd"], errors="coerce")
        unpriced = int(usd.isna().sum())
        tokens = {c: sum_or_none(pd.to_numeric(g[c], errors="coerce")) for c in TOKEN_CLASSES}
        out.append(ModelSpend(model, len(g), int(g["passed"].sum()), tokens, None if unpriced else float(usd.sum()),
                              f"{unpriced} of {len(g)} cells unpriced" if unpriced else None,
                              float(pd.to_numeric(g["wall_seconds"], errors="coerce").sum())))
    return out
