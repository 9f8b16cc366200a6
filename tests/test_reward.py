"""A hosted benchmark's reward as its card defines it (results/reward.py), and when a personal run's measurement is
invalid (analysis.invalid_measurement): raw quality always, a reward only for a valid, whole measurement."""

import json

import pytest

from runner.protocols.personal.analysis import reward_table, summarise
from runner.units.personal import Criterion
from runner.protocols.personal.judges import ExactJudge, Verdict, judge_criterion
from runner.results.reward import RewardMapping
from runner.sources.registry import reward_mapping

B = 0.3712215103709065
MEMORA = RewardMapping(reference=B, anchor=20)


# Worked by hand: below b the line through (0, 0) and (b, 0.2), e.g. 0.1 -> 0.2 x 0.1 / b = 0.02 / 0.37122151... =
# 0.0538761883...; above it the line through (b, 0.2) and (1, 1), e.g. 0.5 -> 0.2 + 0.8 x 0.12877848962 /
# 0.62877848962 = 0.2 + 0.8 x 0.20480740... = 0.3638459225...
@pytest.mark.parametrize("quality, reward, score", [
    (0.0, 0.0, 0.0), (0.1, 0.0538761883168, 5.4), (B, 0.2, 20.0), (0.5, 0.3638459225347, 36.4), (1.0, 1.0, 100.0)])
def test_the_card_maps_raw_quality_0_b_and_1_to_0_a_and_1(quality, reward, score):
    got = MEMORA.of(quality, None)
    assert got.reward == pytest.approx(reward, abs=1e-12) and got.score == score and got.quality == quality
    assert got.invalid is None and got.shown() == f"{score:.1f}"


def test_memoras_card_is_the_mapping_a_memora_suite_reads_and_memgrids_own_persons_have_none():
    assert reward_mapping("memora") == MEMORA
    assert reward_mapping(None) is None and reward_mapping("smriti") is None


def test_an_invalid_measurement_has_no_reward_and_a_quality_off_the_scale_is_refused():
    got = MEMORA.of(0.9, "partial run: 3 of 4 cells finished")
    assert (got.reward, got.score, got.quality) == (None, None, 0.9)
    assert got.shown() == "invalid: partial run: 3 of 4 cells finished"
    assert MEMORA.of(None, None).invalid == "no question was scored"
    with pytest.raises(ValueError):
        MEMORA.reward(1.2)
    with pytest.raises(ValueError):
        RewardMapping(reference=0.0, anchor=20)


class Says:
    def __init__(self, name, mentions):
        self.name, self.mentions = name, mentions

    def judge(self, answer, criterion):
        return Verdict(self.name, self.mentions, "fixed")


def test_a_criterion_is_decided_only_by_a_strict_majority_of_valid_verdicts():
    lisbon = Criterion("Lisbon")
    assert judge_criterion("Lisbon", lisbon, True, panel=(ExactJudge(), Says("a", True), Says("b", False))).decided
    # a wrong majority is still decided: the answer was judged, just judged wrong
    assert judge_criterion("Porto", lisbon, True, panel=(ExactJudge(), Says("a", False))).decided
    assert not judge_criterion("Porto", lisbon, True, panel=(ExactJudge(), Says("a", True))).decided  # a tie
    assert not judge_criterion("Porto", lisbon, True, panel=(Says("a", None), Says("b", None))).decided  # no verdict


def question(fama: float, undecided: int | None = 0, invalid: int = 0) -> dict:
    q = {"id": "q", "kind": "remembering", "np": 1, "nf": 0, "cp": 1, "cf": 0, "fama": fama, "mpa": fama, "faa": 1.0,
         "lam": 0.0, "released": 1, "violations": 0, "evidence_released": 1, "evidence": 1,
         "invalid_judgements": invalid}
    return q if undecided is None else {**q, "undecided": undecided}


def row(person: str, questions: list[dict], fmt: str | None = "memora", panel: str = "deterministic",
        admitted: bool = True) -> dict:
    return {"agent": "reader", "arm": "recall", "condition": "weekly", "task": person, "admitted": admitted,
            "result": json.dumps({"questions": questions, "panel": panel, "suite": "memora" if fmt else None,
                                  "format": fmt}) if admitted else None}


def reward(rows: list[dict], planned: int | None = None) -> dict:
    [s] = summarise(rows, planned)
    return s["reward"]


def test_a_whole_valid_memora_row_prints_quality_reward_and_score():
    rows = [row("software_engineer", [question(0.5), question(0.7)]), row("content_writer", [question(0.3)])]
    r = reward(rows, planned=2)
    assert r["quality"] == pytest.approx(0.5) and r["reward"] == pytest.approx(0.3638459225347) and r["score"] == 36.4
    assert r["invalid"] is None
    columns, lines = reward_table(summarise(rows, 2))
    assert columns[3:] == ["raw quality (FAMA)", "reward", "score (0-100)", "validity"]
    assert lines == [["reader", "recall", "weekly", "0.5000", "0.363846", "36.4", "-"]]


@pytest.mark.parametrize("rows, planned, why", [
    ([row("a", [question(0.9)])], 2, "partial run: 1 of 2 cells finished"),
    ([row("a", [question(0.9)]), row("b", [], admitted=False)], 2, "1 of 2 cells not scored (discarded or failed)"),
    ([row("a", [question(0.9, invalid=2)], panel="model")], 1, "2 judge verdicts lost (transport failure or malformed reply)"),
    ([row("a", [question(0.9, undecided=3)])], 1, "3 sub-questions without a strict majority of valid verdicts"),
    ([row("a", [question(0.9, undecided=None)])], 1, "its cells do not record whether each sub-question had a majority"),
])
def test_each_kind_of_invalid_measurement_has_no_reward_and_says_why(rows, planned, why):
    r = reward(rows, planned)
    assert r["reward"] is None and r["score"] is None and why in r["invalid"]
    assert r["quality"] == pytest.approx(0.9)


def test_a_deterministic_panels_invalid_verdicts_are_not_lost_verdicts():
    """The deterministic judges give no verdict on a sub-question naming no value (counted undecided, if the others
    gave none either), which is not a transport failure: two named criteria each missed by one judge stay valid."""
    assert reward([row("a", [question(0.9, invalid=2)])], 1)["invalid"] is None


def test_memgrids_own_persons_have_no_reward():
    assert "reward" not in summarise([row("p00", [question(0.9)], fmt=None)], 1)[0]
    assert reward_table(summarise([row("p00", [question(0.9)], fmt=None)], 1))[1] == []
