"""A model answers in the personal protocol (issue 75, step 1): the `answerer` agent asks a model each question over
the records the search released, with the hosted benchmark's own answer prompt (Memora's agent track, byte for byte)
through the cell's model gateway; offline, the scripted model answers from the memories the prompt lists."""

import json

import pytest
import yaml

from runner.agents.answerer import ModelAnswerAgent
from runner.errors import SpecError
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_grid
from runner.protocols.personal.protocol import DEFAULT_ANSWER_PROMPT, PersonalSetup
from runner.protocols.registry import PROTOCOLS
from runner.sources.memora import ANSWER_PROMPT
from runner.sources.registry import HostedSuite

from conftest import REPO

PROTOCOL = PROTOCOLS["personal"]


def test_memoras_answer_request_is_the_one_its_generate_answer_sends():
    """Written out from evals/agent_eval/memory_to_answer.py (generate_answer): the f-string's system prompt with the
    8 spaces of its blank line, each memory numbered with its relevance (0.00: memgrid's records carry no score), the
    model's sampling as Memora sets it."""
    body = ANSWER_PROMPT.request("gpt-x", "Where do I live?", ["user: I moved to {Lyon}.\nassistant: Nice!", "b"])
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
    assert ANSWER_PROMPT.request("gpt-x", "Where?", []) is None
    assert DEFAULT_ANSWER_PROMPT.request("m", "Where?", [])["messages"][1]["content"].startswith("Question: Where?")
    # the prompt's identity is its text and settings, not the model asked
    assert ANSWER_PROMPT.sha256 != DEFAULT_ANSWER_PROMPT.sha256
    import re
    assert re.findall(ANSWER_PROMPT.item_pattern(), body["messages"][1]["content"], re.M) == ["1. ", "2. "]


def spec(tmp_path, **fields):
    data = {"name": "ma", "protocol": "personal", "suite": "memora", "tasks": "all", "arms": ["bare"],
            "agents": ["answerer"], "model": "scripted", "seeds": 1, "conditions": ["weekly"], **fields}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}))
    return load_grid(path), path


def test_a_model_answerer_is_refused_where_its_prompt_would_not_be_the_benchmarks(memora_project, tmp_path):
    arms = load_all_arms(REPO)
    grid, path = spec(tmp_path, arms=["bare", "oracle_memory"])
    PROTOCOL.check(grid, path, arms, {"answerer": ModelAnswerAgent})  # memory arms: Memora's agent-track prompt
    grid, path = spec(tmp_path, arms=["bare", "full_context"])
    with pytest.raises(SpecError, match=r"arms: names 'full_context', which hands the answerer every record, but memora's "
                                        r"answer prompt is for memories a search returned .* fix: drop full_context"):
        PROTOCOL.check(grid, path, arms, {"answerer": ModelAnswerAgent})
    grid, path = spec(tmp_path, model=None)
    with pytest.raises(SpecError, match=r"model: is missing: the answerer agent needs a model"):
        ModelAnswerAgent.prepare_grid(None, grid, path, None, {})


def test_a_model_answerer_is_refused_on_a_benchmark_whose_answer_prompt_memgrid_does_not_host(locomo_project, tmp_path):
    grid, path = spec(tmp_path, suite="locomo", conditions=["published"])
    with pytest.raises(SpecError, match=r"agents: names 'answerer', a model answerer, but memgrid hosts no answer prompt "
                                        r"of suite 'locomo''s benchmark \(locomo\)"):
        PROTOCOL.check(grid, path, load_all_arms(REPO), {"answerer": ModelAnswerAgent})


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
    for arm in ("bare", "oracle_memory"):
        row = PROTOCOL.run_cell(ctx, CellSpec("test_baker", arm, 0, "weekly", "answerer", f"{arm}-baker", 0), 1)
        assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
        results[arm], rows[arm] = json.loads(row.result), row
    for arm, result in results.items():  # each cell records the prompt it was asked with: Memora's own
        assert {k: result["answer_prompt"][k] for k in ("name", "sha256", "model", "settings")} == {
            "name": "memora-agent-track", "sha256": ANSWER_PROMPT.sha256, "model": "scripted",
            "settings": {"max_tokens": 500, "temperature": 0.7}}
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
    import hashlib
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
    with model_upstream(engine, images, run_id, {"mode": "answer", "item": ANSWER_PROMPT.item_pattern()}) as (up, url):
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
    texts = {r.id: r.text for r in unit.records}
    verdict = json.loads((run / "cells" / row["cell_id"] / "verdict.json").read_text())["questions"]
    expected = sorted(hashlib.sha256(json.dumps(ANSWER_PROMPT.request("test-live", q["text"], [texts[i] for i in
                                                                                              q["released"]])["messages"],
                                                sort_keys=True).encode()).hexdigest() for q in verdict if q["released"])
    assert expected and sorted(e["messages_sha256"] for e in seen if e.get("step") == "answer") == expected
    assert {e["api_key"] for e in seen} == {"injected"}
    assert files_holding(run, KEY)[0] == []
