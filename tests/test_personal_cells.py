"""Personal cells in real containers: bare scores 0, the oracle 1, the full context and recall in between,
no search violates the cutoff; recall's store comes from recall's own ingest; the answer container holds
only its requests: a hostile answerer looking for the store or unreleased records finds nothing, and an
answer bundle that carried the store is discarded before the answerer runs."""

import json

import pytest

from runner.agents.command import CommandSpec
from runner.env.archive import Entry
from runner.env.bundle import bundle_of
from runner.env.images import ensure_arm_image
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.protocols.personal import corpus as gen
from runner.protocols.registry import PROTOCOLS

from conftest import REPO

PROTOCOL = PROTOCOLS["personal"]
PERSON, HORIZON = "p18", "quarterly"  # 11 records state its current facts: more than a reader's top 10

# The hostile answerer: walks everything it can read for record ids of the person that were not released
# to it and for a store's files, then answers every request with what it found.
SNOOP = r'''
import json, os, re, sys
released = set()
for name in os.listdir("/sandbox/requests"):
    with open(os.path.join("/sandbox/requests", name)) as f:
        released |= {r["id"] for r in json.load(f)["records"]}
pattern = re.compile(r"\b%s-[wmq]\d\d-\d\b" % sys.argv[1])
found, files = set(), 0
for root in ("/sandbox", "/tmp", "/home", "/var/tmp", "/opt", "/srv", "/mnt", "/root"):
    for dirpath, dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            if name in ("store.json", "sessions.jsonl") or "bm25" in name:
                found.add("store file " + path)
            files += 1
            try:
                with open(path, errors="replace") as f:
                    found |= {i for i in pattern.findall(f.read(1 << 20)) if i not in released}
            except OSError:
                pass
for name in sorted(os.listdir("/sandbox/requests")):
    print(json.dumps({"question": name[:-5], "answer": "found: " + (" ".join(sorted(found)) or "nothing")}))
print(json.dumps({"snooped_files": files}))
'''


@pytest.fixture
def ctx(engine, images, tmp_path, run_id) -> TrialContext:
    recall = ensure_arm_image(engine, REPO / "arms" / "recall", images.sandbox, log=lambda m: None)
    snoop = tmp_path / "snoop.py"
    snoop.write_text(SNOOP)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(REPO), load_all_arms(REPO),
                       images_by_arm={"recall": recall}, protocol=PROTOCOL,
                       command_agents={"snoop": CommandSpec("snoop", ("python3", "-I", "snoop.py", PERSON), (snoop,))})
    ctx.run_dir.mkdir(parents=True)
    return ctx


def cell(arm: str, agent: str = "reader") -> CellSpec:
    return CellSpec(PERSON, arm, 0, HORIZON, agent, f"{agent}-{arm}-{PERSON}-{HORIZON}", 0)


def test_floor_ceiling_and_in_between_with_no_violations(ctx, no_leftovers):
    rows = {arm: PROTOCOL.run_cell(ctx, cell(arm), 1) for arm in ("bare", "oracle_memory", "full_context", "recall")}
    for arm, row in rows.items():
        assert row.admitted and row.final and row.outcome == "scored", (arm, row.discard_reason, row.error_detail)
    result = {arm: json.loads(row.result) for arm, row in rows.items()}
    assert result["bare"]["fama"] == 0 and result["bare"]["mpa"] == 0
    assert result["oracle_memory"]["fama"] == 1
    assert all(q["evidence_released"] == q["evidence"] for q in result["oracle_memory"]["questions"])
    assert len(gen.build_unit(PERSON, HORIZON).oracle_evidence()) > 10
    assert all(r["violations"] == 0 for r in result.values())
    assert 0 < result["recall"]["fama"] < 1 and 0 < result["full_context"]["fama"] <= 1
    unit = gen.build_unit(PERSON, HORIZON)
    full = result["full_context"]["questions"]
    assert all(q["released"] == len(unit.records) for q in full)  # the full context is every record
    assert all(q["released"] <= 10 for q in result["recall"]["questions"])  # a search tool is asked for k = 10
    # recall's store is recall's own: its receipt and index, every record ingested through its ingest
    build = json.loads((ctx.run_dir / "cells" / rows["recall"].cell_id / "phases.json").read_text())["build"]
    assert build["documents"] == build["corpus_documents"] == len(unit.records) and build["exit_code"] == 0
    assert rows["recall"].store_digest == build["store_digest"]
    proofs = {(p["phase"], p["name"]): p["passed"] for p in json.loads(rows["recall"].gate_proofs)}
    assert proofs[("build", "store_populated")] and proofs[("search", "mcp_connected")]
    assert proofs[("answer", "answer_isolated")]


def test_a_hostile_answerer_finds_neither_the_store_nor_unreleased_records(ctx, no_leftovers):
    row = PROTOCOL.run_cell(ctx, cell("recall", "snoop"), 1)
    assert row.admitted, (row.discard_reason, row.error_detail)
    verdict = json.loads((ctx.run_dir / "cells" / row.cell_id / "verdict.json").read_text())
    answers = {q["answer"] for q in verdict["questions"]}
    assert answers == {"found: nothing"}, answers
    tail = next(json.loads(line)["tail"] for line in
                (ctx.run_dir / "cells" / row.cell_id / "answer" / "transcript.jsonl").read_text().splitlines()
                if json.loads(line)["type"] == "output")
    assert json.loads(tail.strip().splitlines()[-1])["snooped_files"] > 100  # it did walk the file system
    assert json.loads(row.result)["fama"] == 0


def test_an_answer_bundle_that_carries_the_store_is_discarded_before_the_answerer_runs(ctx, no_leftovers):
    """Without the isolation proof this cell would be admitted and the snoop would answer with the store's
    files and every record id it holds."""
    honest = PROTOCOL.run_cell(ctx, cell("recall"), 1)
    store = (ctx.run_dir / "cells" / honest.cell_id / "search" / "bundle.manifest").read_text()
    leaky = [Entry(line.split("  ", 1)[1], b"x") for line in store.splitlines() if "  store/" in line]
    assert leaky, "the search phase of a recall cell holds its store"
    unit = gen.build_unit(PERSON, HORIZON)
    requests = [Entry(f"requests/{q.id}.json", json.dumps({"question": q.id, "text": q.text, "records": []}).encode())
                for q in unit.questions]
    bundle = bundle_of([Entry("agent/prompt.txt", b"answer"), *requests, *leaky])
    row = PROTOCOL.run_cell(ctx, cell("recall", "snoop"), 1, bundle=bundle)
    assert not row.admitted and row.discard_reason == "answer_not_isolated", (row.discard_reason, row.error_detail)
    proof = next(p for p in json.loads(row.gate_proofs) if p["name"] == "answer_isolated")
    assert "store" in proof["detail"]
    transcript = (ctx.run_dir / "cells" / row.cell_id / "answer" / "transcript.jsonl").read_text()
    assert '"skipped"' in transcript  # the answerer never started


def test_the_model_panel_judges_through_the_gateway_and_replays_from_its_cache(ctx, engine, images, tmp_path,
                                                                               no_leftovers):
    """Three scripted judges through a real gateway: every verdict is a request the gateway recorded; the
    same cell judged in another run of the same runs folder replays every verdict from the cache, with no
    gateway started at all."""
    from runner.env.images import ensure_derived
    from runner.protocols.personal.protocol import PanelSetup, PersonalSetup

    ctx.protocol_setup = PersonalSetup(PanelSetup(("scripted",) * 3, ensure_derived(engine, "model", images.base,
                                                                                    lambda m: None), images.base.tag))
    row = PROTOCOL.run_cell(ctx, cell("oracle_memory"), 1)
    assert row.admitted, (row.discard_reason, row.error_detail)
    result = json.loads(row.result)
    criteria = sum(q["np"] + q["nf"] for q in result["questions"])
    assert result["panel"] == "model" and result["judge_requests"] == 3 * criteria
    assert result["fama"] == 1 and all(q["panels_agree"] == q["np"] + q["nf"] for q in result["questions"])
    gateway = (ctx.run_dir / "cells" / row.cell_id / "gateway.jsonl").read_text().splitlines()
    assert sum(json.loads(line)["kind"] == "model" for line in gateway) == 3 * criteria
    verdict = json.loads((ctx.run_dir / "cells" / row.cell_id / "verdict.json").read_text())
    assert verdict["judges"] == ["model-0:scripted", "model-1:scripted", "model-2:scripted"]

    replay = TrialContext(engine, ctx.run_id, tmp_path / "run-again", images, ctx.tasks, ctx.arms,
                          images_by_arm=ctx.images_by_arm, protocol=PROTOCOL, protocol_setup=ctx.protocol_setup)
    replay.run_dir.mkdir()
    again = PROTOCOL.run_cell(replay, cell("oracle_memory"), 1)
    assert json.loads(again.result)["judge_requests"] == 0 and json.loads(again.result)["fama"] == 1
    assert not (replay.run_dir / "cells" / again.cell_id / "gateway.jsonl").exists()


def test_an_ingest_that_fails_discards_the_cell_before_any_search(ctx, no_leftovers):
    from dataclasses import replace

    ctx.arms = {**ctx.arms, "recall": replace(ctx.arms["recall"], ingest=("sh", "-c", "echo no disk >&2; exit 3"))}
    row = PROTOCOL.run_cell(ctx, cell("recall"), 1)
    assert not row.admitted and row.discard_reason == "store_empty"
    proof = json.loads(row.gate_proofs)[-1]
    assert proof["phase"] == "build" and "exited 3" in proof["detail"] and "no disk" in proof["detail"]
    assert not (ctx.run_dir / "cells" / row.cell_id / "search" / "transcript.jsonl").exists()


def test_a_third_party_product_builds_and_searches_through_its_own_paths(engine, images, tmp_path, run_id,
                                                                         no_leftovers):
    """server_memory (the npm knowledge graph): its own create_entities writes the person's records, its own
    substring search (one call per keyword, as its mcp.search says) finds them, and every hit maps to one of
    the person's record ids: no violation."""
    product = ensure_arm_image(engine, REPO / "arms" / "server_memory", images.sandbox, log=lambda m: None)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(REPO), load_all_arms(REPO),
                       images_by_arm={"server_memory": product}, protocol=PROTOCOL)
    ctx.run_dir.mkdir(parents=True)
    row = PROTOCOL.run_cell(ctx, CellSpec("p03", "server_memory", 0, "weekly", "reader", "reader-sm-p03", 0), 1)
    assert row.admitted, (row.discard_reason, row.error_detail)
    result = json.loads(row.result)
    build = json.loads((ctx.run_dir / "cells" / row.cell_id / "phases.json").read_text())["build"]
    assert build["documents"] == build["corpus_documents"] == len(gen.build_unit("p03", "weekly").records)
    assert result["violations"] == 0 and sum(q["released"] for q in result["questions"]) > 0
    calls = [json.loads(line) for line in (ctx.run_dir / "cells" / row.cell_id / "search" / "transcript.jsonl")
             .read_text().splitlines() if json.loads(line)["type"] == "tool_call"]
    assert calls and all(c["tool"] == "mcp__server_memory__search_nodes" for c in calls)


def test_a_persons_store_is_built_once_and_every_other_cell_of_the_person_and_period_takes_it_from_the_cache(
        ctx, no_leftovers):
    """Issue 53, step 5: another seed (or agent, run, reproduction) of the same person and period searches the store
    the first cell's ingest built, from the store cache with its digest checked, instead of ingesting again."""
    from runner.arms import store_cache

    first = PROTOCOL.run_cell(ctx, cell("recall"), 1)
    again = PROTOCOL.run_cell(ctx, CellSpec(PERSON, "recall", 1, HORIZON, "reader", "reader-recall-seed1", 0), 1)
    assert first.admitted and again.admitted, (first.discard_reason, again.discard_reason)
    built, taken = (json.loads((ctx.run_dir / "cells" / r.cell_id / "phases.json").read_text())["build"]
                    for r in (first, again))
    assert (built["source"], taken["source"]) == ("ingested", "cache") and built["cache_key"] == taken["cache_key"]
    assert first.store_digest == again.store_digest == taken["store_digest"]
    assert [p["name"] for p in json.loads(again.gate_proofs) if p["phase"] == "build"] == ["store_cached",
                                                                                        "store_populated"]
    assert json.loads(again.result)["fama"] == json.loads(first.result)["fama"]
    assert json.loads(again.result)["store"] == {"source": "cache", "seconds": built["seconds"],
                                                 "bytes": built["bytes"], "documents": built["documents"]}
    assert [(e.inputs["arm"], e.inputs["condition"]) for e in store_cache.entries()] == [("recall", HORIZON)]


def test_a_persons_store_key_is_what_its_ingest_is_given_and_never_the_seed(tmp_path):
    from dataclasses import replace
    from types import SimpleNamespace

    from runner.protocols.personal.protocol import person_store_key, record_file

    image = SimpleNamespace(id="sha256:recall", tag="memgrid-arm-recall:x")
    ctx = TrialContext(None, "r", tmp_path, SimpleNamespace(sandbox=image), {}, load_all_arms(REPO),
                       images_by_arm={"recall": image}, protocol=PROTOCOL)
    unit = gen.build_unit(PERSON, HORIZON)

    def key(arm=ctx.arms["recall"], records=unit.records, period=HORIZON):
        docs = tuple(Entry(f"ingest/corpus/docs/{r.id}.jsonl", record_file(r)) for r in records)
        return person_store_key(ctx, arm, unit, period, docs).key

    first = key()
    assert key() == first  # any seed, agent or run of the person and period: the same store
    changed = replace(unit.records[0], user=unit.records[0].user + " (edited)")
    assert len({first, key(records=[changed, *unit.records[1:]]), key(records=unit.records[1:]),
                key(arm=replace(ctx.arms["recall"], ingest=("true",))), key(period="weekly")}) == 5
    ctx.images_by_arm = {"recall": SimpleNamespace(id="sha256:rebuilt", tag="memgrid-arm-recall:y")}
    assert key() != first


def test_an_ingest_cut_short_by_its_sandboxs_lifetime_is_memgrids_fault_and_runs_again(ctx, no_leftovers, monkeypatch):
    """Issue 52: the controller frozen past a build sandbox's lifetime (a stalled host) finds the ingest killed when the
    sandbox's first process slept its lifetime out. That is no failure of the arm's write path: the cell is discarded
    sandbox_expired, not final, and runs again, never recorded as store_empty. Here the build's sandbox lives 3 s and
    the ingest takes 8."""
    from dataclasses import replace

    from runner.exec import trial

    made = trial.harness_sandbox

    def lives_three_seconds(*args, **kwargs):
        sandbox = made(*args, **kwargs)
        sandbox.lifetime, sandbox.create_args["command"] = 3, ["sleep", "3"]
        return sandbox

    monkeypatch.setattr(trial, "harness_sandbox", lives_three_seconds)
    ctx.arms = {**ctx.arms, "recall": replace(ctx.arms["recall"], ingest=("sh", "-c", "sleep 8"))}
    row = PROTOCOL.run_cell(ctx, cell("recall"), 1)
    assert (row.admitted, row.final, row.discard_reason) == (False, False, "sandbox_expired"), row.error_detail
    assert row.error_detail.startswith("the sandbox's lifetime of 3s ran out")
