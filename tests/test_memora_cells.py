"""Memora as published in the personal protocol (issue 53, step 1): a grid naming a suite that `memgrid task import
--format memora` wrote runs its personas in the periods it hosts, each cell over the persona's sessions as imported,
judged on Memora's yes/no sub-questions by model judges asked each as it is, or by the deterministic judges on the value
each names.
The suite is tests/data/memora/ (our own fixture in Memora's layout), imported into a project copy."""

import json
import shutil

import pytest
import yaml

from runner.agents.command import CommandSpec
from runner.errors import SpecError
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_grid
from runner.protocols.personal.protocol import PanelSetup, PersonalSetup
from runner.protocols.registry import PROTOCOLS
from runner.sources.memora import import_memora
from runner.sources.registry import HostedSuite

from conftest import REPO
from test_memora_export import aggregated

PROTOCOL = PROTOCOLS["personal"]
FIXTURE = REPO / "tests" / "data" / "memora"

# An answerer that repeats every record released to it: what it can say is exactly what the search released.
ECHO = r'''
import json, os
for name in sorted(os.listdir("/sandbox/requests")):
    with open(os.path.join("/sandbox/requests", name)) as f:
        request = json.load(f)
    print(json.dumps({"question": request["question"], "answer": " ".join(r["text"] for r in request["records"])}))
'''


def grid(tmp_path, **fields):
    spec = {"name": "memora", "protocol": "personal", "suite": "memora", "tasks": "all", "arms": ["bare"],
            "agents": ["extractive"], "seeds": 1, "conditions": ["weekly", "monthly"], "judges": ["scripted"], **fields}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in spec.items() if v is not None}))
    return load_grid(path), path


def test_a_memora_grid_runs_its_personas_in_the_periods_the_suite_hosts(memora_project, tmp_path):
    # now not hosted, and not as imported
    shutil.rmtree(memora_project / "tasks" / "memora" / "source" / "monthly" / "test_pilot")
    spec, path = grid(tmp_path)
    with pytest.raises(SpecError, match="monthly/test_pilot/.*is missing"):
        PROTOCOL.units(spec, {}, path)
    shutil.rmtree(memora_project / "tasks" / "memora")
    import_memora(FIXTURE / "data", memora_project, "memora", personas=("test_baker",), log=lambda m: None)
    import_memora(FIXTURE / "data", memora_project, "pilots", personas=("test_pilot",), periods=("weekly",),
                  log=lambda m: None)
    spec, path = grid(tmp_path, suite="pilots")
    units = PROTOCOL.units(spec, {}, path)
    assert list(units) == ["test_pilot"] and PROTOCOL.pairs(spec, list(units), {}) == [("test_pilot", "weekly")]
    spec, path = grid(tmp_path, tasks=["test_baker"])
    assert PROTOCOL.pairs(spec, PROTOCOL.unit_ids(spec, {}, path), {}) == [("test_baker", "weekly"),
                                                                           ("test_baker", "monthly")]
    spec, path = grid(tmp_path, tasks=["test_chef"])
    with pytest.raises(SpecError, match="names 'test_chef', which is not a persona of suite 'memora'"):
        PROTOCOL.unit_ids(spec, {}, path)


def test_a_suite_is_reached_only_by_the_protocol_its_format_hosts(memora_project, tmp_path):
    """The registry's one check for every protocol (issue 68): a planted or two-session grid naming Memora's suite
    is refused in one line naming the formats that protocol hosts; the personal protocol takes it."""
    for protocol, formats, condition in (("planted", "--format smriti", "on"),
                                         ("two-session", "--format traptask", "published")):
        spec, path = grid(tmp_path, protocol=protocol, judges=None, conditions=[condition])
        with pytest.raises(SpecError, match=f"names 'memora', a suite of the personal protocol, not {protocol}") as e:
            PROTOCOLS[protocol].hosted(spec, path)
        assert e.value.field == "suite" and formats in str(e.value) and "\n" not in str(e.value)
    assert PROTOCOL.hosted(*grid(tmp_path)) == HostedSuite("memora", "memora")


def test_a_memora_grid_with_cases_is_refused_in_one_line(memora_project, tmp_path):
    spec, path = grid(tmp_path, cases=3)
    with pytest.raises(SpecError, match="suite 'memora' brings its own persons") as refused:
        PROTOCOL.check(spec, path, load_all_arms(REPO), {})
    assert refused.value.field == "cases" and "\n" not in str(refused.value)
    PROTOCOL.check(grid(tmp_path, judges=None)[0], path, load_all_arms(REPO), {})  # the deterministic panel judges


def test_a_hosted_persons_digest_changes_with_what_the_format_read_and_its_reader_version(memora_project,
                                                                                          monkeypatch):
    """The same files read otherwise by runner/sources/memora.py (e.g. citing other sessions as a question's evidence),
    or under another reader_version, are another unit: a reproduction across that change is drift, not the same
    persons. The module's bytes are not in it (tests/test_source_identity.py pins the reading instead)."""
    from dataclasses import replace

    from runner.protocols.personal import protocol
    from runner.sources import memora

    hosted = HostedSuite("memora", "memora")
    before = protocol.hosted_digest(hosted, "test_baker", "weekly")
    assert protocol.hosted_digest(hosted, "test_baker", "weekly") == before
    monkeypatch.setattr(memora.MemoraFormat, "reader_version", 2)
    assert protocol.hosted_digest(hosted, "test_baker", "weekly") != before
    monkeypatch.setattr(memora.MemoraFormat, "reader_version", 1)
    unit = memora.hosted_unit(hosted.folder(None), "test_baker", "weekly")
    other = replace(unit.questions[0], evidence=unit.questions[0].evidence[:-1])
    monkeypatch.setattr(memora, "hosted_unit", lambda *a: replace(unit, questions=[other, *unit.questions[1:]]))
    assert protocol.hosted_digest(hosted, "test_baker", "weekly") != before


def test_a_record_past_the_cutoff_is_a_searchs_violation_and_not_a_listings(memora_project):
    from runner.protocols.personal.protocol import released
    from runner.sources.memora import hosted_unit

    unit = hosted_unit(memora_project / "tasks" / "memora", "test_baker", "weekly")
    question = next(q for q in unit.questions if q.id == "bake_load_2")  # asked on the 2nd of four days
    every = [r.id for r in unit.records]
    searched, listed = released(unit, question, every), released(unit, question, every, listed=True)
    assert searched.kept == listed.kept == tuple(every[:2])
    assert searched.dropped == listed.dropped == {"past_cutoff": tuple(every[2:])}
    assert (searched.violations, listed.violations) == (every[2:], [])
    assert released(unit, question, ["someone-else-0001"], listed=True).violations == ["someone-else-0001"]


def test_a_generated_personal_grid_still_needs_its_cases(tmp_path):
    spec, path = grid(tmp_path, suite=None, cases=None, judges=None)
    with pytest.raises(SpecError, match="cases: is missing"):
        PROTOCOL.unit_ids(spec, {}, path)


@pytest.mark.docker
def test_a_memora_cell_is_searched_answered_and_judged_on_its_sub_questions(engine, images, memora_project, tmp_path,
                                                                             run_id, no_leftovers):
    from runner.env.images import ensure_derived

    echo = tmp_path / "echo.py"
    echo.write_text(ECHO)
    panel = PanelSetup(("scripted",) * 3, ensure_derived(engine, "model", images.base, lambda m: None), images.base.tag)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, {}, load_all_arms(REPO), protocol=PROTOCOL,
                       protocol_setup=PersonalSetup(panel, HostedSuite("memora", "memora")), root=memora_project,
                       command_agents={"echo": CommandSpec("echo", ("python3", "-I", "echo.py"), (echo,))})
    results = {}
    for arm in ("bare", "full_context", "oracle_memory"):
        row = PROTOCOL.run_cell(ctx, CellSpec("test_baker", arm, 0, "weekly", "echo", f"{arm}-test_baker", 0), 1)
        assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
        result = json.loads(row.result)
        assert result["suite"] == "memora" and result["panel"] == "model"
        results[arm] = {q["id"]: q for q in result["questions"]}
    # bare releases nothing: no sub-question is answered yes, so presence fails and forgetting holds
    assert {q: (r["cp"], r["cf"], r["fama"]) for q, r in results["bare"].items()} == {
        "bake_kind_4": (0, 1, 0.0), "bake_load_2": (0, 0, 0.0)}
    full = results["full_context"]
    # the full context is every session up to each question's own cutoff: two for a question dated on the 4th
    assert (full["bake_kind_4"]["released"], full["bake_load_2"]["released"]) == (4, 2)
    # the two sessions past the 2nd are the question's cutoff at work on a listing of every record: no violation, no
    # flag against full_context (a search's choice past the cutoff would be one)
    assert (full["bake_load_2"]["dropped"], full["bake_load_2"]["violations"]) == ({"past_cutoff": 2}, 0)
    assert (full["bake_load_2"]["cp"], full["bake_load_2"]["fama"]) == (1, 1.0)  # "forty" was said in session 1
    assert full["bake_kind_4"]["cp"] == 1 and full["bake_kind_4"]["evidence_released"] == 1
    # the session stating what no longer holds (rye, session 1) was returned too: the answer must treat it as outdated
    assert (full["bake_kind_4"]["forgotten_released"], full["bake_kind_4"]["forgotten"]) == (1, 1)
    assert [(full[q]["panels_agree"], full[q]["panels_compared"]) for q in ("bake_kind_4", "bake_load_2")] == [(1, 2), (1, 1)]
    assert all(q["invalid_judgements"] == 0 for q in full.values())
    oracle = results["oracle_memory"]  # the sessions the questions' memory_evidence cites, up to each cutoff
    assert {q: (r["released"], r["evidence_released"], r["fama"], r["forgotten_released"])
            for q, r in oracle.items()} == {
        "bake_kind_4": (2, 1, 1.0, 1), "bake_load_2": (1, 1, 1.0, 0)}
    verdict = json.loads((tmp_path / "run" / "cells" / "full_context-test_baker" / "verdict.json").read_text())
    asked = verdict["questions"][0]["criteria"][0]
    assert (asked["value"], asked["named"]) == ("Does the response mention spelt?", "spelt")
    assert [v["mentions"] for v in asked["deterministic"]] == [True, True, True]
    # The deterministic panel alone, on the value each sub-question names: "rye" is in the sessions that drop it
    # ("I stopped the rye loaves"), so its forgetting check fails (the judges' negation blind spot) where the
    # scripted model, asked the question, said no.
    ctx.protocol_setup = PersonalSetup(None, HostedSuite("memora", "memora"))
    row = PROTOCOL.run_cell(ctx, CellSpec("test_baker", "full_context", 0, "weekly", "echo", "det-test_baker", 0), 1)
    offline = {q["id"]: q for q in json.loads(row.result)["questions"]}
    assert json.loads(row.result)["panel"] == "deterministic"
    assert {q: (r["cp"], r["cf"], r["fama"]) for q, r in offline.items()} == {
        "bake_kind_4": (1, 0, 0.5), "bake_load_2": (1, 0, 1.0)}


@pytest.mark.docker
def test_a_memora_grid_on_the_command_line_prints_table_3_and_writes_its_page(engine, images, memora_project, tmp_path,
                                                                              run_id, no_leftovers):
    """`memgrid grid` on a hosted Memora suite, as a researcher runs it: its tables, and the protocol's HTML page
    written after the grid as after a coding one (a personal grid wrote none: only `memgrid report` did), and the run
    exported as Memora's own records."""
    import os
    import subprocess

    shutil.copytree(REPO / "arms" / "full_context", memora_project / "arms" / "full_context")
    (memora_project / "echo.py").write_text(ECHO)
    spec = {"name": "memora-cli", "protocol": "personal", "suite": "memora", "tasks": "all", "arms": ["full_context"],
            "agents": ["echo"], "seeds": 1, "conditions": ["weekly"], "judges": ["scripted"],
            "command_agents": {"echo": {"command": ["python3", "-I", "echo.py"], "files": ["echo.py"]}}}
    (memora_project / "grid.yaml").write_text(yaml.safe_dump(spec))
    done = subprocess.run([str(REPO / ".venv/bin/memgrid"), "grid", "--spec", "grid.yaml", "--runs-dir", "runs",
                           "--run-id", run_id, "--no-progress"], cwd=memora_project,
                          env={**os.environ, "MEMGRID_ROOT": str(memora_project)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "FAMA x 100 as Memora's Table 3" in done.stdout and "Same data and questions" in done.stdout
    assert "FLAG" not in done.stdout  # bake_load_2's cutoff dropped two listed sessions: not the arm's violation
    page = memora_project / "runs" / run_id / "report.html"
    assert f"report:     {page}" in done.stdout
    html = page.read_text()
    assert 'id="table3"' in html and "persons of suite memora" in html
    # the card's reward beside raw quality, the run whole and every sub-question decided by the scripted panel
    [row] = json.loads((memora_project / "runs" / run_id / "summary.json").read_text())
    b = 0.3712215103709065
    q = row["fama"]
    expected = 0.2 * q / b if q <= b else 0.2 + 0.8 * (q - b) / (1 - b)
    assert row["reward"]["quality"] == q and row["reward"]["invalid"] is None
    assert row["reward"]["reward"] == pytest.approx(expected) and row["reward"]["score"] == round(100 * expected, 1)
    assert "reward as the hosted benchmark's card defines it" in done.stdout and 'id="reward"' in html
    # Memora's own tools read the run (issue 54, step 3): its aggregator's Table 3 over the exported tree is memgrid's
    done = subprocess.run([str(REPO / ".venv/bin/memgrid"), "export", run_id, "--format", "memora", "--output", "out",
                           "--runs-dir", "runs"], cwd=memora_project, env={**os.environ, "MEMGRID_ROOT": str(memora_project)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "wrote 2 records" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads((memora_project / "runs" / run_id / "summary.json").read_text())
    ours = {("full_context", t.capitalize(), s["horizon"]): 100 * v for s in summary for t, v in s["table3"].items()
            if v is not None}
    assert aggregated(memora_project / "out") == pytest.approx(ours) and len(ours) == 2  # remembering, reasoning
    assert 0 < ours[("full_context", "Reasoning", "weekly")]  # the echo of every session says "forty" (bake_load_2)
    report = json.loads((memora_project / "out/weekly/test_baker/eval_results" / run_id /
                         "eval_report_full_context.json").read_text())
    questions = {q["question_id"]: q for q in report["detailed_results"]}
    assert sorted(questions) == ["bake_kind_4", "bake_load_2"]  # the fixture's own ids, and its sub-questions'
    assert [e["evaluation_question_id"] for e in questions["bake_kind_4"]["evaluation_questions"]] == [
        "bake_kind_4_eval_memory_presence_0", "bake_kind_4_eval_forgetting_0"]
    assert len(questions["bake_kind_4"]["memories"]) == questions["bake_kind_4"]["memories_retrieved"] == 4


@pytest.mark.docker
def test_the_extractive_answerer_answers_a_memora_persona_from_what_was_released(engine, images, memora_project,
                                                                                tmp_path, run_id, no_leftovers):
    """The LLM-free answerer a hosted suite can name (the reader answers none of its questions): in the isolated
    answer container it answers each question with the user's own statements among the records released to it."""
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, {}, load_all_arms(REPO), protocol=PROTOCOL,
                       protocol_setup=PersonalSetup(None, HostedSuite("memora", "memora")), root=memora_project)
    answers = {}
    for arm in ("bare", "full_context"):
        row = PROTOCOL.run_cell(ctx, CellSpec("test_baker", arm, 0, "weekly", "extractive", f"{arm}-x", 0), 1)
        assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
        verdict = json.loads((tmp_path / "run" / "cells" / f"{arm}-x" / "verdict.json").read_text())
        answers[arm] = {q["question"]: q["answer"] for q in verdict["questions"]}
    assert answers["bare"] == {"bake_kind_4": "I don't know.", "bake_load_2": "I don't know."}
    # the first person statement sharing "bake" and "market" with the question; the sentence ending the rye loaves
    # (with the spelt in it: a blind spot memgrid-reader's help names) is left out, as is the assistant's echo
    assert answers["full_context"]["bake_kind_4"] == "I bake sourdough for the market stall on Saturdays."
