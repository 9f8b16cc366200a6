"""Planted cells in real containers: memories go in through recall's own write API and come out by exact
id; the switches reach the arm's server; injection is confirmed from the arm's own log; the hidden tests
never enter the sandbox; the silent-fallback canary earns no credit and is flagged."""

import json
import shutil

import pytest

from runner.digest import sha256_bytes
from runner.env.images import ensure_arm_image
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.exec.trial import harness_step
from runner.protocols.planted.protocol import fill, namespace_of, parse_ids
from runner.protocols.registry import PROTOCOLS

from conftest import REPO

PROTOCOL = PROTOCOLS["planted"]


@pytest.fixture
def ctx(engine, images, tmp_path, run_id) -> TrialContext:
    recall = ensure_arm_image(engine, REPO / "arms" / "recall", images.sandbox, log=lambda m: None)
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(REPO), load_all_arms(REPO),
                       images_by_arm={"recall": recall}, protocol=PROTOCOL)
    ctx.run_dir.mkdir(parents=True)
    return ctx


def task_id() -> str:
    return sorted(PROTOCOL.tasks(REPO))[0]


def cell(arm: str, condition: str, agent: str = "reader") -> CellSpec:
    return CellSpec(task_id(), arm, 0, condition, agent, f"{agent}-{arm}-{condition.replace(':', '-')}", 0)


def result(row) -> dict:
    return json.loads(row.result)


def test_on_off_and_ablate_all_with_the_reader_on_recall(ctx, no_leftovers):
    """On: the planted memory is served (confirmed in the arm's log), the solution applied, the hidden tests
    pass, every planted id forgotten. Off (the kill switch) and every lane ablated: nothing served, the
    naive implementation fails the hidden tests."""
    task = PROTOCOL.tasks(REPO)[task_id()]
    rows = {c: PROTOCOL.run_cell(ctx, cell("recall", c), 1) for c in ("on", "off", "ablate:all")}
    for condition, row in rows.items():
        assert row.admitted and row.final, (condition, row.discard_reason, row.error_detail, row.gate_proofs)
        r = result(row)
        assert len(r["planted_ids"]) == len(task.memories)
        assert r["forgotten"] == {"ok": True, "left": [], "forget_exit": 0}, condition
    on, off, ablated = (result(rows[c]) for c in ("on", "off", "ablate:all"))
    assert rows["on"].checker_passed and on["injection"]["confirmed"], on
    assert set(on["injection"]["planted_ids_served"]) <= set(on["planted_ids"])
    assert not rows["off"].checker_passed and not off["injection"]["confirmed"], off
    assert off["injection"]["log_lines"] >= 1  # the server ran and logged; it served nothing planted
    assert not rows["ablate:all"].checker_passed and not ablated["injection"]["confirmed"], ablated
    # Each cell planted into a namespace of its own.
    assert len({r["namespace"] for r in (on, off, ablated)}) == 3


def test_hidden_tests_never_reach_the_sandbox(ctx, no_leftovers):
    task = PROTOCOL.tasks(REPO)[task_id()]
    row = PROTOCOL.run_cell(ctx, cell("recall", "on"), 1)
    manifest = (ctx.run_dir / "cells" / row.cell_id / "bundle.manifest").read_text()
    hidden = [p for p in task.hidden.rglob("*") if p.is_file()]
    assert hidden and "workspace/" in manifest

    for p in hidden:
        assert f"workspace/{p.relative_to(task.hidden).as_posix()}" not in manifest, p
        if p.read_bytes():  # an empty file's digest is every empty file's
            assert sha256_bytes(p.read_bytes()) not in manifest, p


def test_the_silent_fallback_canary_is_never_confirmed_and_is_flagged(ctx, no_leftovers):
    row = PROTOCOL.run_cell(ctx, cell("recall_fallback", "on"), 1)
    assert row.admitted, (row.discard_reason, row.error_detail)
    r = result(row)
    assert len(r["planted_ids"]) >= 1  # planting succeeded: only serving went to the default namespace
    assert not r["injection"]["confirmed"] and r["injection"]["log_lines"] >= 1, r
    [summary] = PROTOCOL.summary([{**vars(row)}])
    assert summary["mui"]["mui"] == 0 and summary["flags"], summary


def test_forget_that_misses_an_id_is_caught(ctx, no_leftovers):
    """The end-of-cell proof can fail: forgetting all but one planted id leaves that id counted."""
    arm = ctx.arms["recall"]
    c = cell("recall", "on")
    ns = namespace_of(c)
    memories = json.dumps([{"content": "alpha convention for widgets", "type": "wisdom"},
                           {"content": "beta convention for gadgets", "type": "belief"}]).encode()
    steps, store, _, proof = harness_step(ctx, c, arm, (), [("plant", fill(arm.planted.plant, ns), memories)])
    assert proof.passed and steps[0].exit_code == 0, steps
    ids = parse_ids(steps[0])
    assert len(ids) == 2
    steps, _, _, _ = harness_step(ctx, c, arm, store, [
        ("forget", fill(arm.planted.forget, ns), json.dumps({"ids": ids[:1]}).encode()),
        ("count", fill(arm.planted.count, ns), b"{}")])
    assert parse_ids(steps[1]) == ids[1:]


SKIP_ALL = b'''import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.skip(reason="nothing to see"))
'''


def test_a_workspace_conftest_cannot_skip_the_hidden_tests(engine, images, run_id, no_leftovers, tmp_path):
    """The agent's last move: the naive implementation plus a conftest.py at the workspace root that skips
    every test. hidden_tests/pytest.ini makes that folder pytest's root, so the hidden tests still run and
    fail; the control (the same attack with the pytest.ini removed) shows the attack works without it."""
    from dataclasses import replace

    from runner.env.archive import Entry
    from runner.env.bundle import tree_entries
    from runner.grading.checker import grade_in_container
    from runner.protocols.planted.protocol import check_inputs

    task = PROTOCOL.tasks(REPO)[task_id()]
    artifact = {e.path: e for e in tree_entries(task.fixture, "w")}
    artifact |= {e.path: e for e in tree_entries(task.reference("naive"), "w")}
    attack = [Entry(e.path.removeprefix("w/"), e.data, e.mode) for e in artifact.values()] + [Entry("conftest.py", SKIP_ALL)]
    spec = {"checker": {"command": [p.replace("{artifact}", "/artifact") for p in task.check], "timeout": 60}, "detector": None}

    def exit_code(t) -> int:
        grade, log, _ = grade_in_container(engine, images.checker.tag, check_inputs(t, attack), spec, 90,
                                           run_id=run_id, cell_id="conftest-attack")
        return grade["checker"]["exit"]

    assert exit_code(task) != 0
    unguarded = tmp_path / task.id
    shutil.copytree(task.root, unguarded)
    (unguarded / "hidden" / "hidden_tests" / "pytest.ini").unlink()
    assert exit_code(replace(task, root=unguarded)) == 0  # the attack is real without the defence
