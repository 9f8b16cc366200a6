"""Two-session cells of a benchmark hosted as published (a suite `memgrid task import --format traptask` wrote).

A grid names the suite (`protocol: two-session`, `suite: session_memory_recall`); its units are the suite's cases,
each in the one condition `published`. Each session's prompt is the case's own prompt file as the benchmark's
runner passes it; the score is the benchmark's own judge, run unchanged in the checker container on the last
session's output. What the two containers add to the benchmark's runner is in docs/hosted-trap-tasks.md.
"""

import json
from pathlib import Path

from runner.grading.checker import GRACE_SECONDS, grade_in_container, grading_inputs
from runner.sources.registry import HostedSuite
from runner.units.two_session import HostedCase

PUBLISHED = "published"  # a hosted case's one condition: the benchmark as published


def hosted_cases(hosted: HostedSuite, root: Path | None) -> dict[str, HostedCase]:
    """The suite's cases, by id, checked to be the source as imported."""
    return hosted.source().hosted_cases(hosted.folder(root))


GRADER_FILE = "grader.json"  # in the run folder: the benchmark's own grader over each agent x arm's cells


def grade_run(ctx, hosted: HostedSuite, rows: list[dict], log=print) -> list[dict]:
    """The benchmark's own grader over each agent x arm's scored cells (admitted, final), each in a fresh checker
    container; kept in the run folder as grader.json and returned. A group whose grader gives no verdict keeps its
    output instead."""
    source = hosted.source()
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        if r["admitted"] and r["result"]:
            groups.setdefault((r["agent"], r["arm"]), []).append(r)
    graded = []
    for (agent, arm), cells in sorted(groups.items()):
        judged = [{"id": r["task"], "verdict": json.loads(r["result"]).get("judge"), "seconds": r["wall_seconds"],
                   "cost_usd": r["cost_usd"]} for r in sorted(cells, key=lambda r: r["task"])]
        request = source.grader_request(hosted.folder(ctx.root), judged)
        if request is None:
            return []
        spec = {"checker": {"command": list(request.command), "timeout": request.timeout_seconds}, "detector": None}
        grade, log_text, _ = grade_in_container(ctx.client, ctx.images.checker.tag,
                                                grading_inputs(list(request.artifact), list(request.oracle)), spec,
                                                request.timeout_seconds + GRACE_SECONDS, run_id=ctx.run_id,
                                                cell_id=f"grader-{agent}-{arm}", limits=ctx.limits)
        judged_ok = grade is not None and grade["checker"]["exit"] == 0 and not grade["checker"]["timed_out"]
        verdict = source.grader_verdict(grade["checker"]["output"]) if judged_ok else None
        graded.append({"agent": agent, "arm": arm, "cases": len(cells), "verdict": verdict,
                       "output": None if verdict else log_text.strip()[-2000:]})
    (ctx.run_dir / GRADER_FILE).write_text(json.dumps(graded, indent=2) + "\n")
    log(f"{hosted.suite}'s own grader over {len(graded)} agent x arm groups -> {ctx.run_dir / GRADER_FILE}")
    return graded


def judge_session(ctx, cell, hosted: HostedSuite, output: str, exit_code: int) -> tuple[dict | None, str]:
    """The benchmark's judge over the last session's output, in a fresh checker container: its verdict (None when
    it gave none) and what it printed."""
    source = hosted.source()
    request = source.judge_request(hosted.folder(ctx.root), cell.task, output, exit_code)
    inputs = grading_inputs(list(request.artifact), list(request.oracle))
    spec = {"checker": {"command": list(request.command), "timeout": request.timeout_seconds}, "detector": None}
    grade, log, _ = grade_in_container(ctx.client, ctx.images.checker.tag, inputs, spec,
                                       request.timeout_seconds + GRACE_SECONDS, run_id=ctx.run_id, cell_id=cell.cell_id,
                                       limits=ctx.limits)
    judged = grade["checker"] if grade else None
    if judged is None or judged["timed_out"] or judged["exit"] != 0:
        return None, log
    return source.verdict(judged["output"]), log
