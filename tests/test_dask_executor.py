"""The dask executor on a real cluster on this machine: a scheduler and workers started with the commands the
README gives a user (`dask scheduler`, `DOCKER_HOST=... dask worker ... --resources cells=1`), one worker on
the main engine and one on a second `dockerd` this module starts with its own data root, exec root, pidfile
and socket (no bridge, no iptables: cells run with network none) and removes afterwards. That dockerd runs
in a network namespace of its own: a dockerd started with --bridge=none deletes its namespace's docker0,
which in the host's namespace is the main engine's bridge (every image build after it would fail)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import docker
import pytest

from runner.env.archive import safe_entries
from runner.env.containers import RUN_LABEL
from runner.errors import UserError
from runner.exec.executors import ExecutorSettings, executor_class
from runner.exec.job import run_grid
from runner.plan.spec import load_grid
from runner.results.ledger import Ledger

from conftest import REPO, write_grid

BIN = Path(sys.executable).parent
MAIN_ENGINE = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
# Four cells, both kinds of verdict among them (the reader fails on bare, the ceiling solves): enough for both
# nodes to take cells side by side, and for a stop to find cells unfinished.
GRID = dict(tasks=("slug_ids",), arms=("bare", "claude_md"), agents=("reader", "ceiling"))
CELLS = 4


def wait_until(what: str, check, seconds: float, every: float = 0.2):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    pytest.fail(f"{what} within {seconds}s")


@pytest.fixture(scope="module")
def second_engine(engine):
    """A second dockerd, all its state under one temp folder: (DOCKER_HOST, client)."""
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        message = "a second engine needs dockerd and root"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {message}")
        pytest.skip(message)
    home = Path(tempfile.mkdtemp(prefix="mg-d2-", dir="/tmp"))  # short: a unix socket path has ~100 bytes
    host = f"unix://{home}/docker.sock"
    netns = f"memgrid-{home.name}"
    bridge_before = docker0_present()
    subprocess.run(["ip", "netns", "add", netns], check=True, capture_output=True, timeout=30)
    subprocess.run(["ip", "netns", "exec", netns, "ip", "link", "set", "lo", "up"], check=True, capture_output=True,
                   timeout=30)
    log = open(home / "dockerd.log", "wb")
    # nsenter enters the network namespace only (`ip netns exec` would also remount /sys, hiding the cgroups).
    proc = subprocess.Popen(["nsenter", f"--net=/run/netns/{netns}", "dockerd", "--data-root", str(home / "data"),
                             "--exec-root", str(home / "exec"), "--pidfile", str(home / "dockerd.pid"), "--host", host,
                             "--bridge=none", "--iptables=false", "--ip-masq=false"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    clients = []

    def up() -> bool:
        if proc.poll() is not None:
            return True
        try:  # the SDK asks the engine's API version as it connects
            clients.append(docker.DockerClient(base_url=host, timeout=60))
        except docker.errors.DockerException:
            return False
        return True

    try:
        wait_until("the second dockerd answered", up, 60)
        assert proc.poll() is None, (home / "dockerd.log").read_text()[-2000:]
        assert docker0_present() == bridge_before, "the second dockerd took the main engine's docker0 bridge"
        client = clients[0]
        yield host, client
    finally:
        for client in clients:
            for c in client.api.containers(all=True):
                client.api.remove_container(c["Id"], force=True, v=True)
            client.close()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
        subprocess.run(["umount", "-R", str(home / "data")], capture_output=True, timeout=30)  # if dockerd left a mount
        subprocess.run(["ip", "netns", "delete", netns], capture_output=True, timeout=30)
        shutil.rmtree(home)


def docker0_present() -> bool:
    return subprocess.run(["ip", "link", "show", "docker0"], capture_output=True, timeout=30).returncode == 0


class Cluster:
    """A dask scheduler and workers as a user starts them, each worker on the engine it is given."""

    def __init__(self, home: Path):
        self.home, self.procs = home, {}
        file = home / "scheduler.json"
        self.procs["scheduler"] = self._spawn("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                                            "--no-dashboard", "--scheduler-file", str(file)], {})
        try:
            wait_until("the scheduler wrote its address", lambda: file.exists() and file.stat().st_size > 0, 60)
        except BaseException:
            self.close()
            raise
        self.address = json.loads(file.read_text())["address"]

    def _spawn(self, name: str, args: list[str], env: dict) -> subprocess.Popen:
        out = open(self.home / f"{name}.log", "wb")
        return subprocess.Popen([str(BIN / "dask"), *args], env={**os.environ, **env}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def add_worker(self, name: str, docker_host: str) -> None:
        self.procs[name] = self._spawn(name, ["worker", self.address, "--name", name, "--nthreads", "2", "--resources",
                                              "cells=1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"],
                                       # its scratch folders under the test's own (a killed worker leaves its copy of the project)
                                       {"DOCKER_HOST": docker_host, "TMPDIR": str(self.home)})

    def wait_for(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=30, set_as_default=False) as client:
            client.wait_for_workers(n, timeout=90)

    def revive(self, name: str, docker_host: str) -> None:
        """A worker an earlier test of the module killed, started again under its name."""
        if self.procs[name].poll() is not None:
            self.add_worker(name, docker_host)
            self.wait_for(len(self.procs) - 1)  # every process but the scheduler

    def kill(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGKILL)
        self.procs[name].wait(timeout=30)

    def close(self) -> None:
        """SIGTERM, then SIGKILL whatever still runs after 3 s: a graceful close can wait on peers already gone."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 3
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(second_engine, tmp_path_factory):
    """node-a on the main engine, node-b on the second one, node-dead on a socket nothing listens on."""
    home = tmp_path_factory.mktemp("cluster")
    made = Cluster(home)
    try:
        made.add_worker("node-a", MAIN_ENGINE)
        made.add_worker("node-b", second_engine[0])
        made.add_worker("node-dead", f"unix://{home}/no-engine.sock")
        made.wait_for(3)
        yield made
    finally:
        made.close()


def grid_run(tmp_path: Path, run_id: str, logs: list, **where):
    spec = write_grid(tmp_path / f"{run_id}.yaml", **GRID)
    if where:
        import yaml

        spec.write_text(spec.read_text() + yaml.safe_dump(where))
    return run_grid(load_grid(spec), spec, root=REPO, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=2,
                    progress=False, log=logs.append)


def verdicts(rows: list[dict]) -> dict:
    return {r["cell_id"]: (r["admitted"], r["discard_reason"], r["checker_passed"], r["outcome"]) for r in rows}


@pytest.fixture(scope="module")
def local_verdicts(engine, images, tmp_path_factory):
    """The same grid on the local executor: what the dask runs must reproduce cell by cell."""
    from conftest import ISSUED_RUN_IDS, TEST_RUN_PREFIX

    run_id = f"{TEST_RUN_PREFIX}dask-local-{os.getpid()}"
    ISSUED_RUN_IDS.add(run_id)
    outcome = grid_run(tmp_path_factory.mktemp("local"), run_id, [])
    rows = Ledger(outcome.run_dir).rows()
    assert outcome.unfinished == 0 and len(rows) == CELLS
    assert {r["outcome"] for r in rows} >= {"solved", "neutral_failure"}  # the comparison has both kinds of verdict
    return verdicts(rows)


def test_cells_land_on_both_engines_once_each_as_on_local(engine, images, second_engine, cluster, local_verdicts,
                                                          tmp_path, run_id, no_leftovers):
    host_b, client_b = second_engine
    cluster.revive("node-b", host_b)
    logs = []
    outcome = grid_run(tmp_path, run_id, logs, executor="dask", scheduler=cluster.address)
    rows = Ledger(outcome.run_dir).rows()
    assert [line for line in logs if line.startswith("node node-dead refused: no Docker engine answers")], logs
    print("\n".join(logs))
    assert any("node node-b: loading memgrid-sandbox:" in line for line in logs), logs  # docker save / load, id checked
    assert Counter(r["cell_id"] for r in rows) == Counter(dict.fromkeys(local_verdicts, 1))
    assert all(r["final"] for r in rows)
    assert verdicts(rows) == local_verdicts
    nodes = outcome.summary.executor["nodes"]
    assert set(nodes) == {"node-a", "node-b"} and sum(nodes.values()) == CELLS, (nodes, logs)
    for cell_id in local_verdicts:  # the workers' cell folders, unpacked by the controller
        assert (outcome.run_dir / "cells" / cell_id / "transcript.jsonl").is_file()
        assert (outcome.run_dir / "cells" / cell_id / "proof.json").is_file()
    assert not client_b.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})


def test_ctrl_c_stops_cells_on_every_node_and_the_run_resumes_on_the_local_executor(
        engine, images, second_engine, cluster, local_verdicts, tmp_path, run_id, no_leftovers):
    _, client_b = second_engine
    spec = write_grid(tmp_path / "grid.yaml", **GRID)
    args = [str(BIN / "memgrid"), "grid", "--spec", str(spec), "--run-id", run_id, "--runs-dir", str(tmp_path / "runs"),
            "--no-progress"]
    label = {"label": f"{RUN_LABEL}={run_id}"}
    # The default SIGINT disposition, whatever the shell that started pytest left (as tests/test_resume.py).
    proc = subprocess.Popen([*args, "--executor", "dask", "--scheduler", cluster.address], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_until("a cell started on node-b's engine", lambda: proc.poll() is not None or client_b.api.containers(filters=label),
                   180, every=0.05)
        proc.send_signal(signal.SIGINT)
        out, errs = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + errs
    # Each node's engine: the run's containers are gone (a checker that started in the second before the
    # worker saw the stop ends on its own, bounded).
    for client in (engine, client_b):
        wait_until("no container of the run left", lambda: not client.api.containers(all=True, filters=label), 60)
    run_dir = tmp_path / "runs" / run_id
    rows = Ledger(run_dir).rows()
    assert len(rows) < CELLS and all(r["final"] for r in rows)
    resumed = subprocess.run([*args, "--executor", "local"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    rows = Ledger(run_dir).rows()
    assert Counter(r["cell_id"] for r in rows) == Counter(dict.fromkeys(local_verdicts, 1))
    assert verdicts(rows) == local_verdicts


def test_kill9_of_the_controller_leaves_no_cell_running_on_any_node_and_the_run_resumes_on_dask(
        engine, images, second_engine, cluster, local_verdicts, tmp_path, run_id, no_leftovers):
    _, client_b = second_engine
    spec = write_grid(tmp_path / "grid.yaml", **GRID)
    args = [str(BIN / "memgrid"), "grid", "--spec", str(spec), "--run-id", run_id, "--runs-dir", str(tmp_path / "runs"),
            "--no-progress", "--executor", "dask", "--scheduler", cluster.address]
    label = {"label": f"{RUN_LABEL}={run_id}"}
    proc = subprocess.Popen(args, cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until("a cell started on node-b's engine", lambda: proc.poll() is not None or client_b.api.containers(filters=label),
                   180, every=0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL, "the controller ended before the kill: the test proves nothing"
    # Nothing stops the workers' cells but themselves: each ends (and removes its containers) as a cell does,
    # well inside the sandbox's lifetime, and the scheduler drops the cells the dead controller had queued.
    for client in (engine, client_b):
        wait_until("no container of the run left on the node", lambda: not client.api.containers(all=True, filters=label), 240)
    run_dir = tmp_path / "runs" / run_id
    before = Counter(r["cell_id"] for r in Ledger(run_dir).rows() if r["final"])
    assert sum(before.values()) < CELLS, "every cell was recorded before the kill: the test proves nothing"
    resumed = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    rows = Ledger(run_dir).rows()
    assert Counter(r["cell_id"] for r in rows if r["final"]) == Counter(dict.fromkeys(local_verdicts, 1))
    assert verdicts([r for r in rows if r["final"]]) == local_verdicts


def test_a_worker_killed_mid_cell_its_cell_reruns_and_is_recorded_once(engine, images, second_engine, cluster,
                                                                       local_verdicts, tmp_path, run_id, no_leftovers):
    _, client_b = second_engine
    result, logs = {}, []
    controller = threading.Thread(target=lambda: result.update(outcome=grid_run(
        tmp_path, run_id, logs, executor="dask", scheduler=cluster.address)), daemon=True)
    controller.start()
    on_b = wait_until("a cell started on node-b's engine",
                      lambda: client_b.api.containers(filters={"label": f"{RUN_LABEL}={run_id}"}), 180, every=0.05)
    # Every cell needs the project (tasks/, arms/). Were it data the scheduler holds, its memory manager would keep
    # one replica, and killing the worker that holds it would cancel every cell on every node with it.
    from distributed import Client

    from runner.exec.executors.dask import live_workers

    with Client(cluster.address, timeout=30, set_as_default=False) as probe:
        held = [str(key) for keys in probe.has_what().values() for key in keys]
        unpacked = probe.run(lambda: sorted(__import__("runner.exec.celljob", fromlist=["_PROJECTS"])._PROJECTS),
                             workers=[w for w, info in live_workers(probe).items()
                                      if info["name"] in ("node-a", "node-b")])
    assert not [key for key in held if key.startswith("project-")], held
    assert len(unpacked) == 2 and all(len(digests) >= 1 for digests in unpacked.values()), unpacked
    cluster.kill("node-b")
    killed_cell = on_b[0]["Labels"]["memgrid.cell"]
    controller.join(timeout=300)
    assert not controller.is_alive(), "the grid did not finish after node-b was killed"
    outcome = result["outcome"]
    rows = Ledger(outcome.run_dir).rows()
    assert Counter(r["cell_id"] for r in rows) == Counter(dict.fromkeys(local_verdicts, 1))
    assert all(r["final"] for r in rows) and outcome.unfinished == 0
    assert verdicts(rows) == local_verdicts
    assert killed_cell in local_verdicts
    assert sum(outcome.summary.executor["nodes"].values()) == CELLS  # the killed attempt returned nothing
    # The dead worker cannot remove its cell's container; it stops at the sandbox's lifetime (here: removed now).
    for c in client_b.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}):
        client_b.api.remove_container(c["Id"], force=True, v=True)


def read_paths(run_dir: Path, cell_id: str) -> list[str]:
    """The files a CLI agent's session read (the scripted model's search of a corpus arm): claude-code's Read calls,
    codex's shell commands (its reads are `cat`s). Sorted: codex runs a turn's calls side by side and records each
    as it ends."""
    events = [json.loads(line) for line in (run_dir / "cells" / cell_id / "transcript.jsonl").open()]
    return sorted(e["input"] for e in events if e["type"] == "tool_call" and e["tool"] in ("Read", "exec_command"))


def test_cli_agent_cells_run_on_a_worker_as_on_the_local_executor(engine, images, tmp_path, run_id, no_leftovers):
    """claude-code and codex on the scripted model, on a worker of the main engine: their sidecars and network are
    made on the worker's engine, and the scripted model's script is derived there from the cell's bundle (fs_grep:
    the documents an agent grepping the corpus opens first), so each cell reads the same files and gets the same
    verdict as on the local executor. One arm: fs_grep's cells are the ones whose session depends on what the node
    derived (a bare cell's script is the same everywhere)."""
    from conftest import ISSUED_RUN_IDS

    grid = {"name": "cc-dask", "tasks": ["slug_ids"], "arms": ["fs_grep"], "agents": ["claude-code", "codex"],
            "seeds": 1, "conditions": ["present"], "model": "scripted"}

    def run(run: str, **where):
        spec = tmp_path / f"{run}.yaml"
        spec.write_text(json.dumps({**grid, **where}))
        return run_grid(load_grid(spec), spec, root=REPO, run_id=run, runs_dir=tmp_path / "runs", concurrency=2,
                        progress=False, log=lambda m: None)

    local_id = f"{run_id}-local"
    ISSUED_RUN_IDS.add(local_id)
    local = run(local_id)
    cluster = Cluster(tmp_path)
    try:
        cluster.add_worker("node-a", MAIN_ENGINE)
        cluster.wait_for(1)
        remote = run(run_id, executor="dask", scheduler=cluster.address)
    finally:
        cluster.close()
    local_rows, rows = Ledger(local.run_dir).rows(), Ledger(remote.run_dir).rows()
    assert len(rows) == 2 and all(r["admitted"] and r["final"] for r in rows), [r["error_detail"] for r in rows]
    assert verdicts(rows) == verdicts(local_rows)
    assert remote.summary.executor["nodes"] == {"node-a": 2}
    for fs_grep in (r["cell_id"] for r in rows):
        assert read_paths(remote.run_dir, fs_grep) == read_paths(local.run_dir, fs_grep) != []
        assert (remote.run_dir / "cells" / fs_grep / "gateway.jsonl").stat().st_size > 0


def test_stores_are_ingested_on_the_workers_and_return_as_the_local_ingest_makes_them(
        engine, images, second_engine, cluster, tmp_path, run_id, monkeypatch, no_leftovers):
    """A run on dask ingests its stores on the workers (the arm's image loaded on a node that lacks it, the corpus sent
    with the task, the store sent back with its digest); the store is the one a local ingest makes, byte for byte."""
    from conftest import ISSUED_RUN_IDS

    host_b, _ = second_engine
    cluster.revive("node-b", host_b)
    grid = dict(tasks=("slug_ids",), arms=("recall",), agents=("reader",), conditions=("present", "superseded"))
    logs = []

    def run(run: str, **where):
        spec = write_grid(tmp_path / f"{run}.yaml", **grid)
        if where:
            spec.write_text(spec.read_text() + json.dumps(where)[1:-1].replace('", "', '"\n"') + "\n")
        return run_grid(load_grid(spec), spec, root=REPO, run_id=run, runs_dir=tmp_path / "runs", concurrency=2,
                        progress=False, log=logs.append)

    remote = run(run_id, executor="dask", scheduler=cluster.address)
    stores = json.loads((remote.run_dir / "run.json").read_text())["stores"]
    assert set(stores) == {"recall/present-seed0", "recall/superseded-seed0"}, stores
    for name, store in stores.items():  # each built on a worker, none taken from a cache
        assert store["source"] == "ingested" and store["node"] in {"node-a", "node-b"}, (name, store, logs)
        assert any(line.startswith(f"ingested {name.replace('/', ' ').replace('-seed', ' seed ')} on node ")
                   for line in logs), logs
    monkeypatch.setenv("MEMGRID_CACHE", str(tmp_path / "another-cache"))  # the local run ingests too
    local_id = f"{run_id}-local"
    ISSUED_RUN_IDS.add(local_id)
    local = run(local_id)
    local_stores = json.loads((local.run_dir / "run.json").read_text())["stores"]
    for name in stores:  # the same files, byte for byte, but the receipt's own timing
        folder = f"stores/{name}/store.tar"
        files = [{e.path: e.data for e in safe_entries((r.run_dir / folder).read_bytes())} for r in (remote, local)]
        receipts = [json.loads(f.pop("store.json")) for f in files]
        assert files[0] == files[1] and files[0]
        assert [{k: v for k, v in r.items() if k != "ingest_seconds"} for r in receipts] == \
            [{k: v for k, v in receipts[1].items() if k != "ingest_seconds"}] * 2
    assert all("node" not in v for v in local_stores.values())
    assert verdicts(Ledger(remote.run_dir).rows()) == verdicts(Ledger(local.run_dir).rows())


# Small grids of the protocols of several phases: every phase of a cell runs on one node, the store passed between
# them there; recall's empty store (two-session) travels in the job, planted's tasks in the project archive,
# personal's persons are generated on the node (recall's build phase ingests them there).
PHASED_GRIDS = {
    "two-session": {"name": "ts-dask", "protocol": "two-session", "cases": 1, "arms": ["bare", "recall"],
                    "agents": ["reader"], "conditions": ["closing_balance", "nth_largest_debit_voucher"]},
    "planted": {"name": "pl-dask", "protocol": "planted", "tasks": ["pl_bool_settings"], "arms": ["recall"],
                "agents": ["reader"], "conditions": ["off", "on"]},
    "personal": {"name": "pe-dask", "protocol": "personal", "cases": 1, "arms": ["bare", "recall"], "agents": ["reader"],
                 "conditions": ["weekly"]},
}


def scored(rows: list[dict]) -> dict:
    """The verdicts, with personal's FAMA: its outcome is "scored" whatever the answers were."""
    return {r["cell_id"]: (*verdicts([r])[r["cell_id"]], json.loads(r["result"] or "{}").get("fama")) for r in rows}


@pytest.mark.parametrize("protocol", PHASED_GRIDS)
def test_cells_of_several_phases_run_on_the_cluster_as_on_the_local_executor(protocol, engine, images, second_engine,
                                                                             cluster, tmp_path, run_id, no_leftovers):
    from conftest import ISSUED_RUN_IDS

    host_b, client_b = second_engine
    cluster.revive("node-b", host_b)
    logs = []

    def run(run: str, **where):
        spec = tmp_path / f"{run}.yaml"
        spec.write_text(json.dumps({**PHASED_GRIDS[protocol], "seeds": 1, **where}))
        return run_grid(load_grid(spec), spec, root=REPO, run_id=run, runs_dir=tmp_path / "runs", concurrency=2,
                        progress=False, log=logs.append)

    local_id = f"{run_id}-local"
    ISSUED_RUN_IDS.add(local_id)
    local_rows = Ledger(run(local_id).run_dir).rows()
    remote = run(run_id, executor="dask", scheduler=cluster.address)
    rows = Ledger(remote.run_dir).rows()
    assert len(set(scored(local_rows).values())) == 2, local_rows  # the comparison has two different verdicts
    assert Counter(r["cell_id"] for r in rows) == Counter(r["cell_id"] for r in local_rows)
    assert all(r["final"] for r in rows) and remote.unfinished == 0
    assert scored(rows) == scored(local_rows)
    assert set(remote.summary.executor["nodes"]) == {"node-a", "node-b"}, (remote.summary.executor, logs)
    for row in rows:  # every phase's record came back from the node that ran the cell
        folder = remote.run_dir / "cells" / row["cell_id"]
        phases = {"two-session": ("step1", "step2"), "planted": (".",), "personal": ("search", "answer")}[protocol]
        assert all((folder / phase / "bundle.manifest").is_file() for phase in phases), sorted(folder.rglob("*"))
    assert not client_b.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})


def test_a_command_agents_files_travel_in_the_job_not_by_the_controllers_paths(tmp_path):
    """The two-session stubs are command agents whose files live in the controller's checkout: a node elsewhere
    gets their bytes in the job, written under its scratch folder."""
    import pickle

    from runner.agents.command import CommandAgent, CommandSpec
    from runner.exec.celljob import carry_commands, land_commands

    stub = tmp_path / "checkout" / "ceiling.py"
    stub.parent.mkdir()
    stub.write_bytes(b"print('42')\n")
    spec = CommandSpec("ceiling", ("python3", "-I", "ceiling.py"), (stub,))
    before = CommandAgent(None, spec).channel()
    carried = pickle.loads(pickle.dumps(carry_commands({"ceiling": spec})))  # as the scheduler moves it
    stub.unlink()  # the node has no such path
    landed = land_commands(carried, tmp_path / "scratch")
    assert landed["ceiling"].files[0].parent == tmp_path / "scratch" / "ceiling"
    assert CommandAgent(None, landed["ceiling"]).channel() == before


def test_the_project_sent_to_the_nodes_holds_what_defines_tasks_and_arms_not_what_image_builds_resolve(tmp_path):
    """pydeps/, node_modules/ and assets/ (what an image build resolves into an arm's folder: over a GB for the shipped
    products) stay on the controller: no node reads them, its images come from the controller's engine. Sent, every
    dask run packed, hashed and unpacked them on every node (a quick executors benchmark: 33 s for two cells)."""
    from runner.exec.celljob import project_archive

    arm = tmp_path / "arms" / "product"
    for name, data in {"arm.yaml": b"name: product\n", "ingest.py": b"print()\n", "pydeps/pkg/__init__.py": b"x = 1\n",
                       "node_modules/server/index.js": b"0;\n", "assets/model.onnx": b"weights",
                       "__pycache__/ingest.cpython-311.pyc": b"\0"}.items():
        (arm / name).parent.mkdir(parents=True, exist_ok=True)
        (arm / name).write_bytes(data)
    (tmp_path / "tasks" / "t" / "fixture").mkdir(parents=True)
    (tmp_path / "tasks" / "t" / "fixture" / "app.py").write_bytes(b"pass\n")
    archive, digest = project_archive(tmp_path, ("tasks", "arms"))
    assert sorted(e.path for e in safe_entries(archive)) == ["arms/product/arm.yaml", "arms/product/ingest.py",
                                                             "tasks/t/fixture/app.py"]
    assert project_archive(tmp_path, ("tasks", "arms"))[1] == digest  # reproducible: its digest is its address
    shipped, _ = project_archive(REPO, ("tasks", "arms"))
    assert len(shipped) < 20 * 2**20, f"{len(shipped) / 2**20:.0f} MiB sent to every node"


def test_a_store_that_comes_back_unlike_its_digest_is_refused(engine, images, tmp_path, monkeypatch):
    """The controller freezes a store a worker sends only when its tar matches the digest the worker computed: a
    store damaged on the way (here, a worker that alters it after the digest) is refused by name, not saved."""
    from distributed import Client, LocalCluster

    from runner.arms.ingest import StoreSnapshot
    from runner.env.archive import Entry, pack
    from runner.exec.executors import dask as dask_executor
    from runner.plan.spec import load_arm

    def altered_on_the_way(arm, tag, docs, condition, seed, run_id, embedder, topic):
        frozen = pack([Entry("store.json", b'{"documents": 1}')])
        return "node-x", frozen + b"\0" * 512, dask_executor.sha256_bytes(frozen), {"documents": 1}

    monkeypatch.setattr(dask_executor, "_ingest_on_worker", altered_on_the_way)  # the workers run in this process
    (tmp_path / "corpus" / "docs").mkdir(parents=True)
    (tmp_path / "corpus" / "MANIFEST.sha256").write_text("")
    arm = load_arm(REPO / "arms" / "recall")
    with LocalCluster(n_workers=1, processes=False, resources={"cells": 1}, dashboard_address=None) as local, \
            Client(local, set_as_default=False) as client:
        build = dask_executor.DaskStoreBuild(client, engine, "test-digest", None, lambda line: None)
        with pytest.raises(UserError, match=r"arms/recall: the store of present seed 0 ingested on node node-x "
                                            r"arrived unlike its digest"):
            build(arm, images.base, tmp_path / "corpus", "present", 0)
        monkeypatch.setattr(dask_executor, "_ingest_on_worker",  # the same store, intact: taken
                            lambda *a: (lambda f: ("node-x", f, dask_executor.sha256_bytes(f), {"documents": 1}))(
                                pack([Entry("store.json", b'{"documents": 1}')])))
        taken = build(arm, images.base, tmp_path / "corpus", "present", 0)
        assert isinstance(taken, StoreSnapshot) and taken.report["node"] == "node-x"


def test_the_controller_reads_the_clusters_workers_from_the_scheduler_not_the_clients_cached_copy(monkeypatch):
    """The client's own periodic update stores an identity with no workers; `scheduler_info()` stores its answer and
    returns whatever is stored when it returns, so on a loaded controller it read an empty cluster and ended the run
    ("every admitted worker has left the cluster", CI of 2026-12-07). Here the periodic update is made to land in
    that gap every time (waiting for the race made this test as flaky as the bug): the cached reading is empty, the
    controller's is the two workers."""
    from distributed import Client, LocalCluster

    from runner.exec.executors.dask import live_workers

    ask = Client._update_scheduler_info

    async def periodic_update_lands_in_between(self, n_workers=0):
        answer = await ask(self, n_workers=n_workers)
        await ask(self, n_workers=0)  # what the periodic callback asks
        return answer  # distributed 2026.11 returns the call's own answer (its fix); 2026.8 reads the store back

    with LocalCluster(n_workers=2, processes=False, dashboard_address=None) as local, \
            Client(local, set_as_default=False) as client:
        monkeypatch.setattr(Client, "_update_scheduler_info", periodic_update_lands_in_between)
        client.sync(client._update_scheduler_info, n_workers=-1)
        assert not client._scheduler_identity.get("workers"), "the interleaving this test stands for did not happen"
        assert all(len(live_workers(client)) == 2 for _ in range(200))


def test_dask_settings_it_cannot_run_are_refused_in_one_line(tmp_path, monkeypatch):
    from runner.errors import SpecError
    from runner.plan.spec import grid_from_dict
    from runner.protocols.base import Protocol
    from runner.protocols.registry import PROTOCOLS

    dask = executor_class("dask")
    with pytest.raises(UserError, match=r"grid.yaml: executor dask has no scheduler address: fix: pass --scheduler"):
        dask.check(ExecutorSettings("dask"), "coding", tmp_path / "grid.yaml")
    with monkeypatch.context() as patch:  # a protocol that declares nothing it reads
        patch.setitem(PROTOCOLS, "local-only", type("LocalOnly", (Protocol,), {"name": "local-only"})())
        with pytest.raises(UserError, match=r"the local-only protocol's cells run only on this machine \(its cells read "
                                            r"this checkout's files\): fix: use --executor local \(remote: coding, "
                                            r"two-session, planted, personal\)"):
            dask.check(ExecutorSettings("dask", scheduler="tcp://127.0.0.1:9"), "local-only", "--executor")
    personal = {"name": "pe", "protocol": "personal", "cases": 1, "arms": ["bare"], "agents": ["reader"], "seeds": 1,
                "conditions": ["weekly"], "judges": ["scripted"], "executor": "dask", "scheduler": "tcp://127.0.0.1:9"}
    with pytest.raises(SpecError, match=r"judges: names model judges, whose cache only this machine keeps, but the cells "
                                        r"would run on executor dask — fix: use --executor local"):
        PROTOCOLS["personal"].check(grid_from_dict(personal, Path("grid.yaml")), "grid.yaml", {}, {})
    with pytest.raises(Exception, match=r"'ray' is not an executor memgrid has.*use one of: local, dask"):
        executor_class("ray")


def test_the_local_executor_never_imports_the_distributed_stack():
    program = ("import sys\nfrom runner.exec.job import run_grid\nfrom runner.exec.executors import executor_class\n"
               "executor_class('local')\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("args, says", [
    (["--executor", "dask"], "executor dask has no scheduler address: fix: pass --scheduler tcp://HOST:8786"),
    (["--executor", "dask", "--scheduler", "localhost"], "--scheduler 'localhost': not a dask scheduler address: fix: "
                                                         "give it as tcp://HOST:8786"),
    (["--executor", "slurm"], "'slurm' is not an executor memgrid has"),
])
def test_the_command_line_refuses_an_executor_it_cannot_use_in_one_line(args, says, tmp_path):
    out = subprocess.run([str(BIN / "memgrid"), "grid", "--preset", "harness", "--runs-dir", str(tmp_path), *args],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0], lines
    assert not list(tmp_path.iterdir())  # refused before any run folder
