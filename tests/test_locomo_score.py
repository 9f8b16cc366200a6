"""LoCoMo's own answer scoring (issue 69, step 3): each value below is what LoCoMo's task_eval/evaluation.py at 3eb6f2c,
`eval_question_answering(qas, "p")`, gave on these answers of ours (run outside the repository with NLTK 3.10.4),
one case per rule: normalization, Porter stemming, category 1's comma split, category 3's gold cut at ';', a
number as the gold, category 5 credited when the answer says the information is not there."""

import pytest

from runner.sources.locomo import locomo_f1

LOCOMOS_OWN = [
    ("Her name is Pixel.", "Pixel", 4, 0.4),
    ("in 2024", "2024", 4, 0.6666666666666666),
    ("He runs in running shoes", "running shoes", 4, 0.5714285714285715),  # 'runs', 'running' stem to 'run'
    ("Bergen and Oslo", "Oslo, Bergen", 1, 0.6666666666666666),
    ("Oslo", "Oslo, Bergen", 1, 0.5),
    ("Tuesday, 12 March 2024", "The Tuesday before 12 March 2024", 2, 0.888888888888889),
    ("likely yes", "Likely yes; she signed up for a marathon", 3, 1.0),
    ("That is not mentioned in the conversation.", None, 5, 1.0),
    ("Yes", None, 5, 0.0),
    ("No information available", None, 5, 1.0),
]


@pytest.mark.parametrize("prediction, gold, category, expected", LOCOMOS_OWN)
def test_locomos_f1_is_its_own_functions_value(prediction, gold, category, expected):
    assert locomo_f1(prediction, gold, category) == pytest.approx(expected, abs=1e-12)


def test_nothing_in_common_scores_zero():
    assert locomo_f1("I don't know.", "Pixel", 4) == 0.0
