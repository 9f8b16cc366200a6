"""One cell (Harbor's trial), and the phase every protocol builds its cells from.

`run_cell` hands the cell to its protocol. A protocol runs one or more phases; `run_phase` is one:
a fresh, hardened sandbox from a bundle verified inside it, the agent's session (or a harness
step), the gate's proofs, the workspace exported, and the arm's store snapshotted with its digest
for the next phase. Nothing else passes between phases.

A harness failure (engine error, interruption, memgrid's own agent failing) yields a non-final row, so
resume reruns the cell; everything the agent or checker did is final, however the agent ended.
"""

import errno
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import docker.errors

from runner.agents.base import BUDGET_EXHAUSTED, CONTEXT_WINDOW, ENDED_CAPPED, ReferenceChannel, SessionSetup, Transcript
from runner.agents.registry import agent_class, make_agent
from runner.arms.kinds import STORE_DIR, CellMemory, kind_of
from runner.corpus.build import MemorySource
from runner.digest import sha256_bytes
from runner.env import netguard
from runner.env.archive import Entry, Export, UnsafeArchive, pack, read_export
from runner.env.bundle import Bundle, arm_instructions, bundle_of
from runner.env.embedder import EMBEDDER_URL
from runner.env.images import ImageRef, ImageSet
from runner.env.model_endpoint import ModelEndpoint
from runner.env.overlap import Ahead, StartFailed
from runner.env.containers import ROLE_LABEL, Limits
from runner.env.sandbox import MIB, DiskBudget, Sandbox, SandboxExpired, expiry_checked, probe
from runner.grading import gate
from runner.grading.checker import checker_bound
from runner.plan.grid import CellSpec
from runner.plan.spec import DEFAULT_DISK_MIB, ArmSpec, SessionLimits, TaskSpec, provider
from runner.results.ledger import LedgerRow

VERIFY_SECONDS = 60
SETUP_SECONDS = 120  # the bound on waiting for a step started ahead (a cell's sidecars, its checker's container)
REMOVAL_SECONDS = 60  # the bound on waiting for a cell's containers to be removed


class Cancelled(Exception):
    """The run is stopping (Ctrl-C): abandon this cell without recording it."""


class OwnAgentFailed(RuntimeError):
    """One of memgrid's own agents (floor, ceiling, reader) failed: a harness error, rerun on resume."""


@dataclass
class TrialContext:
    client: object
    run_id: str
    run_dir: Path
    images: ImageSet
    tasks: dict[str, TaskSpec]
    arms: dict[str, ArmSpec]
    memory: MemorySource | None = None  # the built corpora, for arms of a corpus kind
    stores: dict = field(default_factory=dict)  # (arm, condition, seed) -> StoreSnapshot, for arms with an ingest
    images_by_arm: dict = field(default_factory=dict)  # arm -> ImageRef of an arm that ships its own image
    agent_setups: dict = field(default_factory=dict)  # agent name -> what its class prepared for the grid
    limits: Limits = Limits()
    session_limits: SessionLimits = SessionLimits()  # the grid's caps on a model session; a task's own win
    disk_mib: int = DEFAULT_DISK_MIB  # the grid's disk budget per sandbox; a task's own limit wins
    cancel: threading.Event = field(default_factory=threading.Event)
    command_agents: dict = field(default_factory=dict)  # the grid spec's command agents by name
    # protocols.base.Protocol, the grid's, which runs each cell: required, since the kit sits below the protocols and
    # names none of them; whoever builds a context looks it up (runner.protocols.registry.protocol_named)
    protocol: object = field(kw_only=True)
    protocol_setup: object = None  # what the protocol prepared for the run (Protocol.prepare)
    embedder: ImageRef | None = None  # the shared embedder's image, when an arm of the run embeds through it
    ahead: object = None  # SandboxesAhead: sandboxes started for the next cells (the local executor); None: none
    root: Path | None = None  # the checkout its project files come from (a worker's unpacked archive); None: project_root()

    def check_cancel(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def run_cell(ctx: TrialContext, cell: CellSpec, attempt: int, bundle: Bundle | None = None) -> LedgerRow:
    """Run one cell attempt through its protocol. `bundle` lets a test hand in a tampered bundle."""
    return ctx.protocol.run_cell(ctx, cell, attempt, bundle)


def agent_config(cell: CellSpec, arm: ArmSpec, server: ArmSpec | None = None, phase: str | None = None,
                 mcp_env: dict | None = None) -> dict:
    """`server`: the mcp arm whose server the session (mcp) or the harness's prefetch (prefetch) talks to;
    `mcp_env`: variables the agent starts that server with (a protocol's switches for the arm)."""
    config = {"agent": cell.agent, "task": cell.task, "arm": cell.arm, "arm_kind": arm.kind, "seed": cell.seed,
              "condition": cell.condition, "hooks": [{"event": h.event, "command": list(h.command)} for h in arm.hooks]}
    mcp = (server or arm).mcp
    write = kind_of(arm).write_path(arm) if phase is not None else None
    if mcp is not None:
        command = mcp.write_command if write is not None and mcp.write_command else mcp.command
        config["mcp"] = {"server": mcp.server, "search_tool": mcp.search_tool, "search": mcp.search.as_config(),
                         "command": [part.replace("{store}", STORE_DIR).replace("{embedder_url}", EMBEDDER_URL)
                                     for part in command]}
        if mcp_env:
            config["mcp"]["env"] = dict(mcp_env)
    if phase is not None:  # a protocol of several sessions: which one, and how the agent may write to the arm
        config["phase"] = phase
        if write is not None:
            config["write"] = write
    return config


def cell_memory(ctx: TrialContext, cell: CellSpec, store: tuple[Entry, ...] = ()) -> CellMemory:
    return CellMemory(ctx.memory, ctx.tasks.get(cell.task), cell.condition, cell.seed, store)


def sandbox_image(ctx: TrialContext, arm: ArmSpec, agent: str):
    """The image an arm's cells run in: its own (or the arm it uses) when it ships one, else the sandbox
    image; an agent that layers itself over that image (claude-code) says which."""
    base = ctx.images_by_arm.get(provider(arm, ctx.arms).name, ctx.images.sandbox)
    return agent_class(agent, ctx.command_agents).image(ctx.agent_setups.get(agent), base)


def embedder_image(ctx: TrialContext, arm: ArmSpec) -> str | None:
    """The shared embedder's image for an arm with `embedder: shared` (its sandbox starts the sidecar), else None."""
    if arm.embedder != "shared":
        return None
    if ctx.embedder is None:
        raise RuntimeError(f"arm {arm.name} embeds through the shared embedder, but the run built no embedder image")
    return ctx.embedder.tag


def store_of(ctx: TrialContext, cell: CellSpec):
    return ctx.stores[(provider(ctx.arms[cell.arm], ctx.arms).name, cell.condition, cell.seed)]


class VerifierFailed(RuntimeError):
    """The bundle verifier printed no report: memgrid's own process failed or ran out of time, so no digest was read
    and nothing can be said to mismatch. The cell is discarded with `reason` and run again (gate.RETRIED)."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def bundle_verification(sandbox: Sandbox, bundle: Bundle) -> gate.GateProof:
    """The verifier's report read against the bundle's digest; a mismatch only when a report was read. A run whose
    output the engine lost is read again (sandbox.probe), and said in the proof."""
    result, lost = probe(lambda: sandbox.verification_report(timeout=VERIFY_SECONDS))
    again = f"; the engine returned no output of {lost} earlier run{'s' * (lost > 1)}, read again" if lost else ""
    line = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    try:
        report = json.loads(line)
    except json.JSONDecodeError:
        said = (f"exit {result.exit_code} after {result.seconds:.1f}s; stdout {line[:120]!r}; stderr "
                f"{result.stderr[-300:]!r}{again}")
        if result.timed_out and result.seconds >= VERIFY_SECONDS:  # a kill is 137 too: only the time says which
            raise VerifierFailed(gate.VERIFIER_TIMEOUT, f"the bundle verifier ran past {VERIFY_SECONDS}s: {said}") from None
        raise VerifierFailed(gate.VERIFIER_FAILED, f"the bundle verifier printed no report: {said}") from None
    proof = gate.bundle_proof(report, bundle.digest)
    return replace(proof, detail=proof.detail + again)


def isolation_proof(sandbox: Sandbox, allowed: set[str]) -> gate.GateProof:
    """From inside an answer container: /sandbox holds what `allowed` names only, and the container has no network.
    The listing always names the request memgrid put there: one that comes back empty after every read is the
    engine's loss, never a pass (an empty listing holds nothing extra)."""
    result, lost = probe(lambda: sandbox.exec(["ls", "-A", "/sandbox"], timeout=30, workdir="/"))
    listing = result.stdout.split()
    if not listing:
        raise VerifierFailed(gate.VERIFIER_FAILED, f"the listing of /sandbox came back empty {lost + 1} times: exit "
                                                   f"{result.exit_code}; stderr {result.stderr[-300:]!r}")
    network = sandbox.container.attrs.get("HostConfig", {}).get("NetworkMode")
    return gate.answer_isolation(listing, network, allowed,
                                 None if network in (None, "none") else model_network(sandbox, network))


def model_network(sandbox: Sandbox, name: str) -> tuple[bool, list[str]]:
    """A model answerer's network, as the engine has it: whether it is internal, and the role of every other container
    on it (a container of no memgrid role reads as 'unknown')."""
    client = sandbox.client
    attrs = client.api.inspect_network(name)
    others = []
    for container_id in attrs.get("Containers") or {}:
        if container_id == sandbox.container.id:
            continue
        try:
            labels = client.api.inspect_container(container_id).get("Config", {}).get("Labels") or {}
        except docker.errors.NotFound:
            continue
        others.append(labels.get(ROLE_LABEL, "unknown"))
    return bool(attrs.get("Internal")), others


# The sandbox's memory cgroup, as its own namespace shows it: cgroup v2, then v1 (one of the two exists).
MEMORY_COUNTERS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")


def memory_kills(sandbox: Sandbox) -> gate.MemoryKills:
    """How many processes of the sandbox the kernel killed at its memory limit, from its cgroup's oom_kill count.
    Read as root: the agent's processes (uid 1000) can neither replace the read-only cat nor reach a root
    process's output through /proc; the container's first process only sleeps, so the engine's own OOMKilled
    stays false while an exec'd process is killed, and is read only when the container itself is gone."""
    api = sandbox.client.api
    try:
        exec_id = api.exec_create(sandbox.container.id, ["/bin/cat", *MEMORY_COUNTERS], user="0", workdir="/")["Id"]
        out, _ = api.exec_start(exec_id, demux=True)
        return gate.memory_kills((out or b"").decode(errors="replace"))
    except docker.errors.APIError as e:
        try:
            state = api.inspect_container(sandbox.container.id).get("State", {})
        except docker.errors.NotFound:
            state = {}
        return gate.memory_kills(None, bool(state.get("OOMKilled")), f"{type(e).__name__}: {str(e)[:200]}")


def prefetch_in_sandbox(ctx: TrialContext, sandbox: Sandbox, server: ArmSpec, cell_dir: Path) -> list[gate.GateProof]:
    """The harness, not the agent, searches the server with the prompt and injects the hits before
    the session; its own record (prefetch.jsonl) proves the server answered."""
    result = sandbox.exec(["memgrid-reader", "--prefetch"], timeout=VERIFY_SECONDS * 2, workdir="/sandbox")
    record = Transcript(agent="prefetch", model=None)
    record.add_printed(result.stdout)
    record.save(cell_dir / "prefetch.jsonl")
    proofs = gate.server_proofs(record, server.mcp.server, server.mcp.prefix, server.mcp.required_tools)
    hits = next((e.get("hits", 0) for e in record.events if e["type"] == "prefetched"), 0)
    proofs.append(gate.GateProof("prefetch_injected", result.exit_code == 0 and hits > 0,
                                 f"{hits} hits injected" if result.exit_code == 0 else f"prefetch exited {result.exit_code}"))
    return proofs


def treatment_proofs(ctx: TrialContext, arm: ArmSpec, transcript: Transcript, gateway: list[dict] | None,
                     writes: bool = False) -> list[gate.GateProof]:
    """The arm's own admission signals, read from the session's record. A real agent could list or call
    any server it finds, so an agent with a model (`gateway`: the record of what its CLI offered the model)
    proves isolation under every arm, not only mcp arms. `writes`: a session that may write must also have
    been offered the arm's write tools."""
    proofs = []
    own = kind_of(arm).own_server(arm)
    own_prefix = own.prefix if own is not None else None
    others = [a for a in ctx.arms.values() if kind_of(a).own_server(a) is not None and a.name != arm.name]
    if own is not None:
        required = own.required_tools + (own.write_tools if writes else ())
        proofs += gate.server_proofs(transcript, own.server, own.prefix, required)
    if own_prefix is not None or gateway is not None:
        proofs.append(gate.isolation_proof(transcript, tuple(a.mcp.prefix for a in others if a.mcp.prefix != own_prefix),
                                           sorted(a.name for a in others if own_prefix and a.mcp.prefix == own_prefix),
                                           gateway))
    if arm.hooks:
        proofs.append(gate.hooks_proof(transcript, arm.hooks))
    return proofs


def session_proofs(ctx: TrialContext, arm: ArmSpec, transcript: Transcript, endpoint: ModelEndpoint | None,
                   gateway: list[dict], core_tools: tuple[str, ...] = (), writes: bool = False,
                   memory: gate.GateProof | None = None, harness_code: bool = False,
                   requests_due: int | None = None) -> list[gate.GateProof]:
    """The proofs read from the session's record, in the order the discard reason is taken from. `memory` (the
    sandbox's oom_kill count) first: a process killed at the memory limit explains every later failure. With a
    model, the gateway's record adds: the model was reached (an unreachable model, or one whose last answer was an
    API error, explains every later failure), it was offered the tools the treatment needs, and no memory tool
    call was denied. Last, how the agent ended: a discard only when memgrid's own agent failed. A session that sent
    the model nothing (a CLI that stops when its required MCP server fails) is explained by the treatment's proofs
    first."""
    first = [memory] if memory is not None else []
    if endpoint is None:
        return [*first, *treatment_proofs(ctx, arm, transcript, None, writes), gate.agent_proof(transcript, harness_code)]
    own = kind_of(arm).own_server(arm)
    memory_tools = [f"{own.prefix}{t}" for t in own.required_tools + (own.write_tools if writes else ())] \
        if own is not None else []
    reached = gate.model_reached_proof(gateway, key_expected=not endpoint.scripted, due=requests_due)
    treatment = treatment_proofs(ctx, arm, transcript, gateway, writes)
    asked = any(r.get("kind") == "model" for r in gateway)
    return [*first, *([reached, *treatment] if asked else [*treatment, reached]),
            gate.tools_visible_proof([r for r in gateway if r.get("kind") == "model"], [*core_tools, *memory_tools]),
            gate.permissions_proof(transcript, (own.prefix,) if own is not None else ()),
            gate.agent_proof(transcript, harness_code)]


@dataclass(frozen=True)
class PhaseSpec:
    """One phase of a cell as its protocol asks for it."""
    name: str  # "session" for a one-phase protocol; the protocol's own names otherwise
    prompt: str
    bundle: Bundle
    record_dir: Path  # the cell folder, or a folder per phase
    agent_seconds: int
    channel: ReferenceChannel = ReferenceChannel()
    export: str | None = "/sandbox/workspace"  # what the checker grades; None: nothing
    artifact_bytes: int = 64 * MIB
    snapshot_store: bool = False  # keep /sandbox/store as the agent left it, for the next phase
    writes: bool = False  # the session may write to the arm: its write tools must be offered
    requests_due: int | None = None  # the model requests the harness rendered for the session (a model answerer's)
    disk_mib: int | None = None
    store_report: dict | None = None  # an ingested store's report: the gate proves it is populated
    extra_proofs: tuple[gate.GateProof, ...] = ()  # proofs the protocol took before the sandbox started
    pre_session: object = None  # callable(sandbox) -> list[GateProof], run after the bundle is verified
    model_script: dict | None = None  # what the scripted model plays in this phase (None: a coding task's)
    required_paths: tuple[str, ...] | None = None  # what must exist before the session (None: the arm's own)
    collect: tuple[str, ...] = ()  # files the protocol keeps from the sandbox after the session (an arm's log)
    arm: ArmSpec | None = None  # the arm this phase runs with; None: the cell's (personal's answer runs with none)


@dataclass
class Session:
    decision: gate.GateDecision
    transcript: Transcript
    exported: Export | None  # the workspace as the agent left it (up to the artifact cap); None when discarded
    remover: threading.Thread  # removes the sandbox; join it before the cell ends
    timings: dict = field(default_factory=dict)  # seconds per step: the sandbox's start, the agent, the export (a model
    # agent's cells also its sidecars' and CLI's steps)
    agent: object = None
    store: tuple[Entry, ...] | None = None  # the store as the phase left it (snapshot_store)
    store_digest: str | None = None
    collected: dict = field(default_factory=dict)  # path -> text ("" when absent), of PhaseSpec.collect
    gateway: list[dict] | None = None  # the model gateway's record, outside the sandbox; None: no model session


# The most store content a phase may leave: the controller holds a store in memory to carry it on (the next
# phase's bundle, the forget step), so a session that writes past this has its store not read, not carried.
STORE_CAP_BYTES = 1024 * MIB


def store_snapshot(sandbox: Sandbox) -> Export:
    """/sandbox/store as the phase left it: its regular files, read as a stream that stops at the cap; links,
    special files and paths that leave the folder are dropped and listed, never followed or carried."""
    stream, _ = sandbox.container.get_archive(STORE_DIR, chunk_size=MIB)
    try:
        return read_export(stream, strip="store", cap_bytes=STORE_CAP_BYTES, keep_bytecode=True)
    finally:
        stream.close()


def store_digest(entries) -> str:
    return sha256_bytes(pack(list(entries)))


@dataclass(frozen=True)
class StepResult:
    name: str
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False  # stopped at the step's time limit


STEP_SECONDS = 120


def harness_step(ctx: TrialContext, cell: CellSpec, arm: ArmSpec, store: tuple[Entry, ...],
                 steps: list[tuple[str, list[str], bytes]], extra: tuple[Entry, ...] = (),
                 seconds: int = STEP_SECONDS, keep_store: bool = True, refused: Callable[[str], None] | None = None
                 ) -> tuple[list[StepResult], tuple[Entry, ...], str | None, gate.GateProof]:
    """Commands of the arm's own write path (its ingest, its write API) in a fresh container of its image,
    each with its input on stdin, over the store given and `extra` files (paths relative to /sandbox); the
    results, the store as they left it with its digest, and the bundle's proof. No agent runs here and the
    container has no network. `keep_store` False: the steps only read the store (a submission's search),
    so what they leave of it is neither read nor carried (no entries, digest None). A store that cannot be carried
    (past the cap, links or special files) is memgrid's fault unless `refused` takes why (a submission's index: its
    own doing), and the store is then empty."""
    image = ctx.images_by_arm.get(provider(arm, ctx.arms).name, ctx.images.sandbox)
    entries = [Entry(f"harness/{name}.json", data) for name, _, data in steps]
    entries += [Entry(f"store/{e.path}", e.data) for e in store] + list(extra)
    bundle = bundle_of(entries)
    results = []
    with harness_sandbox(ctx, cell, image.tag, bundle.tar, seconds * (len(steps) + 1),
                         embedder_image(ctx, provider(arm, ctx.arms))) as sandbox:
        # A step cut short because the sandbox outlived its lifetime (the controller frozen past it) is memgrid's
        # fault, not the arm's write path failing: the cell is discarded sandbox_expired and run again.
        with expiry_checked(sandbox.expired):
            proof = (gate.embedder_proof(sandbox.embedder, sandbox.embedder_failure) if sandbox.embedder_failure
                     else bundle_verification(sandbox, bundle))
            if proof.passed:
                sandbox.exec(["mkdir", "-p", STORE_DIR], timeout=30, workdir="/sandbox")
                for name, command, _ in steps:
                    r = sandbox.exec(["sh", "-c", f'exec "$@" < /sandbox/harness/{name}.json', "sh", *command],
                                     timeout=seconds, workdir="/sandbox")
                    results.append(StepResult(name, r.exit_code, r.stdout, r.stderr, r.timed_out and r.seconds >= seconds))
            if not keep_store:
                return results, (), None, proof
            after = store_snapshot(sandbox)
    if after.too_large or after.dropped:  # the arm's own steps (no agent ran): a store memgrid cannot carry is a fault
        why = (f"the store {', '.join(name for name, _, _ in steps)} left cannot be carried: "
               + (f"over the cap of {after.cap_bytes // MIB} MiB at {after.over_cap_path}" if after.too_large
                  else ", ".join(f"{d.path} ({d.kind})" for d in after.dropped[:5])))
        if refused is None:
            raise UnsafeArchive(why)
        refused(why)
        return results, (), store_digest(()), proof
    return results, after.entries, store_digest(after.entries), proof


def harness_sandbox(ctx: TrialContext, cell: CellSpec, image: str, bundle_tar: bytes, lifetime: int,
                    embedder: str | None) -> Sandbox:
    """The sandbox of a harness step (an arm's ingest or write API; no agent), not started."""
    return Sandbox(ctx.client, image, ctx.run_id, cell.cell_id, bundle_tar=bundle_tar, lifetime=lifetime,
                   limits=ctx.limits, embedder=embedder)


def new_sandbox(ctx: TrialContext, cell: CellSpec, image: str, bundle: Bundle, agent_seconds: int, disk_mib: int | None,
                embedder: str | None, network: str = "none", waiting: int = 0) -> Sandbox:
    """A phase's sandbox, not started. `waiting`: how long it may sit started before its phase begins."""
    return Sandbox(ctx.client, image, ctx.run_id, cell.cell_id, bundle_tar=bundle.tar,
                   lifetime=waiting + SETUP_SECONDS + agent_seconds + VERIFY_SECONDS + 60, limits=ctx.limits,
                   network=network, disk=DiskBudget(disk_mib or ctx.disk_mib), embedder=embedder)


class SandboxAhead:
    """One cell's sandbox started, its bundle placed, on a thread of its own before the cell runs. `take` hands
    it to the cell; `drop` removes it whenever it is called, a start still under way included."""

    def __init__(self, ctx: TrialContext, cell: CellSpec, waiting: int):
        self.ctx, self.cell, self.waiting = ctx, cell, waiting
        self.bundle: Bundle | None = None
        self.sandbox: Sandbox | None = None
        self._lock = threading.Lock()
        self._started = self._dropped = False
        self.step = Ahead(f"cell {cell.cell_id}'s sandbox, started ahead", self._start)

    def _start(self) -> None:
        task, arm = self.ctx.tasks[self.cell.task], self.ctx.arms[self.cell.arm]
        self.bundle = self.ctx.protocol.bundle(self.ctx, self.cell)
        image = sandbox_image(self.ctx, arm, self.cell.agent).tag
        self.sandbox = new_sandbox(self.ctx, self.cell, image, self.bundle, task.agent_seconds, task.disk_mib,
                                   embedder_image(self.ctx, provider(arm, self.ctx.arms)), waiting=self.waiting)
        self.sandbox.start()
        with self._lock:
            self._started = True
            dropped = self._dropped
        if dropped:
            self.sandbox.stop()

    def take(self, bundle: Bundle, image: str, disk_mib: int, embedder: str | None) -> Sandbox | None:
        """The sandbox, if it started, is still running, and holds exactly what the phase would start with."""
        if not self.step.wait(SETUP_SECONDS) or self.step.error is not None:
            self.drop()
            return None
        args = self.sandbox.create_args
        fits = (self.bundle.digest == bundle.digest and self.bundle.tar == bundle.tar and args["image"] == image
                and self.sandbox.disk.mib == disk_mib and self.sandbox.embedder_image == embedder)
        running = False
        if fits:  # and it has not outlived its lifetime waiting
            try:
                self.sandbox.container.reload()
                running = self.sandbox.container.status == "running"
            except docker.errors.NotFound:  # removed meanwhile (the run is stopping)
                pass
        if not running:
            self.drop()
            return None
        return self.sandbox

    def drop(self) -> None:
        with self._lock:
            self._dropped = True
            started = self._started
        if started:
            self.sandbox.stop()


class SandboxesAhead:
    """The local executor's sandboxes started ahead of need: when a cell hands off its sandbox (its workspace
    exported, its checker about to grade), the sandbox of the cell the scheduler will start next
    (`upcoming`) starts on a thread of its own, its bundle placed in it, so that its start overlaps the
    earlier cell's checker instead of following it. Only coding cells whose agent needs no model (a
    model agent's sandbox joins a network its sidecars make); the bundle is verified inside the sandbox
    when the cell runs, as for any sandbox. What no cell took is removed at `close`.

    The other way round, a cell's last removals (its checker's, its sandbox's) are left `behind` it to
    finish beside the next cell; `close` waits for them, so the run still ends with none of its containers."""

    def __init__(self, ctx: TrialContext, upcoming):
        self.ctx, self.upcoming = ctx, upcoming  # upcoming() -> the cell the scheduler starts next, or None
        self._lock = threading.Lock()
        self._ahead: dict[str, SandboxAhead] = {}
        self._behind: list[threading.Thread] = []

    def behind(self, removals: list[threading.Thread]) -> None:
        with self._lock:
            self._behind = [t for t in self._behind if t.is_alive()] + removals

    def released(self, cell: CellSpec) -> None:
        """`cell` no longer needs its sandbox: start the next cell's, waiting at most as long as `cell`'s checker."""
        following = self.upcoming()
        if following is None or self.ctx.cancel.is_set() or not self.ctx.protocol.ahead \
                or agent_class(following.agent, self.ctx.command_agents).needs_model:
            return
        waiting = checker_bound(self.ctx.tasks[cell.task]) + SETUP_SECONDS
        with self._lock:
            if following.cell_id not in self._ahead:
                self._ahead[following.cell_id] = SandboxAhead(self.ctx, following, waiting)

    def _pop(self, cell_id: str) -> SandboxAhead | None:
        with self._lock:
            return self._ahead.pop(cell_id, None)

    def bundle(self, cell: CellSpec) -> Bundle | None:
        """The bundle built for the cell's sandbox ahead, so the cell does not build it again."""
        with self._lock:
            ahead = self._ahead.get(cell.cell_id)
        if ahead is None or not ahead.step.wait(SETUP_SECONDS):
            return None
        return ahead.bundle

    def take(self, cell: CellSpec, bundle: Bundle, image: str, disk_mib: int, embedder: str | None) -> Sandbox | None:
        ahead = self._pop(cell.cell_id)
        return ahead.take(bundle, image, disk_mib, embedder) if ahead is not None else None

    def close(self) -> None:
        with self._lock:
            left, self._ahead = list(self._ahead.values()), {}
            removals, self._behind = self._behind, []
        for ahead in left:
            ahead.drop()
            ahead.step.wait(SETUP_SECONDS)  # a start still under way removes its sandbox as it ends
        wait_for_removals(removals)


def behind(ctx: TrialContext, removals: list[threading.Thread]) -> None:
    """A cell's container removals, already under way: the local executor lets the next cell start while they
    finish (SandboxesAhead.behind); anywhere else the cell waits for them."""
    if ctx.ahead is not None:
        ctx.ahead.behind(removals)
        return
    wait_for_removals(removals)


def wait_for_removals(removals: list[threading.Thread]) -> None:
    """Until the removals have ended. A removal first waits for its container's start (a checker's, started
    beside the session, is still under way when a cell ends early), so it is given that start's bound on top of
    its own: waiting for less lets the run end, its leftovers swept, while that start can still create the
    container. They run side by side, so the bound is on all of them together."""
    deadline = time.monotonic() + SETUP_SECONDS + REMOVAL_SECONDS
    for removal in removals:
        removal.join(timeout=max(0.0, deadline - time.monotonic()))


def remove_in_order(removals: list[Callable[[], None]], network: Callable[[], None] | None) -> None:
    """A phase's containers side by side (the sandbox, the cell's sidecars), then its network once none of them
    is left. A removal that fails (a loaded engine can answer a kill with 500) still lets the others end and
    the network go, its forced disconnect freeing the failed member's endpoint; then the failure is raised.
    On a dask worker nothing sweeps a run's networks at its end, so a network skipped here would stay."""
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            for removal in [pool.submit(r) for r in removals]:
                removal.result()
    finally:
        if network is not None:
            network()


def run_phase(ctx: TrialContext, cell: CellSpec, phase: PhaseSpec, attempt: int = 1) -> Session:
    """Sandbox, agent and gate. A model agent's sidecars start on a thread of their own while the sandbox
    starts on the cell's network, and the agent starts only once both are up and guarded. Once the
    workspace is exported the sandbox is removed in the background, so its removal overlaps the
    checker's start instead of delaying it."""
    arm = phase.arm or ctx.arms[cell.arm]
    cls = agent_class(cell.agent, ctx.command_agents)
    image = sandbox_image(ctx, arm, cell.agent).tag
    timings: dict = {}
    t0 = time.monotonic()
    run_setup = ctx.agent_setups.get(cell.agent)
    task = ctx.tasks.get(cell.task)
    session_limits = task.session_limits.over(ctx.session_limits) if task is not None else ctx.session_limits
    endpoint = sidecars = None
    if cls.needs_model:
        endpoint = cls.open_endpoint(ctx.client, run_setup, ctx.images, ctx.run_id, cell, task, arm, ctx.memory, attempt,
                                     phase.model_script, session_limits.max_output_tokens)
    sandbox = None
    gateway = None  # the gateway's record of the session, for an agent with a model
    handed_off = False

    def stop_sidecars() -> None:
        if sidecars is not None:  # nothing may still be starting on the network
            sidecars.wait(SETUP_SECONDS)
        endpoint.stop_containers()

    def stop_all() -> None:
        remove_in_order(([sandbox.stop] if sandbox is not None else []) + ([stop_sidecars] if endpoint is not None else []),
                        endpoint.stop if endpoint is not None else None)

    try:
        if endpoint is not None:
            sidecars = Ahead("the model sidecars' start", endpoint.start_sidecars)
        setup = SessionSetup(cell, task, arm, phase.name, phase.agent_seconds, phase.record_dir,
                             arm_instructions(arm), phase.channel, endpoint, run_setup, session_limits)
        agent = make_agent(setup, ctx.command_agents)
        agent.prepare(image)
        embedder = embedder_image(ctx, provider(arm, ctx.arms))
        if ctx.ahead is not None and endpoint is None:
            sandbox = ctx.ahead.take(cell, phase.bundle, image, phase.disk_mib or ctx.disk_mib, embedder)
        if sandbox is not None:
            timings["started_ahead"] = True  # its start is not in this cell's wall time
        else:
            sandbox = new_sandbox(ctx, cell, image, phase.bundle, phase.agent_seconds, phase.disk_mib, embedder,
                                  network=endpoint.network_name if endpoint else "none")
        host = []  # the proofs that the host is out of reach (cells with their own network)
        try:
            if sandbox.container is None:
                sandbox.start()
            timings["container_start"] = round(sandbox.started_seconds, 3)
            if endpoint is not None:  # a network of its own: the host must be out of reach before anything runs
                t_guard = time.monotonic()
                host.append(netguard.guard(ctx.client, sandbox.container, ctx.images.base.tag,
                                           run_id=ctx.run_id, cell_id=cell.cell_id))
                timings["network_guard"] = round(time.monotonic() - t_guard, 3)
            t_verify = time.monotonic()
            checks = [] if sandbox.embedder_image is None else [gate.embedder_proof(sandbox.embedder, sandbox.embedder_failure)]
            checks.append(bundle_verification(sandbox, phase.bundle))
            required = arm.required_paths if phase.required_paths is None else phase.required_paths
            if required:
                check = sandbox.exec(["sh", "-c", 'for p; do test -e "$p" || echo "$p"; done', "sh", *required],
                                     timeout=VERIFY_SECONDS, workdir="/sandbox")
                checks.append(gate.paths_proof(check.stdout.split(), required))
            timings["verify"] = round(time.monotonic() - t_verify, 3)
        except Exception as e:
            if sidecars is None or isinstance(e, Cancelled):
                raise
            raise StartFailed(f"the sandbox failed: {type(e).__name__}: {e}; "
                              f"{sidecars.outcome(SETUP_SECONDS)}") from e
        if sidecars is not None:
            sidecars.result(SETUP_SECONDS)
            timings["sidecars_start"] = sidecars.seconds
            if endpoint.guard_proof is not None:
                host.append(endpoint.guard_proof)
            timings["setup"] = round(time.monotonic() - t0, 3)
        proofs = [*phase.extra_proofs, *host, *checks]
        if phase.store_report is not None:
            proofs.append(gate.store_proof(phase.store_report))
        ctx.check_cancel()
        if all(p.passed for p in proofs) and kind_of(arm).prefetches:
            proofs += prefetch_in_sandbox(ctx, sandbox, provider(arm, ctx.arms), phase.record_dir)
        if all(p.passed for p in proofs) and phase.pre_session is not None:
            proofs += phase.pre_session(sandbox)
        disk = None
        if all(p.passed for p in proofs):  # the agent starts only on a verified bundle and a populated store
            t_agent = time.monotonic()
            transcript = agent.run(sandbox, phase.prompt)
            timings["agent"] = round(time.monotonic() - t_agent, 3)
            if transcript.ended is None:  # an agent that does not say: its own error flag
                transcript.ended = "error" if transcript.is_error else "ok"
            if endpoint is not None:
                timings.update(agent.timings)
            disk = Ahead("the disk budget check", sandbox.full_mounts)  # beside reading the records and the export
            kills = memory_kills(sandbox)  # beside the disk check (~0.1 s)
            if kills.count:  # the agent's own doing (gate.memory_proof): recorded, and scored unless memgrid's agent ran
                transcript.add("resource_limit", resource="memory", limit_mib=sandbox.create_args["mem_limit"] // MIB,
                               kills=kills.count, seen=kills.seen)
            memory = gate.memory_proof(kills, cls.harness_code)
            if endpoint is not None:
                gateway = endpoint.collect(phase.record_dir).get("gateway", [])
                agent.read_gateway(transcript, gateway)
                output_cap(transcript, gateway)
                past_window(transcript, gateway)
            proofs += session_proofs(ctx, arm, transcript, endpoint, gateway or [],
                                     getattr(cls, "core_tools", ()), phase.writes, memory, cls.harness_code,
                                     phase.requests_due)
        else:
            transcript = Transcript(agent=cell.agent, model=None)
            transcript.add("skipped", reason=f"{next(p for p in proofs if not p.passed).name} failed; the agent was not started")
        decision = gate.decide(proofs)
        exported = None
        if decision.admitted and phase.export:
            t_export = time.monotonic()
            exported = sandbox.export(phase.export, phase.artifact_bytes)
            timings["export"] = round(time.monotonic() - t_export, 3)
        if disk is not None and (full := disk.result(VERIFY_SECONDS)):
            transcript.add("resource_limit", resource="disk", budget_mib=sandbox.disk.mib, full=full)
        store, digest = left_store(sandbox, transcript) if phase.snapshot_store else (None, None)
        transcript.save(phase.record_dir / "transcript.jsonl")
        write_json(phase.record_dir / "proof.json", {"admitted": decision.admitted, "discard_reason": decision.discard_reason,
                                                     "bundle_digest": phase.bundle.digest, "proofs": decision.as_json()})
        if decision.discard_reason == gate.HARNESS_ERROR:  # memgrid's own agent failed: rerun, never a verdict
            raise OwnAgentFailed(next(p.detail for p in decision.proofs if not p.passed))
        collected = {path: sandbox.read_text(path) for path in phase.collect}
        if why := sandbox.expired():  # what was read may be cut short: the session is not the agent's record
            raise SandboxExpired(why)
        remover = threading.Thread(target=stop_all, daemon=True)
        remover.start()
        handed_off = True
        if ctx.ahead is not None:
            ctx.ahead.released(cell)
        return Session(decision, transcript, exported, remover, timings, agent, store, digest, collected, gateway)
    except Exception as e:  # a read that failed because the sandbox expired under it says so
        if not isinstance(e, (SandboxExpired, Cancelled)) and sandbox is not None and (why := sandbox.expired()):
            raise SandboxExpired(why) from e
        raise
    finally:
        if not handed_off:
            stop_all()


def left_store(sandbox: Sandbox, transcript: Transcript) -> tuple[tuple[Entry, ...] | None, str | None]:
    """The store a session left, and its digest; what the agent put there that cannot be carried is its own
    doing, recorded in the transcript and scored: links and special files are left out (`store_dropped`), and a
    store past the cap is not read at all (`resource_limit`: store, entries and digest None)."""
    snapshot = store_snapshot(sandbox)
    if snapshot.dropped:
        transcript.add("store_dropped", count=len(snapshot.dropped),
                       files=[f"{d.path} ({d.kind})" for d in snapshot.dropped[:20]])
    if snapshot.too_large:
        transcript.add("resource_limit", resource="store", cap_mib=snapshot.cap_bytes // MIB, at=snapshot.over_cap_path)
        return None, None
    return snapshot.entries, store_digest(snapshot.entries)


def output_cap(transcript: Transcript, gateway: list[dict]) -> None:
    """A session the gateway stopped at its output-token cap ended on the refused request's error: it is
    budget_exhausted (scored, and said so), not an agent error."""
    stopped = next((g for g in gateway if g.get("kind") == "budget"), None)
    if stopped is not None:
        transcript.error_class, transcript.is_error, transcript.ended = BUDGET_EXHAUSTED, False, ENDED_CAPPED
        transcript.error = f"the session reached its output-token cap of {stopped['cap']} ({stopped['output_tokens']} used)"


def past_window(transcript: Transcript, gateway: list[dict]) -> None:
    """A session whose last model request was refused as past the model's context window ended there: the error
    class says so (scored, gate.context_overflow), whatever words the CLI exited with."""
    calls = [g for g in gateway if g.get("kind") == "model"]
    if calls and gate.context_overflow(calls[-1]):
        transcript.error_class = CONTEXT_WINDOW
        transcript.error = f"the model refused the session's context as past its window: {calls[-1].get('error_message')}"[:500]


def new_row(ctx: TrialContext, cell: CellSpec, attempt: int) -> dict:
    """The ledger row's fields before anything ran; a protocol fills in what its phases and grading found."""
    return dict(run_id=ctx.run_id, cell_id=cell.cell_id, attempt=attempt, final=True, task=cell.task, arm=cell.arm,
                seed=cell.seed, condition=cell.condition, agent=cell.agent, order_index=cell.order_index, model=None,
                sandbox_image=sandbox_image(ctx, ctx.arms[cell.arm], cell.agent).id, checker_image=ctx.images.checker.id,
                bundle_digest=None, store_digest=None, admitted=False, discard_reason=None, gate_proofs="[]",
                checker_passed=None, checker_exit_code=None, checker_detail=None, checker_seconds=None, outcome=None,
                tokens_fresh_input=None, tokens_cache_read=None, tokens_cache_creation=None, tokens_output=None,
                cost_usd=None, cli_cost_usd=None, timings=None, error_class=None, error_detail=None, damage_fired=None,
                agent_ended=None)


def session_fields(session: Session) -> dict:
    """What a phase's session puts in the ledger row: the gate's decision, the model and its tokens."""
    decision, transcript = session.decision, session.transcript
    row = dict(admitted=decision.admitted, discard_reason=decision.discard_reason,
               gate_proofs=json.dumps(decision.as_json()), model=transcript.model,
               tokens_fresh_input=transcript.usage.fresh_input, tokens_cache_read=transcript.usage.cache_read,
               tokens_cache_creation=transcript.usage.cache_creation, tokens_output=transcript.usage.output,
               cli_cost_usd=transcript.cli_cost_usd, error_class=transcript.error_class,
               error_detail=transcript.error, timings=json.dumps(session.timings) if session.timings else None,
               cost_usd=session.agent.cost(transcript.usage) if session.agent is not None else None,
               agent_ended=transcript.ended)
    if decision.discard_reason == gate.MODEL_UNREACHABLE:
        row["error_class"] = gate.MODEL_UNREACHABLE
    limit = next((e for e in transcript.events if e["type"] == "resource_limit"), None)
    if limit is not None and row["error_class"] is None:  # the agent's own doing: recorded, still scored
        row.update(error_class="resource_limit", error_detail=limit_detail(limit))
    return row


def limit_detail(limit: dict) -> str:
    """What a `resource_limit` event says the session reached, in the ledger's words."""
    if limit["resource"] == "memory":
        return f"memory limit of {limit['limit_mib']} MiB reached: {limit['seen']}"
    if limit["resource"] == "store":
        return f"the store left is over the cap of {limit['cap_mib']} MiB (at {limit['at']}): not read, not carried"
    return f"disk budget of {limit['budget_mib']} MiB reached: {', '.join(limit['full'])}"


DISK_FULL = "disk_full"  # error class of a cell whose own files could not be written: the controller's disk is full


def disk_full(e: BaseException) -> bool:
    """The error says a disk the controller writes to is full (no space left, or its quota reached)."""
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)


def harness_failure(e: Exception) -> dict:
    return dict(final=False, admitted=False,
                discard_reason=(gate.SANDBOX_EXPIRED if isinstance(e, SandboxExpired) else
                                e.reason if isinstance(e, VerifierFailed) else gate.HARNESS_ERROR),
                error_class=DISK_FULL if disk_full(e) else type(e).__name__, error_detail=str(e)[:500])


def cell_failure(ctx: TrialContext, e: Exception) -> dict:
    """What a cell records when its protocol's code raised: a harness failure (rerun on resume), unless the
    run is stopping, in which case the cell is abandoned (Cancelled) and records nothing."""
    if isinstance(e, Cancelled):
        raise e
    if ctx.cancel.is_set():
        raise Cancelled() from e
    return harness_failure(e)
