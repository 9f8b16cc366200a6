"""The extractive answerer (agent `extractive`, memgrid-reader --personal-extract): LLM-free, it answers a hosted
benchmark's questions, which name no attribute the reader could look for, with the user's own statements in the
records released to each; the reader is refused on such a suite by name instead of printing zeros."""

import importlib.machinery
import importlib.util

import pytest
import yaml

from runner.errors import SpecError
from runner.plan.spec import load_all_arms, load_grid
from runner.protocols.registry import PROTOCOLS

from conftest import REPO


@pytest.fixture(scope="module")
def reader():
    loader = importlib.machinery.SourceFileLoader("memgrid_reader", str(REPO / "images/sandbox/memgrid-reader"))
    spec = importlib.util.spec_from_loader("memgrid_reader", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)  # the script runs a session only under __main__
    return module


def record(rid: str, date: str, *turns: str) -> dict:
    """A record as an answer request carries it: its text, and its turns by role."""
    return {"id": rid, "date": date, "text": "\n".join(turns), "turns": [t.split(": ", 1) for t in turns]}


TODOS = [
    record("s1", "2025-06-01", "user: Hello there!", "assistant: Hi! How can I help?",
           "user: Please add buy groceries to my todo list.", "assistant: Added buy groceries."),
    record("s2", "2025-06-02", "user: I finished buying groceries, so remove it from my todo list.",
           "assistant: Removed."),
    record("s3", "2025-06-03", "user: What should I cook tonight?", "assistant: Pasta.",
           "user: I also need to optimize some database queries at work."),
    record("s4", "2025-06-04", "user: Put schedule car maintenance on my todo list too.",
           "assistant: Done, it is on your todo list."),
]


def test_it_answers_with_the_users_statements_sharing_the_questions_words_newest_first(reader):
    answer = reader.extract_answer("What tasks remain on my todo list this week?", TODOS)
    sentences = answer.split(". ")
    # both statements naming the todo list, the later first; then a first-person statement sharing no word with it
    assert sentences[0] == "Put schedule car maintenance on my todo list too"
    assert sentences[1] == "Please add buy groceries to my todo list"
    assert "I also need to optimize some database queries at work." in answer
    # never the assistant's words, a question the user asked, or the sentence ending a task
    assert "Added" not in answer and "cook tonight" not in answer and "finished" not in answer


def test_it_keeps_at_most_its_sentence_budget_and_says_so_when_nothing_was_released(reader):
    many = [record(f"s{i}", f"2025-06-{i + 1:02d}", f"user: My todo list item {i} is here.") for i in range(20)]
    answer = reader.extract_answer("What is on my todo list?", many)
    assert answer.count("My todo list item") == reader.EXTRACT_SENTENCES
    assert "item 19 " in answer and "item 0 " not in answer  # the later records among equals
    assert reader.extract_answer("What is on my todo list?", []) == "I don't know."


def test_the_blind_spot_a_statement_later_withdrawn_in_other_words_is_still_said(reader):
    """Documented, not hidden: the sentence that ends a fact is left out, the earlier one stating it is not."""
    answer = reader.extract_answer("What tasks remain on my todo list?", TODOS[:2])
    assert "buy groceries" in answer


def test_it_answers_from_every_speaker_the_request_names_as_a_person_asked_about(reader):
    """LoCoMo's two speakers are both persons its questions ask about: the request names both roles (Memora's names
    only the user), and their turns are read as written, a speaker's name leading each."""
    chat = [{"id": "c-D1-1", "date": "2024-03-03", "text": "", "turns": [["user", 'Ada said, "I adopted a cat."']]},
            {"id": "c-D1-2", "date": "2024-03-03", "text": "",
             "turns": [["assistant", 'Brook said, "I started pottery classes on Tuesday."']]}]
    assert "pottery classes" in reader.extract_answer("When did Brook start pottery classes?", chat,
                                                      ["user", "assistant"])
    assert "pottery" not in reader.extract_answer("When did Brook start pottery classes?", chat, ["user"])


def hosted_grid(tmp_path, agents):
    spec = {"name": "memora", "protocol": "personal", "suite": "memora", "tasks": "all", "arms": ["bare"],
            "agents": agents, "seeds": 1, "conditions": ["weekly"]}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec))
    return load_grid(path), path


def test_the_reader_is_refused_on_a_hosted_suite_by_name_and_the_extractive_answerer_is_not(memora_project, tmp_path):
    spec, path = hosted_grid(tmp_path, ["reader"])
    with pytest.raises(SpecError, match="names 'reader', which answers only memgrid's generated persons") as refused:
        PROTOCOLS["personal"].check(spec, path, load_all_arms(REPO), {})
    assert refused.value.field == "agents" and "use extractive" in str(refused.value) and "\n" not in str(refused.value)
    PROTOCOLS["personal"].check(hosted_grid(tmp_path, ["extractive"])[0], path, load_all_arms(REPO), {})


def test_the_extractive_answerer_plays_the_personal_protocol_alone(tmp_path):
    from runner.agents.reference import ExtractiveAgent

    spec, path = hosted_grid(tmp_path, ["extractive"])
    with pytest.raises(SpecError, match="names 'extractive', which plays only the personal protocol, not coding"):
        PROTOCOLS["coding"].check(spec, path, {}, {"extractive": ExtractiveAgent})
