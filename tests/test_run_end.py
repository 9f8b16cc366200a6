"""A run ends with none of its containers and networks, even when a cell's own removal went wrong: the
local executor removes, at the run's end, whatever the engine still holds of the run, and names it.

Each test loses a removal on purpose and checks at the run's return, before any fixture cleans up."""

import threading
import time

import pytest

from runner.env.containers import CELL_LABEL, ROLE_LABEL, RUN_LABEL
from runner.env.sandbox import remove_network
from runner.exec import trial
from runner.exec.executors import local
from runner.grading.checker import CheckerContainer
from runner.grading.gate import GateProof

from conftest import run_grid_in_process, write_grid


def run_labelled(engine, run_id) -> tuple[list, list]:
    label = {"label": f"{RUN_LABEL}={run_id}"}
    return engine.api.containers(all=True, filters=label), engine.api.networks(filters=label)


def test_a_lost_checker_removal_is_made_at_the_runs_end(engine, images, project, tmp_path, run_id, no_leftovers,
                                                       monkeypatch, capfd):
    monkeypatch.setattr(CheckerContainer, "stop", lambda self: None)  # every cell's checker removal is lost
    grid = write_grid(tmp_path / "grid.yaml", tasks=["slug_ids"], agents=("floor",))
    summary, rows = run_grid_in_process(engine, images, project, tmp_path / "runs", run_id, grid)
    assert len(rows) == 1 and rows[0]["admitted"], rows
    assert run_labelled(engine, run_id) == ([], [])
    assert "removed at its end what its cells left: checker " in capfd.readouterr().err


def test_a_cells_network_left_with_a_member_is_removed_at_the_runs_end(engine, images, project, tmp_path, run_id,
                                                                        no_leftovers, monkeypatch, capfd):
    """A network with a container still on it (what a failed sidecar removal leaves): the member goes, then the
    network, which the engine refuses while the member's endpoint is active."""
    real_run_cell = local.run_cell

    def run_cell_leaving_a_network(ctx, cell, attempt):
        labels = {RUN_LABEL: run_id, CELL_LABEL: cell.cell_id}
        network = engine.networks.create(f"memgrid-test-{run_id}", driver="bridge", internal=True,
                                         labels={**labels, ROLE_LABEL: "network"})
        engine.containers.run(images.base.tag, ["sleep", "300"], detach=True, network=network.name,
                              labels={**labels, ROLE_LABEL: "gateway"})
        return real_run_cell(ctx, cell, attempt)

    monkeypatch.setattr(local, "run_cell", run_cell_leaving_a_network)
    grid = write_grid(tmp_path / "grid.yaml", tasks=["slug_ids"], agents=("floor",))
    run_grid_in_process(engine, images, project, tmp_path / "runs", run_id, grid)
    assert run_labelled(engine, run_id) == ([], [])
    err = capfd.readouterr().err
    assert "gateway " in err and f"network memgrid-test-{run_id}" in err, err


def test_a_network_whose_member_the_engine_still_lists_is_removed(engine, images, run_id, no_leftovers):
    """The engine refuses to remove a network while it lists an endpoint on it (403), as it can for a moment
    after that member's removal: the endpoint is disconnected by force and the removal made."""
    labels = {RUN_LABEL: run_id}
    network = engine.networks.create(f"memgrid-test-{run_id}", driver="bridge", internal=True, labels=labels)
    member = engine.containers.run(images.base.tag, ["sleep", "300"], detach=True, network=network.name, labels=labels)
    try:
        remove_network(engine, network.id, time.monotonic() + 30)
        assert run_labelled(engine, run_id)[1] == []
        member.reload()
        assert member.attrs["NetworkSettings"]["Networks"] == {}
    finally:
        member.remove(force=True)


def test_a_checker_still_starting_when_its_cell_ends_is_gone_when_the_run_returns(engine, images, project, tmp_path,
                                                                                  run_id, no_leftovers, monkeypatch):
    """A cell that ends before its checker's container has started (discarded here; on a loaded engine a start
    can take longer than the session) leaves that container's removal behind it, and the removal first waits for
    the start. The run's end waits for both: a start that outlasts the bound on a removal alone (shrunk here to
    1 s, as on an engine slow enough to take a minute) still creates nothing after the run returned."""
    monkeypatch.setattr(trial, "REMOVAL_SECONDS", 1)
    monkeypatch.setattr(trial, "bundle_verification", lambda sandbox, bundle: GateProof("bundle_verified", False, "(test)"))
    real_start, start_ended = CheckerContainer.start, threading.Event()

    def slow_start(self):
        time.sleep(4)
        try:
            real_start(self)
        finally:
            start_ended.set()

    monkeypatch.setattr(CheckerContainer, "start", slow_start)
    grid = write_grid(tmp_path / "grid.yaml", tasks=["slug_ids"], agents=("floor",))
    summary, rows = run_grid_in_process(engine, images, project, tmp_path / "runs", run_id, grid)
    assert len(rows) == 1 and rows[0]["discard_reason"] == "bundle_digest_mismatch", rows
    assert start_ended.wait(30), "the checker's start did not end"
    assert run_labelled(engine, run_id) == ([], [])


def test_a_failed_container_removal_still_lets_the_others_end_and_the_network_go():
    """The order a phase's teardown keeps when a member's removal fails: the other removals end, the network
    is removed after them, and the failure is raised (before: the network was skipped, left for good on dask)."""
    calls = []

    def sandbox_stop():
        calls.append("sandbox")
        raise RuntimeError("tried to kill container, but did not receive an exit event")

    def sidecars_stop():
        time.sleep(0.2)
        calls.append("sidecars")

    with pytest.raises(RuntimeError, match="exit event"):
        trial.remove_in_order([sandbox_stop, sidecars_stop], lambda: calls.append("network"))
    assert calls == ["sandbox", "sidecars", "network"]


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_a_run_stopped_while_its_stores_are_ingested_ends_them_at_once(signal_name, engine, images, project, tmp_path,
                                                                       run_id, no_leftovers):
    """`kill` or Ctrl-C while stores are ingested ends the run within seconds and leaves no ingest running: before,
    SIGTERM killed the controller with its ingest containers left running to their timeout (hours for a product),
    and Ctrl-C waited for them."""
    import os
    import signal
    import subprocess
    import sys

    arm_yaml = project / "arms" / "recall" / "arm.yaml"  # an ingest that would run for ten minutes
    arm_yaml.write_text(arm_yaml.read_text().replace('command: ["recall-ingest", "--corpus", "{corpus}", "--store", '
                                                     '"{store}", "--namespace", "{namespace}"]', 'command: ["sleep", "600"]'))
    assert 'command: ["sleep", "600"]' in arm_yaml.read_text()
    args = [str(os.path.join(os.path.dirname(sys.executable), "memgrid")), "grid", "--tasks", "slug_ids", "--arms", "recall",
            "--agent", "reader", "--conditions", "present,superseded", "--run-id", run_id, "--runs-dir",
            str(tmp_path / "runs"), "--concurrency", "2", "--no-progress"]
    # SIGINT as at a terminal: a test run started in the background (CI's) hands its children SIGINT ignored
    grid = subprocess.Popen(args, cwd=project, env={**os.environ, "MEMGRID_ROOT": str(project)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300
        ingests = {"label": [f"{RUN_LABEL}={run_id}", f"{ROLE_LABEL}=ingest"]}
        while len(engine.api.containers(filters=ingests)) < 2:
            assert grid.poll() is None and time.monotonic() < deadline, grid.stdout.read() if grid.poll() is not None else ""
            time.sleep(0.5)
        stopped = time.monotonic()
        grid.send_signal(getattr(signal, signal_name))
        grid.wait(timeout=90)
        assert time.monotonic() - stopped < 60
        assert grid.returncode != 0
        assert run_labelled(engine, run_id)[0] == [], grid.stdout.read()
    finally:
        if grid.poll() is None:
            grid.kill()
            grid.wait(timeout=30)
