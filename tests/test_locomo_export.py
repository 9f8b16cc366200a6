"""A personal run over LoCoMo in LoCoMo's own output file (issue 69, step 5): `memgrid export --format locomo RUN
--output DIR` writes, per agent x arm, the samples as task_eval/evaluate_qa.py writes them (every qa item as published
plus memgrid_prediction, _prediction_context, _f1, _recall), so its eval_question_answering and analyze_aggr_acc read
it. The run is written through the real ledger (tests/synthetic_ledger.py) over the fixture suite tests/data/locomo/,
with answers of ours scored by memgrid's own LoCoMo rules; the closing note of issue 69 has LoCoMo's own functions
run over an export of the whole of LoCoMo."""

import json
from pathlib import Path

import pytest
from synthetic_ledger import cell, write_run
from typer.testing import CliRunner

from runner.cli import app
from runner.errors import UserError
from runner.sources.locomo import evidence_recall, locomo_f1, record_id
from runner.sources.locomo_export import rounded

from conftest import REPO

FIXTURE = json.loads((REPO / "tests" / "data" / "locomo" / "data" / "locomo10.json").read_text())
QA = {s["sample_id"]: s["qa"] for s in FIXTURE}
# test-ada's six questions: the answer given and the dia_ids released to it
ANSWERS = {
    "test-ada": [("Her cat is Pixel", ["D1:1", "D1:2"]), ("Bergen", ["D2:3"]), ("on a Tuesday", []),
                 ("yes", ["D2:2"]), ("2024", ["D2:2", "D1:1"]), ("That is not mentioned", ["D1:3"])],
}


@pytest.fixture
def locomo_run(locomo_project, tmp_path) -> Path:
    run_dir = tmp_path / "runs" / "r1"
    rows = [locomo_cell(run_dir, "test-ada", arm) for arm in ("recall", "bare")]
    rows.append(cell("test-cyd", "recall", None, condition="published", agent="extractive", admitted=False,
                     discard_reason="store_empty"))
    write_run(run_dir, rows, grid={"name": "locomo", "protocol": "personal", "suite": "locomo", "agents": ["extractive"],
                                   "arms": ["recall", "bare"], "conditions": ["published"],
                                   "tasks": ["test-ada", "test-cyd"], "seeds": 1})
    lock = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**lock, "hosted_suite": {"format": "locomo", "suite": "locomo"}}))
    return run_dir


def locomo_cell(run_dir: Path, sample: str, arm: str):
    """A scored cell as the personal protocol records one: the ledger's questions with LoCoMo's own scores, and the
    verdict's text, answer and released turns. bare: the same answers with nothing released."""
    questions, detail = [], []
    for n, (published, (answer, shown)) in enumerate(zip(QA[sample], ANSWERS[sample]), 1):
        gold = str(published["answer"]) if "answer" in published else None  # as LoCoMo's function reads it
        released = [record_id(sample, d) for d in shown] if arm != "bare" else []
        qid = f"{sample}-q{n:04d}"
        questions.append({"id": qid, "kind": f"{published['category']} x", "np": 1, "nf": 0, "cp": 0, "cf": 0,
                          "fama": 0.0, "mpa": 0.0, "faa": 1.0, "lam": 0.0, "released": len(released), "violations": 0,
                          "evidence_released": 0, "evidence": 1,
                          "own": {"f1": locomo_f1(answer, gold, published["category"])},
                          "own_recall": evidence_recall(tuple(published["evidence"]), sample, released)})
        detail.append({"question": qid, "text": published["question"], "answer": answer, "released": released,
                       "violations": [], "criteria": []})
    row = cell(sample, arm, None, condition="published", agent="extractive", outcome="scored",
               result=json.dumps({"fama": 0.0, "suite": "locomo", "format": "locomo", "questions": questions}))
    cell_dir = run_dir / "cells" / row.cell_id
    cell_dir.mkdir(parents=True, exist_ok=True)
    (cell_dir / "verdict.json").write_text(json.dumps({"judges": ["exact"], "questions": detail}))
    return row


def export(run_dir: Path, out: Path):
    return CliRunner().invoke(app, ["export", str(run_dir), "--format", "locomo", "--output", str(out)])


def refusal(result) -> str:
    assert isinstance(result.exception, UserError), result.output
    assert "\n" not in str(result.exception)
    return str(result.exception)


def test_the_export_is_locomos_output_file_per_agent_and_arm(locomo_run, tmp_path):
    out = tmp_path / "out"
    result = export(locomo_run, out)
    assert result.exit_code == 0, result.output
    assert "wrote 2 records under" in result.output and "left out extractive-test-cyd-recall-0-published: " \
        "store_empty" in result.output and "analyze_aggr_acc" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["extractive__bare.json", "extractive__recall.json"]
    samples = json.loads((out / "extractive__recall.json").read_text())
    assert [s["sample_id"] for s in samples] == ["test-ada"]
    items = samples[0]["qa"]
    for published, written in zip(QA["test-ada"], items):  # every item as published, LoCoMo's fields added
        assert {k: written[k] for k in published} == published
    assert [q["memgrid_prediction"] for q in items] == [a for a, _ in ANSWERS["test-ada"]]
    assert items[0]["memgrid_prediction_context"] == ["D1:1", "D1:2"]
    assert [q["memgrid_f1"] for q in items] == [0.4, 0.5, 0.286, 0.667, 1.0, 1.0]
    assert [q["memgrid_recall"] for q in items] == [1.0, 1.0, 0.0, 1.0, 0.0, 1.0]  # q5: the composite entry


def test_what_locomos_function_cannot_read_as_published_is_carried_and_said(locomo_run, tmp_path):
    """At 3eb6f2c eval_question_answering reads `answer` before the category (a KeyError on category 5 published
    without one) and the context's first entry (an IndexError when nothing was released)."""
    assert export(locomo_run, tmp_path / "out").exit_code == 0
    recall = json.loads((tmp_path / "out" / "extractive__recall.json").read_text())[0]["qa"]
    assert "answer" not in QA["test-ada"][5] and recall[5]["answer"] == ""
    assert "category 5 published without an answer" in recall[5]["memgrid_note"]
    assert recall[2]["memgrid_prediction_context"] == [""] and "nothing released" in recall[2]["memgrid_note"]
    assert "memgrid_note" not in recall[0]
    bare = json.loads((tmp_path / "out" / "extractive__bare.json").read_text())[0]["qa"]
    assert all(q["memgrid_prediction_context"] == [""] for q in bare)
    assert [q["memgrid_recall"] for q in bare] == [0.0] * 6


def test_scores_are_rounded_as_locomo_writes_them():
    """evaluate_qa.py rounds each score to 3 digits: category 1's F1 is numpy's mean, whose float64 rounds as
    rint(x * 1000) / 1000; the others are Python floats (values from LoCoMo's own writing of 0.1625)."""
    assert rounded(0.1625, 1) == 0.162 and rounded(0.1625, 4) == 0.163 and rounded(1, 5) == 1


def test_an_output_file_another_wrote_is_never_replaced(locomo_run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "extractive__recall.json").write_text('[{"sample_id": "conv-26", "qa": []}]')
    assert refusal(export(locomo_run, out)).startswith(f"{out / 'extractive__recall.json'}: exists and was not "
                                                       "written by an export of run r1: fix: ")
    assert sorted(p.name for p in out.iterdir()) == ["extractive__recall.json"]
    (out / "extractive__recall.json").unlink()
    assert export(locomo_run, out).exit_code == 0 and export(locomo_run, out).exit_code == 0  # its own: replaced


def test_a_run_whose_questions_are_not_the_suites_is_refused(locomo_run, tmp_path):
    verdict = locomo_run / "cells" / "extractive-test-ada-recall-0-published" / "verdict.json"
    doc = json.loads(verdict.read_text())
    doc["questions"][1]["text"] = "Which cities did Ada visit?"
    verdict.write_text(json.dumps(doc))
    assert "question test-ada-q0002 is not the suite's qa[1]" in refusal(export(locomo_run, tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_run_over_another_suite_is_refused(tmp_path):
    run_dir = write_run(tmp_path / "runs" / "c1", [cell("slug_ids", "bare", True)])
    assert refusal(export(run_dir, tmp_path / "out")) == (f"{run_dir}: is not a run over a LoCoMo suite: fix: export "
                                                          "--format locomo writes runs whose grid names a suite memgrid "
                                                          "task import --format locomo wrote")
