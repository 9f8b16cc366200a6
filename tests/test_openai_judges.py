"""Memora's judges as published (issue 53, step 3), against a local OpenAI-compatible stub server: each judge is
sent Memora's own prompt, a strict majority of the valid JSON verdicts decides, and a malformed reply or a failed
request is an invalid verdict, never a score; the key never leaves the process."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from runner.errors import SpecError, UserError
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_grid
from runner.protocols.personal import openai_judges
from runner.protocols.personal.judges import judge_criterion
from runner.protocols.personal.panel import JudgeCache
from runner.protocols.personal.protocol import PanelSetup, PersonalSetup, Released
from runner.protocols.registry import PROTOCOLS
from runner.sources.registry import HostedSuite
from runner.units.personal import SubQuestion

from conftest import REPO

KEY = "sk-or-v1-test-0123456789abcdef"
SPELT = SubQuestion("Does the response mention spelt?", id="q_eval_memory_presence_0",
                    evaluation_type="memory_presence", named="spelt")
RYE = SubQuestion("Does the response say rye is still baked?", id="q_eval_forgetting_0",
                  evaluation_type="forgetting_absence", named="rye")
ANSWER = "You bake spelt for the market now; the rye loaves stopped in March."


def reply(text: str) -> tuple[int, dict]:
    return 200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "stub",
                 "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                 "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}}


class Stub:
    """An OpenAI-compatible chat completions server on this machine: `replies` maps a model id to what it answers
    (a function of the request body giving (status, JSON body)); every request is kept."""

    def __init__(self, replies: dict):
        self.replies, self.requests = replies, []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                stub.requests.append({"path": self.path, "auth": self.headers.get("authorization"), "body": body})
                status, answer = stub.replies[body["model"]](body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub():
    servers = []

    def start(replies):
        servers.append(Stub(replies))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def panel(url: str, models, cache_path, key=KEY):
    endpoint = openai_judges.Endpoint(url, key)
    cache = JudgeCache.open(cache_path)
    return endpoint, tuple(openai_judges.OpenAIJudge(i, m, endpoint, cache) for i, m in enumerate(models))


def test_each_judge_is_sent_memoras_prompt_and_a_majority_of_the_valid_json_verdicts_decides(stub, tmp_path):
    server = stub({"a": lambda b: reply('{"answer": "yes", "confidence": 0.9, "explanation": "names spelt"}'),
                   "b": lambda b: reply('```json\n{"answer": "Yes", "confidence": 0.8, "explanation": "spelt"}\n```'),
                   "c": lambda b: reply("Yes, it mentions spelt.")})  # Memora would read this as yes: not here
    endpoint, judges = panel(server.url, ("a", "b", "c"), tmp_path / "cache.jsonl")
    result = judge_criterion(ANSWER, SPELT, True, judges)
    assert result.correct and result.valid == 2
    assert [v.mentions for v in result.verdicts] == [True, True, None]
    assert "malformed reply (not JSON)" in result.verdicts[2].detail

    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions" and sent["auth"] == f"Bearer {KEY}"
    assert (sent["body"]["model"], sent["body"]["temperature"]) == ("a", 0.0)
    system, user = (m["content"] for m in sent["body"]["messages"])
    assert system.startswith("You are an expert evaluator assessing AI assistant responses.")
    assert user == ("Please evaluate the following AI response against the evaluation question.\n\n"
                    f"AI RESPONSE TO EVALUATE:\n{ANSWER}\n\nEVALUATION QUESTION:\nDoes the response mention spelt?\n\n"
                    "Target item being evaluated: None\nEvaluation type: memory_presence\n\nProvide your evaluation in "
                    "JSON format with answer (yes/no), confidence (0.0-1.0), and explanation.")
    assert (endpoint.requests, endpoint.usage) == (3, {"input_tokens": 300, "output_tokens": 21})

    # two valid verdicts that split are no majority: the criterion is not met
    server.replies["b"] = lambda b: reply('{"answer": "no", "confidence": 0.6, "explanation": "-"}')
    _, judges = panel(server.url, ("a", "b", "c"), tmp_path / "other-cache.jsonl")
    assert not judge_criterion(ANSWER, SPELT, True, judges).correct


def test_a_forgetting_sub_question_is_met_when_the_judges_answer_no(stub, tmp_path):
    server = stub({"a": lambda b: reply('{"answer": "no"}'), "b": lambda b: reply('{"answer": "no"}'),
                   "c": lambda b: reply('{"answer": "yes"}')})
    _, judges = panel(server.url, ("a", "b", "c"), tmp_path / "cache.jsonl")
    result = judge_criterion(ANSWER, RYE, False, judges)
    assert result.correct and result.valid == 3
    assert "Evaluation type: forgetting_absence" in server.requests[0]["body"]["messages"][1]["content"]
    server.replies.update(a=lambda b: reply('{"answer": "yes"}'))
    _, judges = panel(server.url, ("a", "b", "c"), tmp_path / "cache2.jsonl")
    assert not judge_criterion(ANSWER, RYE, False, judges).correct


def test_a_failed_request_or_an_answer_that_is_not_yes_or_no_is_invalid_never_a_score(stub, tmp_path, monkeypatch):
    monkeypatch.setattr(openai_judges, "RETRIES", 0)
    server = stub({"down": lambda b: (500, {"error": {"message": "upstream down"}}),
                   "maybe": lambda b: reply('{"answer": "maybe"}'),
                   "empty": lambda b: reply("")})
    _, judges = panel(server.url, ("down", "maybe", "empty"), tmp_path / "cache.jsonl")
    for expected, criterion in ((True, SPELT), (False, RYE)):  # no verdict meets presence, nor forgetting
        result = judge_criterion(ANSWER, criterion, expected, judges)
        assert (result.correct, result.valid) == (False, 0)
    details = [v.detail for v in result.verdicts]
    assert details[0].startswith("transport: InternalServerError") and "not yes or no" in details[1]
    assert details[2].startswith("malformed reply")
    assert not (tmp_path / "cache.jsonl").exists()  # nothing invalid is cached
    closed = openai_judges.Endpoint("http://127.0.0.1:9/v1", KEY)  # nothing listens on the discard port
    verdict = openai_judges.OpenAIJudge(0, "a", closed, JudgeCache.open(tmp_path / "c2.jsonl")).judge(ANSWER, SPELT)
    assert verdict.mentions is None and verdict.detail.startswith("transport: APIConnectionError")


def test_a_reply_past_the_time_limit_is_invalid_and_a_slow_one_within_it_counts(stub, tmp_path, monkeypatch):
    import time

    monkeypatch.setattr(openai_judges, "RETRIES", 0)
    monkeypatch.setattr(openai_judges, "REQUEST_SECONDS", 1.0)
    slow = lambda seconds: lambda b: (time.sleep(seconds), reply('{"answer": "yes"}'))[1]
    server = stub({"stalled": slow(3.0), "slow": slow(0.4)})
    _, judges = panel(server.url, ("stalled", "slow"), tmp_path / "cache.jsonl")
    t = time.monotonic()
    stalled = judges[0].judge(ANSWER, SPELT)
    waited = time.monotonic() - t
    assert stalled.mentions is None and stalled.detail.startswith("transport: APITimeoutError")
    assert waited < 2.5  # the time limit held: never the whole 3 s the server stalls
    assert judges[1].judge(ANSWER, SPELT).mentions is True


def test_the_panels_retry_policy_asks_again_after_a_failure_and_never_past_it(stub, tmp_path, monkeypatch):
    """RETRIES further tries after a transport failure or a 5xx (the SDK's, with its backoff), as Memora's client
    tries three times; a judge that fails them all is invalid, one that answers on a retry is valid."""
    monkeypatch.setattr(openai_judges, "RETRIES", 2)
    failures = {"flaky": 2, "down": 99}

    def failing(model):
        def answer(body):
            if failures[model] > 0:
                failures[model] -= 1
                return 503, {"error": {"message": "overloaded"}}
            return reply('{"answer": "yes"}')
        return answer

    server = stub({m: failing(m) for m in failures})
    _, judges = panel(server.url, ("flaky", "down"), tmp_path / "cache.jsonl")
    flaky, down = (j.judge(ANSWER, SPELT) for j in judges)
    asked = [r["body"]["model"] for r in server.requests]
    assert (flaky.mentions, asked.count("flaky")) == (True, 3)
    assert (down.mentions, asked.count("down")) == (None, 3) and down.detail.startswith("transport: InternalServerError")


def test_the_key_is_never_kept_even_when_the_endpoint_quotes_it(stub, tmp_path, monkeypatch):
    monkeypatch.setattr(openai_judges, "RETRIES", 0)
    server = stub({"a": lambda b: (401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}),
                   "b": lambda b: reply(json.dumps({"answer": "yes", "explanation": f"I was called with {KEY}"}))})
    _, judges = panel(server.url, ("a", "b"), tmp_path / "cache.jsonl")
    result = judge_criterion(ANSWER, SPELT, True, judges)
    kept = json.dumps([vars(v) for v in result.verdicts]) + (tmp_path / "cache.jsonl").read_text()
    assert KEY not in kept and f"[{openai_judges.KEY_ENV}]" in kept
    assert "AuthenticationError" in result.verdicts[0].detail


def test_a_valid_verdict_is_asked_once_and_replayed_from_the_cache(stub, tmp_path):
    server = stub({"a": lambda b: reply('{"answer": "yes"}')})
    _, judges = panel(server.url, ("a",), tmp_path / "cache.jsonl")
    assert judges[0].judge(ANSWER, SPELT).mentions is True
    _, again = panel(server.url, ("a",), tmp_path / "cache.jsonl")  # a resume: a new panel on the same cache
    verdict = again[0].judge(ANSWER, SPELT)
    assert (verdict.mentions, verdict.detail, len(server.requests)) == (True, "cached", 1)
    again[0].judge(ANSWER + " Also rye.", SPELT)  # another answer is another question for the judge
    assert len(server.requests) == 2


def test_the_named_panels_are_the_published_ones():
    assert openai_judges.PRESETS == {
        "memora": ("openai/gpt-4.1", "anthropic/claude-haiku-4.5", "google/gemini-2.5-flash"),
        "seed": ("deepseek/deepseek-v4.1-flash", "qwen/qwen3.6-35b-a3b", "qwen/qwen3.5-9b"),
        "mem0": ("gpt-4o-mini",)}


# --- in the personal protocol: a cell of a hosted Memora suite judged by a named panel --------------------------

PROTOCOL = PROTOCOLS["personal"]


def grid(tmp_path, **fields):
    spec = {"name": "memora", "protocol": "personal", "suite": "memora", "tasks": "all", "arms": ["bare"],
            "agents": ["extractive"], "seeds": 1, "conditions": ["weekly"], "judges": "memora", **fields}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in spec.items() if v is not None}))
    return load_grid(path), path


def test_a_named_panel_is_its_published_models_asked_through_the_openai_endpoint(memora_project, tmp_path, monkeypatch):
    spec, path = grid(tmp_path)
    assert (spec.judges, spec.judge_panel, spec.judge_endpoint) == (openai_judges.PRESETS["memora"], "memora", "openai")
    assert spec.as_dict()["judges"] == "memora" and "judge_endpoint" not in spec.as_dict()
    spec, path = grid(tmp_path, judges=["a/x", "b/y", "c/z"], judge_endpoint="openai")
    assert (spec.judges, spec.judge_endpoint, spec.as_dict()["judge_endpoint"]) == (("a/x", "b/y", "c/z"), "openai",
                                                                                    "openai")
    PROTOCOL.check(spec, path, load_all_arms(REPO), {})

    for fields, field, says in (({"judges": "gpt4-panel"}, "judges", "is not valid"),
                                ({"judge_endpoint": "messages"}, "judge_endpoint", "named panel 'memora'"),
                                ({"judges": None, "judge_endpoint": "openai"}, "judge_endpoint", "names no judges")):
        with pytest.raises(SpecError, match=says) as refused:
            grid(tmp_path, **fields)
        assert refused.value.field == field and "\n" not in str(refused.value)
    spec, path = grid(tmp_path, judges=["scripted"], judge_endpoint="openai")
    with pytest.raises(SpecError, match="scripted judge, which speaks only through the model gateway"):
        PROTOCOL.check(spec, path, load_all_arms(REPO), {})
    spec, path = grid(tmp_path, suite=None, tasks=None, cases=2)  # memgrid's own persons ask no published prompt
    with pytest.raises(SpecError, match="persons are memgrid's own") as refused:
        PROTOCOL.check(spec, path, load_all_arms(REPO), {})
    assert refused.value.field == "judge_endpoint"

    monkeypatch.delenv(openai_judges.KEY_ENV, raising=False)
    spec, path = grid(tmp_path)
    with pytest.raises(UserError, match=f"judges memora: {openai_judges.KEY_ENV} is not set: fix: export it"):
        PROTOCOL.panel(None, spec, path, None)
    monkeypatch.setenv(openai_judges.KEY_ENV, KEY)
    assert PROTOCOL.panel(None, spec, path, None) == PanelSetup(openai_judges.PRESETS["memora"], None, None, "openai",
                                                                "memora")


def test_a_memora_cell_judged_by_the_named_panel_scores_fama_from_the_valid_verdicts_and_keeps_no_key(
        memora_project, stub, tmp_path, monkeypatch):
    yes = lambda b: reply('{"answer": "yes", "confidence": 1.0, "explanation": "it does"}')
    server = stub({"openai/gpt-4.1": yes, "anthropic/claude-haiku-4.5": yes,
                   "google/gemini-2.5-flash": lambda b: reply("I think so")})  # never valid
    monkeypatch.setenv(openai_judges.KEY_ENV, KEY)
    monkeypatch.setenv(openai_judges.BASE_URL_ENV, server.url)
    spec, path = grid(tmp_path)
    setup = PersonalSetup(PROTOCOL.panel(None, spec, path, None), HostedSuite("memora", "memora"))
    ctx = TrialContext(None, "run-openai", tmp_path / "runs" / "run-openai", None, {}, load_all_arms(REPO),
                       protocol=PROTOCOL, protocol_setup=setup, root=memora_project)
    cell = CellSpec("test_baker", "full_context", 0, "weekly", "extractive", "full_context-test_baker", 0)
    unit = PROTOCOL.unit(ctx, cell)
    answers = {q.id: "Spelt now; rye still on Sundays; about forty loaves." for q in unit.questions}
    cell_dir = ctx.run_dir / "cells" / cell.cell_id
    cell_dir.mkdir(parents=True)
    result = PROTOCOL.judge(ctx, cell, 1, unit, answers, {q.id: Released((), {}) for q in unit.questions}, cell_dir)
    # every sub-question answered yes by the two valid judges: presence met, forgetting (rye) failed
    assert {q["id"]: (q["cp"], q["cf"], q["fama"], q["invalid_judgements"]) for q in result["questions"]} == {
        "bake_kind_4": (1, 0, 0.5, 2), "bake_load_2": (1, 0, 1.0, 1)}
    assert (result["judge_endpoint"], result["judge_requests"], result["judges"][0]) == (
        "openai", 9, "model-0:openai/gpt-4.1")
    assert {r["body"]["model"] for r in server.requests} == set(openai_judges.PRESETS["memora"])
    lock = PROTOCOL.lock_entries(setup)["judges"]
    assert (lock["panel"], lock["endpoint"], lock["base_url"], lock["prompt_sha256"]) == (
        "memora", "openai", server.url, openai_judges.PROMPT_SHA256)
    kept = "".join(p.read_text() for p in tmp_path.joinpath("runs").rglob("*") if p.is_file()) + json.dumps(lock)
    assert KEY not in kept and "malformed reply" in kept
    tables = PROTOCOL.extra_tables(PROTOCOL.summary([{"agent": "reader", "arm": "full_context", "condition": "weekly",
                                                      "task": "test_baker", "admitted": True,
                                                      "result": json.dumps(result)}]))
    table3_note = next(note for title, *_, note in tables if title.startswith("FAMA x 100 as Memora's Table 3"))
    assert "Judges: model-0:openai/gpt-4.1, model-1:anthropic/claude-haiku-4.5, model-2:google/gemini-2.5-flash." in \
        table3_note


def test_the_recorded_endpoint_carries_no_credentials():
    assert openai_judges.public_url("https://user:pw@proxy.example:8443/api/v1?token=abc") == \
        "https://proxy.example:8443/api/v1"
    assert openai_judges.public_url(openai_judges.DEFAULT_BASE_URL) == "https://openrouter.ai/api/v1"


@pytest.mark.docker
def test_a_memora_grid_judged_by_the_published_panel_keeps_no_key_and_replays_without_the_endpoint(
        engine, images, memora_project, stub, tmp_path, run_id, no_leftovers):
    """`memgrid grid` with `judges: memora` as a researcher runs it, against an OpenAI-compatible server on this
    machine: each judge asked with its own model id and Memora's prompt at temperature 0; the key in no file of the
    runs folder, the ledger or the output; and the same grid again with the server gone judged from the cache alone."""
    import hashlib
    import os
    import shutil
    import subprocess

    def judged(body):
        system, user = (m["content"] for m in body["messages"])
        says = "yes" if "spelt" in user.split("EVALUATION QUESTION:")[0].lower() else "no"
        return reply(json.dumps({"answer": says, "confidence": 1.0, "explanation": "stub"}))

    server = stub({m: judged for m in openai_judges.PRESETS["memora"]})
    shutil.copytree(REPO / "arms" / "full_context", memora_project / "arms" / "full_context")
    spec = {"name": "panel", "protocol": "personal", "suite": "memora", "tasks": ["test_baker"], "seeds": 1,
            "arms": ["full_context"], "agents": ["extractive"], "conditions": ["weekly"], "judges": "memora"}
    (memora_project / "grid.yaml").write_text(yaml.safe_dump(spec))
    env = {**os.environ, "MEMGRID_ROOT": str(memora_project), openai_judges.KEY_ENV: KEY,
           openai_judges.BASE_URL_ENV: server.url}

    def grid_run(rid):
        done = subprocess.run([str(REPO / ".venv/bin/memgrid"), "grid", "--spec", "grid.yaml", "--runs-dir", "runs",
                               "--run-id", rid, "--no-progress"], cwd=memora_project, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done, json.loads((memora_project / "runs" / rid / "summary.json").read_text())

    done, summary = grid_run(run_id)
    sent = [(r["body"]["model"], r["body"]["temperature"],
             hashlib.sha256(r["body"]["messages"][0]["content"].encode()).hexdigest()) for r in server.requests]
    assert {m for m, _, _ in sent} == set(openai_judges.PRESETS["memora"]) and {t for _, t, _ in sent} == {0.0}
    assert {d for _, _, d in sent} == {hashlib.sha256(openai_judges.SYSTEM_PROMPT.encode()).hexdigest()}
    assert len(sent) == 3 * 3  # three judges x the persona's three sub-questions, each asked once
    kept = b"".join(p.read_bytes() for p in (memora_project / "runs").rglob("*") if p.is_file())
    assert KEY.encode() not in kept and KEY not in done.stdout + done.stderr
    assert summary[0]["reward"]["invalid"] is None and summary[0]["panel"] == "model"

    server.close()  # the endpoint is gone: a reproduction judges every sub-question from the runs folder's cache
    again, replayed = grid_run(f"{run_id}-again")
    assert replayed[0]["fama"] == summary[0]["fama"] and replayed[0]["invalid_judgements"] == 0
    assert len(server.requests) == 9
