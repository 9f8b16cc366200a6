"""A Memora submission run as its contract says: its own three scripts, each in its own container.

An arm of kind `memora-submission` (arms/<name>/Dockerfile puts the scripts in /app, read-only, owned by root) is
run by the personal protocol through these steps instead of an ingest, memgrid's reader and an answering agent:

1. build (harness step, the arm's image, no network):
       /app/build.sh --corpus /sandbox/ingest/corpus --index-dir /sandbox/store
   The corpus folder holds `records.jsonl`: one line per record of the person up to the period's end, in order:
   {"record_id", "persona_id", "session", "date", "turns": [{"speaker": "user" | "assistant", "message"}]}.
   The index it leaves is the arm's store: digested, cached per (arm, person, period) like an ingest's.
2. search (harness step, the arm's image over a fresh copy of the index, no network), at most SEARCH_BATCH
   questions a call:
       /app/search.sh --index-dir /sandbox/store --queries Q.jsonl --output R.jsonl
   each query {"query_id", "persona_id", "cutoff_session", "question"}, each result line {"query_id",
   "record_ids": [...]}; the harness keeps up to 350 unique ids per question that are this person's records
   no later than the cutoff (the protocol's `released`); any other id is a recorded violation, dropped.
3. answer (the `submission` agent, runner/agents/submission.py): per question, a fresh container of the arm's
   image, no network, whose /sandbox holds only request.json: {"query_id", "persona_id", "question",
   "records": [{"record_id", "session", "date", "text"}]}, the released records' full text. The gate proves
   each container held nothing else (`answer_isolated`). ANSWERS_AT_ONCE run at once.
A script that fails, times out or writes something malformed is the submission's own doing: recorded and scored
as it left things (no ids, an empty answer), never a discard. Only memgrid's faults (a bundle that does not
verify, an answer container holding more than its request) discard the cell.
"""

import json
import math
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from runner.agents.base import SessionSetup
from runner.agents.submission import SubmissionAgent
from runner.arms.kinds import STORE_DIR
from runner.env.archive import Entry
from runner.env.bundle import bundle_of
from runner.env.sandbox import Sandbox, expiry_checked
from runner.exec.trial import TrialContext, bundle_verification, harness_step, isolation_proof
from runner.grading import gate
from runner.plan.grid import CellSpec
from runner.plan.spec import ArmSpec
from runner.units.personal import Question, Unit

# The contract's commands and limits (issue 54): build and each search call 1,800 s, at most 300 questions a
# search call, each answer 600 s, at most eight answers at once, 7,200 s for all of a cell's answers.
CORPUS_DIR = "/sandbox/ingest/corpus"
BUILD = ("/app/build.sh", "--corpus", "{corpus}", "--index-dir", "{store}")
BUILD_SECONDS = 1800
SEARCH_SECONDS = 1800
SEARCH_BATCH = 300
ANSWER_SECONDS = 600
ANSWERS_AT_ONCE = 8
ANSWER_PHASE_SECONDS = 7200  # shared by every answer of a cell
# The search's output is printed back through the step's bounded capture: the script's own printing goes to stderr.
SEARCH = '/app/search.sh --index-dir "$1" --queries "$2" --output "$3" >&2 && cat "$3"'
ALLOWED_IN_ANSWER = {"request.json", "MANIFEST.sha256"}


def corpus_entries(unit: Unit) -> tuple[Entry, ...]:
    """The person's records as the build's corpus folder (relative to /sandbox)."""
    lines = [json.dumps({"record_id": r.id, "persona_id": unit.person, "session": r.session, "date": r.date,
                         "turns": [{"speaker": role, "message": text} for role, text in r.turns()]}, sort_keys=True)
             for r in unit.records]
    return (Entry("ingest/corpus/records.jsonl", "".join(line + "\n" for line in lines).encode()),)


def queries_file(unit: Unit, questions: list[Question]) -> bytes:
    return "".join(json.dumps({"query_id": q.id, "persona_id": unit.person, "cutoff_session": q.cutoff_session,
                               "question": q.text}) + "\n" for q in questions).encode()


@dataclass
class Searched:
    """What the search calls returned: ids per question as the submission listed them, and what went wrong."""
    ids: dict[str, list[str]]
    calls: list[dict]  # per call: questions, exit code, whether it ran past its time, stderr tail
    malformed: list[str]  # result lines that are not {"query_id": a question's id, "record_ids": [...]}
    proof: gate.GateProof


def search(ctx: TrialContext, cell: CellSpec, unit: Unit, arm: ArmSpec, store: tuple[Entry, ...]) -> Searched:
    batches = [unit.questions[i:i + SEARCH_BATCH] for i in range(0, len(unit.questions), SEARCH_BATCH)]
    steps = [(f"queries-{n}", ["sh", "-c", SEARCH, "search", STORE_DIR, f"/sandbox/harness/queries-{n}.json",
                               f"/tmp/results-{n}.jsonl"], queries_file(unit, batch)) for n, batch in enumerate(batches)]
    results, _, _, proof = harness_step(ctx, cell, arm, store, steps, seconds=SEARCH_SECONDS, keep_store=False)
    asked = {q.id for q in unit.questions}
    ids: dict[str, list[str]] = {}
    malformed: list[str] = []
    for r in results:
        for line in r.stdout.splitlines():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
            if not (isinstance(obj, dict) and obj.get("query_id") in asked and isinstance(obj.get("record_ids"), list)):
                malformed.append(line[:200])
                continue
            ids.setdefault(obj["query_id"], []).extend(str(i) for i in obj["record_ids"])
    calls = [{"questions": len(b), "exit_code": r.exit_code, "timed_out": r.timed_out,
              "stderr_tail": r.stderr.strip()[-300:]} for b, r in zip(batches, results)]
    return Searched(ids, calls, malformed, proof)


def request(unit: Unit, question: Question, released: list[str]) -> dict:
    by_id = {r.id: r for r in unit.records}
    return {"query_id": question.id, "persona_id": unit.person, "question": question.text,
            "records": [{"record_id": i, "session": by_id[i].session, "date": by_id[i].date, "text": by_id[i].text}
                        for i in released]}


# Why an answer does not count (each is scored as the empty answer it then is, and counted by kind).
ANSWER_PROBLEMS = ("exit_nonzero", "timeout", "phase_time_out", "missing", "not_json", "wrong_query_id", "empty")


def read_answer(text: str, query_id: str) -> tuple[str, str | None, str | None]:
    """The answer answer.sh wrote, or "" with the kind of problem and why it does not count."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return ("", "not_json", "answer.json is not JSON") if text.strip() else \
            ("", "missing", "answer.json is missing or empty")
    if not isinstance(obj, dict) or obj.get("query_id") != query_id:
        return "", "wrong_query_id", f"answer.json does not name query_id {query_id}"
    if not isinstance(obj.get("answer"), str) or not obj["answer"].strip():
        return "", "empty", "answer.json has no non-empty answer"
    return obj["answer"], None, None


@dataclass
class Answered:
    """One question's answer container: its proofs, the answer and why it does not count, if it does not."""
    question: str
    proofs: list[gate.GateProof]
    bundle_digest: str | None
    answer: str = ""
    problem_kind: str | None = None  # ANSWER_PROBLEMS
    problem: str | None = None
    ended: str | None = None
    seconds: float = 0.0


def answer_one(ctx: TrialContext, cell: CellSpec, arm: ArmSpec, req: dict, seconds: int, record_dir) -> Answered:
    """One question in a fresh container of the submission's image: proofs first, then answer.sh for `seconds`."""
    t = time.monotonic()
    bundle = bundle_of([Entry("request.json", json.dumps(req, indent=1).encode())])
    image = ctx.images_by_arm[arm.name].tag
    setup = SessionSetup(cell, None, arm, "answer", seconds, record_dir)
    with Sandbox(ctx.client, image, ctx.run_id, cell.cell_id, bundle_tar=bundle.tar, lifetime=seconds + 120,
                 limits=ctx.limits) as sandbox:
        with expiry_checked(sandbox.expired):
            proofs = [bundle_verification(sandbox, bundle)]
            if proofs[0].passed:
                proofs.append(isolation_proof(sandbox, ALLOWED_IN_ANSWER))
            if not all(p.passed for p in proofs):
                return Answered(req["query_id"], proofs, bundle.digest, seconds=round(time.monotonic() - t, 2))
            transcript = SubmissionAgent(setup).run(sandbox, "")
    transcript.save(record_dir / f"{re.sub(r'[^A-Za-z0-9._-]', '_', req['query_id'])}.jsonl")
    if transcript.is_error:
        answer, kind, problem = "", ("timeout" if transcript.ended == "timeout" else "exit_nonzero"), transcript.error
    else:
        answer, kind, problem = read_answer(transcript.output, req["query_id"])
    return Answered(req["query_id"], proofs, bundle.digest, answer, kind, problem, transcript.ended,
                    round(time.monotonic() - t, 2))


def answer_all(ctx: TrialContext, cell: CellSpec, unit: Unit, arm: ArmSpec, kept: dict[str, tuple[str, ...]],
               record_dir) -> list[Answered]:
    """Every question's answer, each in its own container, ANSWERS_AT_ONCE at a time, within the phase's shared
    ANSWER_PHASE_SECONDS (an answer gets what is left of it, at most ANSWER_SECONDS; one that would start after it
    ran out does not start); in question order."""
    record_dir.mkdir(parents=True, exist_ok=True)
    cancelled = threading.Event()
    deadline = time.monotonic() + ANSWER_PHASE_SECONDS

    def one(q: Question) -> Answered | None:
        if cancelled.is_set():
            return None
        ctx.check_cancel()
        left = math.floor(deadline - time.monotonic())
        if left < 1:
            return Answered(q.id, [], None, problem_kind="phase_time_out",
                            problem=f"the answer phase's {ANSWER_PHASE_SECONDS} s ran out before it started")
        return answer_one(ctx, cell, arm, request(unit, q, kept[q.id]), min(ANSWER_SECONDS, left), record_dir)

    with ThreadPoolExecutor(max(1, min(ANSWERS_AT_ONCE, len(unit.questions)))) as pool:
        futures = [pool.submit(one, q) for q in unit.questions]
        try:
            return [f.result() for f in futures]
        finally:  # a failure (memgrid's: an engine error, an expired sandbox) starts no more containers
            cancelled.set()


def contract_record(build: dict, found: Searched, release: dict, answered: list[Answered]) -> dict:
    """How each stage of the submission ended, for the ledger's result: the build, the search calls, the ids
    dropped by kind (each a violation) and the answers that do not count by kind. None of it is a discard."""
    violations: dict[str, int] = {}
    for r in release.values():
        for kind, ids in r.dropped.items():
            violations[kind] = violations.get(kind, 0) + len(ids)
    problems: dict[str, int] = {}
    for a in answered:
        if a.problem_kind:
            problems[a.problem_kind] = problems.get(a.problem_kind, 0) + 1
    return {"build": {k: build.get(k) for k in ("exit_code", "timed_out", "seconds", "source", "refused")},
            "search": {"calls": len(found.calls), "failed": sum(c["exit_code"] != 0 for c in found.calls),
                       "timed_out": sum(c["timed_out"] for c in found.calls), "malformed_lines": len(found.malformed)},
            "violations": violations, "answers": {"counted": sum(a.problem_kind is None for a in answered),
                                                  "not_counted": problems}}
