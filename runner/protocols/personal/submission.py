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
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from runner.agents.base import SessionSetup
from runner.agents.submission import OUTPUT, REQUEST, SubmissionAgent
from runner.arms.kinds import STORE_DIR
from runner.env.archive import Entry
from runner.env.bundle import bundle_of
from runner.env.sandbox import Sandbox, expiry_checked
from runner.exec.trial import TrialContext, bundle_verification, harness_step, isolation_proof
from runner.grading import gate
from runner.plan.grid import CellSpec
from runner.plan.spec import ArmSpec
from runner.protocols.personal import corpus as gen

# The contract's commands and limits (issue 54): build and each search call 1,800 s, at most 300 questions a
# search call, each answer 600 s, at most eight answers at once.
CORPUS_DIR = "/sandbox/ingest/corpus"
BUILD = ("/app/build.sh", "--corpus", "{corpus}", "--index-dir", "{store}")
BUILD_SECONDS = 1800
SEARCH_SECONDS = 1800
SEARCH_BATCH = 300
ANSWER_SECONDS = 600
ANSWERS_AT_ONCE = 8
# The search's output is printed back through the step's bounded capture: the script's own printing goes to stderr.
SEARCH = '/app/search.sh --index-dir "$1" --queries "$2" --output "$3" >&2 && cat "$3"'
ALLOWED_IN_ANSWER = {"request.json", "MANIFEST.sha256"}


def corpus_entries(unit: gen.Unit) -> tuple[Entry, ...]:
    """The person's records as the build's corpus folder (relative to /sandbox)."""
    lines = [json.dumps({"record_id": r.id, "persona_id": unit.person, "session": r.session, "date": r.date,
                         "turns": [{"speaker": role, "message": text} for role, text in r.turns()]}, sort_keys=True)
             for r in unit.records]
    return (Entry("ingest/corpus/records.jsonl", "".join(line + "\n" for line in lines).encode()),)


def queries_file(unit: gen.Unit, questions: list[gen.Question]) -> bytes:
    return "".join(json.dumps({"query_id": q.id, "persona_id": unit.person, "cutoff_session": q.cutoff_session,
                               "question": q.text}) + "\n" for q in questions).encode()


@dataclass
class Searched:
    """What the search calls returned: ids per question as the submission listed them, and what went wrong."""
    ids: dict[str, list[str]]
    calls: list[dict]  # per call: questions, exit code, stderr tail
    malformed: list[str]  # result lines that are not {"query_id": a question's id, "record_ids": [...]}
    proof: gate.GateProof


def search(ctx: TrialContext, cell: CellSpec, unit: gen.Unit, arm: ArmSpec, store: tuple[Entry, ...]) -> Searched:
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
    calls = [{"questions": len(b), "exit_code": r.exit_code, "stderr_tail": r.stderr.strip()[-300:]}
             for b, r in zip(batches, results)]
    return Searched(ids, calls, malformed, proof)


def request(unit: gen.Unit, question: gen.Question, released: list[str]) -> dict:
    by_id = {r.id: r for r in unit.records}
    return {"query_id": question.id, "persona_id": unit.person, "question": question.text,
            "records": [{"record_id": i, "session": by_id[i].session, "date": by_id[i].date, "text": by_id[i].text}
                        for i in released]}


def read_answer(text: str, query_id: str) -> tuple[str, str | None]:
    """The answer answer.sh wrote, or "" with why it does not count."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return "", "answer.json is not JSON" if text.strip() else "answer.json is missing or empty"
    if not isinstance(obj, dict) or obj.get("query_id") != query_id:
        return "", f"answer.json does not name query_id {query_id}"
    if not isinstance(obj.get("answer"), str) or not obj["answer"].strip():
        return "", "answer.json has no non-empty answer"
    return obj["answer"], None


@dataclass
class Answered:
    """One question's answer container: its proofs, the answer and why it does not count, if it does not."""
    question: str
    proofs: list[gate.GateProof]
    bundle_digest: str
    answer: str = ""
    problem: str | None = None
    ended: str | None = None
    seconds: float = 0.0


def answer_one(ctx: TrialContext, cell: CellSpec, arm: ArmSpec, req: dict, record_dir) -> Answered:
    t = time.monotonic()
    bundle = bundle_of([Entry("request.json", json.dumps(req, indent=1).encode())])
    image = ctx.images_by_arm[arm.name].tag
    setup = SessionSetup(cell, None, arm, "answer", ANSWER_SECONDS, record_dir)
    with Sandbox(ctx.client, image, ctx.run_id, cell.cell_id, bundle_tar=bundle.tar, lifetime=ANSWER_SECONDS + 120,
                 limits=ctx.limits) as sandbox:
        with expiry_checked(sandbox.expired):
            proofs = [bundle_verification(sandbox, bundle)]
            if proofs[0].passed:
                proofs.append(isolation_proof(sandbox, ALLOWED_IN_ANSWER))
            if not all(p.passed for p in proofs):
                return Answered(req["query_id"], proofs, bundle.digest, seconds=round(time.monotonic() - t, 2))
            transcript = SubmissionAgent(setup).run(sandbox, "")
    transcript.save(record_dir / f"{re.sub(r'[^A-Za-z0-9._-]', '_', req['query_id'])}.jsonl")
    answer, problem = ("", transcript.error) if transcript.is_error else read_answer(transcript.output, req["query_id"])
    return Answered(req["query_id"], proofs, bundle.digest, answer, problem, transcript.ended,
                    round(time.monotonic() - t, 2))


def answer_all(ctx: TrialContext, cell: CellSpec, unit: gen.Unit, arm: ArmSpec, kept: dict[str, list[str]],
               record_dir) -> list[Answered]:
    """Every question's answer, each in its own container, ANSWERS_AT_ONCE at a time; in question order."""
    record_dir.mkdir(parents=True, exist_ok=True)
    cancelled = threading.Event()

    def one(q: gen.Question) -> Answered | None:
        if cancelled.is_set():
            return None
        ctx.check_cancel()
        return answer_one(ctx, cell, arm, request(unit, q, kept[q.id]), record_dir)

    with ThreadPoolExecutor(max(1, min(ANSWERS_AT_ONCE, len(unit.questions)))) as pool:
        futures = [pool.submit(one, q) for q in unit.questions]
        try:
            return [f.result() for f in futures]
        finally:  # a failure (memgrid's: an engine error, an expired sandbox) starts no more containers
            cancelled.set()
