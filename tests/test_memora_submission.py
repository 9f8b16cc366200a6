"""A Memora submission (arm kind memora-submission) runs as its contract says: `memgrid arm add --kind
memora-submission` writes build.sh, search.sh and answer.sh; the build writes its index over the person's records,
the search returns ids from it, and each question is answered in a fresh container of the submission's image that
holds only its request. A hostile submission finds nothing it was not given, and the ids it should not return
are recorded as violations and dropped."""

import json
import shutil

import pytest
import yaml

from runner.arms.check import scaffold
from runner.env.images import ensure_arm_image
from runner.errors import SpecError
from runner.exec.trial import TrialContext
from runner.grading import gate
from runner.plan.grid import CellSpec, GridInputs, expand
from runner.plan.spec import load_all_arms, load_all_tasks, load_arm, load_grid
from runner.protocols.personal import corpus as gen
from runner.protocols.personal import submission
from runner.protocols.registry import PROTOCOLS

from conftest import REPO
from test_memora_export import aggregated

PROTOCOL = PROTOCOLS["personal"]
PERSON, PERIOD = "p00", "weekly"

# answer.sh of the hostile submission: looks everywhere it can read for the index (index.json) and for record ids
# of the person that were not released to it, then answers with what it found.
SNOOP = r'''
import json, os, re, sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
with open(args["--input"]) as f:
    request = json.load(f)
released = {r["record_id"] for r in request["records"]}
pattern = re.compile(r"\b%s-w\d\d-\d\b" % request["persona_id"])
found, files = set(), 0
for root in ("/sandbox", "/tmp", "/home", "/var/tmp", "/opt", "/srv", "/mnt", "/root"):
    for dirpath, dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            files += 1
            if name in ("index.json", "records.jsonl"):
                found.add("file " + path)
            try:
                with open(path, errors="replace") as f:
                    found |= {i for i in pattern.findall(f.read(1 << 20)) if i not in released}
            except OSError:
                pass
for path in ("/app/answer/answer.py", "/app/build.sh"):  # its code is read-only
    try:
        with open(path, "a") as f:
            f.write("# changed")
        found.add("wrote " + path)
    except OSError:
        pass
snooped = "found: " + (" ".join(sorted(found)) or "nothing") + " in %d files" % files
# One way per question of writing an answer that does not count: empty, not JSON, another question's, none.
last = request["query_id"][-1]
if last == "4":
    sys.exit(3)
with open(args["--output"], "w") as f:
    if last == "1":
        json.dump({"query_id": request["query_id"], "answer": "  "}, f)
    elif last == "2":
        f.write("{not json " + snooped)
    elif last == "3":
        json.dump({"query_id": "someone-else", "answer": snooped}, f)
    else:
        json.dump({"query_id": request["query_id"], "answer": snooped}, f)
'''

# search.py of the hostile submission: every id of its index for every query, plus one of another person.
GREEDY = r'''
import json, sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
with open(args["--index-dir"] + "/index.json") as f:
    ids = [e["id"] for e in json.load(f)] + ["p99-w00-0"]
with open(args["--queries"]) as f, open(args["--output"], "w") as out:
    for line in f:
        out.write(json.dumps({"query_id": json.loads(line)["query_id"], "record_ids": ids + ids[:3]}) + "\n")
'''


# The slow submission: its build leaves a link and runs past its time, its search runs past its time, every answer
# sleeps past its own.
SLOW_BUILD = "#!/bin/sh\nmkdir -p \"$4\" && ln -s /etc/passwd \"$4/link\" && exec sleep 60\n"
SLOW = "#!/bin/sh\nexec sleep 60\n"


@pytest.fixture
def arms_root(tmp_path):
    root = tmp_path / "project"
    (root / "arms").mkdir(parents=True)
    scaffold(root, "stub_sub", "memora-submission")
    hostile = root / "arms" / "hostile_sub"
    shutil.copytree(root / "arms" / "stub_sub", hostile)
    (hostile / "arm.yaml").write_text((hostile / "arm.yaml").read_text().replace("name: stub_sub", "name: hostile_sub"))
    (hostile / "app" / "answer" / "answer.py").write_text(SNOOP)
    (hostile / "app" / "submission" / "search.py").write_text(GREEDY)
    slow = root / "arms" / "slow_sub"
    shutil.copytree(root / "arms" / "stub_sub", slow)
    (slow / "arm.yaml").write_text((slow / "arm.yaml").read_text().replace("name: stub_sub", "name: slow_sub"))
    for script, text in (("build.sh", SLOW_BUILD), ("search.sh", SLOW), ("answer.sh", SLOW)):
        (slow / "app" / script).write_text(text)
    return root


@pytest.fixture
def ctx(engine, images, tmp_path, run_id, arms_root) -> TrialContext:
    arms = {name: load_arm(arms_root / "arms" / name) for name in ("stub_sub", "hostile_sub", "slow_sub")}
    built = {name: ensure_arm_image(engine, arm.root, images.sandbox, log=lambda m: None) for name, arm in arms.items()}
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(REPO), {**load_all_arms(REPO), **arms},
                       images_by_arm=built, protocol=PROTOCOL)
    ctx.run_dir.mkdir(parents=True)
    return ctx


def cell(arm: str) -> CellSpec:
    return CellSpec(PERSON, arm, 0, PERIOD, "submission", f"submission-{arm}-{PERSON}-{PERIOD}", 0)


def test_the_scaffold_runs_the_contract_each_answer_in_its_own_container(ctx, no_leftovers):
    row = PROTOCOL.run_cell(ctx, cell("stub_sub"), 1)
    assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
    result = json.loads(row.result)
    unit = gen.build_unit(PERSON, PERIOD)
    assert 0 < result["fama"] <= 1 and result["violations"] == 0
    assert all(q["released"] > 0 for q in result["questions"])
    phases = json.loads((ctx.run_dir / "cells" / row.cell_id / "phases.json").read_text())
    assert phases["build"]["exit_code"] == 0 and phases["build"]["files"] == 1 and row.store_digest
    assert [c["exit_code"] for c in phases["search"]["calls"]] == [0] and phases["search"]["malformed_lines"] == 0
    answers = phases["answer"]["questions"]
    assert sorted(answers) == sorted(q.id for q in unit.questions)
    assert all(a["ended"] == "ok" and a["problem"] is None for a in answers.values())
    assert len({a["bundle_digest"] for a in answers.values()}) == len(unit.questions)  # one request each
    isolated = [p for p in json.loads(row.gate_proofs) if p["name"] == "answer_isolated"]
    assert len(isolated) == len(unit.questions) and all(p["passed"] for p in isolated)
    assert all(p["detail"] == "/sandbox holds MANIFEST.sha256, request.json; network none" for p in isolated)


def test_a_hostile_submission_finds_nothing_and_each_breach_is_recorded_by_kind(ctx, no_leftovers):
    row = PROTOCOL.run_cell(ctx, cell("hostile_sub"), 1)
    assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
    result = json.loads(row.result)
    unit = gen.build_unit(PERSON, PERIOD)
    verdict = json.loads((ctx.run_dir / "cells" / row.cell_id / "verdict.json").read_text())
    for q, detail in zip(unit.questions, verdict["questions"]):
        allowed = [r.id for r in unit.records if r.session <= q.cutoff_session]
        assert detail["released"] == allowed  # unique, this person's, up to the cutoff, in the order returned
        later = [r.id for r in unit.records if r.session > q.cutoff_session]
        assert detail["dropped"] == {"not_this_person": ["p99-w00-0"], "duplicate": [r.id for r in unit.records[:3]],
                                     **({"past_cutoff": later} if later else {})}
        assert sorted(detail["violations"]) == sorted(later + ["p99-w00-0"] + [r.id for r in unit.records[:3]])
    assert verdict["questions"][0]["answer"].startswith("found: nothing in "), verdict["questions"][0]["answer"]
    assert [q.get("answer_problem", "").split(":")[0] for q in result["questions"]] == \
        ["", "empty", "not_json", "wrong_query_id", "exit_nonzero"]
    assert all(q["fama"] == 0 or q["nf"] == 0 for q in result["questions"][1:])  # scored as no answer
    contract = result["contract"]
    assert contract["violations"] == {"not_this_person": 5, "duplicate": 15}  # a generated person's cutoff is its end
    assert contract["answers"] == {"counted": 1, "not_counted": {"empty": 1, "not_json": 1, "wrong_query_id": 1,
                                                                  "exit_nonzero": 1}}
    assert result["violations"] == sum(contract["violations"].values())


def test_a_submission_past_its_times_is_stopped_recorded_and_scored(ctx, no_leftovers, monkeypatch):
    for name, seconds in (("BUILD_SECONDS", 2), ("SEARCH_SECONDS", 2), ("ANSWER_SECONDS", 2),
                          ("ANSWER_PHASE_SECONDS", 4), ("ANSWERS_AT_ONCE", 1)):
        monkeypatch.setattr(submission, name, seconds)
    row = PROTOCOL.run_cell(ctx, cell("slow_sub"), 1)
    assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
    contract = json.loads(row.result)["contract"]
    assert contract["build"]["timed_out"] and "link (symlink)" in contract["build"]["refused"], contract
    assert contract["search"] == {"calls": 1, "failed": 1, "timed_out": 1, "malformed_lines": 0}
    kinds = [q.get("answer_problem", "").split(":")[0] for q in json.loads(row.result)["questions"]]
    assert kinds[0] == "timeout" and kinds[-1] == "phase_time_out" and set(kinds) <= {"timeout", "phase_time_out"}
    assert json.loads(row.result)["fama"] == 0


def test_the_isolation_proof_fails_on_anything_besides_the_request():
    assert gate.answer_isolation(["MANIFEST.sha256", "request.json"], "none", submission.ALLOWED_IN_ANSWER).passed
    assert not gate.answer_isolation(["request.json", "store"], "none", submission.ALLOWED_IN_ANSWER).passed
    assert not gate.answer_isolation(["request.json"], "bridge", submission.ALLOWED_IN_ANSWER).passed


def personal_grid(path, arms, agents, protocol="personal"):
    spec = {"name": "t", "tasks": "all", "arms": list(arms), "agents": list(agents), "seeds": 1, "protocol": protocol}
    spec.update({"cases": 1, "conditions": ["weekly"]} if protocol == "personal" else {"conditions": ["present"]})
    path.write_text(yaml.safe_dump(spec))
    return load_grid(path)


def test_a_grid_pairs_submissions_only_with_their_own_answerer(arms_root, tmp_path):
    arms = {**load_all_arms(REPO), "stub_sub": load_arm(arms_root / "arms" / "stub_sub")}
    path = tmp_path / "grid.yaml"
    refused = {(("stub_sub",), ("reader",)): "answers with its own answer.sh",
               (("stub_sub", "full_context"), ("submission",)): "arm 'full_context' would have no cells",
               (("stub_sub",), ("submission", "reader")): "every arm is a submission.*'reader' would have no cells",
               (("full_context",), ("submission",)): "answers only for an arm of kind memora-submission"}
    for (grid_arms, agents), message in refused.items():
        with pytest.raises(SpecError, match=message):
            PROTOCOL.check(personal_grid(path, grid_arms, agents), path, arms, {})
    PROTOCOL.check(personal_grid(path, ("stub_sub",), ("submission",)), path, arms, {})
    # beside a baseline: each arm with its own answerer, never a submission read by the reader or the reverse
    mixed = personal_grid(path, ("full_context", "stub_sub", "bare"), ("reader", "submission"))
    PROTOCOL.check(mixed, path, arms, {})
    inputs = GridInputs({PERSON: ""}, {a: "" for a in mixed.arms}, {}, {})
    cells = expand(mixed, [PERSON], {}, inputs, pairs=PROTOCOL.pairs(mixed, [PERSON], {}),
                   plays=lambda arm, agent: PROTOCOL.plays(arms[arm], agent))
    assert sorted((c.arm, c.agent) for c in cells) == [("bare", "reader"), ("full_context", "reader"),
                                                        ("stub_sub", "submission")]
    assert len({c.cell_id for c in cells}) == 3 and [c.order_index for c in cells] == [0, 1, 2]
    with pytest.raises(SpecError, match="which the coding protocol cannot run"):
        PROTOCOLS["coding"].check(personal_grid(path, ("stub_sub",), ("floor",), "coding"), path, arms, {})


def test_the_estimate_counts_the_model_cells_the_protocol_plays(arms_root, tmp_path):
    """A submission answers for itself: a model agent beside it is sized over the baselines alone, as the run
    expands the grid (without Protocol.plays the estimate priced a claude-code cell of the submission too)."""
    from runner.plan.estimate import planned_cells

    shutil.copytree(REPO / "arms" / "bare", arms_root / "arms" / "bare")
    (arms_root / "tasks").mkdir()
    path = tmp_path / "grid.yaml"
    planned = planned_cells(personal_grid(path, ("bare", "stub_sub"), ("claude-code", "submission")), path, arms_root)
    assert planned == [("p00", "bare", "weekly", 0, "claude-code")]


def test_arm_check_runs_the_contract_and_names_a_broken_script(engine, images, arms_root, run_id, no_leftovers):
    from runner.arms.check import check_arm

    lines = []
    report = check_arm(arms_root, "stub_sub", run_id=run_id, client=engine, emit=lines.append)
    assert report.ok, lines
    assert any(line.startswith("ok   contract") and "FAMA" in line for line in lines), lines
    lines = []
    report = check_arm(arms_root, "hostile_sub", run_id=run_id, client=engine, emit=lines.append)
    assert [p.where for p in report.problems] == ["arms/hostile_sub/app/search.sh", "arms/hostile_sub/app/answer.sh"]
    assert report.problems[0].what.startswith("returned 20 ids it may not")  # 5 questions: 1 foreign, 3 repeated
    assert report.problems[1].what.startswith("4 of 5 answers do not count (empty, exit_nonzero, not_json, "
                                              "wrong_query_id;"), report.problems[1].what


def test_a_submission_beside_a_baseline_runs_in_one_grid_one_report_and_one_export(engine, images, memora_project,
                                                                                   run_id, no_leftovers):
    """As a researcher compares a submission with memgrid's baselines on Memora: one `memgrid grid`, each arm
    answered by its own answerer (the submission's answer.sh, the baseline's extractive answerer), one report with
    both rows, and Memora's aggregator reading both subjects from one export."""
    import os
    import subprocess

    from runner.results.ledger import Ledger, latest_attempts

    shutil.copytree(REPO / "arms" / "full_context", memora_project / "arms" / "full_context")
    scaffold(memora_project, "stub_sub", "memora-submission")
    spec = {"name": "mixed", "protocol": "personal", "suite": "memora", "tasks": ["test_baker"], "seeds": 1,
            "arms": ["stub_sub", "full_context"], "agents": ["extractive", "submission"], "conditions": ["weekly"]}
    (memora_project / "grid.yaml").write_text(yaml.safe_dump(spec))
    env = {**os.environ, "MEMGRID_ROOT": str(memora_project)}
    done = subprocess.run([str(REPO / ".venv/bin/memgrid"), "grid", "--spec", "grid.yaml", "--runs-dir", "runs",
                           "--run-id", run_id, "--no-progress"], cwd=memora_project, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [r for r in latest_attempts(Ledger(memora_project / "runs" / run_id).rows()).values() if r["final"]]
    assert sorted((r["arm"], r["agent"]) for r in rows) == [("full_context", "extractive"), ("stub_sub", "submission")]
    assert all(r["admitted"] and r["outcome"] == "scored" for r in rows), [(r["arm"], r["discard_reason"]) for r in rows]
    contract = {r["arm"]: json.loads(r["result"]).get("contract") for r in rows}
    assert contract["stub_sub"]["build"]["exit_code"] == 0 and contract["full_context"] is None
    assert "submissions: their scripts against the contract" in done.stdout
    summary = json.loads((memora_project / "runs" / run_id / "summary.json").read_text())
    assert sorted((s["agent"], s["arm"], s["contract"] is not None) for s in summary) == [
        ("extractive", "full_context", False), ("submission", "stub_sub", True)]
    done = subprocess.run([str(REPO / ".venv/bin/memgrid"), "export", run_id, "--format", "memora", "--output", "out",
                           "--runs-dir", "runs"], cwd=memora_project, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "wrote 2 records" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert {subject for subject, _, _ in aggregated(memora_project / "out")} == {"stub_sub (submission)",
                                                                                  "full_context (extractive)"}


def test_the_report_sums_each_breach_by_kind_over_a_rows_cells():
    from runner.protocols.personal.analysis import contract_of, contract_table

    one = {"build": {"exit_code": 0, "timed_out": False}, "search": {"calls": 1, "failed": 0, "timed_out": 0,
                                                                    "malformed_lines": 2},
           "violations": {"duplicate": 3}, "answers": {"counted": 4, "not_counted": {"empty": 1}}}
    two = {"build": {"exit_code": 124, "timed_out": True, "refused": "link"},
           "search": {"calls": 2, "failed": 2, "timed_out": 1, "malformed_lines": 0},
           "violations": {"duplicate": 1, "past_cutoff": 2}, "answers": {"counted": 0, "not_counted": {"empty": 2,
                                                                                                       "timeout": 3}}}
    assert contract_of([]) is None
    summed = contract_of([one, two])
    assert summed == {"cells": 2, "build_failed": 1, "build_timed_out": 1, "index_refused": 1, "search_failed": 2,
                      "search_timed_out": 1, "malformed_lines": 2, "answers_counted": 4,
                      "violations": {"duplicate": 4, "past_cutoff": 2}, "not_counted": {"empty": 3, "timeout": 3}}
    _, lines = contract_table([{"agent": "submission", "arm": "a", "horizon": "weekly", "contract": summed},
                               {"agent": "reader", "arm": "bare", "horizon": "weekly", "contract": None}])
    assert lines == [["submission", "a", "weekly", "2", "1 / 1 / 1", "2 / 1 / 2", "duplicate 4, past_cutoff 2", "4",
                      "empty 3, timeout 3"]]


def test_a_submission_arm_yaml_with_another_kinds_field_is_refused_in_one_line(arms_root):
    arm = arms_root / "arms" / "stub_sub"
    (arm / "arm.yaml").write_text((arm / "arm.yaml").read_text() + "ingest:\n  command: [x]\n")
    with pytest.raises(SpecError) as refused:
        load_arm(arm)
    assert refused.value.field == "ingest" and "is not used by an arm of kind memora-submission" in str(refused.value)
    assert "keep name, kind, description" in refused.value.fix
