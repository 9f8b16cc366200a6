"""FAMA (Memora) and its parts, per question, and their mean with a bootstrap interval over persons.

Per question: MPA = correct presence / Np; FAA = correct forgetting / Nf; λ = Nf / (Np + Nf);
FAMA = max(0, MPA − λ (1 − FAA)). Np = Nf = 0 → FAMA 0; Np = 0 → MPA 0; Nf = 0 → FAA 1.
Quality is the mean FAMA over questions. Its interval resamples persons (a person's questions share
their corpus, so questions are not independent draws).
"""

from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261202


@dataclass(frozen=True)
class QuestionScore:
    mpa: float
    faa: float
    lam: float
    fama: float


def score(np_: int, correct_presence: int, nf: int, correct_forgetting: int) -> QuestionScore:
    mpa = correct_presence / np_ if np_ else 0.0
    faa = correct_forgetting / nf if nf else 1.0
    lam = nf / (np_ + nf) if np_ + nf else 0.0
    fama = 0.0 if np_ + nf == 0 else max(0.0, mpa - lam * (1 - faa))
    return QuestionScore(mpa, faa, lam, fama)


def mean_with_interval(by_person: dict[str, list[float]]) -> tuple[float | None, float | None, float | None]:
    """The mean over all questions and its 95 % percentile interval from resampling persons."""
    groups = [np.asarray(v, dtype=float) for v in by_person.values() if v]
    if not groups:
        return None, None, None
    sums, counts = np.array([g.sum() for g in groups]), np.array([len(g) for g in groups])
    mean = float(sums.sum() / counts.sum())
    if len(groups) == 1:
        return mean, None, None
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, len(groups), size=(BOOTSTRAP_RESAMPLES, len(groups)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return mean, float(low), float(high)
