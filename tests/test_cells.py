"""Cells in real containers: hardening, reference agents, tampering, the checker (links and other bounds: test_sandbox_bounds.py)."""

import io
import json
import tarfile

import pytest

from runner.agents import registry as agent_module
from runner.agents.base import Agent
from runner.agents.base import Transcript
from runner.env.archive import Entry, pack
from runner.env.bundle import AGENT_UID, MANIFEST, Bundle, build_bundle
from runner.digest import sha256_bytes
from runner.plan.grid import CellSpec
from runner.env.sandbox import Sandbox
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.protocols.registry import PROTOCOLS
from runner.exec.trial import TrialContext, agent_config, run_cell

from conftest import REPO, run_grid_in_process, write_grid

CODING = PROTOCOLS["coding"]


def test_sandbox_is_hardened_and_removed(engine, images, run_id, no_leftovers):
    bundle = build_bundle(load_all_tasks(REPO)["slug_ids"], load_all_arms(REPO)["bare"], {})
    with Sandbox(engine, images.sandbox.tag, run_id, "cell0", bundle_tar=bundle.tar, lifetime=60) as sandbox:
        assert json.loads(sandbox.verification_report(timeout=30).stdout)["manifest_sha256"] == bundle.digest
        attrs = engine.api.inspect_container(sandbox.container.id)
        host = attrs["HostConfig"]
        # its first process (it only sleeps) is root's without capabilities, so the agent's user cannot trace or signal it
        assert attrs["Config"]["User"] == "0:0"
        assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
        assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
        # Its only mount is its own tmpfs volume (no host folder), removed with it.
        assert [(m["Type"], m["Destination"], m["Driver"]) for m in attrs["Mounts"]] == [("volume", "/sandbox", "local")]
        volume = attrs["Mounts"][0]["Name"]
        assert set(host["Tmpfs"]) == {"/home/agent", "/tmp"}
        assert host["PidsLimit"] > 0 and host["Memory"] > 0 and host["NanoCpus"] > 0
        assert attrs["Config"]["Labels"]["memgrid.run"] == run_id
        assert sandbox.exec(["id", "-u"], timeout=10, workdir="/").stdout.strip() == "1000"
        assert sandbox.exec(["stat", "-c", "%u", "/proc/1"], timeout=10, workdir="/").stdout.strip() == "0"
        interfaces = sandbox.exec(["cat", "/proc/net/dev"], timeout=10, workdir="/").stdout
        assert [l.split(":")[0].strip() for l in interfaces.splitlines()[2:]] == ["lo"]
        assert sandbox.exec(["sleep", "5"], timeout=1, workdir="/").timed_out
        container_id = sandbox.container.id
    assert not engine.containers.list(all=True, ignore_removed=True, filters={"id": container_id})
    assert not [v for v in engine.volumes.list() if v.name == volume], "the sandbox's volume outlived it"


def test_floor_fails_and_ceiling_passes_on_every_task(engine, images, project, tmp_path, run_id, no_leftovers):
    # One arm: what floor and ceiling write does not depend on it; claude_md's, since it places a file in the workspace.
    grid = write_grid(tmp_path / "grid.yaml", arms=("claude_md",))
    summary, rows = run_grid_in_process(engine, images, project, tmp_path / "runs", run_id, grid)
    tasks = set(load_all_tasks(project))
    assert len(rows) == summary.total == len(tasks) * 2
    assert all(r["admitted"] and r["final"] for r in rows), [r["error_detail"] for r in rows]
    for r in rows:
        assert r["checker_passed"] is (r["agent"] == "ceiling"), (r["task"], r["agent"], r["checker_detail"])
    assert {r["task"] for r in rows} == tasks
    cell_dir = tmp_path / "runs" / run_id / "cells" / rows[0]["cell_id"]
    proofs = json.loads((cell_dir / "proof.json").read_text())["proofs"]
    assert [p["name"] for p in proofs] == ["bundle_verified", "not_oom_killed", "agent_ended"]
    assert all(p["passed"] for p in proofs)
    assert (tmp_path / "runs" / run_id / "ledger.parquet").stat().st_size > 0


@pytest.fixture
def ctx(engine, images, project, tmp_path, run_id):
    return TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(project), load_all_arms(project),
                        protocol=CODING)


def one_cell(agent="ceiling", task="slug_ids", arm="claude_md") -> CellSpec:
    return CellSpec(task, arm, 0, "present", agent, f"{agent}-{task}", 0)


def rebuilt(bundle: Bundle, edit, fix_manifest: bool) -> Bundle:
    """The same bundle with one file changed; optionally with a manifest re-written to match."""
    with tarfile.open(fileobj=io.BytesIO(bundle.tar)) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    name = next(p for p in sorted(files) if p.startswith("workspace/") and p.endswith(".py"))
    files[name] = edit(files[name])
    if fix_manifest:
        files[MANIFEST] = "".join(f"{sha256_bytes(d)}  {p}\n" for p, d in sorted(files.items()) if p != MANIFEST).encode()
    tar_bytes = pack([Entry(p, d) for p, d in files.items()], uid=AGENT_UID, gid=AGENT_UID)
    return Bundle(tar_bytes, bundle.digest, bundle.manifest, bundle.files)


@pytest.mark.parametrize("fix_manifest", [False, True], ids=["file-edited", "file-and-manifest-edited"])
def test_tampered_bundle_is_discarded(ctx, fix_manifest, no_leftovers):
    cell = one_cell()
    honest = build_bundle(ctx.tasks[cell.task], ctx.arms[cell.arm], agent_config(cell, ctx.arms[cell.arm]))
    tampered = rebuilt(honest, lambda b: b + b"\n# planted\n", fix_manifest)
    row = run_cell(ctx, cell, 1, bundle=tampered)
    assert not row.admitted and row.discard_reason == "bundle_digest_mismatch"
    assert row.checker_passed is None, "a discarded cell must not be scored"
    proof = json.loads(row.gate_proofs)[0]
    assert proof["name"] == "bundle_verified" and not proof["passed"]
    assert ("manifest sha256" in proof["detail"]) is fix_manifest
    events = (ctx.run_dir / "cells" / cell.cell_id / "transcript.jsonl").read_text()
    assert "the agent was not started" in events
    honest_row = run_cell(ctx, cell, 2, bundle=honest)  # the same path admits the untouched bundle
    assert honest_row.admitted and honest_row.checker_passed


class ProbeAgent(Agent):
    """A test agent that runs shell commands in the sandbox and records what they print."""

    name = "probe"
    commands: list[list[str]] = []

    def run(self, sandbox, prompt):
        transcript = Transcript(agent="probe", model=None)
        for cmd in self.commands:
            result = sandbox.exec(cmd, timeout=20)
            transcript.add("exec", cmd=cmd, exit_code=result.exit_code, stdout=result.stdout)
        return transcript


@pytest.fixture
def probe(monkeypatch):
    monkeypatch.setitem(agent_module.AGENTS, "probe", ProbeAgent)
    return ProbeAgent


def test_oracle_never_enters_the_sandbox(ctx, probe, no_leftovers, monkeypatch):
    oracle_file = next(p for p in ctx.tasks["slug_ids"].oracle.rglob("*") if p.is_file() and p.suffix == ".json")
    needle = max(oracle_file.read_text().splitlines(), key=len).strip()  # a whole line: oracle-only
    search = ["grep", "-rlF", "--", needle, "/sandbox", "/home", "/tmp"]
    control = ["sh", "-c", 'printf "%s" "$1" > /tmp/control', "sh", needle]  # proves the search can find it
    monkeypatch.setattr(probe, "commands", [search, control, search])
    row = run_cell(ctx, one_cell("probe"), 1)
    events = [json.loads(l) for l in (ctx.run_dir / "cells" / "probe-slug_ids" / "transcript.jsonl").open()]
    first, _, again = [e for e in events if e["type"] == "exec"]
    assert first["exit_code"] == 1 and first["stdout"] == "", "oracle content found in the sandbox"
    assert again["exit_code"] == 0 and again["stdout"].strip() == "/tmp/control"
    assert row.admitted


def test_checker_cannot_write_artifact_or_oracle(ctx, project, no_leftovers):
    from dataclasses import replace

    from runner.plan.spec import CheckerSpec

    script = ("for d in /artifact /oracle; do touch $d/written 2>/dev/null && { echo wrote $d; exit 1; }; "
              "touch $d/records/x 2>/dev/null && { echo wrote in $d; exit 1; }; done; "
              "test -f /artifact/records/__init__.py && test -f /oracle/check.py && echo read-only")
    task = ctx.tasks["slug_ids"]
    ctx.tasks["slug_ids"] = replace(task, checker=CheckerSpec(("sh", "-c", script), 30))
    row = run_cell(ctx, one_cell("floor"), 1)
    assert row.checker_passed, row.checker_detail
    assert "read-only" in (ctx.run_dir / "cells" / "floor-slug_ids" / "checker.log").read_text()


def test_checker_timeout_is_a_recorded_failure(ctx, no_leftovers):
    from dataclasses import replace

    from runner.plan.spec import CheckerSpec

    ctx.tasks["slug_ids"] = replace(ctx.tasks["slug_ids"], checker=CheckerSpec(("sleep", "60"), 1))
    row = run_cell(ctx, one_cell("ceiling"), 1)
    assert row.checker_passed is False and row.error_class == "checker_timeout"
    assert "timed out after 1s" in row.checker_detail and row.checker_seconds < 30


def test_a_checker_container_stopped_before_its_start_leaves_nothing(engine, images, run_id, no_leftovers):
    """A coding cell starts its checker's container ahead of need, on a thread of its own; a cell that ends
    first (discarded, failed, cancelled) stops it, and a container created after that is removed at once."""
    from runner.grading.checker import CheckerContainer

    checker = CheckerContainer(engine, images.checker.tag, {"checker": {"command": ["true"], "timeout": 5}},
                               run_id=run_id, cell_id="checker-stopped", lifetime=60)
    checker.stop()
    with pytest.raises(RuntimeError, match="stopped before it started"):
        checker.start()
    assert checker.container is None


@pytest.mark.parametrize("verifier, reason", [("sleep 5; exec memgrid-verify-bundle /sandbox", "verifier_timeout"),
                                               ("kill -9 $$", "verifier_failed")], ids=["slow", "killed"])
def test_a_verifier_that_gives_no_report_is_memgrids_fault_retried_until_admitted(engine, images, tmp_path, run_id,
                                                                                  no_leftovers, monkeypatch, verifier,
                                                                                  reason):
    """Issue 74: on a busy machine the bundle verifier once printed nothing, and the cell was discarded
    bundle_digest_mismatch, the proof that means tampering, though no digest was read. A verifier past its time, or
    killed before its line, is named for what it is, the cell is run again in the run, and the next attempt (the
    verifier as shipped) is admitted. A real mismatch is still one (test_tampered_bundle_is_discarded)."""
    from runner.exec import trial

    monkeypatch.setattr(trial, "VERIFY_SECONDS", 2)
    real, calls = Sandbox.verification_report, []

    def first_one_fails(self, timeout):
        calls.append(timeout)
        if len(calls) == 1:
            return self.exec(["sh", "-c", verifier], timeout=max(1, int(timeout)), workdir="/sandbox")
        return real(self, timeout)

    monkeypatch.setattr(Sandbox, "verification_report", first_one_fails)
    grid = write_grid(tmp_path / "grid.yaml", tasks=["slug_ids"], agents=["ceiling"])
    summary, rows = run_grid_in_process(engine, images, REPO, tmp_path / "runs", run_id, grid, concurrency=1)
    attempts = sorted(rows, key=lambda r: r["attempt"])
    assert [(r["attempt"], r["final"], r["admitted"], r["discard_reason"]) for r in attempts] == [
        (1, False, False, reason), (2, True, True, None)], [(r["attempt"], r["error_detail"]) for r in attempts]
    assert "printed no report" in attempts[0]["error_detail"] or "ran past 2s" in attempts[0]["error_detail"]
    assert attempts[1]["checker_passed"]


def test_a_verifier_run_whose_output_the_engine_lost_is_read_again_in_the_same_attempt(ctx, no_leftovers, monkeypatch):
    """Issue 74, the cause: under load the engine returned a verifier's run with no output (exit 0 in 0.3 s;
    benchmarks/exec_output_loss.py reproduces it). Such a run is the engine's loss, not the verifier's failure: it is
    read again at once, the first attempt is admitted and the proof says so."""
    real, calls = Sandbox.verification_report, []

    def first_output_lost(self, timeout):
        calls.append(timeout)
        if len(calls) == 1:  # the verifier runs to its end (exit 0) and its line never reaches the controller
            return self.exec(["sh", "-c", "memgrid-verify-bundle /sandbox >/dev/null"], timeout=int(timeout),
                             workdir="/sandbox")
        return real(self, timeout)

    monkeypatch.setattr(Sandbox, "verification_report", first_output_lost)
    row = run_cell(ctx, one_cell("ceiling"), 1)
    assert row.admitted and row.checker_passed, (row.discard_reason, row.error_detail)
    verified = next(p for p in json.loads(row.gate_proofs) if p["name"] == "bundle_verified")
    assert verified["passed"] and "no output of 1 earlier run, read again" in verified["detail"]


def test_a_sandbox_started_ahead_serves_only_its_own_cell_and_bundle(ctx, no_leftovers):
    """The local executor starts the next cell's sandbox while an earlier cell's checker runs. The cell takes it
    only if it holds exactly the bundle the cell would start with: bytes, not just the digest, so a tampered
    bundle is still verified in a sandbox of its own (and discarded), never hidden behind the honest one."""
    from runner.exec.trial import SandboxesAhead

    cell = one_cell()
    honest = build_bundle(ctx.tasks[cell.task], ctx.arms[cell.arm], agent_config(cell, ctx.arms[cell.arm]))
    ctx.ahead = SandboxesAhead(ctx, lambda: cell)
    try:
        ctx.ahead.released(one_cell("floor"))  # an earlier cell handed off its sandbox
        row = run_cell(ctx, cell, 1, bundle=rebuilt(honest, lambda b: b + b"\n# planted\n", fix_manifest=False))
        assert not row.admitted and row.discard_reason == "bundle_digest_mismatch"
        assert "started_ahead" not in json.loads(row.timings)
        ctx.ahead.released(one_cell("floor"))
        row = run_cell(ctx, cell, 2)
        assert row.admitted and row.checker_passed and json.loads(row.timings)["started_ahead"] is True
    finally:
        ctx.ahead.close()


def test_sandboxes_started_ahead_that_no_cell_takes_are_removed(ctx, engine, run_id, no_leftovers):
    """A run that stops (Ctrl-C, its budget) leaves the next cell's sandbox unused: close removes it, also while
    its start is under way; one that is gone (its lifetime over, removed) is not taken, the cell starts its own."""
    from runner.env.containers import RUN_LABEL
    from runner.exec.trial import SandboxesAhead

    cell = one_cell()
    ctx.ahead = SandboxesAhead(ctx, lambda: cell)
    ctx.ahead.released(one_cell("floor"))
    ctx.ahead.close()  # at once: the start is still under way
    assert not engine.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})
    ctx.ahead = SandboxesAhead(ctx, lambda: cell)
    try:
        ctx.ahead.released(one_cell("floor"))
        assert ctx.ahead.bundle(cell) is not None  # started
        for c in engine.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}):
            engine.api.remove_container(c["Id"], force=True, v=True)
        row = run_cell(ctx, cell, 1)
        assert row.admitted and row.checker_passed and "started_ahead" not in json.loads(row.timings)
    finally:
        ctx.ahead.close()


def test_a_removal_answered_409_returns_only_once_the_container_is_gone(engine, images, run_id, no_leftovers):
    """The engine answers 409 to a removal while another removal of the same container is under way (another
    thread's, the run's sweep); that one can still fail or take its time, so the container is gone only when the
    engine no longer knows it. Here the engine's 409 is stood in for by the first call and the other removal is a
    real one that starts a moment later."""
    import threading

    import docker.errors

    from runner.env.containers import RUN_LABEL, remove_quietly

    real = engine.containers.create(images.base.tag, ["sleep", "60"], labels={RUN_LABEL: run_id})

    class UnderWay:  # the container as a second remover sees it: the engine says someone is already on it
        id, client = real.id, engine

        def remove(self, **kwargs):
            threading.Timer(1.0, real.remove, kwargs={"force": True, "v": True}).start()
            raise docker.errors.APIError("removal of container is already in progress", response=type(
                "Response", (), {"status_code": 409, "reason": "Conflict", "url": ""})())

    remove_quietly(UnderWay())
    with pytest.raises(docker.errors.NotFound):
        engine.api.inspect_container(real.id)
