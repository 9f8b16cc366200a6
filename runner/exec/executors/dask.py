"""The dask executor: cells as CellJobs on a dask.distributed cluster, each worker on its own node's engine.

A user starts `dask scheduler`, and on each node `dask worker tcp://HOST:8786 --resources cells=N` with
that node's DOCKER_HOST; `memgrid grid --executor dask --scheduler tcp://HOST:8786` then runs the grid.
Before any cell is scheduled every worker runs the node checks (engine, images by id); images a node
lacks are loaded there from the controller's engine (docker save / load, ids checked); a node that still
fails is refused by name and gets no cell. A cell's bundle and stores travel inside its task (the
scheduler holds them until the cell finishes, so a cell whose worker died runs again elsewhere from the
same bytes); the checkout's folders the protocol reads (tasks/ and arms/ for coding) are sent once to every
admitted worker and unpacked there, and a cell names them by digest. They are not scattered: data the scheduler
holds is data it manages, and its active memory manager keeps one replica of a key no waiting task needs, so
killing the worker holding that replica lost the key and cancelled every cell depending on it, on every node.
"""

import statistics
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass

from distributed import Client, get_worker
from distributed import wait as dask_wait

from runner.agents.registry import agent_class
from runner.arms.ingest import StoreSnapshot, corpus_entries, ingest_documents, own_embedder
from runner.digest import sha256_bytes
from runner.env.archive import pack, safe_entries
from runner.env.doctor import node_checks
from runner.env.engine import connect
from runner.env.images import ImageRef, load_image, save_image
from runner.env.sandbox import remove_run_containers
from runner.errors import UserError
from runner.exec.celljob import (failed_row, make_job, project_archive, receive_project, refuse_remote, run_job,
                                 stop_flag, unpack_cell_folder)
from runner.exec.executors.base import Executor, ExecutorSettings
from runner.exec.trial import Cancelled, embedder_image, sandbox_image
from runner.plan.spec import project_root, provider

RESOURCE = "cells"  # the worker resource a cell holds: `--resources cells=N` caps a node's cells in flight
CONNECT_SECONDS = 30


def _run_on_worker(job, bundle, session: str):
    return run_job(job, None, bundle, str(get_worker().name), stop_flag(session))


def _stop_on_worker(session: str) -> None:
    """Ctrl-C on the controller: this process's cells of the session stop at their next step. Set here, in
    the worker's own process, before its containers are removed, so a cell sees the stop before it sees its
    container gone (as on one machine) and records nothing instead of a broken proof."""
    stop_flag(session).set()


def _load_on_worker(archive: bytes, tag: str, image_id: str) -> str | None:
    return load_image(connect(timeout=300), archive, tag, image_id)


def _remove_on_worker(run_id: str) -> None:
    remove_run_containers(connect(timeout=30), run_id)


def needed_images(ctx, cells) -> dict[str, str]:
    """tag -> image id of every image these cells start containers from."""
    refs = {ctx.images.checker}
    for cell in cells:
        refs.add(sandbox_image(ctx, ctx.arms[cell.arm], cell.agent))
        if embedder_image(ctx, provider(ctx.arms[cell.arm], ctx.arms)):  # its sidecar starts beside the sandbox
            refs.add(ctx.embedder)
        if agent_class(cell.agent, ctx.command_agents).needs_model:  # the network guard runs the base image
            refs.add(ctx.images.base)
    for setup in ctx.agent_setups.values():  # what an agent prepared for the grid: claude-code's model sidecar
        refs |= {value for value in vars(setup).values() if isinstance(value, ImageRef)}
    return {ref.tag: ref.id for ref in refs}


@dataclass
class Node:
    name: str
    address: str
    slots: int  # its `cells` resource
    busy: int = 0  # attempts placed on it and not yet returned


@dataclass(eq=False)
class Attempt:
    """The scheduler's handle for one cell attempt: it survives the attempt moving to another node."""
    job: object
    bundle: object
    future: object = None
    node: Node | None = None
    submitted: float = 0.0


def slots_of(info: dict) -> int:
    """A worker's `cells` resource: how many cells (or stores being built) it takes at once."""
    return int(info.get("resources", {}).get(RESOURCE, 0))


def live_workers(client: Client) -> dict[str, dict]:
    """address -> the scheduler's record of each worker it has now, asked of the scheduler itself. Not
    `client.scheduler_info()`: that asks, stores the answer on the client and returns the stored one, which the
    client's own periodic update (every 2 s, with no workers in it) can replace in between, so a loaded controller
    read an empty cluster and gave up the run with "every admitted worker has left"."""
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def cell_workers(client: Client) -> dict[str, dict]:
    """address -> the scheduler's record of each worker; none at all is refused with the command that starts one."""
    workers = live_workers(client)
    if not workers:
        raise UserError("--executor dask: the scheduler has no workers: fix: start one per node with "
                        f"'DOCKER_HOST=... dask worker SCHEDULER --resources {RESOURCE}=2'")
    return workers


def ready_nodes(client: Client, engine, workers: dict[str, dict], images: dict[str, str], log) -> dict[str, str | None]:
    """address -> None for each worker whose node passes the node checks once the images it lacked were loaded there
    from `engine` (docker save / load, ids checked), else why not, with the fix."""
    reports = client.run(node_checks, images, on_error="return", workers=list(workers))
    saved: dict[str, bytes] = {}
    ready = {}
    for address, info in sorted(workers.items()):
        name, checks = info.get("name", address), reports.get(address)
        if checks is None or isinstance(checks, BaseException):
            ready[address] = f"the node checks did not run ({checks!r})"
            continue
        node_engine, image_checks = checks[0], checks[1:]
        if not node_engine.ok:
            ready[address] = f"{node_engine.detail}: fix: {node_engine.fix}"
            continue
        problems = []
        for check in image_checks:
            if check.ok:
                continue
            tag = check.name.removeprefix("image ")
            log(f"node {name}: loading {tag} from this engine ({check.detail} there)")
            if tag not in saved:
                saved[tag] = save_image(engine, tag)
            problem = client.run(_load_on_worker, saved[tag], tag, images[tag], workers=[address], on_error="return")[address]
            if problem is not None:
                problems.append(str(problem))
        ready[address] = "; ".join(problems) + ": fix: load the images on that node (memgrid images build there)" \
            if problems else None
    return ready


def admit_nodes(client: Client, ctx, cells, log) -> dict[str, Node]:
    """address -> Node for every worker that passes the node checks (after the images it lacked were
    loaded); each refused one is logged by name with the reason and the fix."""
    workers = cell_workers(client)
    refused = {info.get("name", a): f"declares no '{RESOURCE}' resource: fix: start it with --resources {RESOURCE}=N"
               for a, info in workers.items() if not slots_of(info)}
    slotted = {a: info for a, info in workers.items() if info.get("name", a) not in refused}
    admitted = {}
    for address, problem in ready_nodes(client, ctx.client, slotted, needed_images(ctx, cells), log).items():
        info = slotted[address]
        if problem is not None:
            refused[info.get("name", address)] = problem
        else:
            admitted[address] = Node(str(info.get("name", address)), address, slots_of(info))
    for name, why in refused.items():
        log(f"node {name} refused: {why}")
    if not admitted:
        raise UserError("--executor dask: no worker can run cells: " + "; ".join(f"{n}: {w}" for n, w in refused.items()))
    return admitted


class DaskExecutor(Executor):
    """Places each attempt on one admitted node with a free slot, pinned there: the scheduler counts a
    worker's resources only to decide where a task may run, not how many run at once, so left to itself
    it queues cells on one worker while another idles. An attempt whose node leaves the cluster is placed
    again on another node from the same job and bundle."""
    name = "dask"

    def __init__(self, ctx, client: Client, admitted: dict[str, Node], log):
        self.ctx, self.client, self.log = ctx, client, log
        self.nodes_by_address = admitted
        project, self.project_digest = project_archive(ctx.root or project_root(), ctx.protocol.reads)
        for address, error in client.run(receive_project, self.project_digest, project, workers=list(admitted),
                                         on_error="return").items():
            if isinstance(error, BaseException):
                log(f"node {admitted.pop(address).name} refused: the project could not be unpacked there ({error!r})")
        if not admitted:
            raise UserError("--executor dask: no admitted worker could unpack the project: see the lines above")
        self.session = uuid.uuid4().hex  # this controller's cells on the workers, for Ctrl-C
        self.done: Counter = Counter()  # node name -> attempts it returned
        self.overheads: list[float] = []  # seconds from submit to the worker taking the job

    @property
    def slots(self) -> int:
        return sum(n.slots for n in self.nodes_by_address.values())

    @classmethod
    def check(cls, settings: ExecutorSettings, protocol: str, where) -> None:
        refuse_remote(protocol, str(where))
        if not settings.scheduler:
            raise UserError(f"{where}: executor dask has no scheduler address: fix: pass --scheduler tcp://HOST:8786 "
                            "(or scheduler: in the grid spec)")

    @classmethod
    def open(cls, ctx, settings: ExecutorSettings, cells: list) -> "DaskExecutor":
        cls.check(settings, ctx.protocol.name, "--executor")
        client = connect_scheduler(settings)
        try:
            return cls(ctx, client, admit_nodes(client, ctx, cells, settings.log), settings.log)
        except BaseException:
            client.close()
            raise

    def submit(self, cell, attempt: int) -> Attempt:
        job, bundle = make_job(self.ctx, cell, attempt, self.project_digest)
        handle = Attempt(job, bundle)
        self._place(handle)
        return handle

    def _place(self, handle: Attempt) -> None:
        if not self.nodes_by_address:
            raise UserError("--executor dask: every admitted worker has left the cluster: fix: restart them, then "
                            "resume with the same --run-id")
        node = max(self.nodes_by_address.values(), key=lambda n: (n.slots - n.busy, -n.busy))
        node.busy += 1
        cell = handle.job.cell
        handle.node, handle.submitted = node, time.time()
        handle.future = self.client.submit(_run_on_worker, handle.job, handle.bundle, self.session, pure=False,
                                           key=f"cell-{cell.cell_id[:16]}-{handle.job.attempt}-{uuid.uuid4().hex[:8]}",
                                           resources={RESOURCE: 1}, workers=[node.address], allow_other_workers=False)

    def wait(self, handles, timeout: float) -> set:
        futures = [h.future for h in handles]
        try:
            with self.client.as_current():  # wait() takes the current client; this one is not the default
                dask_wait(futures, timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            pass
        self._replace_lost(handles)
        return {h for h in handles if h.future.done()}

    def _replace_lost(self, handles) -> None:
        """Nodes that left the cluster lose their admitted place; their unfinished attempts move elsewhere."""
        alive = set(live_workers(self.client))
        for address in set(self.nodes_by_address) - alive:
            self.log(f"node {self.nodes_by_address.pop(address).name} left the cluster: its cells run again elsewhere")
        for handle in handles:
            if handle.node.address not in alive and not handle.future.done():
                handle.future.cancel()
                self._place(handle)

    def result(self, handle: Attempt, timeout: float | None = None):
        job = handle.job
        handle.node.busy -= 1
        try:
            done = handle.future.result(timeout=timeout)
        except Exception as e:  # the cell's code failed on the worker, or it was cancelled
            if self.ctx.cancel.is_set():
                raise Cancelled() from e
            return failed_row(self.ctx, job.cell, job.attempt, e)
        finally:
            handle.future.release()
        unpack_cell_folder(self.ctx.run_dir, job.cell.cell_id, done.cell_folder)
        self.done[str(done.node)] += 1
        self.overheads.append(max(0.0, done.started - handle.submitted))
        return done.row

    def cancel(self, handles) -> None:
        """Every worker's cells of this controller stop at their next step; the scheduler then removes the
        run's containers and waits for the cells, as on one machine."""
        for address, error in self.client.run(_stop_on_worker, self.session, workers=list(self.nodes_by_address),
                                              on_error="return").items():
            if isinstance(error, BaseException):
                self.log(f"node {self.nodes_by_address[address].name}: could not be told to stop ({error!r})")

    def remove_containers(self) -> None:
        results = self.client.run(_remove_on_worker, self.ctx.run_id, workers=list(self.nodes_by_address), on_error="return")
        for address, error in results.items():
            if isinstance(error, BaseException):
                self.log(f"node {self.nodes_by_address[address].name}: the run's containers could not be removed "
                         f"({error!r}); they stop at their lifetime")

    def nodes(self) -> dict[str, tuple[int, int]]:
        running = {n.name: n.busy for n in self.nodes_by_address.values()}
        return {name: (running.get(name, 0), self.done[name]) for name in sorted(set(running) | set(self.done))}

    def stats(self) -> dict:
        return {"nodes": dict(self.done), "submit_to_start_s": list(self.overheads),
                "submit_to_start_median_s": statistics.median(self.overheads) if self.overheads else None}

    def close(self) -> None:
        self.client.close()

    @classmethod
    @contextmanager
    def store_builder(cls, settings: ExecutorSettings, engine, *, run_id: str, embedder: ImageRef | None, log):
        """Stores are ingested on the workers, as many at once as the cluster has cell slots (each holds one)."""
        client = connect_scheduler(settings)
        try:
            build = DaskStoreBuild(client, engine, run_id, embedder, log)
            yield build, max(1, build.slots)
        finally:
            client.close()


def connect_scheduler(settings: ExecutorSettings) -> Client:
    try:
        return Client(settings.scheduler, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise UserError(f"--scheduler {settings.scheduler}: no dask scheduler answers ({str(e)[:160]}): fix: start "
                        "one with 'dask scheduler' and give its address, tcp://HOST:8786") from None


def _ingest_on_worker(arm, tag: str, docs: list, condition: str, seed: int, run_id: str, embedder: str | None,
                      topic: str):
    """One store ingested on this worker's engine; its progress lines go to the controller as events of `topic`.
    Returns the node, the frozen store (its tar) and its digest: the controller checks the one against the other."""
    worker = get_worker()
    snapshot = ingest_documents(connect(timeout=300), tag, arm, docs, condition, seed, run_id=run_id, embedder=embedder,
                                log=lambda line: worker.log_event(topic, f"node {worker.name}: {line}"))
    return str(worker.name), pack(list(snapshot.entries)), snapshot.digest, snapshot.report


class DaskStoreBuild:
    """runner.arms.ingest.StoreBuild on the cluster: each store ingested on a worker with a free cell slot, from the
    corpus sent with its task (a worker needs no corpus of its own), the arm's image loaded on a node that lacks it;
    the store comes back as its tar and digest, checked here before it is frozen into the run."""

    def __init__(self, client: Client, engine, run_id: str, embedder: ImageRef | None, log):
        self.client, self.engine, self.run_id, self.embedder, self.log = client, engine, run_id, embedder, log
        workers = cell_workers(client)
        self.workers = {a: info for a, info in workers.items() if slots_of(info)}
        self.slots = sum(map(slots_of, self.workers.values()))
        self.ready: dict[str, list[str]] = {}  # image tag -> the addresses of the nodes that have it
        self.lock = threading.Lock()
        self.topic = f"memgrid-ingest-{run_id}"
        self.futures: set = set()  # the stores in flight, for stop()
        client.subscribe_topic(self.topic, lambda event: log(event[1]))

    def stop(self) -> None:
        for future in list(self.futures):
            future.cancel()
        self.client.run(_remove_on_worker, self.run_id, workers=list(self.workers), on_error="return")

    def _nodes_with(self, images: dict[str, str]) -> list[str]:
        with self.lock:  # one load of an image per node, whichever store asks first
            for tag in images:
                if tag not in self.ready:
                    problems = ready_nodes(self.client, self.engine, self.workers, {tag: images[tag]}, self.log)
                    for address, why in problems.items():
                        if why is not None:
                            self.log(f"node {self.workers[address].get('name', address)}: ingests no store from {tag}: {why}")
                    self.ready[tag] = [a for a, why in problems.items() if why is None]
            nodes = set.intersection(*(set(self.ready[tag]) for tag in images))
        if not nodes:
            raise UserError(f"--executor dask: no worker can ingest from {', '.join(images)}: see the lines above")
        return sorted(nodes)

    def __call__(self, arm, image: ImageRef, corpus_dir, condition: str, seed: int):
        images = {image.tag: image.id}
        if arm.embedder == "shared" and self.embedder is not None:  # its sidecar starts beside the ingest
            images[self.embedder.tag] = self.embedder.id
        future = self.client.submit(_ingest_on_worker, arm, image.tag, corpus_entries(corpus_dir), condition, seed,
                                    self.run_id, self.embedder and self.embedder.tag, self.topic, pure=False,
                                    key=f"store-{arm.name}-{condition}-{seed}-{uuid.uuid4().hex[:8]}",
                                    resources={RESOURCE: 1}, workers=self._nodes_with(images))
        self.futures.add(future)
        try:
            node, frozen, digest, report = future.result()
        finally:
            self.futures.discard(future)
            future.release()
        if sha256_bytes(frozen) != digest:
            raise UserError(f"arms/{arm.name}: the store of {condition} seed {seed} ingested on node {node} arrived "
                            f"unlike its digest ({digest[:12]}): fix: run again (the node's network or memory corrupted it)")
        if arm.embedder != "shared":  # the model files are read from the arm's folder here, where the run's inputs are
            report = {**report, "embedder": own_embedder(arm)}
        return StoreSnapshot(arm.name, condition, seed, tuple(safe_entries(frozen)), digest, {**report, "node": node})


EXECUTOR = DaskExecutor
