"""The LLM-free reader agent over the corpus arms: its score follows what its memory holds."""

import io
import json
import tarfile
from dataclasses import replace

import pytest

from runner.corpus.build import MemorySource
from runner.plan.grid import CellSpec, GridInputs, cell_id
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.protocols.registry import PROTOCOLS
from runner.exec.trial import TrialContext, run_cell

from conftest import REPO, SEED

CODING = PROTOCOLS["coding"]

TASK = "slug_ids"


@pytest.fixture
def ctx(engine, images, built, tmp_path, run_id):
    settings, _, build_dir, _ = built
    return TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(REPO), load_all_arms(REPO),
                        MemorySource(settings, build_dir), protocol=CODING)


def reader_cell(arm: str, condition: str) -> CellSpec:
    return CellSpec(TASK, arm, SEED, condition, "reader", f"reader-{arm}-{condition}", 0)


def events(ctx, cell) -> list[dict]:
    return [json.loads(l) for l in (ctx.run_dir / "cells" / cell.cell_id / "transcript.jsonl").open()]


def picked(ctx, cell) -> str:
    return next(e for e in events(ctx, cell) if e["type"] == "pick")["option"]


@pytest.mark.parametrize("condition, option, outcome", [
    ("present", "informed", "solved"),
    ("superseded", "informed", "solved"),  # newest first: the fact outranks the stale rule
    ("absent", "naive", "neutral_failure"),
    ("adjacent", "damaged/adjacent", "damaged"),  # no judgment: it applies the other subsystem's rule
])
def test_oracle_memory_drives_the_reader(ctx, no_leftovers, condition, option, outcome):
    cell = reader_cell("oracle_memory", condition)
    row = run_cell(ctx, cell, 1)
    assert row.admitted, row.gate_proofs
    assert picked(ctx, cell) == option
    assert row.outcome == outcome, (row.checker_detail, row.damage_fired)


def test_bare_gives_the_reader_nothing(ctx, no_leftovers):
    cell = reader_cell("bare", "present")
    row = run_cell(ctx, cell, 1)
    assert picked(ctx, cell) == "naive" and row.outcome == "neutral_failure"
    search = [e for e in events(ctx, cell) if e["type"] == "search"]
    assert search == []


def test_fs_grep_puts_the_corpus_in_memory_and_never_exports_it(ctx, built, no_leftovers):
    cell = reader_cell("fs_grep", "present")
    row = run_cell(ctx, cell, 1)
    assert row.admitted
    settings, _, build_dir, _ = built
    documents = len(list((settings.condition_dir("present", SEED, build_dir) / "docs").glob("*.jsonl")))
    manifest = (ctx.run_dir / "cells" / cell.cell_id / "bundle.manifest").read_text().splitlines()
    assert sum(line.split("  ", 1)[1].startswith("memory/") for line in manifest) == documents
    search = next(e for e in events(ctx, cell) if e["type"] == "search")
    assert search["tool"] == "grep" and len(search["ranked"]) == 10
    with tarfile.open(fileobj=io.BytesIO((ctx.run_dir / "cells" / cell.cell_id / "artifact.tar").read_bytes())) as tar:
        assert not [m.name for m in tar.getmembers() if m.name.startswith("memory")]


def test_the_reader_channel_is_recorded_and_not_in_the_bundle(ctx, no_leftovers):
    cell = reader_cell("oracle_memory", "present")
    run_cell(ctx, cell, 1)
    channel = next(e for e in events(ctx, cell) if e["type"] == "channel")
    assert channel["name"] == "reader:options" and len(channel["sha256"]) == 64
    assert set(channel["options"]) == {"informed", "damaged/superseded", "damaged/contradictory", "damaged/adjacent"}
    manifest = (ctx.run_dir / "cells" / cell.cell_id / "bundle.manifest").read_text()
    assert ".reader" not in manifest and "references" not in manifest


def test_corpus_arm_cells_follow_the_corpus_digest():
    inputs = GridInputs(tasks={TASK: "t"}, arms={"fs_grep": "a", "bare": "b"}, images={"sandbox": "s"},
                        corpora={"present/0": "c1"})
    moved = replace(inputs, corpora={"present/0": "c2"})
    assert cell_id(TASK, "fs_grep", 0, "present", "reader", inputs, True) != \
        cell_id(TASK, "fs_grep", 0, "present", "reader", moved, True)
    assert cell_id(TASK, "bare", 0, "present", "reader", inputs, False) == \
        cell_id(TASK, "bare", 0, "present", "reader", moved, False)
