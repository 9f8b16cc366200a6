"""Two-session cells in real containers: the store is the only thing that passes, by digest; the
stubs score as the protocol says they must; step 2 cannot read step 1's files or environment."""

import json
from pathlib import Path

import pytest

from runner.agents.command import CommandSpec
from runner.env.sandbox import MIB
from runner.exec import trial
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.protocols.registry import PROTOCOLS
from runner.protocols.two_session import cases as casegen
from runner.protocols.two_session.protocol import env_proof
from runner.exec.trial import TrialContext

from conftest import REPO

STUBS = REPO / "runner" / "protocols" / "two_session" / "stubs"
PROTOCOL = PROTOCOLS["two-session"]

# Step 1 leaves a marker everywhere it can write; step 2 looks for it everywhere it can read and
# prints what it found as its answer. Only what the arm's store carries may be found.
PROBE = r'''
import os, sys
MARK = "memgrid-step1-" + "marker"  # split, so the probe's own source is not a find
if os.environ["MEMGRID_PHASE"] == "step1":
    for d in ("/sandbox/workspace", "/tmp", "/home/agent", "/sandbox", "/sandbox/agent", "/sandbox/store"):
        try:
            with open(os.path.join(d, "left-by-step1.txt"), "w") as f:
                f.write(MARK + " " + d + "\n")
        except OSError:
            pass
    if "MEMGRID_STORE" in os.environ:  # and through the arm's write path, when it has one
        with open(os.path.join(os.environ["MEMGRID_STORE"], "NOTES.md"), "a") as f:
            f.write(MARK + "\n")
    print("left markers")
    sys.exit(0)
found = []
for root in ("/sandbox", "/tmp", "/home", "/var/tmp"):
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                with open(os.path.join(dirpath, name), errors="replace") as f:
                    if MARK in f.read(1 << 20):
                        found.append(os.path.join(dirpath, name))
            except OSError:
                pass
found += [k for k, v in os.environ.items() if MARK in v]
print("found:", " ".join(sorted(found)) or "nothing")
'''


# Step 1 leaves in the store what cannot be carried: a link out of it and a named pipe beside its notes (argv
# "links"), or notes past the store cap (argv "flood" with a size over the test's cap).
HOARDER = r'''
import os, sys
store = os.environ["MEMGRID_STORE"]
if os.environ["MEMGRID_PHASE"] == "step1":
    with open(os.path.join(store, "NOTES.md"), "a") as f:
        f.write("x" * int(sys.argv[1]) + "\n")
    if sys.argv[2] == "links":
        os.symlink("/etc/passwd", os.path.join(store, "passwd"))
        os.mkfifo(os.path.join(store, "pipe"))
print("done")
'''


def ctx_for(engine, images, tmp_path, run_id, agents: dict[str, CommandSpec]) -> TrialContext:
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(REPO), load_all_arms(REPO),
                       command_agents=agents, protocol=PROTOCOL)
    ctx.run_dir.mkdir(parents=True)
    return ctx


def stub(name: str) -> CommandSpec:
    return CommandSpec(name, ("python3", "-I", f"{name}.py"), (STUBS / f"{name}.py", STUBS / "ledgerlib.py"))


def cell(case: casegen.Case, arm: str, agent: str) -> CellSpec:
    return CellSpec(case.id, arm, 0, case.derivation, agent, f"{agent}-{arm}-{case.id}", 0)


def test_step2_reads_only_what_the_store_carries(engine, images, tmp_path, run_id, no_leftovers):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    ctx = ctx_for(engine, images, tmp_path, run_id, {"probe": CommandSpec("probe", ("python3", "-I", "probe.py"), (probe,))})
    case = casegen.generate_cases(1)[0]
    for arm in ("bare", "notes"):
        row = PROTOCOL.run_cell(ctx, cell(case, arm, "probe"), 1)
        assert row.admitted and row.final, row.error_detail
        output = json.loads((ctx.run_dir / "cells" / row.cell_id / "step2" / "transcript.jsonl").read_text()
                            .splitlines()[2])["tail"]
        if arm == "bare":  # nothing survives: not the workspace, /tmp, home, the agent folder, nor a store
            assert "found: nothing" in output, output
        else:  # the control: the probe does see what the arm's write path carried, and nothing else
            assert output.strip().splitlines()[-1] == "found: /sandbox/store/NOTES.md", output


def test_a_store_tampered_between_the_sessions_discards_the_cell(engine, images, tmp_path, run_id, no_leftovers):
    ctx = ctx_for(engine, images, tmp_path, run_id, {"ceiling": stub("ceiling")})
    case = casegen.generate_cases(1)[0]

    def tamper(cell_dir: Path) -> None:
        saved = cell_dir / "step1" / "store.tar"
        data = bytearray(saved.read_bytes())
        at = data.index(casegen.answer(case).encode())
        data[at] = ord("9") if data[at] != ord("9") else ord("8")  # a different remembered value, same size
        saved.write_bytes(bytes(data))

    honest = PROTOCOL.run_cell(ctx, cell(case, "notes", "ceiling"), 1)
    assert honest.admitted and honest.checker_passed, honest.checker_detail
    tampered = PROTOCOL.run_cell(ctx, CellSpec(case.id, "notes", 0, case.derivation, "ceiling", "tampered", 0), 1,
                                 between=tamper)
    assert not tampered.admitted and tampered.discard_reason == "store_digest_mismatch"
    assert tampered.checker_passed is None and tampered.outcome is None  # discarded, never scored
    proofs = json.loads(tampered.gate_proofs)
    assert [p for p in proofs if p["name"] == "store_carried"][0]["passed"] is False
    assert not (ctx.run_dir / "cells" / "tampered" / "step2" / "transcript.jsonl").exists(), "step 2 ran on a tampered store"


@pytest.mark.parametrize("agent,expected", [("ceiling", 1), ("unknown", 0), ("confabulate", 0), ("env_scan", 0),
                                            ("snoop", 0), ("shotgun", 0)])
def test_stubs_score_as_the_protocol_requires(engine, images, tmp_path, run_id, no_leftovers, agent, expected):
    ctx = ctx_for(engine, images, tmp_path, run_id, {agent: stub(agent)})
    for case in casegen.generate_cases(5):  # one case of each derivation
        row = PROTOCOL.run_cell(ctx, cell(case, "notes", agent), 1)
        assert row.admitted, (row.discard_reason, row.error_detail)
        assert json.loads(row.result)["score"] == expected, (case.derivation, row.result)


def test_the_environment_scrub_catches_a_variable_holding_the_answer():
    assert env_proof("HOME=/home/agent\nPATH=/usr/bin\n", ["12345.67"]).passed
    leaked = env_proof("HOME=/home/agent\nHINT=it was 12345.67\n", ["12345.67"])
    assert not leaked.passed and "HINT" in leaked.detail


def recall_ctx(engine, images, root, tmp_path, run_id) -> TrialContext:
    from runner.arms.ingest import ensure_empty_stores
    from runner.env.images import ensure_arm_image

    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(root), load_all_arms(root),
                       protocol=PROTOCOL)
    ctx.run_dir.mkdir(parents=True)
    ctx.images_by_arm["recall"] = ensure_arm_image(engine, root / "arms" / "recall", images.sandbox, log=lambda m: None)
    ctx.stores.update(ensure_empty_stores(engine, [ctx.arms["recall"]], ctx.run_dir, ctx.images_by_arm, run_id=run_id,
                                          log=lambda m: None))
    return ctx


def test_an_arm_whose_write_tools_never_arrive_is_discarded_not_scored(engine, images, project, tmp_path, run_id,
                                                                       no_leftovers):
    """recall without its write tools (the server started read-only) cannot have carried anything: the
    gate discards the cell instead of scoring the arm 0."""
    arm_yaml = project / "arms" / "recall" / "arm.yaml"
    arm_yaml.write_text(arm_yaml.read_text().replace('  write_command: ["recall-server", "--store", "{store}", "--writable"]\n', ""))
    ctx = recall_ctx(engine, images, project, tmp_path, run_id)
    case = casegen.generate_cases(1)[0]
    row = PROTOCOL.run_cell(ctx, cell(case, "recall", "reader"), 1)
    assert not row.admitted and row.discard_reason == "required_tools_missing", (row.discard_reason, row.error_detail)
    assert row.checker_passed is None


def events(ctx, row, phase: str) -> list[dict]:
    return [json.loads(line) for line in (ctx.run_dir / "cells" / row.cell_id / phase / "transcript.jsonl").open()]


def test_what_step1_leaves_in_the_store_that_cannot_be_carried_is_its_own_doing(engine, images, tmp_path, run_id,
                                                                                 no_leftovers, monkeypatch):
    """A link and a pipe in the store are left out and listed, and the cell goes on (it was a harness_error,
    rerun on resume, where the agent could do it again); a store past the cap is not read into the controller,
    and the cell is scored not recalled with no step 2 (nothing to carry), its ending a resource_limit."""
    monkeypatch.setattr(trial, "STORE_CAP_BYTES", MIB)
    hoarder = tmp_path / "hoarder.py"
    hoarder.write_text(HOARDER)
    agents = {"links": CommandSpec("links", ("python3", "-I", "hoarder.py", "10", "links"), (hoarder,)),
              "flood": CommandSpec("flood", ("python3", "-I", "hoarder.py", str(2 * MIB), "flood"), (hoarder,))}
    ctx = ctx_for(engine, images, tmp_path, run_id, agents)
    case = casegen.generate_cases(1)[0]
    links = PROTOCOL.run_cell(ctx, cell(case, "notes", "links"), 1)
    assert links.admitted and links.final and links.discard_reason is None, (links.discard_reason, links.error_detail)
    [dropped] = [e for e in events(ctx, links, "step1") if e["type"] == "store_dropped"]
    assert sorted(dropped["files"]) == ["passwd (symlink)", "pipe (fifo)"], dropped
    assert events(ctx, links, "step2") and links.outcome == "not_recalled"
    flood = PROTOCOL.run_cell(ctx, cell(case, "notes", "flood"), 1)
    assert flood.admitted and flood.final and flood.checker_passed is False, (flood.discard_reason, flood.error_detail)
    assert flood.outcome == "not_recalled" and flood.error_class == "resource_limit", flood.error_class
    assert "over the cap of 1 MiB" in flood.error_detail and "over the cap of 1 MiB" in flood.checker_detail
    assert not (ctx.run_dir / "cells" / flood.cell_id / "step2" / "transcript.jsonl").exists()


def test_a_store_step1_damaged_is_scored_store_unreadable_and_a_server_failing_alone_is_discarded(
        engine, images, project, tmp_path, run_id, no_leftovers, monkeypatch):
    """Issue 73: a step-1 agent that overwrites recall's store with random bytes makes step 2's server fail to start.
    The same server starts on the store step 1 began with (the control), so the failure is the agent's doing: scored
    not recalled, `store_unreadable`, never discarded. A server that fails on its own (its command `false`) fails the
    control too: discarded mcp_server_failed, as the canaries require."""
    from runner.agents import registry
    from runner.agents.reference import ReaderAgent

    class Vandal(ReaderAgent):
        """The reader, remembering as it does, then writing random bytes over the store's receipt in step 1."""
        name = "vandal"

        def run(self, sandbox, prompt):
            transcript = super().run(sandbox, prompt)
            if self.setup.channel.name == "remember":
                sandbox.exec(["sh", "-c", "head -c 4096 /dev/urandom > /sandbox/store/store.json"], timeout=30,
                             workdir="/sandbox")
            return transcript

    monkeypatch.setitem(registry.AGENTS, "vandal", Vandal)
    case = casegen.generate_cases(1)[0]
    ctx = recall_ctx(engine, images, REPO, tmp_path, run_id)
    damaged = PROTOCOL.run_cell(ctx, cell(case, "recall", "vandal"), 1)
    assert damaged.admitted and damaged.outcome == "not_recalled", (damaged.discard_reason, damaged.error_detail)
    assert damaged.error_class == "store_unreadable" and damaged.checker_passed is False
    proofs = {(p["phase"], p["name"]): p["passed"] for p in json.loads(damaged.gate_proofs)}
    assert proofs[("step2", "mcp_connected")] is False and proofs[("control", "arm_works_on_start_store")] is True

    # A server that starts in step 1 and never in step 2, whatever its store (it fails wherever a recall key waits).
    arm_yaml = project / "arms" / "recall" / "arm.yaml"
    arm_yaml.write_text(arm_yaml.read_text().replace(
        'write_command: ["recall-server", "--store", "{store}", "--writable"]',
        'write_command: ["sh", "-c", "test -f /sandbox/.reader/recall.json && exit 1; '
        'exec recall-server --store {store} --writable"]'))
    ctx = recall_ctx(engine, images, project, tmp_path / "broken", run_id)
    broken = PROTOCOL.run_cell(ctx, cell(case, "recall", "reader"), 1)
    assert not broken.admitted and broken.discard_reason == "mcp_server_failed", (broken.discard_reason,
                                                                                   broken.error_detail)
    proofs = {(p["phase"], p["name"]): p["passed"] for p in json.loads(broken.gate_proofs)}
    assert proofs[("control", "arm_works_on_start_store")] is False
