"""LoCoMo's judges in the open (issue 69, step 4): with `judges: mem0` a LoCoMo cell's answers are labelled by the
vendors' J prompt as Mem0 published it and, beside it, by a strict prompt, each asked of the panel's model through
the OpenAI-compatible endpoint (here a local stub server shaped as a live one); each label is one of the
benchmark's own scores, the cell records each prompt's sha256, the judge model and the answer model, and the report
prints the same answers under both prompts."""

import json
import re

import pytest
import yaml

from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_grid
from runner.protocols.personal import openai_judges
from runner.protocols.personal.protocol import PersonalSetup, Released
from runner.protocols.registry import PROTOCOLS
from runner.sources.locomo import MEM0_JUDGE, STRICT_JUDGE
from runner.sources.registry import HostedSuite
from runner.units.personal import read_label

from conftest import REPO
from test_openai_judges import KEY, reply, stub  # noqa: F401 (stub: the local server fixture)

PROTOCOL = PROTOCOLS["personal"]
# test-ada's answers: right on the cat's name (q1), a single city of two (q2), nothing said on the last (q6, cat 5)
ANSWERS = {"test-ada-q0001": "Her cat is called Pixel.", "test-ada-q0002": "Bergen", "test-ada-q0006": "Grey."}


def lenient_or_strict(body: dict):
    """A judge model that passes an answer sharing a word with the gold under the generous prompt, and under the
    strict one only an answer holding the whole gold."""
    strict = body["messages"][0]["role"] == "system"
    user = body["messages"][-1]["content"]
    gold = re.findall(r"Gold answer: (.*)\n", user)[-1].lower()  # Mem0's prompt shows an example first
    answer = re.findall(r"Generated answer: (.*)\n", user)[-1].lower()
    right = gold in answer if strict else bool(set(re.findall(r"\w+", gold)) & set(re.findall(r"\w+", answer)))
    return reply(json.dumps({"reasoning": "stub", "label": "CORRECT" if right else "WRONG"}))


def judged_cell(locomo_project, tmp_path, monkeypatch, server):
    monkeypatch.setenv(openai_judges.KEY_ENV, KEY)
    monkeypatch.setenv(openai_judges.BASE_URL_ENV, server.url)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({"name": "locomo", "protocol": "personal", "suite": "locomo", "tasks": "all",
                                    "arms": ["bare"], "agents": ["extractive"], "seeds": 1,
                                    "conditions": ["published"], "judges": "mem0"}))
    setup = PersonalSetup(PROTOCOL.panel(None, load_grid(path), path, None), HostedSuite("locomo", "locomo"))
    ctx = TrialContext(None, "run-j", tmp_path / "runs" / "run-j", None, {}, load_all_arms(REPO), protocol=PROTOCOL,
                       protocol_setup=setup, root=locomo_project)
    cell = CellSpec("test-ada", "bare", 0, "published", "extractive", "bare-test-ada", 0)
    unit = PROTOCOL.unit(ctx, cell)
    cell_dir = ctx.run_dir / "cells" / cell.cell_id
    cell_dir.mkdir(parents=True)
    answers = {q.id: ANSWERS.get(q.id, "I don't know.") for q in unit.questions}
    result = PROTOCOL.judge(ctx, cell, 1, unit, answers, {q.id: Released((), {}) for q in unit.questions}, cell_dir)
    return setup, result, cell_dir


def test_each_question_is_asked_both_published_prompts_of_the_panels_model(locomo_project, stub, tmp_path,
                                                                           monkeypatch):
    server = stub({"gpt-4o-mini": lenient_or_strict})
    setup, result, cell_dir = judged_cell(locomo_project, tmp_path, monkeypatch, server)
    # five questions of categories 1-4, each under both prompts; the category-5 one is not asked, as the vendors' J
    assert len(server.requests) == 10 and {r["body"]["model"] for r in server.requests} == {"gpt-4o-mini"}
    mem0 = [r["body"] for r in server.requests if r["body"]["messages"][0]["role"] == "user"]
    strict = [r["body"] for r in server.requests if r["body"]["messages"][0]["role"] == "system"]
    assert len(mem0) == len(strict) == 5
    assert all(b["response_format"] == {"type": "json_object"} and b["temperature"] == 0 for b in mem0)
    assert all("response_format" not in b and b["temperature"] == 0 for b in strict)
    assert mem0[0]["messages"] == MEM0_JUDGE.messages("What is the name of Ada's cat?", "Pixel",
                                                      "Her cat is called Pixel.")
    assert "be generous with your grading" in mem0[0]["messages"][0]["content"]
    assert strict[0]["messages"][0]["content"].startswith("You are a STRICT, literal judge")
    assert all(r["auth"] == f"Bearer {KEY}" for r in server.requests)
    by_id = {q["id"]: q for q in result["questions"]}
    assert by_id["test-ada-q0001"]["own_judged"] == {"mem0": 1.0, "strict": 1.0}
    assert by_id["test-ada-q0002"]["own_judged"] == {"mem0": 1.0, "strict": 0.0}
    assert "own_judged" not in by_id["test-ada-q0006"]
    # recorded with every cell: each prompt's sha256, the judge model, the answer model; the criteria stay with the
    # deterministic panel
    assert result["answer_judges"] == {
        "mem0:gpt-4o-mini": {"prompt": "mem0", "prompt_sha256": MEM0_JUDGE.sha256, "model": "gpt-4o-mini"},
        "strict:gpt-4o-mini": {"prompt": "strict", "prompt_sha256": STRICT_JUDGE.sha256, "model": "gpt-4o-mini"}}
    assert result["answer_model"] == "extractive" and result["panel"] == "deterministic"
    verdict = json.loads((cell_dir / "verdict.json").read_text())
    assert [v["mentions"] for v in verdict["questions"][1]["answer_judgements"]] == [True, False]
    lock = PROTOCOL.lock_entries(setup)["judges"]
    assert lock["answer_prompts"]["mem0"]["user"] == MEM0_JUDGE.user
    assert "mem0ai/mem0 evaluation/metrics/llm_judge.py" in lock["answer_prompts"]["mem0"]["source"]
    kept = "".join(p.read_text() for p in tmp_path.joinpath("runs").rglob("*") if p.is_file()) + json.dumps(lock)
    assert KEY not in kept
    # the report: the same answers under both prompts
    summary = PROTOCOL.summary([{"agent": "extractive", "arm": "bare", "condition": "published", "task": "test-ada",
                                 "admitted": True, "result": json.dumps(result)}])
    title, columns, lines, _ = next(t for t in PROTOCOL.extra_tables(summary) if t[0].startswith("judge sensitivity"))
    assert [line[3:6] for line in lines] == [["mem0", "5", "0.40"], ["strict", "5", "0.20"]]
    assert lines[0][-1] == "0.80"  # the prompts agree on four of the five
    own = next(t for t in PROTOCOL.extra_tables(summary) if t[0].startswith("the benchmark's own scores"))
    assert {line[3] for line in own[2]} >= {"f1", "J (mem0)", "J (strict)"}
    # the vendors' published J beside this run's, each with its source and why they are not alike
    _, columns, lines, note = next(t for t in PROTOCOL.extra_tables(summary) if t[0].startswith("published figures"))
    assert columns == ["system", "J (mem0) 1-4 %", "source"]
    assert ["Mem0", "66.88", "Mem0 paper, arXiv 2504.19413, Table 1"] in lines
    assert lines[-1] == ["bare", "40.00", "memgrid, this run (extractive, published)"]
    assert note.startswith("Not directly comparable")


def test_a_reply_that_is_not_the_label_json_is_invalid_and_counted_never_a_label(locomo_project, stub, tmp_path,
                                                                                monkeypatch):
    server = stub({"gpt-4o-mini": lambda body: reply("CORRECT, clearly.")})
    _, result, _ = judged_cell(locomo_project, tmp_path, monkeypatch, server)
    first = result["questions"][0]
    assert "own_judged" not in first and first["answer_judge_invalid"] == 2
    assert read_label('```json\n{"label": "WRONG"}\n```')[0] is False
    assert read_label('{"label": "maybe"}')[0] is None


def test_the_prompts_are_the_published_ones():
    """Copied word for word (Mem0's at aae5989, checked against its file outside the repository; the strict prompt
    from the paper's kit at 744ef31): an edit changes the recorded sha256 and fails here."""
    assert MEM0_JUDGE.sha256 == "d94518647345318d8145bf00a66a923ff477cc07194629ae3d2a018ea3df94ad"
    assert STRICT_JUDGE.sha256 == "de24cac1f6e1ed34489809b5bd8b955d71e8e0a08caad9c94f522154da2b2c93"
    assert (MEM0_JUDGE.model, MEM0_JUDGE.json_reply, MEM0_JUDGE.system) == ("gpt-4o-mini", True, None)
    assert openai_judges.PRESETS["mem0"] == ("gpt-4o-mini",)


@pytest.mark.parametrize("edit", ["real question", "generous"])
def test_a_prompt_edited_is_not_the_published_one(edit):
    from dataclasses import replace

    assert replace(MEM0_JUDGE, user=MEM0_JUDGE.user.replace(edit, edit.upper())).sha256 != MEM0_JUDGE.sha256


def test_no_published_figures_are_set_beside_a_run_without_the_score():
    """A LoCoMo run judged by no model has no J: its published figures are not printed beside nothing."""
    from runner.protocols.personal.analysis import published_own_table

    question = {"id": "q", "kind": "4 single-hop", "np": 1, "nf": 0, "cp": 0, "cf": 0, "fama": 0.0, "mpa": 0.0,
                "faa": 1.0, "lam": 0.0, "released": 0, "violations": 0, "evidence_released": 0, "evidence": 1,
                "own": {"f1": 0.5}}
    summary = PROTOCOL.summary([{"agent": "extractive", "arm": "bare", "condition": "published", "task": "conv-1",
                                 "admitted": True, "result": json.dumps({"questions": [question], "format": "locomo",
                                                                         "suite": "locomo"})}])
    assert published_own_table(summary)[1] == []
