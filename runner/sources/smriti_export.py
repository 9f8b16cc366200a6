"""A planted run in the records SMRITI-Bench's own scorer reads (`memgrid export --format smriti RUN --output DIR`).

SMRITI's runner appends one JSON record a run to results/<run_id>.jsonl (task_id, trial, condition off | on |
ablate:<lane>, passed, tokens_used, input_tokens, output_tokens, cache_read_tokens, injected_confirmed, transcript,
planted_memory_contents, split, split_hash), one file per agent over one memory system; its scorer.py reads one
file. So this writes DIR/<agent>__<arm>.jsonl for every agent x arm of the run, a record per final admitted cell
(the seed is the trial), and `python scorer.py DIR/<agent>__<arm>.jsonl` scores memgrid's cells.

Where the two differ, said here and in each record's `memgrid` field:
- tokens_used is SMRITI's count: fresh (uncached) input + output; memgrid's cache reads are in cache_read_tokens and
  its cache creation is left out, as SMRITI's adapter leaves it. An agent whose tokens are not observed (memgrid's
  LLM-free reader, a command agent) writes 0, as SMRITI's adapters do for a run without usage.
- injected_confirmed is memgrid's confirmation (the arm's own log, and for a model agent the gateway's record);
  None under off, where nothing is planted, as SMRITI's runner writes it.
- transcript is the session's last answer as SMRITI's claude-code adapter records it (`claude -p`'s result; codex's
  last message), read back from the CLI's raw stream in the cell's folder, so SMRITI's echo_rate is its own rule over
  memgrid's sessions; empty for an agent that keeps no answer (memgrid's LLM-free reader, a command agent:
  `memgrid.reply_kept` false). memgrid's own echo is another rule (a run of 8 words of a memory in the artifact).
- a discarded cell (not admitted) is left out: SMRITI has no discard; memgrid never scores one.
"""

import json
from pathlib import Path
from typing import Callable

from runner.agents.registry import agent_class
from runner.errors import UserError
from runner.plan.spec import DEFAULT_SUITE
from runner.results.ledger import Ledger, latest_attempts
from runner.results.run_lock import load_lock
from runner.sources.base import ExportResult


def tokens(row: dict, key: str) -> int:
    return int(row.get(key) or 0)


def record(run_id: str, row: dict, memories: list[str], reply: str | None) -> dict:
    result = json.loads(row["result"])
    confirmed = None if row["condition"] == "off" else bool(result.get("injection", {}).get("confirmed"))
    observed = row.get("tokens_fresh_input") is not None or row.get("tokens_output") is not None
    return {"run_id": run_id, "task_id": row["task"], "condition": row["condition"], "trial": row["seed"],
            "passed": bool(row["checker_passed"]),
            "tokens_used": tokens(row, "tokens_fresh_input") + tokens(row, "tokens_output"),
            "input_tokens": tokens(row, "tokens_fresh_input"), "output_tokens": tokens(row, "tokens_output"),
            "cache_read_tokens": tokens(row, "tokens_cache_read"), "transcript": reply or "",
            "planted_memory_contents": memories, "injected_confirmed": confirmed, "split": result.get("split", "unknown"),
            "split_hash": result.get("split_sha256"),
            "memgrid": {"cell_id": row["cell_id"], "agent": row["agent"], "model": row.get("model"), "arm": row["arm"],
                        "tokens_observed": observed,
                        "reply_kept": reply is not None, "echo": result.get("echo")}}


def export_run(run_dir: Path, output: Path, memories_of: Callable[[str], dict[str, list[str]]], log=print) -> ExportResult:
    """`memories_of(suite)`: each task's planted memory contents, read from this checkout as the run's cells read them."""
    lock = load_lock(run_dir)
    grid = lock.get("grid", {})
    if grid.get("protocol", "coding") != "planted":
        raise UserError(f"{run_dir}: is a {grid.get('protocol', 'coding')} run: fix: export --format smriti writes runs "
                        "of the planted protocol (memgrid report reads the others)")
    tasks = memories_of(grid.get("suite", DEFAULT_SUITE))
    rows = [r for r in latest_attempts(Ledger(run_dir).rows()).values() if r["final"]]
    files: dict[Path, list[dict]] = {}
    result = ExportResult()
    for row in sorted(rows, key=lambda r: (r["seed"], r["task"], r["condition"], r["cell_id"])):
        if not row["admitted"] or row["checker_passed"] is None or not row.get("result"):
            result.skipped[row["cell_id"]] = row.get("discard_reason") or row.get("error_class") or "not graded"
            continue
        if row["task"] not in tasks:
            raise UserError(f"{run_dir}: task '{row['task']}' is not in this checkout's planted tasks: fix: export from "
                            "the checkout that ran it")
        reply = agent_class(row["agent"], grid.get("command_agents") or {}).reply(run_dir / "cells" / row["cell_id"])
        files.setdefault(output / f"{row['agent']}__{row['arm']}.jsonl", []).append(
            record(run_dir.name, row, tasks[row["task"]], reply))
    for target in files:
        if target.exists() and not all(json.loads(line).get("run_id") == run_dir.name
                                       for line in target.read_text().splitlines() if line.strip()):
            raise UserError(f"{target}: exists and was not written by an export of run {run_dir.name}: fix: give an "
                            "--output folder of its own (nothing was written)")
    output.mkdir(parents=True, exist_ok=True)
    for target, records in files.items():
        tmp = target.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        tmp.replace(target)
        result.written.append(target)
        result.records += len(records)
    if files:
        result.next = f"in SMRITI's folder (benchmarks/smriti/): python scorer.py {next(iter(files))}"
    return result
