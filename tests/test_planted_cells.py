"""Planted cells in real containers: memories go in through recall's own write API and come out by exact
id; the switches reach the arm's server; injection is confirmed from the arm's own log; the judge's oracle
(hidden/) never enters the sandbox, never lands in the workspace graded, and stays out of reach of the
artifact code the judge runs; the silent-fallback canary earns no credit and is flagged."""

import io
import json
import tarfile

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
    """On: the planted memory is served (confirmed in the arm's log), the solution applied, the task's judge
    passes it, every planted id forgotten. Off (the kill switch, over a namespace planted with nothing, so no
    shell in the session can read a memory either) and every lane ablated: nothing served, the naive
    implementation fails the judge."""
    task = PROTOCOL.tasks(REPO)[task_id()]
    rows = {c: PROTOCOL.run_cell(ctx, cell("recall", c), 1) for c in ("on", "off", "ablate:all")}
    for condition, row in rows.items():
        assert row.admitted and row.final, (condition, row.discard_reason, row.error_detail, row.gate_proofs)
        r = result(row)
        assert len(r["planted_ids"]) == (0 if condition == "off" else len(task.memories)), (condition, r["planted_ids"])
        assert r["forgotten"] == {"ok": True, "left": [], "forget_exit": 0}, condition
    on, off, ablated = (result(rows[c]) for c in ("on", "off", "ablate:all"))
    assert rows["on"].checker_passed and on["injection"]["confirmed"], on
    assert set(on["injection"]["planted_ids_served"]) <= set(on["planted_ids"])
    assert not rows["off"].checker_passed and not off["injection"]["confirmed"], off
    assert off["injection"]["log_lines"] >= 1  # the server ran and logged; it served nothing planted
    # The off session's store: the plant step counted its namespace empty (what the sandbox held).
    plant = json.loads((ctx.run_dir / "cells" / rows["off"].cell_id / "plant.json").read_text())
    assert [json.loads(s["stdout"].strip().splitlines()[-1])["ids"] for s in plant["steps"]] == [[], []], plant
    assert not rows["ablate:all"].checker_passed and not ablated["injection"]["confirmed"], ablated
    # Each cell planted into a namespace of its own.
    assert len({r["namespace"] for r in (on, off, ablated)}) == 3


def test_the_oracle_never_reaches_the_sandbox(ctx, no_leftovers):
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


def test_check_inputs_keep_the_oracle_apart_from_the_workspace():
    """/artifact is the workspace exactly as the agent left it, readable by everyone; hidden/ is at /oracle
    alone, owned by root and the judge's group and unreadable by any other user (the artifact's)."""
    from runner.env.archive import Entry
    from runner.grading.checker import JUDGE_GID
    from runner.protocols.planted.protocol import check_command, check_inputs

    task = PROTOCOL.tasks(REPO)[task_id()]
    artifact = [Entry("pkg/mod.py", b"x = 1\n"), Entry("check.py", b"raise SystemExit(0)\n")]
    with tarfile.open(fileobj=io.BytesIO(check_inputs(task, artifact))) as tar:
        members = {m.name: m for m in tar.getmembers()}
        data = {name: tar.extractfile(m).read() for name, m in members.items() if m.isfile()}
    hidden = sorted(p.relative_to(task.hidden).as_posix() for p in task.hidden.rglob("*") if p.is_file())
    assert sorted(n.removeprefix("artifact/") for n, m in members.items() if n.startswith("artifact/") and m.isfile()) \
        == ["check.py", "pkg/mod.py"]
    assert data["artifact/check.py"] == b"raise SystemExit(0)\n"  # the agent's own file, not the judge
    assert sorted(n.removeprefix("oracle/") for n, m in members.items() if n.startswith("oracle/") and m.isfile()) == hidden
    assert "check.py" in hidden and data["oracle/check.py"] == (task.hidden / "check.py").read_bytes()
    for name, m in members.items():
        if name == "oracle" or name.startswith("oracle/"):
            assert (m.uid, m.gid) == (0, JUDGE_GID) and m.mode & 0o007 == 0, (name, m.uid, m.gid, oct(m.mode))
    assert check_command(task) == ["python3", "/oracle/check.py", "/artifact"]


SKIP_ALL = b'''import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.skip(reason="nothing to see"))
'''
# Files a judge that ran in or from the workspace would pick up, each trying to end the check with exit 0.
STEERING = {
    "conftest.py": SKIP_ALL,
    "check.py": b'print("SUMMARY: 99/99 checks passed")\nraise SystemExit(0)\n',
    "memgrid_check.py": b"import os\nos._exit(0)\n",
    "sitecustomize.py": b"import os\nos._exit(0)\n",
    "usercustomize.py": b"import os\nos._exit(0)\n",
}


def workspace(task, option: str, extra: dict[str, bytes] = {}) -> list:
    from runner.env.archive import Entry
    from runner.env.bundle import tree_entries

    files = {e.path: e for e in tree_entries(task.fixture, "w")}
    files |= {e.path: e for e in tree_entries(task.reference(option), "w")}
    return [Entry(e.path.removeprefix("w/"), e.data, e.mode) for e in files.values()] + \
        [Entry(path, data) for path, data in extra.items()]


def judged(engine, images, run_id, task, inputs: bytes, cell: str) -> int:
    from runner.grading.checker import GRACE_SECONDS, grade_in_container
    from runner.protocols.planted.protocol import check_command

    spec = {"checker": {"command": check_command(task), "timeout": task.check_seconds}, "detector": None}
    grade, log, _ = grade_in_container(engine, images.checker.tag, inputs, spec, task.check_seconds + GRACE_SECONDS,
                                       run_id=run_id, cell_id=cell)
    assert grade is not None, log
    return grade["checker"]["exit"]


def test_files_left_in_the_workspace_cannot_steer_the_judge(engine, images, run_id, no_leftovers):
    """The agent's last move: the naive implementation plus files that would take over a judge run in or
    from the workspace (a conftest.py that skips every test, a check.py and a memgrid_check.py of its own,
    site hooks that exit 0). The judge is hidden/check.py at /oracle and hidden/ is never laid over the
    workspace, so none of them runs in its place: the naive still fails; the control, the solution with
    the same files, still passes (the files break nothing)."""
    from runner.protocols.planted.protocol import check_inputs

    task = PROTOCOL.tasks(REPO)[task_id()]
    assert judged(engine, images, run_id, task, check_inputs(task, workspace(task, "naive", STEERING)), "steer-naive") != 0
    assert judged(engine, images, run_id, task, check_inputs(task, workspace(task, "informed", STEERING)), "steer-solution") == 0


# pl_attendee_csv's export_attendees, written to steal: it reads every file of the judge's it can find
# (/oracle, and next to the workspace, where the old layout laid hidden/) and every local of its callers'
# frames, and writes the file the way they say (a BOM, ';'); with nothing found, the naive file.
ATTACKED = "pl_attendee_csv"
STEAL = b'''"""Files organisers download from the admin page."""

import csv
import os
import sys

COLUMNS = ("name", "email", "ticket")


def stolen():
    seen = []
    workspace = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for root in ("/oracle", workspace, os.path.join(workspace, "hidden_tests")):
        try:
            names = os.listdir(root)
        except OSError:
            names = ["check.py", "observe.py", "test_convention.py"]
        for name in names:
            try:
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as fh:
                    seen.append(fh.read())
            except OSError:
                pass
    frame = sys._getframe(1)
    while frame is not None:
        seen.append(repr(frame.f_locals))
        frame = frame.f_back
    return "\\n".join(seen)


def export_attendees(attendees, path):
    text = stolen()
    bom = "xef" in text and "bom" in text.lower()
    semicolon = "delimiter=\';\'" in text or \'delimiter=";"\' in text
    with open(path, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as f:
        writer = csv.writer(f, delimiter=";" if semicolon else ",")
        writer.writerow(COLUMNS)
        for attendee in attendees:
            writer.writerow([attendee[c] for c in COLUMNS])
    return len(attendees)
'''


def test_artifact_code_cannot_read_the_oracle(engine, images, run_id, no_leftovers):
    """The graded function itself steals (STEAL): it fails, because check.py runs it only through
    memgrid_check, as a user that cannot read /oracle, in a process of its own that holds the inputs alone.
    The control lays hidden/ over the workspace as the old layout did: the same code then reads the judge's
    check.py and passes, so the attack is real and the oracle's placement is what stops it."""
    from runner.env.archive import Entry
    from runner.env.bundle import tree_entries
    from runner.grading.checker import grading_inputs
    from runner.protocols.planted.protocol import check_inputs

    task = PROTOCOL.tasks(REPO)[ATTACKED]
    attack = [e for e in workspace(task, "naive") if e.path != "events/export.py"] + [Entry("events/export.py", STEAL)]
    assert judged(engine, images, run_id, task, check_inputs(task, attack), "steal") != 0
    laid_over = attack + [Entry(e.path.removeprefix("h/"), e.data, e.mode) for e in tree_entries(task.hidden, "h")]
    assert judged(engine, images, run_id, task, grading_inputs(laid_over, tree_entries(task.hidden, "oracle")),
                  "steal-control") == 0
