"""arm.yaml mcp.search.query_chars: a product that reads at most N characters of a query is sent the prompt's
first N, cut at a word boundary, by every agent (the reader, the scripted model) and protocol alike.

mempalace searches with a query verbatim only up to 200 characters and of a longer one keeps its last line,
where every task prompt says the same thing about running the tests: given whole prompts it scored 0/12 in the
coding protocol. The Docker check runs one reader coding cell over a mempalace store in which a session about
running the tests would win that tail.
"""

import importlib.machinery
import importlib.util
import json
import shutil

import pytest

from conftest import REPO
from runner.agents.script import build_script, keywords, search_queries
from runner.arms.ingest import ingest
from runner.corpus.build import load_settings, plant_documents, write_condition
from runner.env.images import ensure_arm_image
from runner.errors import SpecError
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_all_tasks, load_arm
from runner.protocols.two_session import cases as casegen
from runner.protocols.two_session.protocol import model_script

PROMPT = "Fix the parser so that it accepts trailing commas.\n\nTests live under `tests/`; run them and keep them passing."


def load_reader():
    loader = importlib.machinery.SourceFileLoader("memgrid_reader", str(REPO / "images/sandbox/memgrid-reader"))
    reader = importlib.util.module_from_spec(importlib.util.spec_from_loader("memgrid_reader", loader))
    loader.exec_module(reader)
    return reader


def test_the_prompt_is_cut_to_its_first_n_characters_at_a_word_boundary():
    call = {"query": "prompt", "query_chars": 30}
    assert search_queries(PROMPT, call) == ["Fix the parser so that it"]  # "accepts" would end past 30
    assert search_queries(PROMPT, {**call, "query_chars": 29}) == ["Fix the parser so that it"]
    assert search_queries(PROMPT, {**call, "query_chars": 34}) == ["Fix the parser so that it accepts"]  # ends on a word
    assert search_queries("x" * 50, call) == ["x" * 30]  # no boundary to cut at: the first N as they are
    assert search_queries(PROMPT, {**call, "query_chars": len(PROMPT)}) == [PROMPT]


def test_without_query_chars_the_prompt_goes_whole_and_keywords_mode_is_unaffected():
    assert search_queries(PROMPT, {"query": "prompt"}) == [PROMPT]
    assert search_queries(PROMPT, {"query": "prompt", "query_chars": None}) == [PROMPT]
    assert search_queries(PROMPT, {"query": "keywords", "query_chars": 10}) == keywords(PROMPT)
    assert search_queries(PROMPT, {"query": "keywords"}) == keywords(PROMPT)


def test_the_reader_builds_the_same_queries_as_the_runner():
    """The reader cannot import the runner: its copy of search_queries must agree on every arm and task prompt."""
    reader = load_reader()
    arms, tasks = load_all_arms(REPO), load_all_tasks(REPO)
    calls = [a.mcp.search.as_config() for a in arms.values() if a.mcp is not None]
    calls += [{"query": "prompt", "query_chars": n} for n in (1, 7, 30, 200)]
    texts = [t.prompt for t in tasks.values()] + [PROMPT, "x" * 300, "  leading  and   trailing  "]
    for call in calls:
        for text in texts:
            assert reader.search_queries(text, call) == search_queries(text, call), (call, text[:40])


def test_the_scripted_model_sends_mempalace_the_prompts_first_200_characters():
    arms, tasks = load_all_arms(REPO), load_all_tasks(REPO)
    assert arms["mempalace"].mcp.search.query_chars == 200
    for task in tasks.values():
        queries = build_script(task, arms["mempalace"], None, "present", 0)["search"]["queries"]
        assert len(queries) == 1 and len(queries[0]) <= 200 and task.prompt.startswith(queries[0]), task.id
    # an arm without query_chars is handed what it was before: the whole prompt, and no new config field
    task = tasks["mask_secrets"]
    assert build_script(task, arms["recall"], None, "present", 0)["search"]["queries"] == [task.prompt]
    assert "query_chars" not in arms["recall"].mcp.search.as_config()
    # two-session's step 2 searches by the key, under 200 characters: sent whole
    case = casegen.generate_cases(1)[0]
    assert model_script(case, arms["mempalace"], "step2")["search"]["queries"] == [casegen.key(case)]


@pytest.mark.parametrize("value, problem", [
    ("'200'", "'200' is not of type 'integer'"),
    ("-5", "-5 is less than the minimum of 1"),
    ("0", "0 is less than the minimum of 1"),
    ("true", "True is not of type 'integer'"),
])
def test_a_query_chars_that_is_not_a_positive_integer_is_one_line(tmp_path, value, problem):
    arm = tmp_path / "mempalace"
    shutil.copytree(REPO / "arms" / "mempalace", arm, ignore=shutil.ignore_patterns("pydeps", "assets"))
    text = (arm / "arm.yaml").read_text()
    assert "    query_chars: 200\n" in text
    (arm / "arm.yaml").write_text(text.replace("    query_chars: 200\n", f"    query_chars: {value}\n"))
    with pytest.raises(SpecError) as e:
        load_arm(arm)
    message = str(e.value)
    assert "\n" not in message
    assert f"mcp.search.query_chars: {problem} — fix: give the most characters of a query the product reads" in message


# ---- Docker: one reader coding cell over a mempalace store ---------------------------------------------------

TASK = "retry_backoff"
# What the prompt's last line ("Tests live under `tests/`; run them with `python3 -m pytest -q` and keep them
# passing.") finds first: given the whole prompt, mempalace searches with that line and ranks this session first.
HAY = [
    ("hay-tests", "How do I run the tests here?",
     "Tests live under tests/; run them with python3 -m pytest -q and keep them passing before you push."),
    ("hay-docs", "The docs build fails on a fresh clone.", "Pin sphinx below the next major version."),
    ("hay-orders", "The orders migration locks the table.", "Add the column nullable and backfill it in batches."),
]


def write_small_corpus(folder, task):
    """The task's own present-condition plant (as the corpus builder dates it) among HAY, in the corpus format."""
    hay = []
    for n, (name, ask, answer) in enumerate(HAY):
        events = [{"role": "user", "content": ask}, {"role": "assistant", "content": answer}]
        hay.append((name, "".join(json.dumps({"session": name, "ts": f"2024-03-0{n + 1}T10:0{j}:00Z", **e}, sort_keys=True)
                                  + "\n" for j, e in enumerate(events))))
    plants, meta = plant_documents(load_settings(REPO), task, "present", 0)
    write_condition(folder, hay, plants, meta)
    return [p[0] for p in plants]


def test_a_mempalace_reader_coding_cell_finds_the_planted_fact(engine, images, tmp_path, run_id, no_leftovers):
    from runner.protocols.coding import CodingProtocol

    tasks, arms = load_all_tasks(REPO), load_all_arms(REPO)
    task, arm = tasks[TASK], arms["mempalace"]
    planted = write_small_corpus(tmp_path / "corpus", task)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, tasks, arms, protocol=CodingProtocol())
    ctx.run_dir.mkdir(parents=True)
    ctx.images_by_arm["mempalace"] = ensure_arm_image(engine, arm.root, images.sandbox, log=lambda m: None)
    ctx.stores[("mempalace", "present", 0)] = ingest(engine, ctx.images_by_arm["mempalace"].tag, arm, tmp_path / "corpus",
                                                     "present", 0, run_id=run_id)
    row = CodingProtocol().run_cell(ctx, CellSpec(TASK, "mempalace", 0, "present", "reader", "reader-mempalace", 0), 1)
    events = [json.loads(l) for l in (ctx.run_dir / "cells" / row.cell_id / "transcript.jsonl").read_text().splitlines()]
    search = next(e for e in events if e["type"] == "search")
    pick = next(e for e in events if e["type"] == "pick")
    assert row.admitted and row.checker_passed, row
    assert search["ranked"][0] in {f"{p}.md" for p in planted}, search  # the plant first, the tests session not
    assert pick["option"] == "informed" and pick["rank"] == 1, pick
