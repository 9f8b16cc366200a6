"""A personal run in Memora's own records (issue 54, step 3): `memgrid export --format memora RUN --output DIR` writes
the eval_report_*.json tree Memora's evals/model_eval/aggregate_results.py walks, and its Table 3 read from that tree
is memgrid's. The runs here are written through the real ledger (tests/synthetic_ledger.py) with hand-made
per-question results and verdicts; test_memora_cells exports a run the grid made."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic_ledger import cell, write_run
from typer.testing import CliRunner

from runner.cli import app
from runner.errors import UserError
from runner.protocols.personal.analysis import summarise, table3

# persona -> its questions: (id, kind, presence verdicts, forgetting verdicts); True: the judges' majority was right
QUESTIONS = {
    "test_baker": [("b1", "remembering", [True, True], [False]), ("b2", "remembering", [True], []),
                   ("b3", "reasoning", [False, True], [True, True]), ("b4", "recommending", [True], [True])],
    "test_pilot": [("p1", "remembering", [False], [True]), ("p2", "reasoning", [True, True, True], [False]),
                   ("p3", "recommending", [False, False], [])],
}
JUDGES = ["openai/gpt-4.1", "anthropic/claude-haiku-4.5", "google/gemini-2.5-flash"]


def fama(presence: list[bool], forgetting: list[bool]) -> float:
    """Memora's fama_score, worked by hand for the table above."""
    mpa = sum(presence) / len(presence) if presence else 0.0
    faa = sum(forgetting) / len(forgetting) if forgetting else 1.0
    lam = len(forgetting) / (len(presence) + len(forgetting))
    return max(0.0, mpa - lam * (1 - faa))


def criterion(n: int, expected: bool, correct: bool) -> dict:
    """Two judges give the verdict the majority gave (right when `correct`); the third gives none."""
    verdicts = [{"judge": j, "mentions": expected if correct else not expected, "detail": ""} for j in JUDGES[:2]]
    verdicts.append({"judge": JUDGES[2], "mentions": None, "detail": "reply was not JSON"})
    kind = "memory_presence" if expected else "forgetting_absence"
    return {"value": f"Does the response mention value {n}?", "expected_mention": expected, "correct": correct,
            "id": f"eq_{n}", "evaluation_type": kind, "named": f"value {n}", "verdicts": verdicts}


def personal_cell(run_dir: Path, persona: str, arm: str = "recall", agent: str = "echo"):
    questions, detail = [], []
    for qid, kind, presence, forgetting in QUESTIONS[persona]:
        questions.append({"id": qid, "kind": kind, "np": len(presence), "nf": len(forgetting), "cp": sum(presence),
                          "cf": sum(forgetting), "fama": fama(presence, forgetting), "mpa": 0.0, "faa": 1.0, "lam": 0.0,
                          "released": 3, "violations": 0, "evidence_released": 1, "evidence": 1,
                          "forgotten_released": 0, "forgotten": 0, "invalid_judgements": 0})
        criteria = [criterion(n, True, ok) for n, ok in enumerate(presence)]
        criteria += [criterion(len(presence) + n, False, ok) for n, ok in enumerate(forgetting)]
        detail.append({"question": qid, "text": f"What about {qid}?", "answer": f"answer to {qid}",
                       "released": [f"{persona}-weekly-s0001", f"{persona}-weekly-s0002", f"{persona}-weekly-s0003"],
                       "violations": [], "criteria": criteria})
    row = cell(persona, arm, None, condition="weekly", agent=agent, outcome="scored", checker_passed=None,
               result=json.dumps({"fama": sum(q["fama"] for q in questions) / len(questions), "panel": "model",
                                  "judges": JUDGES, "suite": "memora", "search_k": 10, "questions": questions}))
    cell_dir = run_dir / "cells" / row.cell_id
    cell_dir.mkdir(parents=True, exist_ok=True)
    (cell_dir / "verdict.json").write_text(json.dumps({"judges": JUDGES, "questions": detail}))
    return row


@pytest.fixture
def personal_run(tmp_path) -> Path:
    run_dir = tmp_path / "runs" / "r1"
    rows = [personal_cell(run_dir, p) for p in QUESTIONS]
    rows.append(cell("test_chef", "recall", None, condition="weekly", agent="echo", admitted=False,
                     discard_reason="store_empty"))
    return write_run(run_dir, rows, grid={"name": "memora", "protocol": "personal", "suite": "memora",
                                          "agents": ["echo"], "arms": ["recall"], "conditions": ["weekly"],
                                          "tasks": sorted(QUESTIONS) + ["test_chef"], "seeds": 1})


def export(run_dir: Path, out: Path, fmt: str = "memora"):
    return CliRunner().invoke(app, ["export", str(run_dir), "--format", fmt, "--output", str(out)])


def refusal(result) -> str:
    """The one line `memgrid` prints for a refusal (its main() prints a UserError so, without a traceback)."""
    assert isinstance(result.exception, UserError), result.output
    assert "\n" not in str(result.exception)
    return str(result.exception)


def aggregated(tree: Path) -> dict:
    """Table 3 read from the tree the way Memora's aggregate_results.py reads it: the period and persona from the
    path, the subject from metadata.memory_system, per task the mean over the reports of by_task_type.<Task>.fama
    where that task had questions."""
    cells: dict = {}
    for path in sorted(tree.rglob("eval_report_*.json")):
        parts = path.parts
        period = parts[parts.index("eval_results") - 2]
        report = json.loads(path.read_text())
        for task, stats in report["by_task_type"].items():
            if stats.get("total_questions", 0) > 0:
                cells.setdefault((report["metadata"]["memory_system"], task, period), []).append(stats["fama"])
    return {k: sum(v) / len(v) for k, v in cells.items()}


def test_the_export_is_the_tree_memoras_aggregator_reads_and_its_table_3_is_memgrids(personal_run, tmp_path):
    out = tmp_path / "memora"
    result = export(personal_run, out)
    assert result.exit_code == 0, result.output
    assert "wrote 2 records" in result.output and "left out 1 cells" in result.output
    assert "left out echo-test_chef-recall-0-weekly: store_empty" in result.output
    assert "aggregate_results.py" in result.output
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json"))
    assert files == ["weekly/test_baker/eval_results/r1/eval_report_recall.json",
                     "weekly/test_pilot/eval_results/r1/eval_report_recall.json"]
    # memgrid's own Table 3 over the same rows, as its report prints it
    from runner.results.ledger import Ledger, latest_attempts

    summary = summarise([r for r in latest_attempts(Ledger(personal_run).rows()).values() if r["final"]])
    columns, lines = table3(summary)
    memgrid = {(line[1], col.split()[0], col.split()[1]): value for line in lines
               for col, value in zip(columns[2:], line[2:])}
    memora = aggregated(out)
    names = {"rem": "Remembering", "rea": "Reasoning", "rec": "Recommending"}
    assert {(s, names[t], p): v for (s, t, p), v in memgrid.items()} == {k: f"{v:.2f}" for k, v in memora.items()}
    # and by hand: remembering is the mean of the baker's ((1 - 1/3) + 1) / 2 and the pilot's 0
    assert memora[("recall", "Remembering", "weekly")] == pytest.approx((5 / 6 + 0) / 2 * 100)


def test_a_report_holds_each_question_its_sub_questions_and_every_judges_verdict(personal_run, tmp_path):
    assert export(personal_run, tmp_path / "out").exit_code == 0
    report = json.loads((tmp_path / "out/weekly/test_baker/eval_results/r1/eval_report_recall.json").read_text())
    assert report["metadata"]["memory_system"] == "recall" and report["metadata"]["memgrid"]["run_id"] == "r1"
    overall = report["overall_metrics"]
    assert (overall["total_questions"], overall["total_evaluation_questions"], overall["total_correct_evaluations"]) \
        == (4, 10, 8)
    assert overall["memory_presence_accuracy"] == pytest.approx(5 / 6)
    assert overall["forgetting_absence_accuracy"] == pytest.approx(3 / 4)
    assert overall["fama"] == pytest.approx(sum(fama(p, f) for _, _, p, f in QUESTIONS["test_baker"]) / 4 * 100)
    tasks = report["by_task_type"]
    assert [tasks[t]["total_questions"] for t in ("Remembering", "Reasoning", "Recommending")] == [2, 1, 1]
    b3 = next(r for r in report["detailed_results"] if r["question_id"] == "b3")
    assert (b3["task_type"], b3["model_response"], b3["memories_retrieved"]) == ("Reasoning", "answer to b3", 3)
    assert b3["memories"][0] == "test_baker-weekly-s0001"
    first = b3["evaluation_questions"][0]  # a presence sub-question the judges got wrong
    assert (first["evaluation_question_id"], first["expected_answer"], first["evaluation_type"]) == \
        ("eq_0", "yes", "memory_presence")
    assert first["evaluation_result"]["is_correct"] is False
    assert first["evaluation_result"]["per_judge_results"][JUDGES[2]]["llm_answer"] == "error"
    assert first["evaluation_result"]["num_valid_judges"] == 2
    assert report["per_judge_overall"][JUDGES[2]]["correct"] == 0


def test_a_run_not_of_the_personal_protocol_is_refused_in_one_line(tmp_path):
    run_dir = write_run(tmp_path / "runs" / "c1", [cell("slug_ids", "bare", True)])
    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "export", "c1", "--format",
                           "memora", "--output", str(tmp_path / "out"), "--runs-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "c1: is a coding run: fix: export --format memora writes runs of the personal protocol" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_format_without_an_export_is_refused_naming_those_with_one(personal_run, tmp_path):
    result = export(personal_run, tmp_path / "out", fmt="amb")
    assert refusal(result) == "--format: 'amb' is not a format memgrid exports — fix: use one of memora, smriti, locomo"


def test_a_report_another_wrote_is_never_replaced_and_nothing_is_written(personal_run, tmp_path):
    out = tmp_path / "out"
    theirs = out / "weekly/test_pilot/eval_results/r1/eval_report_recall.json"
    theirs.parent.mkdir(parents=True)
    theirs.write_text('{"metadata": {"memory_system": "mem_0"}}')
    result = export(personal_run, out)
    assert refusal(result).startswith(f"{theirs}: exists and was not written by an export of run r1: fix: ")
    assert theirs.read_text() == '{"metadata": {"memory_system": "mem_0"}}'
    assert [p for p in out.rglob("*") if p.is_file()] == [theirs]
    theirs.unlink()  # its own earlier export is replaced: a resumed run is exported again
    assert export(personal_run, out).exit_code == 0 and export(personal_run, out).exit_code == 0


def test_verdicts_that_are_not_the_ledgers_are_refused(personal_run, tmp_path):
    verdict = personal_run / "cells" / "echo-test_pilot-recall-0-weekly" / "verdict.json"
    doc = json.loads(verdict.read_text())
    doc["questions"][1]["criteria"][0]["correct"] = False  # p2's first presence sub-question, right in the ledger
    verdict.write_text(json.dumps(doc))
    result = export(personal_run, tmp_path / "out")
    assert "question p2: its verdicts count 2/3 presence" in refusal(result)
    assert not (tmp_path / "out").exists()


def test_two_answerers_of_one_run_are_two_subjects_of_memoras_table(tmp_path):
    """Memora's table has a row per memory system: a run with several agents keeps them apart (the arm and the agent
    as the subject, each in a run folder of its own), so no row averages two answerers."""
    run_dir = tmp_path / "runs" / "r2"
    rows = [personal_cell(run_dir, p, agent=a) for p in QUESTIONS for a in ("echo", "reader")]
    write_run(run_dir, rows, grid={"name": "memora", "protocol": "personal", "suite": "memora",
                                   "agents": ["echo", "reader"], "arms": ["recall"], "conditions": ["weekly"],
                                   "tasks": sorted(QUESTIONS), "seeds": 1})
    assert export(run_dir, tmp_path / "out").exit_code == 0
    files = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*.json"))
    assert files == [f"weekly/{p}/eval_results/r2.{a}.seed0/eval_report_recall.json"
                     for p in sorted(QUESTIONS) for a in ("echo", "reader")]
    assert {s for s, _, _ in aggregated(tmp_path / "out")} == {"recall (echo)", "recall (reader)"}

