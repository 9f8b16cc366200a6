"""LoCoMo's own answer scoring (issue 69, step 3): each value below is what LoCoMo's task_eval/evaluation.py at 3eb6f2c,
`eval_question_answering(qas, "p")`, gave on these answers of ours (run outside the repository with NLTK 3.10.4),
one case per rule: normalization, Porter stemming, category 1's comma split, category 3's gold cut at ';', a
number as the gold, category 5 credited when the answer says the information is not there; and the recall it gives
of the evidence in a dialog context (`p_context`, the dia_ids shown)."""

import pytest

from runner.sources.locomo import evidence_recall, locomo_f1, record_id

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


LOCOMOS_RECALL = [
    (["D1:1"], ["D1:1", "D1:2"], 1.0),
    (["D1:1", "D2:3"], ["D2:3"], 0.5),
    (["D1:1", "D1:2", "D2:1"], ["D1:2"], 0.3333333333333333),
    (["D2:2; D1:1"], ["D2:2", "D1:1"], 0.0),  # a composite entry is never a dia_id shown
    (["D"], ["D1:1"], 0.0),  # nor a mistyped one
    (["D1:1", "D1:1"], ["D1:1"], 1.0),  # each entry counts, a repeated one twice
    ([], ["D1:1"], 1.0),  # a question citing nothing
]


@pytest.mark.parametrize("entries, shown, expected", LOCOMOS_RECALL)
def test_locomos_evidence_recall_is_its_own_functions_value(entries, shown, expected):
    released = [record_id("conv-9", d) for d in shown]
    assert evidence_recall(tuple(entries), "conv-9", released) == pytest.approx(expected, abs=1e-12)


def test_a_turn_of_another_sample_is_not_its_evidence():
    assert evidence_recall(("D1:1",), "conv-9", [record_id("conv-10", "D1:1")]) == 0.0


def test_the_report_pools_categories_1_to_4_apart_from_5_and_splits_f1_by_the_evidence_returned():
    """Each question counted once, as evaluation_stats.py's analyze_aggr_acc totals them: '1-4' is the vendors'
    overall (category 5 apart), 'all' LoCoMo's own. F1 is split by whether the question's evidence was all returned;
    the evidence recall is LoCoMo's own, per category."""
    import json

    from runner.protocols.personal.analysis import own_note, own_table, summarise
    from runner.sources.locomo import kind_of

    def question(category, f1, recall, released, cited=1):
        return {"id": "q", "kind": kind_of(category), "np": 1, "nf": 0, "cp": 0, "cf": 0, "fama": 0.0, "mpa": 0.0,
                "faa": 1.0, "lam": 0.0, "released": released, "violations": 0, "evidence_released": released,
                "evidence": cited, "own": {"f1": f1}, "own_recall": recall}

    questions = [question(1, 0.5, 1.0, 1), question(4, 1.0, 1.0, 1), question(4, 0.0, 0.0, 0), question(5, 1.0, 0.5, 0)]
    rows = [{"agent": "extractive", "arm": "recall", "condition": "published", "task": "conv-1", "admitted": True,
             "result": json.dumps({"questions": questions, "suite": "locomo", "format": "locomo"})}]
    own = summarise(rows)[0]["own_scores"]
    assert own["f1"]["by_kind"] == {"1 multi-hop": 0.5, "4 single-hop": 0.5, "5 adversarial": 1.0}
    assert own["f1"]["pooled"] == {"1-4": 0.5, "all": 0.625}  # (0.5 + 1 + 0) / 3 and (0.5 + 1 + 0 + 1) / 4
    assert (own["f1"]["whole"], own["f1"]["part"]) == (0.75, 0.5)  # returned whole: 0.5, 1.0; in part: 0.0, 1.0
    assert own["evidence recall"]["by_kind"]["5 adversarial"] == 0.5 and "whole" not in own["evidence recall"]
    columns, lines = own_table(summarise(rows))
    assert columns[4:] == ["1 multi-hop", "4 single-hop", "5 adversarial", "1-4", "all", "whole", "part"]
    assert lines[0][3:] == ["f1", "0.50", "0.50", "1.00", "0.50", "0.62", "0.75", "0.50"]
    assert "mem0 issue 2609" in own_note(summarise(rows))
