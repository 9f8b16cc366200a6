"""A cell as a plain, picklable job: what a worker on another node needs to run it, addressed by content.

The controller resolves everything that reads its own files or corpora into the job's payloads: the
checkout's folders the protocol declares it reads (Protocol.reads) as one archive (its sha256 is its
address), the bundle the protocol builds on the controller (coding's: the manifest's sha256 is its
address; it holds the cell's corpus and its fresh copy of the frozen store), and the stores the cell
starts from (each checked against its digest). A protocol of several phases ships no bundle: each phase's
bundle depends on what the phase before it left on the node, so the node builds it from those payloads
and the sandbox verifies it, as on one machine. A distributed executor moves the payloads by their
digests through its scheduler, never through a shared file system. The worker runs the cell, all its
phases, against its own engine in a scratch run folder and returns the ledger row and the cell folder as
an archive; only the controller writes the run folder.
"""

import atexit
import io
import os
import shutil
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from runner.digest import GENERATED, sha256_bytes, tree_files
from runner.env.archive import Entry, pack, safe_entries
from runner.env.bundle import Bundle, tree_entries
from runner.env.engine import connect
from runner.env.images import ImageRef, ImageSet
from runner.env.containers import Limits
from runner.errors import UserError
from runner.exec.trial import TrialContext, harness_failure, new_row, now, run_cell
from runner.plan.grid import CellSpec
from runner.plan.spec import DEFAULT_DISK_MIB, SessionLimits, load_all_arms, load_all_tasks
from runner.results.ledger import LedgerRow


@dataclass(frozen=True)
class CellJob:
    run_id: str
    cell: CellSpec
    attempt: int
    protocol: str
    project_digest: str  # sha256 of the archive of the folders the protocol reads
    bundle_digest: str | None  # None: the protocol builds its phases' bundles on the node
    images: ImageSet
    images_by_arm: dict = field(default_factory=dict)
    agent_setups: dict = field(default_factory=dict)
    command_agents: dict = field(default_factory=dict)  # name -> (CommandSpec, its files' bytes): see carry_commands
    stores: dict = field(default_factory=dict)  # (arm, condition, seed) -> StoreSnapshot (without its files if in the bundle)
    limits: Limits = Limits()
    session_limits: SessionLimits = SessionLimits()
    disk_mib: int = DEFAULT_DISK_MIB
    embedder: ImageRef | None = None  # the shared embedder's image, for arms with embedder: shared
    protocol_setup: object = None  # what the protocol prepared for the run (Protocol.prepare)


@dataclass(frozen=True)
class JobResult:
    row: LedgerRow
    cell_folder: bytes  # tar of runs/<run_id>/cells/<cell_id>/ as the worker wrote it
    node: str  # the worker's name
    started: float  # time.time() on the worker when it took the job (submit -> start overhead)


def project_archive(root: Path, parts: tuple[str, ...]) -> tuple[bytes, str]:
    """The checkout's folders `parts` as a reproducible tar, and its sha256 (its address). Without what image builds
    resolve into an arm's folder (pydeps/, node_modules/, assets/: over a GB for the shipped products), which is no
    part of an arm's digest and which a node never reads: its images come from the controller's engine, id checked."""
    data = pack([e for part in parts for e in tree_entries(root / part, part, GENERATED)])
    return data, sha256_bytes(data)


def refuse_remote(protocol: str, where: str = "--executor") -> None:
    """Only a protocol that declares what its cells read (Protocol.reads) can run on a worker elsewhere."""
    from runner.protocols.registry import PROTOCOLS, protocol_named

    chosen = protocol_named(protocol, where)
    if chosen.reads is None:
        remote = ", ".join(name for name, p in PROTOCOLS.items() if p.reads is not None)
        raise UserError(f"{where}: the {protocol} protocol's cells run only on this machine ({chosen.local_only}): "
                        f"fix: use --executor local (remote: {remote})")


def make_job(ctx: TrialContext, cell: CellSpec, attempt: int, project_digest: str) -> tuple[CellJob, Bundle | None]:
    """The job and the bundle it runs from (None: the node builds its phases' bundles), made on the controller,
    which holds the corpora and stores."""
    protocol = ctx.protocol
    refuse_remote(protocol.name)
    bundle = protocol.job_bundle(ctx, cell)
    return CellJob(ctx.run_id, cell, attempt, protocol.name, project_digest, bundle and bundle.digest, ctx.images,
                   dict(ctx.images_by_arm), {cell.agent: ctx.agent_setups[cell.agent]} if cell.agent in ctx.agent_setups else {},
                   carry_commands(ctx.command_agents), protocol.job_stores(ctx, cell), ctx.limits, ctx.session_limits, ctx.disk_mib,
                   ctx.embedder, ctx.protocol_setup), bundle


def carry_commands(agents: dict) -> dict:
    """Each command agent's spec with its files' bytes: its paths name files of the controller's checkout
    (the two-session stubs), which a node elsewhere does not have."""
    return {name: (spec, tuple(path.read_bytes() for path in spec.files)) for name, spec in agents.items()}


def land_commands(carried: dict, folder: Path) -> dict:
    """The carried command agents, their files written under `folder` and their specs pointing there."""
    agents = {}
    for name, (spec, blobs) in carried.items():
        home = folder / name
        home.mkdir(parents=True, exist_ok=True)
        for path, data in zip(spec.files, blobs):
            (home / path.name).write_bytes(data)
        agents[name] = replace(spec, files=tuple(home / path.name for path in spec.files))
    return agents


class BundleMemory:
    """The corpus documents a cell's bundle carries (memory/<name>.md), standing in on a worker for the
    controller's MemorySource, which stays on the controller. A worker needs them for one thing: the
    scripted model's script, which ranks the documents an agent grepping them would open first
    (script.grep_ranked). These are the bytes the controller rendered for the cell, the same the
    sandbox verifies, so the script is the one the local executor would build."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle

    @cached_property
    def _documents(self) -> tuple[tuple[str, bytes], ...]:
        with tarfile.open(fileobj=io.BytesIO(self.bundle.tar)) as tar:
            return tuple((m.name.removeprefix("memory/").removesuffix(".md"), tar.extractfile(m).read())
                         for m in tar.getmembers() if m.isfile() and m.name.startswith("memory/") and m.name.endswith(".md"))

    def documents(self, condition: str, seed: int) -> tuple[tuple[str, bytes], ...]:
        """The bundle's documents: it was built for this cell's condition and seed, and holds only theirs."""
        return self._documents


def failed_row(ctx: TrialContext, cell: CellSpec, attempt: int, error: Exception) -> LedgerRow:
    """A harness failure recorded by the controller when the attempt never returned (its worker died for
    good, the scheduler gave up): not final, so a resume reruns the cell."""
    at = now()
    return LedgerRow(**{**new_row(ctx, cell, attempt), **harness_failure(error)}, started_at=at, ended_at=at, wall_seconds=0.0)


def unpack_cell_folder(run_dir: Path, cell_id: str, folder: bytes) -> None:
    """The worker's cell folder replaces whatever an earlier attempt left (safe paths only)."""
    target = run_dir / "cells" / cell_id
    staging = run_dir / "cells" / f".{cell_id}.incoming"
    shutil.rmtree(staging, ignore_errors=True)
    for entry in safe_entries(folder):
        path = staging / entry.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(entry.data)
    staging.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)


# --- the worker side: one process serves many jobs, on threads ---

_LOCK = threading.Lock()
_PROJECTS: dict[str, tuple[Path, dict, dict]] = {}  # project digest -> its unpacked copy, (tasks, arms) loaded from it
_ENGINE: list = []  # the worker's engine client, made once
_STOPS: dict[str, threading.Event] = {}  # controller session -> set when that controller stops its run


def stop_flag(session: str) -> threading.Event:
    """The cancel event every cell of one controller session shares in this worker process."""
    with _LOCK:
        return _STOPS.setdefault(session, threading.Event())


def receive_project(digest: str, archive: bytes) -> None:
    """Unpack the checkout's folders on this worker ahead of its cells, which then name it by digest only."""
    _project(digest, archive)


def _project(digest: str, archive: bytes | None) -> tuple[Path, dict, dict]:
    with _LOCK:
        if digest not in _PROJECTS:
            if archive is None:
                raise ValueError(f"this worker was not sent the project {digest[:12]} before its cells (it joined after "
                                 "the run's workers were admitted)")
            if sha256_bytes(archive) != digest:
                raise ValueError(f"the project archive does not match its digest {digest[:12]}")
            root = Path(tempfile.mkdtemp(prefix=f"memgrid-project-{digest[:12]}-"))
            atexit.register(shutil.rmtree, root, True)  # kept while the worker serves jobs; a killed one leaves it
            for entry in safe_entries(archive):
                path = root / entry.path
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(entry.data)
                path.chmod(entry.mode)
            # A protocol that reads no coding task ships no tasks/ (planted ships only tasks/planted/).
            _PROJECTS[digest] = (root, load_all_tasks(root) if (root / "tasks").is_dir() else {}, load_all_arms(root))
        return _PROJECTS[digest]


def _engine():
    """This process's engine: DOCKER_HOST of the worker, as the node's operator set it."""
    with _LOCK:
        if not _ENGINE:
            _ENGINE.append(connect(concurrency=8))
        return _ENGINE[0]


def check_payloads(job: CellJob, bundle: Bundle | None) -> None:
    """The bundle's manifest and every store the job carries with its files match their digests. A bundle's
    files are checked against its manifest inside the sandbox, as on one machine."""
    if (bundle is None) != (job.bundle_digest is None):
        raise ValueError(f"cell {job.cell.cell_id}: the job names bundle {job.bundle_digest and job.bundle_digest[:12]} "
                         f"but carries {'none' if bundle is None else bundle.digest[:12]}")
    if bundle is not None and (sha256_bytes(bundle.manifest.encode()) != job.bundle_digest or bundle.digest != job.bundle_digest):
        raise ValueError(f"cell {job.cell.cell_id}: the bundle's manifest does not match its digest {job.bundle_digest[:12]}")
    for key, store in job.stores.items():
        if store.entries and sha256_bytes(pack(list(store.entries))) != store.digest:
            raise ValueError(f"cell {job.cell.cell_id}: the store {'/'.join(map(str, key))} does not match its digest "
                             f"{store.digest[:12]}")


def run_job(job: CellJob, project: bytes | None, bundle: Bundle | None, node: str,
            cancel: threading.Event | None = None) -> JobResult:
    """Run one job on this node's engine; the cell folder comes back as an archive, the scratch folder goes.
    `project`: the checkout's folders (None: already received, receive_project).
    `cancel`: set when the controller stops the run (the cell then raises Cancelled at its next step)."""
    from runner.protocols.registry import protocol_named

    started = time.time()
    check_payloads(job, bundle)
    root, tasks, arms = _project(job.project_digest, project)
    scratch = Path(tempfile.mkdtemp(prefix=f"memgrid-{job.run_id}-"))
    try:
        ctx = TrialContext(_engine(), job.run_id, scratch, job.images, tasks, arms, bundle and BundleMemory(bundle),
                           dict(job.stores), dict(job.images_by_arm), dict(job.agent_setups), limits=job.limits,
                           session_limits=job.session_limits, disk_mib=job.disk_mib, command_agents=land_commands(job.command_agents, scratch / "command-agents"),
                           protocol=protocol_named(job.protocol), cancel=cancel or threading.Event(), embedder=job.embedder,
                           root=root, protocol_setup=job.protocol_setup)
        row = run_cell(ctx, job.cell, job.attempt, bundle)
        folder = scratch / "cells" / job.cell.cell_id
        files = [Entry(p.relative_to(folder).as_posix(), p.read_bytes()) for p in tree_files(folder)] if folder.is_dir() else []
        return JobResult(row, pack(files), node, started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
