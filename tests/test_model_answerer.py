"""A model answers in the personal protocol (issue 75, step 1): the `answerer` agent asks a model each question over
the records the search released, with the hosted benchmark's own answer prompt (Memora's agent track, byte for byte)
through the cell's model gateway; offline, the scripted model answers from the memories the prompt lists."""

import hashlib
import json
import re

import pytest
import yaml

from runner.agents.answerer import ModelAnswerAgent
from runner.errors import SpecError
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_grid
from runner.protocols.personal.protocol import DEFAULT_ANSWER_PROMPT, PersonalSetup
from runner.protocols.registry import PROTOCOLS
from runner.sources import memora
from runner.sources.memora import ANSWER_PROMPT, HISTORY_PROMPT, Session
from runner.units.personal import Question
from runner.sources.registry import HostedSuite

from conftest import REPO

PROTOCOL = PROTOCOLS["personal"]


def test_memoras_answer_request_is_the_one_its_generate_answer_sends():
    """Written out from evals/agent_eval/memory_to_answer.py (generate_answer): the f-string's system prompt with the
    8 spaces of its blank line, each memory numbered with its relevance (0.00: memgrid's records carry no score), the
    model's sampling as Memora sets it."""
    body = ANSWER_PROMPT.request("gpt-x", ask("Where do I live?"), [said("user: I moved to {Lyon}.\nassistant: Nice!"),
                                                                     said("b")])
    assert body == {
        "model": "gpt-x", "max_tokens": 500, "temperature": 0.7,
        "messages": [
            {"role": "system", "content": "You are a helpful AI assistant with access to a user's personal memory "
                                          "system.\n        \nYour task is to answer questions based ONLY on the "
                                          "user's stored memories and preferences.\n\nGuidelines:\n1. Use ONLY the "
                                          "information from the provided memories\n2. Be specific and reference actual "
                                          "items/preferences from memory\n3. If the question is about recommendations, "
                                          "suggest based on similar items in memory\n4. Be conversational and helpful\n"
                                          "5. Don't make up information not in the memories"},
            {"role": "user", "content": "User's Question: Where do I live?\n\nUser's Relevant Memories:\n"
                                        "1. user: I moved to {Lyon}.\nassistant: Nice! (relevance: 0.00)\n"
                                        "2. b (relevance: 0.00)\n\nPlease provide a helpful answer based on these "
                                        "memories."}]}
    # no memory: Memora answers its fixed line and asks no model; memgrid's default asks anyway
    assert ANSWER_PROMPT.request("gpt-x", ask("Where?"), []) is None
    assert DEFAULT_ANSWER_PROMPT.request("m", ask("Where?"), [])["messages"][1]["content"].startswith("Question: Where?")
    # the prompt's identity is its text and settings, not the model asked
    assert ANSWER_PROMPT.sha256 != DEFAULT_ANSWER_PROMPT.sha256
    assert re.findall(ANSWER_PROMPT.reading()["item"], body["messages"][1]["content"], re.M) == ["1. ", "2. "]


def ask(text: str) -> Question:
    return Question("q1", "remembering", text, (), 9, (), (), ())


def said(text: str, session: int = 1, turns=()) -> Session:
    return Session(f"r{session}", "p", session, f"2025-06-0{session}", text, "", "", tuple(turns))


def test_memoras_model_track_request_is_the_one_its_prompt_builder_sends():
    """Written out from evals/model_eval/model_based_evaluator.py (PromptBuilder): the history oldest session first,
    each under "## Session N - date", the assistant's turns alone (its code labels speaker "user", which the released
    sessions never name: they say user_agent), the question after it; temperature 0.7, no max_tokens."""
    records = [said("", 2, [("user", "I now bake with spelt."), ("assistant", "Spelt it is.")]),
               said("", 1, [("user", "I bake rye."), ("assistant", "Rye noted."), ("assistant", "Anything else?")])]
    body = HISTORY_PROMPT.request("m", ask("What flour do I use?"), records)
    assert {k: v for k, v in body.items() if k != "messages"} == {"model": "m", "temperature": 0.7}
    system, user = (m["content"] for m in body["messages"])
    assert system.startswith("You are an AI assistant with memory capabilities. The conversation history below "
                             "contains ALL your previous conversations with this user - this history is PROVIDED TO "
                             "YOU in this prompt.\n\nYour task is") and "IMPORTANT: Today's date" not in system
    assert system.endswith("\n9. Do not make up information that wasn't in the conversations")
    assert user == ("# Conversation History\nThe following contains all your previous conversations with this user, "
                    "in chronological order:\n\n\n\n## Session 1 - 2025-06-01\n\nAssistant: Rye noted.\nAssistant: "
                    "Anything else?\n\n\n## Session 2 - 2025-06-02\n\nAssistant: Spelt it is.\n\n\n---\n\n"
                    "# Current Question\nUser: What flour do I use?\n\nBased on the conversation history above, please "
                    "provide your answer:")
    assert HISTORY_PROMPT.request("m", ask("Q?"), []) is not None  # no record: the model is asked all the same
    assert HISTORY_PROMPT.sha256 not in (ANSWER_PROMPT.sha256, DEFAULT_ANSWER_PROMPT.sha256)
    assert re.findall(HISTORY_PROMPT.reading()["item"], user, re.M) == ["## Session "] * 2
    assert re.search(HISTORY_PROMPT.reading()["question"], user, re.S).group(1) == "What flour do I use?"


def test_memgrid_knows_when_memoras_model_track_would_cut_the_history():
    """get_model_context_limit's figures (a token per 4 characters, its table, its fallbacks, its 200,000 cap), and
    the two places its code cuts: the context over the model's budget, or the prompt over the model's whole window."""
    assert [memora.context_budget(m) for m in ("scripted", "qwen/qwen3-32b", "gpt-4o", "anthropic/claude-sonnet-4.5",
                                               "claude-3-haiku")] == [None, 18_672, 79_600, 200_000, 130_000]
    week = [said("", n, [("assistant", "x" * 40_000)]) for n in range(1, 9)]  # 80,000 tokens of history
    assert HISTORY_PROMPT.cut("scripted", ask("Q?"), week) is None
    assert HISTORY_PROMPT.cut("anthropic/claude-sonnet-4.5", ask("Q?"), week) is None
    assert "its context limit for qwen/qwen3-32b is 18,672 tokens" in HISTORY_PROMPT.cut("qwen/qwen3-32b", ask("Q?"),
                                                                                         week)
    assert "over 200,000" in HISTORY_PROMPT.cut("scripted", ask("Q?"), week * 11)  # any model: its cap


def test_a_request_goes_to_anthropics_messages_api_as_the_request_it_amounts_to():
    """The system messages become `system`, the sampling stays, max_tokens is the publisher's or the stated cap
    (Messages requires one); LoCoMo's gpt-3.5 shape (its one message the system's) is sent as the user's."""
    from runner.units.personal import MESSAGES_MAX_TOKENS, as_messages_request

    body = ANSWER_PROMPT.request("claude-x", ask("Where do I live?"), [said("user: I moved to Lyon.")])
    assert as_messages_request(body) == {"model": "claude-x", "max_tokens": 500, "temperature": 0.7,
                                         "system": body["messages"][0]["content"], "messages": [body["messages"][1]]}
    history = as_messages_request(HISTORY_PROMPT.request("claude-x", ask("Q?"), [said("", 1, [("assistant", "Hi")])]))
    assert history["max_tokens"] == MESSAGES_MAX_TOKENS and [m["role"] for m in history["messages"]] == ["user"]
    lone = {"model": "m", "n": 1, "max_tokens": 32, "messages": [{"role": "system", "content": "ctx Q"}]}
    assert as_messages_request(lone) == {"model": "m", "max_tokens": 32, "messages": [{"role": "user",
                                                                                       "content": "ctx Q"}]}
    with pytest.raises(ValueError, match="a request for 2 answers has no Messages form"):
        as_messages_request({**lone, "n": 2})


def spec(tmp_path, **fields):
    data = {"name": "ma", "protocol": "personal", "suite": "memora", "tasks": "all", "arms": ["bare"],
            "agents": ["answerer"], "model": "scripted", "seeds": 1, "conditions": ["weekly"], **fields}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}))
    return load_grid(path), path


def test_a_model_answerer_is_refused_where_its_prompt_would_not_be_the_benchmarks(memora_project, tmp_path,
                                                                                    monkeypatch):
    arms = load_all_arms(REPO)
    grid, path = spec(tmp_path, arms=["bare", "oracle_memory", "full_context"])
    PROTOCOL.check(grid, path, arms, {"answerer": ModelAnswerAgent})  # the agent track's prompt, and the model track's
    # a model whose window Memora's code would cut the history to fit: refused, never sent whole as if it were Memora's
    monkeypatch.setitem(memora.CONTEXT_LIMITS, "tiny-model", 400)
    grid, path = spec(tmp_path, arms=["bare", "full_context"], model="tiny-model")
    with pytest.raises(SpecError, match=r"arms: names 'full_context', but memora's whole-history track would cut "
                                        r"test_baker's weekly history for model tiny-model \(the history is .* tokens, "
                                        r"over 400\).* fix: drop full_context or period weekly"):
        PROTOCOL.check(grid, path, arms, {"answerer": ModelAnswerAgent})
    PROTOCOL.check(*spec(tmp_path, arms=["bare", "oracle_memory"], model="tiny-model"), arms,
                   {"answerer": ModelAnswerAgent})  # the agent track's prompt is never cut
    grid, path = spec(tmp_path, model=None)
    with pytest.raises(SpecError, match=r"model: is missing: the answerer agent needs a model"):
        ModelAnswerAgent.prepare_grid(None, grid, path, None, {})


def test_a_model_answerer_is_refused_on_a_benchmark_whose_answer_prompt_memgrid_does_not_host(locomo_project, tmp_path,
                                                                                               monkeypatch):
    from runner.sources.locomo import LocomoFormat

    arms = load_all_arms(REPO)
    grid, path = spec(tmp_path, suite="locomo", conditions=["published"], arms=["bare", "oracle_memory"])
    PROTOCOL.check(grid, path, arms, {"answerer": ModelAnswerAgent})  # its retrieval rows' QA prompt
    grid, path = spec(tmp_path, suite="locomo", conditions=["published"], arms=["bare", "full_context"])
    with pytest.raises(SpecError, match=r"arms: names 'full_context', which hands the answerer every record, but "
                                        r"locomo's answer prompt is for memories a search returned, and memgrid hosts "
                                        r"no prompt of its whole-history track"):
        PROTOCOL.check(grid, path, arms, {"answerer": ModelAnswerAgent})
    monkeypatch.setattr(LocomoFormat, "answer_prompt", None)
    grid, path = spec(tmp_path, suite="locomo", conditions=["published"])
    with pytest.raises(SpecError, match=r"agents: names 'answerer', a model answerer, but memgrid hosts no answer prompt "
                                        r"of suite 'locomo''s benchmark \(locomo\)"):
        PROTOCOL.check(grid, path, arms, {"answerer": ModelAnswerAgent})


def test_locomos_answer_request_is_the_one_its_rag_evaluation_sends():
    """Written out from task_eval/gpt_utils.py (get_gpt_answers, use_rag, rag_mode dialog, batch size 1) and
    global_methods.run_chatgpt: each released turn a line "<session date_time>: <turn>" in the search's order, then its
    QA prompt; a temporal question asks for an approximate date; one message whose role is system for a gpt-3.5 model
    and user for the others; max_tokens 32, temperature 0, n 1; a category-5 question is not asked."""
    from runner.sources.locomo import RAG_PROMPT, Turn, kind_of

    turns = [Turn("s-D2:1", "s", 2, "2023-05-20", 'Ada said, "We moved to Lyon."', "", "", "D2:1", "user",
                  "3:00 pm on 20 May, 2023"),
             Turn("s-D1:3", "s", 1, "2023-05-08", 'Bo said, "Nice!" and shared a photo of a cake', "", "", "D1:3",
                  "assistant", "1:56 pm on 8 May, 2023")]
    temporal = Question("s-q0001", kind_of(2), "When did Ada move?", (), 2, (), (), ())
    body = RAG_PROMPT.request("gpt-4-turbo", temporal, turns)
    assert body == {"model": "gpt-4-turbo", "max_tokens": 32, "temperature": 0, "n": 1, "messages": [
        {"role": "user", "content": '3:00 pm on 20 May, 2023: Ada said, "We moved to Lyon."\n1:56 pm on 8 May, 2023: '
                                    'Bo said, "Nice!" and shared a photo of a cake\n\n\nBased on the above context, '
                                    'write an answer in the form of a short phrase for the following question. Answer '
                                    'with exact words from the context whenever possible.\n\nQuestion: When did Ada '
                                    'move? Use DATE of CONVERSATION to answer with an approximate date. Short answer:\n'}]}
    single = Question("s-q0002", kind_of(4), "Where does Ada live?", (), 2, (), (), ())
    content = RAG_PROMPT.request("gpt-3.5-turbo", single, turns[:1])["messages"]
    assert content[0]["role"] == "system" and content[0]["content"].endswith("Question: Where does Ada live? "
                                                                             "Short answer:\n")
    assert RAG_PROMPT.request("m", Question("s-q0003", kind_of(5), "What did Bo say of Paris?", (), 2, (), (), ()),
                              turns) is None
    reading = RAG_PROMPT.reading()  # how the scripted model finds the turns, the question and what was said
    text = body["messages"][0]["content"]
    assert len(re.findall(reading["item"], text, re.M)) == 2
    assert re.search(reading["question"], text, re.S).group(1).startswith("When did Ada move?")
    assert re.match(reading["statement"], text).end() == len('3:00 pm on 20 May, 2023: Ada said, "')


def verdict(tmp_path, cell: str) -> list[dict]:
    return json.loads((tmp_path / "run" / "cells" / cell / "verdict.json").read_text())["questions"]


@pytest.mark.docker
def test_the_scripted_model_answers_a_memora_persona_through_the_gateway(engine, images, memora_project, tmp_path,
                                                                         run_id, no_leftovers):
    grid, path = spec(tmp_path)
    setup = ModelAnswerAgent.prepare_grid(engine, grid, path, images, {}, log=lambda m: None)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, {}, load_all_arms(REPO), protocol=PROTOCOL,
                       protocol_setup=PersonalSetup(None, HostedSuite("memora", "memora")), root=memora_project,
                       agent_setups={"answerer": setup})
    results, rows = {}, {}
    for arm in ("bare", "oracle_memory", "full_context"):
        row = PROTOCOL.run_cell(ctx, CellSpec("test_baker", arm, 0, "weekly", "answerer", f"{arm}-baker", 0), 1)
        assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
        results[arm], rows[arm] = json.loads(row.result), row
    for arm, result in results.items():  # each cell records the prompt it was asked with: Memora's own, by track
        own = HISTORY_PROMPT if arm == "full_context" else ANSWER_PROMPT
        assert {k: result["answer_prompt"][k] for k in ("name", "sha256", "model", "settings")} == {
            "name": own.name, "sha256": own.sha256, "model": "scripted", "settings": dict(own.settings)}
    # bare released nothing: Memora's fixed line, no model asked, no token spent
    assert results["bare"]["answer_prompt"]["asked"] == 0 and rows["bare"].tokens_output == 0
    assert {q["answer"] for q in verdict(tmp_path, "bare-baker")} == {ANSWER_PROMPT.no_memories}
    # the oracle's evidence reached the model through the gateway, which recorded each reply's usage
    assert results["oracle_memory"]["answer_prompt"]["asked"] == 2
    gateway = [json.loads(line) for line in
               (tmp_path / "run" / "cells" / "oracle_memory-baker" / "answer" / "gateway.jsonl").read_text().splitlines()]
    model = [e for e in gateway if e.get("kind") == "model"]
    assert [(e["path"], e["status"]) for e in model] == [("/v1/chat/completions", 200)] * 2
    assert all(e["usage"]["output_tokens"] > 0 and e["usage"]["input_tokens"] > 0 for e in model)
    assert rows["oracle_memory"].tokens_output == sum(e["usage"]["output_tokens"] for e in model)
    answers = {q["question"]: q["answer"] for q in verdict(tmp_path, "oracle_memory-baker")}
    assert "spelt" in answers["bake_kind_4"].lower()  # what the user said, read from the memories the prompt listed
    assert results["oracle_memory"]["fama"] > results["bare"]["fama"]
    # the whole history: the model track's one request per question, the history as Memora lays it out (the
    # assistant's turns), read by the scripted model
    assert results["full_context"]["answer_prompt"]["asked"] == 2
    hosted = HostedSuite("memora", "memora")
    unit = hosted.source().personal_unit(hosted.folder(memora_project), "test_baker", "weekly")
    # every record up to the question's date (each published question is asked after its period's last session)
    released = {q["question"]: q["released"] for q in verdict(tmp_path, "full_context-baker")}
    sent = [HISTORY_PROMPT.request("scripted", q, [r for r in unit.records if r.id in released[q.id]])["messages"]
            for q in unit.questions]
    seen = [json.loads(line) for line in (tmp_path / "run" / "cells" / "full_context-baker" / "answer" /
                                          "model_requests.jsonl").read_text().splitlines()]
    assert sorted(e["messages_sha256"] for e in seen) == sorted(
        hashlib.sha256(json.dumps(m, sort_keys=True).encode()).hexdigest() for m in sent)
    # Memora's layout shows its model the assistant's turns alone: the user's own words never reach it
    assert "sourdough" in unit.records[0].text and not any("sourdough" in m[1]["content"] for m in sent)


@pytest.mark.docker
def test_the_scripted_model_answers_a_locomo_sample_with_its_qa_prompt(engine, images, locomo_project, tmp_path, run_id,
                                                                       no_leftovers):
    """LoCoMo's QA prompt over the oracle's evidence turns: each question but the category-5 one reaches the model
    through the gateway as LoCoMo's code sends it (digests of what the scripted model was shown)."""
    from runner.sources.locomo import RAG_PROMPT, kind_of

    grid, path = spec(tmp_path, suite="locomo", conditions=["published"])
    setup = ModelAnswerAgent.prepare_grid(engine, grid, path, images, {}, log=lambda m: None)
    hosted = HostedSuite("locomo", "locomo")
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, {}, load_all_arms(REPO), protocol=PROTOCOL,
                       protocol_setup=PersonalSetup(None, hosted), root=locomo_project, agent_setups={"answerer": setup})
    row = PROTOCOL.run_cell(ctx, CellSpec("test-ada", "oracle_memory", 0, "published", "answerer", "oracle-ada", 0), 1)
    assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
    result = json.loads(row.result)
    unit = hosted.source().personal_unit(hosted.folder(locomo_project), "test-ada", "published")
    asked = [q for q in unit.questions if q.kind != kind_of(5)]
    assert result["answer_prompt"]["name"] == RAG_PROMPT.name and result["answer_prompt"]["asked"] == len(asked) == 5
    records = {r.id: r for r in unit.records}
    released = {q["question"]: q["released"] for q in verdict(tmp_path, "oracle-ada")}
    seen = [json.loads(line) for line in (tmp_path / "run" / "cells" / "oracle-ada" / "answer" /
                                          "model_requests.jsonl").read_text().splitlines()]
    assert sorted(e["messages_sha256"] for e in seen) == sorted(hashlib.sha256(json.dumps(RAG_PROMPT.request(
        "scripted", q, [records[i] for i in released[q.id]])["messages"], sort_keys=True).encode()).hexdigest()
                                                                for q in asked)
    answers = {q["question"]: q["answer"] for q in verdict(tmp_path, "oracle-ada")}
    assert [answers[q.id] for q in unit.questions if q.kind == kind_of(5)] == [""]  # not asked: no answer recorded
    assert sum(1 for q in asked if answers[q.id] and "do not say" not in answers[q.id]) >= 3  # read from the turns


@pytest.mark.docker
def test_the_anthropic_answerer_sends_messages_requests_through_the_gateway(engine, images, memora_project, tmp_path,
                                                                            run_id, no_leftovers):
    """answerer-anthropic: the same questions as Messages requests (POST /v1/messages), each the translation of
    Memora's own request that the bundle holds, the usage read from the gateway's record."""
    from runner.agents.answerer import MessagesAnswerAgent
    from runner.units.personal import as_messages_request

    grid, path = spec(tmp_path, agents=["answerer-anthropic"])
    setup = MessagesAnswerAgent.prepare_grid(engine, grid, path, images, {}, log=lambda m: None)
    hosted = HostedSuite("memora", "memora")
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, {}, load_all_arms(REPO), protocol=PROTOCOL,
                       protocol_setup=PersonalSetup(None, hosted), root=memora_project,
                       agent_setups={"answerer-anthropic": setup})
    row = PROTOCOL.run_cell(ctx, CellSpec("test_baker", "oracle_memory", 0, "weekly", "answerer-anthropic", "om-a", 0), 1)
    assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
    result = json.loads(row.result)
    assert result["answer_prompt"]["api"] == "anthropic" and result["answer_prompt"]["asked"] == 2
    cell = tmp_path / "run" / "cells" / "om-a" / "answer"
    model = [e for e in map(json.loads, (cell / "gateway.jsonl").read_text().splitlines()) if e.get("kind") == "model"]
    assert [(e["path"], e["status"]) for e in model] == [("/v1/messages", 200)] * 2
    assert row.tokens_output == sum(e["usage"]["output_tokens"] for e in model) > 0
    unit = hosted.source().personal_unit(hosted.folder(memora_project), "test_baker", "weekly")
    records = {r.id: r for r in unit.records}
    released = {q["question"]: q["released"] for q in verdict(tmp_path, "om-a")}
    sent = [as_messages_request(ANSWER_PROMPT.request("scripted", q, [records[i] for i in released[q.id]]))
            for q in unit.questions]
    seen = [json.loads(line) for line in (cell / "model_requests.jsonl").read_text().splitlines()]
    assert sorted(e["messages_sha256"] for e in seen) == sorted(hashlib.sha256(json.dumps(
        {"system": b["system"], "messages": b["messages"]}, sort_keys=True).encode()).hexdigest() for b in sent)
    answers = {q["question"]: q["answer"] for q in verdict(tmp_path, "om-a")}
    assert "spelt" in answers["bake_kind_4"].lower()


def test_the_gate_refuses_an_answer_container_with_a_way_out_or_a_request_gone_missing():
    from runner.grading import gate

    allowed = {"agent", "requests", "MANIFEST.sha256"}
    own = gate.answer_isolation(["agent", "requests"], "memgrid-cell-1", allowed, (True, ["gateway", "model"]))
    assert own.passed and "internal; beside it: gateway, model" in own.detail
    for network in [(False, ["gateway", "model"]),  # a network with a way out
                    (True, ["gateway", "unknown"]),  # another container beside the answerer
                    (True, [])]:  # nothing to answer through
        assert not gate.answer_isolation(["agent"], "memgrid-cell-1", allowed, network).passed, network
    assert not gate.answer_isolation(["agent"], "bridge", allowed).passed  # a network, and no proof of what is on it
    answered = {"kind": "model", "status": 200}
    assert gate.model_reached_proof([], due=0).passed  # Memora asks no model when nothing was released
    assert not gate.model_reached_proof([answered], due=0).passed
    assert not gate.model_reached_proof([answered], due=2).passed  # a request the harness rendered never left
    assert gate.model_reached_proof([answered, answered], due=2).passed
    assert not gate.model_reached_proof([]).passed  # a CLI's session, no count due: no request is still a failure
    assert gate.tools_visible_proof([answered], []).passed
    assert not gate.tools_visible_proof([answered], ["Read"]).passed


PRICES = {"test-live": {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_creation": 2.0, "as_of": "2026-12-01",
                        "source": "test prices (a provider's published shape)"}}
KEY = "sk-test-answerer-" + "5e" * 12


@pytest.mark.docker
def test_a_live_shaped_model_is_sent_memoras_own_prompt_and_a_budget_stops_the_run(engine, images, memora_project,
                                                                                     tmp_path, run_id, no_leftovers,
                                                                                     monkeypatch):
    """A model server this test owns stands in for a live provider: the gateway puts the key on each request, the
    server records a digest of the messages it was shown, and each equals the digest of the messages Memora's
    generate_answer sends for that question and the records released to it. A budget below the run's first cell's
    cost stops the run after it, with the stop recorded; the key is in no file of the run."""
    import io
    import shutil
    import tarfile

    from conftest import files_holding, model_upstream
    from runner.exec.job import run_grid
    from runner.plan.spec import grid_from_dict

    for arm in ("bare", "oracle_memory"):
        shutil.copytree(REPO / "arms" / arm, memora_project / "arms" / arm)
    spec = {"name": "ma-live", "protocol": "personal", "suite": "memora", "tasks": ["test_baker", "test_pilot"],
            "arms": ["oracle_memory"], "agents": ["answerer"], "model": "test-live", "prices": PRICES, "seeds": 1,
            "conditions": ["weekly"]}
    with model_upstream(engine, images, run_id, {"mode": "answer", **ANSWER_PROMPT.reading()}) as (up, url):
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("MEMGRID_MODEL_UPSTREAM", url)
        outcome = run_grid(grid_from_dict({**spec, "budget_usd": 0.0001}, tmp_path / "grid.yaml"), tmp_path / "grid.yaml",
                           root=memora_project, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=1,
                           progress=False, log=lambda m: None)
        stream, _ = up.get_archive("/srv/record/requests.jsonl")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            seen = [json.loads(line) for line in tar.extractfile("requests.jsonl").read().splitlines()]
    run = tmp_path / "runs" / run_id
    lock = json.loads((run / "run.json").read_text())
    rows = [json.loads(line) for line in (run / "ledger.jsonl").read_text().splitlines()]
    # the first cell runs to learn the price; its cost passes the budget, so the second never starts
    assert len(lock["budget_stops"]) == 1 and lock["budget_stops"][0]["cells_left"] == 1, lock.get("budget_stops")
    (row,) = [r for r in rows if r["final"]]
    assert row["admitted"] and row["cost_usd"] > 0.0001 and outcome.unfinished == 1  # a resume with more runs it
    # what reached the provider is Memora's own request, question by question
    hosted = HostedSuite("memora", "memora")
    unit = hosted.source().personal_unit(hosted.folder(memora_project), row["task"], "weekly")
    records, asked = {r.id: r for r in unit.records}, {q.id: q for q in unit.questions}
    verdict = json.loads((run / "cells" / row["cell_id"] / "verdict.json").read_text())["questions"]
    expected = sorted(hashlib.sha256(json.dumps(ANSWER_PROMPT.request("test-live", asked[q["question"]], [
        records[i] for i in q["released"]])["messages"], sort_keys=True).encode()).hexdigest()
                      for q in verdict if q["released"])
    assert expected and sorted(e["messages_sha256"] for e in seen if e.get("step") == "answer") == expected
    assert {e["api_key"] for e in seen} == {"injected"}
    assert files_holding(run, KEY)[0] == []
