"""A personal run over LoCoMo in the file LoCoMo's own tools read (`memgrid export --format locomo RUN --output DIR`).

LoCoMo's task_eval/evaluate_qa.py writes one JSON file per model: the samples as a list, each `{"sample_id", "qa"}`
with every qa item as published plus `<model>_prediction`, `<model>_prediction_context` (the dia_ids shown to the
answerer, with --use-rag), `<model>_f1` and `<model>_recall` (each rounded to 3 digits); its evaluation.py's
`eval_question_answering(qa, "<model>_prediction")` scores the predictions and evaluation_stats.py's
`analyze_aggr_acc(data_file, file, stats_file, "<model>", "<model>_f1", rag=True)` totals them per category. This
writes that file for every agent x arm of a run (and seed, when a run has several), the model key `memgrid`:
`DIR/<agent>__<arm>.json`, a sample per scored cell, every question of it in LoCoMo's order. The figures are memgrid's
own (the ledger's per-question scores, the answers and released turns of the cell's verdict.json): nothing is
scored again here.

Where LoCoMo's function cannot read an item as published, the export carries what lets it, said here and in each
such item's `memgrid_note`:
- a category-5 item without `answer` (444 of 446 at 3eb6f2c; the function reads it before the category) gets
  `answer: ""`: its category-5 rule reads the prediction alone, never the gold;
- a question to which nothing was released gets `memgrid_prediction_context: [""]`: the function reads the first
  entry to tell sessions from turns and raises on an empty list; an entry naming no turn counts as none released.
"""

import json
from pathlib import Path
from typing import Callable

import numpy

from runner.errors import UserError
from runner.results.ledger import Ledger, latest_attempts
from runner.results.run_lock import load_lock
from runner.sources.base import ExportResult

MODEL = "memgrid"  # LoCoMo's <model> key: memgrid_prediction, memgrid_f1, ...
NO_ANSWER = ("category 5 published without an answer: answer '' so that LoCoMo's eval_question_answering reads the item "
             "(its category-5 rule reads the prediction alone)")
NOTHING_SHOWN = ("nothing released: context [''] so that LoCoMo's eval_question_answering reads the item (it raises on "
                 "an empty list) and counts no evidence shown")


def dia_id(sample_id: str, record_id: str) -> str:
    """A released turn's dia_id: record ids are "<sample>-D<session>-<turn>" (locomo.record_id)."""
    session, turn = record_id[len(sample_id) + 1:].rsplit("-", 1)
    return f"{session}:{turn}"


def rounded(score: float, category: int) -> float:
    """A score to 3 digits as evaluate_qa.py writes it: category 1's F1 is numpy's mean, and numpy rounds a float64 as
    rint(x * 1000) / 1000 (0.1625 -> 0.162); the others are Python floats, rounded correctly (0.1625 -> 0.163)."""
    return float(round(numpy.float64(score), 3)) if category == 1 else round(score, 3)


def item(published: dict, question: dict, judged: dict, sample_id: str) -> dict:
    """One qa item as published, with memgrid's prediction, context and scores in LoCoMo's fields."""
    out, notes = dict(published), []
    if "answer" not in out:
        out["answer"] = ""
        notes.append(NO_ANSWER)
    context = [dia_id(sample_id, r) for r in judged["released"]]
    if not context:
        context = [""]
        notes.append(NOTHING_SHOWN)
    out.update({f"{MODEL}_prediction": judged["answer"], f"{MODEL}_prediction_context": context,
                f"{MODEL}_f1": rounded(question["own"]["f1"], published["category"]), f"{MODEL}_recall": round(question["own_recall"], 3)})
    if notes:
        out["memgrid_note"] = "; ".join(notes)
    return out


def sample(run_dir: Path, row: dict, qa: list[dict]) -> dict:
    """One scored cell as LoCoMo's output file holds a sample, its questions checked against the suite's."""
    cell_dir = run_dir / "cells" / row["cell_id"]
    questions = json.loads(row["result"])["questions"]
    try:
        judged = {q["question"]: q for q in json.loads((cell_dir / "verdict.json").read_text())["questions"]}
    except (OSError, ValueError, KeyError) as e:
        raise UserError(f"{cell_dir / 'verdict.json'}: cannot be read ({e}): fix: resume the run "
                        f"(memgrid grid --run-id {run_dir.name}) so the cell is judged again") from None
    if len(questions) != len(qa):
        raise UserError(f"{cell_dir}: sample {row['task']} was asked {len(questions)} questions, the suite's has "
                        f"{len(qa)}: fix: export from the checkout whose suite the run ran")
    items = []
    for i, (q, published) in enumerate(zip(questions, qa)):
        v = judged.get(q["id"])
        if v is None or v.get("text") != published.get("question") or "f1" not in q.get("own", {}) \
                or "own_recall" not in q:
            raise UserError(f"{cell_dir / 'verdict.json'}: question {q['id']} is not the suite's qa[{i}] as scored "
                            "by LoCoMo's rules: fix: export from the checkout whose suite the run ran")
        items.append(item(published, q, v, row["task"]))
    return {"sample_id": row["task"], "qa": items, "memgrid_run_id": run_dir.name, "memgrid_cell_id": row["cell_id"]}


def export_run(run_dir: Path, output: Path, published_qa: Callable[[str], dict[str, list[dict]]], log=print) -> ExportResult:
    """`published_qa(suite)`: each sample's qa items as published, read from this checkout's suite (checked against
    its provenance)."""
    lock = load_lock(run_dir)
    hosted = lock.get("hosted_suite") or {}
    if hosted.get("format") != "locomo":
        raise UserError(f"{run_dir}: is not a run over a LoCoMo suite: fix: export --format locomo writes runs whose "
                        "grid names a suite memgrid task import --format locomo wrote")
    qa = published_qa(hosted["suite"])
    rows = [r for r in latest_attempts(Ledger(run_dir).rows()).values() if r["final"]]
    seeds = {r["seed"] for r in rows}
    result = ExportResult(next=f"in a checkout of LoCoMo, per file: python -c \"from task_eval.evaluation_stats import "
                               f"analyze_aggr_acc; analyze_aggr_acc('data/locomo10.json', FILE, 'stats.json', "
                               f"'{MODEL}', '{MODEL}_f1', rag=True)\"")
    files: dict[Path, list[dict]] = {}
    for row in sorted(rows, key=lambda r: r["cell_id"]):
        if not row["admitted"] or row["outcome"] != "scored" or not row.get("result"):
            result.skipped[row["cell_id"]] = row.get("discard_reason") or row.get("outcome") or "not scored"
            continue
        if row["task"] not in qa:
            raise UserError(f"{run_dir}: sample '{row['task']}' is not in suite {hosted['suite']}: fix: export from "
                            "the checkout whose suite the run ran")
        name = f"{row['agent']}__{row['arm']}" + (f"__seed{row['seed']}" if len(seeds) > 1 else "")
        files.setdefault(output / f"{name}.json", []).append(row)
    # every refusal before anything is written (a run's samples are small: LoCoMo's whole is 1,986 questions)
    docs = {target: [sample(run_dir, row, qa[row["task"]]) for row in sorted(cells, key=lambda r: r["task"])]
            for target, cells in files.items()}
    for target in docs:
        if target.exists():
            try:
                ours = all(s.get("memgrid_run_id") == run_dir.name for s in json.loads(target.read_text()))
            except (OSError, ValueError, AttributeError, TypeError):
                ours = False
            if not ours:
                raise UserError(f"{target}: exists and was not written by an export of run {run_dir.name}: fix: give "
                                "an --output folder of its own (nothing was written)")
    output.mkdir(parents=True, exist_ok=True)
    for target, samples in docs.items():
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(samples, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(target)
        result.written.append(target)
        result.records += len(samples)
        log(f"{target.name}: {len(samples)} sample" + ("s" if len(samples) != 1 else ""))
    return result
