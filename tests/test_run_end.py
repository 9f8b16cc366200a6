"""A run ends with none of its containers and networks, even when a cell's own removal went wrong: the
local executor removes, at the run's end, whatever the engine still holds of the run, and names it.

Each test loses a removal on purpose and checks at the run's return, before any fixture cleans up."""

import time

from runner.env.sandbox import CELL_LABEL, ROLE_LABEL, RUN_LABEL, remove_network
from runner.exec.executors import local
from runner.grading.checker import CheckerContainer

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
