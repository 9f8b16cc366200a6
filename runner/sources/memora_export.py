"""A personal run in the records Memora's own tools read (`memgrid export --format memora RUN --output DIR`).

Memora's evaluators (its evals/model_eval/model_based_evaluator.py and evals/agent_eval/memory_to_answer.py) write one
`eval_report_*.json` per persona and period under `<period>/<persona>/eval_results/<run>/`, and its
evals/model_eval/aggregate_results.py walks such a tree into its Table 3: per subject (`metadata.memory_system`) ×
task × period, the mean over the reports of each report's `by_task_type.<Task>.fama` (its questions' mean FAMA × 100).
This writes that tree for every scored cell of a run, in the memory-agent (Track 2) report's fields, so
`python aggregate_results.py DIR --print` prints memgrid's Table 3. The figures are memgrid's own (the ledger's per
question counts, the judges' verdicts in the cell's verdict.json): nothing is scored again here.

Kept apart from memora.py on purpose: that module's digest is part of every hosted persona's identity (a change to
how the data is read is a change of the persons), and how a run is written out is not.
"""

import json
from pathlib import Path

from runner.errors import UserError
from runner.results.ledger import Ledger, latest_attempts
from runner.results.run_lock import load_lock
from runner.sources.base import ExportResult

TASKS = {"remembering": "Remembering", "reasoning": "Reasoning", "recommending": "Recommending"}
EXPECTED = {True: "yes", False: "no"}  # the answer a judge should give: presence sub-questions yes, forgetting no


def export_run(run_dir: Path, output: Path, log=print) -> ExportResult:
    """Every final, scored cell of a personal run as one Memora report; cells discarded or not scored are listed in
    `skipped` (Memora's table has no place for them: memgrid's own report counts them)."""
    lock = load_lock(run_dir)
    grid = lock.get("grid", {})
    if grid.get("protocol", "coding") != "personal":
        raise UserError(f"{run_dir}: is a {grid.get('protocol', 'coding')} run: fix: export --format memora writes "
                        "runs of the personal protocol (memgrid report reads the others)")
    rows = [r for r in latest_attempts(Ledger(run_dir).rows()).values() if r["final"]]
    result = ExportResult(next=f"in a checkout of Memora: python evals/model_eval/aggregate_results.py {output} --print")
    agents = {r["agent"] for r in rows}
    seeds = {r["seed"] for r in rows}
    targets = []
    for row in sorted(rows, key=lambda r: r["cell_id"]):
        if not row["admitted"] or row["outcome"] != "scored" or not row.get("result"):
            result.skipped[row["cell_id"]] = row.get("discard_reason") or row.get("outcome") or "not scored"
            continue
        run = run_dir.name if len(agents) == 1 and len(seeds) == 1 else f"{run_dir.name}.{row['agent']}.seed{row['seed']}"
        targets.append((output / row["condition"] / row["task"] / "eval_results" / run / f"eval_report_{row['arm']}.json",
                        row))
    # a subject per arm, kept apart per agent when a run has several (Memora's table has one row per subject)
    subject = {row["cell_id"]: row["arm"] if len(agents) == 1 else f"{row['arm']} ({row['agent']})" for _, row in targets}
    for target, row in targets:  # every refusal before anything is written; one report in memory at a time (each
        refuse_foreign(target, run_dir.name)  # holds its answers whole), so each is made twice
        report(run_dir, row, subject[row["cell_id"]], grid)
    for i, (target, row) in enumerate(targets, 1):
        doc = report(run_dir, row, subject[row["cell_id"]], grid)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(target)
        result.written.append(target)
        result.records += 1
        if i % 50 == 0:
            log(f"{i}/{len(targets)} reports written")
    return result


def refuse_foreign(target: Path, run_id: str) -> None:
    """A report already at `target` is replaced only when this run wrote it: another's (Memora's own, another
    run's) is never lost."""
    if not target.exists():
        return
    try:
        written_by = json.loads(target.read_text())["metadata"]["memgrid"]["run_id"]
    except (OSError, ValueError, KeyError, TypeError):
        written_by = None
    if written_by != run_id:
        raise UserError(f"{target}: exists and was not written by an export of run {run_id}: fix: give an --output "
                        "folder of its own (nothing was written)")


def report(run_dir: Path, row: dict, subject: str, grid: dict) -> dict:
    """One cell (an arm's agent on a persona over a period) as Memora's evaluators report one persona's run."""
    cell_dir = run_dir / "cells" / row["cell_id"]
    scored = json.loads(row["result"])
    try:
        verdict = json.loads((cell_dir / "verdict.json").read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{cell_dir / 'verdict.json'}: cannot be read ({e}): fix: resume the run "
                        f"(memgrid grid --run-id {run_dir.name}) so the cell is judged again") from None
    judged = {q["question"]: q for q in verdict["questions"]}
    results = [question_result(cell_dir, q, judged.get(q["id"]), verdict["judges"]) for q in scored["questions"]]
    doc = summary(results, verdict["judges"])
    doc["metadata"] = {
        "evaluation_timestamp": row["ended_at"], "memory_system": subject, "user_id": row["task"],
        "model": row.get("model") or row["agent"], "use_multi_judge": len(verdict["judges"]) > 1,
        "judge_models": {j: j for j in verdict["judges"]},
        "memgrid": {"run_id": run_dir.name, "cell_id": row["cell_id"], "attempt": row["attempt"], "arm": row["arm"],
                    "agent": row["agent"], "seed": row["seed"], "period": row["condition"], "persona": row["task"],
                    "suite": scored.get("suite") or grid.get("suite"), "panel": scored.get("panel"),
                    "search_k": scored.get("search_k")},
    }
    return doc


def question_result(cell_dir: Path, q: dict, judged: dict | None, judges: list[str]) -> dict:
    """One question in the fields Memora's memory-agent evaluator writes, its counts the ledger's (checked against the
    verdicts they came from)."""
    if judged is None or len(judged["criteria"]) != q["np"] + q["nf"]:
        raise UserError(f"{cell_dir / 'verdict.json'}: question {q['id']}: its verdicts are not those of the ledger's "
                        "row: fix: resume the run so the cell is judged again")
    evaluations = []
    for n, c in enumerate(judged["criteria"], 1):
        expected = EXPECTED[c["expected_mention"]]
        per_judge = {v["judge"]: {"llm_answer": "error" if v["mentions"] is None else EXPECTED[v["mentions"]],
                                  "is_correct": v["mentions"] is not None and v["mentions"] == c["expected_mention"],
                                  "explanation": v["detail"]} for v in c["verdicts"]}
        valid = [v for v in per_judge.values() if v["llm_answer"] != "error"]
        yes = sum(v["llm_answer"] == "yes" for v in valid)
        evaluations.append({
            "evaluation_question_id": c.get("id") or f"{q['id']}-{n}",
            "evaluation_question": c["value"],
            "expected_answer": expected,
            "evaluation_type": c.get("evaluation_type") or ("memory_presence" if c["expected_mention"]
                                                            else "forgetting_absence"),
            "evaluation_result": {"is_correct": c["correct"],
                                  "llm_answer": ("yes" if yes * 2 > len(valid) else "no") if valid else "error",
                                  "per_judge_results": per_judge, "num_judges": len(per_judge),
                                  "num_valid_judges": len(valid),
                                  "correct_votes": sum(v["is_correct"] for v in valid)}})
    presence = [e for e in evaluations if e["evaluation_type"] == "memory_presence"]
    forgetting = [e for e in evaluations if e["evaluation_type"] == "forgetting_absence"]
    cp = sum(e["evaluation_result"]["is_correct"] for e in presence)
    cf = sum(e["evaluation_result"]["is_correct"] for e in forgetting)
    if (len(presence), cp, len(forgetting), cf) != (q["np"], q["cp"], q["nf"], q["cf"]):
        raise UserError(f"{cell_dir / 'verdict.json'}: question {q['id']}: its verdicts count {cp}/{len(presence)} "
                        f"presence and {cf}/{len(forgetting)} forgetting correct, the ledger {q['cp']}/{q['np']} and "
                        f"{q['cf']}/{q['nf']}: fix: resume the run so the cell is judged again")
    per_judge_metrics = {}
    for j in judges:
        votes = [e["evaluation_result"]["per_judge_results"][j] for e in evaluations
                 if j in e["evaluation_result"]["per_judge_results"]]
        correct = sum(v["is_correct"] for v in votes)
        per_judge_metrics[j] = {"correct": correct, "total": len(votes),
                                "accuracy": correct / len(votes) if votes else 0.0}
    released = judged.get("released")  # None: a run judged before verdict.json kept the released ids
    return {
        "question_id": q["id"], "question": judged["text"], "task_type": TASKS.get(q["kind"], q["kind"]),
        "model_response": judged["answer"], "evaluation_questions": evaluations,
        "memories_retrieved": q["released"], "memories": released,
        "total_eval_questions": len(evaluations), "per_judge_metrics": per_judge_metrics,
        "fama": q["fama"],
        "memory_presence_accuracy": cp / len(presence) if presence else None,
        "memory_presence_correct": cp, "memory_presence_total": len(presence),
        "forgetting_absence_accuracy": cf / len(forgetting) if forgetting else None,
        "forgetting_absence_correct": cf, "forgetting_absence_total": len(forgetting),
        "memgrid": {k: q[k] for k in ("mpa", "faa", "lam", "violations", "evidence", "evidence_released", "forgotten",
                                      "forgotten_released", "invalid_judgements") if k in q},
    }


def summary(results: list[dict], judges: list[str]) -> dict:
    """The report's figures as Memora's evaluators compute them from the per-question results: sub-question
    accuracies summed over questions, FAMA the mean per-question FAMA × 100, overall and per task (every task listed,
    with 0 questions where it has none, which Memora's aggregator leaves out)."""
    def bucket(rs: list[dict]) -> dict:
        mp_total = sum(r["memory_presence_total"] for r in rs)
        mp = sum(r["memory_presence_correct"] for r in rs)
        fa_total = sum(r["forgetting_absence_total"] for r in rs)
        fa = sum(r["forgetting_absence_correct"] for r in rs)
        total = sum(r["total_eval_questions"] for r in rs)
        return {"total_questions": len(rs), "total_eval_questions": total, "correct_count": mp + fa,
                "accuracy": (mp + fa) / total if total else 0.0,
                "avg_question_accuracy": (sum((r["memory_presence_correct"] + r["forgetting_absence_correct"])
                                              / r["total_eval_questions"] for r in rs if r["total_eval_questions"])
                                          / len(rs)) if rs else 0.0,
                "memory_presence_total": mp_total, "memory_presence_correct": mp,
                "memory_presence_accuracy": mp / mp_total if mp_total else None,
                "forgetting_absence_total": fa_total, "forgetting_absence_correct": fa,
                "forgetting_absence_accuracy": fa / fa_total if fa_total else None,
                "fama": sum(r["fama"] for r in rs) / len(rs) * 100 if rs else 0.0}

    overall = bucket(results)
    per_judge = {j: {"correct": sum(r["per_judge_metrics"][j]["correct"] for r in results),
                     "total": sum(r["per_judge_metrics"][j]["total"] for r in results)} for j in judges}
    for stats in per_judge.values():
        stats["accuracy"] = stats["correct"] / stats["total"] if stats["total"] else 0.0
    return {
        "overall_metrics": {"total_questions": overall["total_questions"],
                            "total_evaluation_questions": overall["total_eval_questions"],
                            "total_correct_evaluations": overall["correct_count"],
                            "overall_accuracy": overall["accuracy"], "fama": overall["fama"],
                            **{k: overall[k] for k in ("memory_presence_total", "memory_presence_correct",
                                                       "memory_presence_accuracy", "forgetting_absence_total",
                                                       "forgetting_absence_correct", "forgetting_absence_accuracy")}},
        "per_judge_overall": per_judge,
        "by_task_type": {task: bucket([r for r in results if r["task_type"] == task]) for task in TASKS.values()},
        "detailed_results": results,
    }
