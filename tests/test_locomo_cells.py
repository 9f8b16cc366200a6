"""LoCoMo as published in the personal protocol (issue 69, step 2): a grid naming a suite that `memgrid task import
--format locomo` wrote runs its samples in the one condition, published; a cell searches the sample's turns and the
isolated answerer sees only the turns released to it. The suite is tests/data/locomo/ (our own fixture in LoCoMo's
shape), imported into a project copy."""

import json
import re

import pytest
import yaml

from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_grid
from runner.protocols.personal.protocol import PersonalSetup
from runner.protocols.registry import PROTOCOLS
from runner.sources.registry import HostedSuite

from conftest import REPO

PROTOCOL = PROTOCOLS["personal"]


def test_a_locomo_grid_runs_each_sample_once_in_the_published_condition(locomo_project, tmp_path):
    spec = {"name": "locomo", "protocol": "personal", "suite": "locomo", "tasks": "all", "arms": ["bare"],
            "agents": ["extractive"], "seeds": 1, "conditions": ["published"]}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec))
    grid = load_grid(path)
    units = PROTOCOL.units(grid, {}, path)
    assert list(units) == ["test-ada", "test-cyd"]
    assert PROTOCOL.pairs(grid, list(units), {}) == [("test-ada", "published"), ("test-cyd", "published")]


@pytest.mark.docker
def test_the_extractive_answerer_answers_a_locomo_sample_from_both_speakers_turns(engine, images, locomo_project,
                                                                                  tmp_path, run_id, no_leftovers):
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, {}, load_all_arms(REPO), protocol=PROTOCOL,
                       protocol_setup=PersonalSetup(None, HostedSuite("locomo", "locomo")), root=locomo_project)
    verdicts = {}
    for arm in ("bare", "oracle_memory"):
        row = PROTOCOL.run_cell(ctx, CellSpec("test-ada", arm, 0, "published", "extractive", f"{arm}-x", 0), 1)
        assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
        verdict = json.loads((tmp_path / "run" / "cells" / f"{arm}-x" / "verdict.json").read_text())
        verdicts[arm] = {q["question"]: q for q in verdict["questions"]}
    assert {q["answer"] for q in verdicts["bare"].values()} == {"I don't know."}
    oracle = verdicts["oracle_memory"]
    # the oracle memory gives each question exactly the turns it cites (not, as Memora's, every question's evidence):
    # the composite entry 'D2:2; D1:1' the two turns found in it, and the answer is said from them
    cited = {"test-ada-q0001": ["D1-1"], "test-ada-q0002": ["D2-3"], "test-ada-q0003": ["D2-1"],
             "test-ada-q0004": ["D2-2"], "test-ada-q0005": ["D1-1", "D2-2"], "test-ada-q0006": ["D1-3"]}
    assert {k: sorted(q["released"]) for k, q in oracle.items()} == \
        {k: [f"test-ada-{t}" for t in turns] for k, turns in cited.items()}
    assert "her name is Pixel" in oracle["test-ada-q0001"]["answer"]
    # LoCoMo asks for a short answer: the extractive answerer gives its best statement alone (ten elsewhere)
    assert all(len(re.split(r"(?<=[.!?])\s+", q["answer"].strip())) == 1 for q in oracle.values()), \
        [q["answer"] for q in oracle.values()]
    # a fact only the second speaker (ingested as role assistant) states
    assert "Oslo and Bergen" in oracle["test-ada-q0002"]["answer"]
    assert all(c["correct"] for c in oracle["test-ada-q0001"]["criteria"])
    # LoCoMo's own F1 beside the judges, from the answer alone: bare's "I don't know." is 0 on a fact and 0 on the
    # adversarial question too (it says neither "not mentioned" nor "no information available")
    assert verdicts["bare"]["test-ada-q0001"]["own_scores"] == {"f1": 0.0}
    assert verdicts["bare"]["test-ada-q0006"]["own_scores"] == {"f1": 0.0}
    assert 0 < oracle["test-ada-q0001"]["own_scores"]["f1"] < 1  # 'Pixel' within a longer statement
    # LoCoMo's evidence recall of what was released: none on bare; every cited turn on the oracle, but the question
    # whose one evidence entry is the composite 'D2:2; D1:1' counts none, as LoCoMo's own function counts it
    assert {q["own_evidence_recall"] for q in verdicts["bare"].values()} == {0.0}
    assert {k: q["own_evidence_recall"] for k, q in oracle.items() if q["own_evidence_recall"] != 1.0} == \
        {"test-ada-q0005": 0.0}


@pytest.mark.docker
def test_the_scripted_model_labels_each_answer_under_both_published_prompts_offline(engine, images, locomo_project,
                                                                                    tmp_path, run_id, no_leftovers):
    """judges: [scripted] on a LoCoMo suite: the published answer prompts asked of the scripted model through a real
    gateway (lenient under the generous prompt, strict under the other), every label a request the gateway recorded,
    and the same cell judged again from the cache with no gateway started."""
    from runner.env.images import ensure_derived
    from runner.protocols.personal.protocol import PanelSetup

    panel = PanelSetup(("scripted",), ensure_derived(engine, "model", images.base, lambda m: None), images.base.tag)
    setup = PersonalSetup(panel, HostedSuite("locomo", "locomo"))
    cell = CellSpec("test-ada", "oracle_memory", 0, "published", "extractive", "oracle-x", 0)
    results = []
    for run in ("run", "run-again"):
        ctx = TrialContext(engine, run_id, tmp_path / run, images, {}, load_all_arms(REPO), protocol=PROTOCOL,
                           protocol_setup=setup, root=locomo_project)
        row = PROTOCOL.run_cell(ctx, cell, 1)
        assert row.admitted and row.outcome == "scored", (row.discard_reason, row.error_detail)
        results.append(json.loads(row.result))
    first, again = results
    judged = {q["id"]: q["own_judged"] for q in first["questions"] if "own_judged" in q}
    assert len(judged) == 5 and "test-ada-q0006" not in judged  # categories 1-4 only
    assert first["judge_requests"] == 10 and first["panel"] == "deterministic"
    gateway = (tmp_path / "run" / "cells" / "oracle-x" / "gateway.jsonl").read_text().splitlines()
    assert sum(json.loads(line)["kind"] == "model" for line in gateway) == 10
    assert all(j["mem0"] >= j["strict"] for j in judged.values())
    assert judged["test-ada-q0001"] == {"mem0": 1.0, "strict": 1.0}  # 'Pixel' in the answer
    assert any(j["mem0"] > j["strict"] for j in judged.values())  # the prompts differ on these answers
    assert again["judge_requests"] == 0 and [q.get("own_judged") for q in again["questions"]] == \
        [q.get("own_judged") for q in first["questions"]]
    assert not (tmp_path / "run-again" / "cells" / "oracle-x" / "gateway.jsonl").exists()
