"""One cell, end to end (Harbor's trial): bundle -> sandbox -> agent -> gate -> checker -> ledger row.

Files land in runs/<run_id>/cells/<cell_id>/: bundle.manifest, transcript.jsonl, proof.json,
artifact.tar, checker.log. A harness failure (engine error, interruption) yields a non-final row,
so resume reruns the cell; everything the agent or checker did is final.
"""

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from runner.agents import claude_code
from runner.grading import gate
from runner.env import netguard
from runner.agents.base import Transcript, make_agent
from runner.env.archive import Entry, Export, pack
from runner.env.bundle import Bundle, arm_instructions, build_bundle
from runner.grading.checker import outcome_of, run_checker
from runner.corpus.build import MemorySource
from runner.plan.grid import CellSpec
from runner.env.images import ImageSet
from runner.results.ledger import LedgerRow
from runner.env.model_endpoint import SCRIPTED, ModelEndpoint
from runner.env.sandbox import MIB, DiskBudget, Limits, Sandbox
from runner.plan.spec import DEFAULT_DISK_MIB, STORE_KINDS, ArmSpec, TaskSpec, provider

VERIFY_SECONDS = 60


class Cancelled(Exception):
    """The run is stopping (Ctrl-C): abandon this cell without recording it."""


@dataclass
class TrialContext:
    client: object
    run_id: str
    run_dir: Path
    images: ImageSet
    tasks: dict[str, TaskSpec]
    arms: dict[str, ArmSpec]
    memory: MemorySource | None = None  # the built corpora, for arms of a corpus kind
    stores: dict = field(default_factory=dict)  # (arm, condition, seed) -> StoreSnapshot, for mcp arms
    images_by_arm: dict = field(default_factory=dict)  # arm -> ImageRef of an arm that ships its own image
    claude: object | None = None  # ClaudeCodeSetup when the grid runs the claude-code agent
    limits: Limits = Limits()
    disk_mib: int = DEFAULT_DISK_MIB  # the grid's disk budget per sandbox; a task's own limit wins
    cancel: threading.Event = field(default_factory=threading.Event)

    def check_cancel(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


STORE_DIR = "/sandbox/store"


def agent_config(cell: CellSpec, arm: ArmSpec, server: ArmSpec | None = None) -> dict:
    """`server`: the mcp arm whose server the session (mcp) or the harness's prefetch (prefetch) talks to."""
    config = {"agent": cell.agent, "task": cell.task, "arm": cell.arm, "arm_kind": arm.kind, "seed": cell.seed,
              "condition": cell.condition, "hooks": [{"event": h.event, "command": list(h.command)} for h in arm.hooks]}
    mcp = (server or arm).mcp
    if mcp is not None:
        config["mcp"] = {"server": mcp.server, "search_tool": mcp.search_tool,
                         "command": [part.replace("{store}", STORE_DIR) for part in mcp.command]}
    return config


def memory_entries(ctx: "TrialContext", cell: CellSpec, arm: ArmSpec) -> list[Entry]:
    """What the arm's kind brings from the condition's corpus into the bundle."""
    if arm.kind == "corpus":
        return [Entry(f"memory/{name}.md", text) for name, text in ctx.memory.documents(cell.condition, cell.seed)]
    if arm.kind == "oracle":
        return [Entry("agent/memory.md", ctx.memory.evidence(ctx.tasks[cell.task], cell.condition, cell.seed).encode())]
    if arm.kind in STORE_KINDS:
        return [Entry(f"store/{e.path}", e.data) for e in store_of(ctx, cell).entries]
    return []


def sandbox_image(ctx: "TrialContext", arm: ArmSpec, agent: str):
    """The image an arm's cells run in: its own (or the arm it uses) when it ships one, else the sandbox
    image; for claude-code, the CLI's layer over that image."""
    base = ctx.images_by_arm.get(provider(arm, ctx.arms).name, ctx.images.sandbox)
    return ctx.claude.agent_images[base.id] if agent == claude_code.NAME else base


def store_of(ctx: "TrialContext", cell: CellSpec):
    return ctx.stores[(provider(ctx.arms[cell.arm], ctx.arms).name, cell.condition, cell.seed)]


def bundle_verification(sandbox: Sandbox, bundle: Bundle) -> gate.GateProof:
    line = sandbox.verification_report(timeout=VERIFY_SECONDS)
    try:
        report = json.loads(line)
    except json.JSONDecodeError:
        report = {"error": f"the verifier printed no report within {VERIFY_SECONDS}s: {line[:200]!r}"}
    return gate.bundle_proof(report, bundle.digest)


def run_cell(ctx: TrialContext, cell: CellSpec, attempt: int, bundle: Bundle | None = None) -> LedgerRow:
    """Run one cell attempt. `bundle` lets a test hand in a tampered bundle."""
    task, arm = ctx.tasks[cell.task], ctx.arms[cell.arm]
    cell_dir = ctx.run_dir / "cells" / cell.cell_id
    cell_dir.mkdir(parents=True, exist_ok=True)
    started_at, t0 = now(), time.monotonic()
    row = dict(run_id=ctx.run_id, cell_id=cell.cell_id, attempt=attempt, final=True, task=cell.task, arm=cell.arm,
               seed=cell.seed, condition=cell.condition, agent=cell.agent, order_index=cell.order_index, model=None,
               sandbox_image=sandbox_image(ctx, arm, cell.agent).id, checker_image=ctx.images.checker.id, bundle_digest=None,
               store_digest=None, admitted=False, discard_reason=None, gate_proofs="[]", checker_passed=None,
               checker_exit_code=None, checker_detail=None, checker_seconds=None, outcome=None,
               tokens_fresh_input=None, tokens_cache_read=None, tokens_cache_creation=None, tokens_output=None,
               cost_usd=None, cli_cost_usd=None, timings=None, error_class=None, error_detail=None, damage_fired=None)

    def finish(**updates) -> LedgerRow:
        row.update(updates)
        return LedgerRow(**row, started_at=started_at, ended_at=now(), wall_seconds=round(time.monotonic() - t0, 3))

    try:
        config = agent_config(cell, arm, provider(arm, ctx.arms))
        extra = []
        if cell.agent == claude_code.NAME:  # its MCP servers travel in the verified bundle
            extra.append(Entry("agent/mcp.json", json.dumps(claude_code.mcp_config(arm, config), indent=1).encode()))
        bundle = bundle or build_bundle(task, arm, config, memory_entries(ctx, cell, arm) + extra)
        row["bundle_digest"] = bundle.digest
        if arm.kind in STORE_KINDS:
            row["store_digest"] = store_of(ctx, cell).digest
        (cell_dir / "bundle.manifest").write_text(bundle.manifest)
        ctx.check_cancel()
        session = run_session(ctx, cell, bundle, cell_dir, attempt)
        try:
            decision, transcript = session.decision, session.transcript
            row.update(admitted=decision.admitted, discard_reason=decision.discard_reason,
                       gate_proofs=json.dumps(decision.as_json()), model=transcript.model,
                       tokens_fresh_input=transcript.usage.fresh_input, tokens_cache_read=transcript.usage.cache_read,
                       tokens_cache_creation=transcript.usage.cache_creation, tokens_output=transcript.usage.output,
                       cli_cost_usd=transcript.cli_cost_usd, error_class=transcript.error_class,
                       error_detail=transcript.error, timings=json.dumps(session.timings) if session.timings else None)
            if cell.agent == claude_code.NAME:
                row["cost_usd"] = ctx.claude.price.cost(transcript.usage)
            if decision.discard_reason == gate.MODEL_UNREACHABLE:
                row["error_class"] = gate.MODEL_UNREACHABLE
            limit = next((e for e in transcript.events if e["type"] == "resource_limit"), None)
            if limit is not None and row["error_class"] is None:  # the agent's own doing: recorded, still scored
                row.update(error_class="resource_limit",
                           error_detail=f"disk budget of {limit['budget_mib']} MiB reached: {', '.join(limit['full'])}")
            if not decision.admitted:
                # A wiring failure gets another attempt (at most MAX_ATTEMPTS), decided on the gate alone.
                retry = decision.discard_reason in gate.WIRING and attempt < gate.MAX_ATTEMPTS
                return finish(final=not retry)  # discarded, not scored
            ctx.check_cancel()
            export = session.exported
            write_json(cell_dir / "export.json", export.record())
            if export.too_large:
                # The agent's own doing: a scored failure; the checker never sees a partial artifact.
                detail = (f"the workspace passed the artifact cap of {export.cap_bytes // MIB} MiB at "
                          f"{export.over_cap_path} (export stopped there)")
                return finish(checker_passed=False, checker_detail=detail, outcome="neutral_failure",
                              error_class="artifact_too_large", error_detail=detail)
            artifact = list(export.entries)
            (cell_dir / "artifact.tar").write_bytes(pack(artifact))
            verdict, log = run_checker(ctx.client, ctx.images.checker.tag, task, artifact,
                                       run_id=ctx.run_id, cell_id=cell.cell_id, limits=ctx.limits)
        finally:
            session.remover.join(timeout=60)
        (cell_dir / "checker.log").write_text(log)
        write_json(cell_dir / "verdict.json", asdict(verdict))
        return finish(checker_passed=verdict.passed, checker_exit_code=verdict.exit_code, checker_detail=verdict.detail,
                      checker_seconds=verdict.seconds, outcome=outcome_of(verdict, cell.condition),
                      damage_fired=None if verdict.fired is None else json.dumps(list(verdict.fired)),
                      error_class="checker_timeout" if verdict.timed_out else row["error_class"])
    except Cancelled:
        raise
    except Exception as e:
        if ctx.cancel.is_set():
            raise Cancelled() from e
        return finish(final=False, admitted=False, discard_reason=gate.HARNESS_ERROR, error_class=type(e).__name__,
                      error_detail=str(e)[:500])


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


def treatment_proofs(ctx: TrialContext, arm: ArmSpec, transcript: Transcript, agent: str) -> list[gate.GateProof]:
    """The arm's own admission signals, read from the session's record. A real agent could list or call
    any server it finds, so under claude-code every arm proves isolation, not only mcp arms."""
    proofs = []
    own_prefix = arm.mcp.prefix if arm.mcp is not None and arm.kind == "mcp" else None
    others = [a for a in ctx.arms.values() if a.mcp is not None and a.kind == "mcp" and a.name != arm.name]
    if own_prefix is not None:
        proofs += gate.server_proofs(transcript, arm.mcp.server, arm.mcp.prefix, arm.mcp.required_tools)
    if own_prefix is not None or agent == claude_code.NAME:
        proofs.append(gate.isolation_proof(transcript, tuple(a.mcp.prefix for a in others if a.mcp.prefix != own_prefix),
                                           sorted(a.name for a in others if own_prefix and a.mcp.prefix == own_prefix)))
    if arm.hooks:
        proofs.append(gate.hooks_proof(transcript, arm.hooks))
    return proofs


def session_proofs(ctx: TrialContext, arm: ArmSpec, agent: str, transcript: Transcript, endpoint: ModelEndpoint | None,
                   cell_dir: Path) -> list[gate.GateProof]:
    """The proofs read from the session's record, in the order the discard reason is taken from. With a
    model (claude-code), the sidecars' records add: the model was reached (first: an unreachable model
    explains every later failure), it was offered the tools the treatment needs, and no memory tool
    call was denied."""
    if endpoint is None:
        return [*treatment_proofs(ctx, arm, transcript, agent), gate.agent_proof(transcript)]
    gateway = endpoint.collect(cell_dir).get("gateway", [])
    memory_tools = [f"{arm.mcp.prefix}{t}" for t in arm.mcp.required_tools] if arm.kind == "mcp" else []
    return [gate.model_reached_proof(gateway, key_expected=not endpoint.scripted),
            *treatment_proofs(ctx, arm, transcript, agent),
            gate.tools_visible_proof([r for r in gateway if r.get("kind") == "model"],
                                     [*claude_code.CORE_TOOLS, *memory_tools]),
            gate.permissions_proof(transcript, (arm.mcp.prefix,) if arm.kind == "mcp" else ()),
            gate.agent_proof(transcript)]


@dataclass
class Session:
    decision: gate.GateDecision
    transcript: Transcript
    exported: Export | None  # the workspace as the agent left it (up to the artifact cap); None when discarded
    remover: threading.Thread  # removes the sandbox; join it before the cell ends
    timings: dict = field(default_factory=dict)  # seconds per phase (claude-code cells)


def make_session_agent(ctx: TrialContext, cell: CellSpec, endpoint: ModelEndpoint | None, cell_dir: Path):
    task, arm = ctx.tasks[cell.task], ctx.arms[cell.arm]
    if cell.agent == claude_code.NAME:
        return claude_code.ClaudeCodeAgent(task, arm, ctx.claude.model, arm_instructions(arm), endpoint.sandbox_env(),
                                           cell_dir / "claude.stream.jsonl.gz")
    return make_agent(cell.agent, task)


def start_endpoint(ctx: TrialContext, cell: CellSpec, attempt: int) -> ModelEndpoint | None:
    """claude-code cells get their own network with the model gateway (and the scripted model)."""
    if cell.agent != claude_code.NAME:
        return None
    setup = ctx.claude
    script = None
    if setup.model == SCRIPTED:
        script = claude_code.build_script(ctx.tasks[cell.task], ctx.arms[cell.arm], ctx.memory, cell.condition, cell.seed)
    endpoint = ModelEndpoint(ctx.client, setup.model_image.tag, ctx.run_id, cell.cell_id, setup.model, script,
                             setup.allow_hosts, guard_image=ctx.images.base.tag)
    endpoint.start(attempt)
    return endpoint


def run_session(ctx: TrialContext, cell: CellSpec, bundle: Bundle, cell_dir: Path, attempt: int = 1) -> Session:
    """Sandbox, agent and gate. Once the workspace is exported the sandbox is removed in the
    background, so its removal overlaps the checker's start instead of delaying it."""
    task, arm = ctx.tasks[cell.task], ctx.arms[cell.arm]
    image = sandbox_image(ctx, arm, cell.agent).tag
    timings: dict = {}
    t0 = time.monotonic()
    endpoint = start_endpoint(ctx, cell, attempt)
    sandbox = None
    handed_off = False

    def stop_all() -> None:
        if sandbox is not None:
            sandbox.stop()
        if endpoint is not None:
            endpoint.stop()

    try:
        if endpoint is not None:
            timings["sidecars_start"] = round(time.monotonic() - t0, 3)
        agent = make_session_agent(ctx, cell, endpoint, cell_dir)
        agent.prepare(image)
        sandbox = Sandbox(ctx.client, image, ctx.run_id, cell.cell_id, bundle_tar=bundle.tar,
                          lifetime=task.agent_seconds + VERIFY_SECONDS + 60, limits=ctx.limits,
                          network=endpoint.network_name if endpoint else "none",
                          disk=DiskBudget(task.disk_mib or ctx.disk_mib))
        sandbox.start()
        timings["container_start"] = round(sandbox.started_seconds, 3)
        proofs = []
        if endpoint is not None:  # a network of its own: the host must be out of reach before anything runs
            t_guard = time.monotonic()
            proofs.append(netguard.guard(ctx.client, sandbox.container, ctx.images.base.tag,
                                         run_id=ctx.run_id, cell_id=cell.cell_id))
            timings["network_guard"] = round(time.monotonic() - t_guard, 3)
            if endpoint.guard_proof is not None:
                proofs.append(endpoint.guard_proof)
        proofs.append(bundle_verification(sandbox, bundle))
        if arm.required_paths:
            check = sandbox.exec(["sh", "-c", 'for p; do test -e "$p" || echo "$p"; done', "sh", *arm.required_paths],
                                 timeout=VERIFY_SECONDS, workdir="/sandbox")
            proofs.append(gate.paths_proof(check.stdout.split(), arm.required_paths))
        if arm.kind in STORE_KINDS:
            proofs.append(gate.store_proof(store_of(ctx, cell).report))
        ctx.check_cancel()
        if all(p.passed for p in proofs) and arm.kind == "prefetch":
            proofs += prefetch_in_sandbox(ctx, sandbox, provider(arm, ctx.arms), cell_dir)
        if all(p.passed for p in proofs):  # the agent starts only on a verified bundle and a populated store
            transcript = agent.run(sandbox, task.prompt)
            if endpoint is not None:
                timings.update(agent.timings)
            if full := sandbox.full_mounts():
                transcript.add("resource_limit", resource="disk", budget_mib=sandbox.disk.mib, full=full)
            proofs += session_proofs(ctx, arm, cell.agent, transcript, endpoint, cell_dir)
        else:
            transcript = Transcript(agent=cell.agent, model=None)
            transcript.add("skipped", reason=f"{next(p for p in proofs if not p.passed).name} failed; the agent was not started")
        transcript.save(cell_dir / "transcript.jsonl")
        decision = gate.decide(proofs)
        write_json(cell_dir / "proof.json", {"admitted": decision.admitted, "discard_reason": decision.discard_reason,
                                             "bundle_digest": bundle.digest, "proofs": decision.as_json()})
        exported = sandbox.export("/sandbox/workspace", task.artifact_mib * MIB) if decision.admitted else None
        remover = threading.Thread(target=stop_all, daemon=True)
        remover.start()
        handed_off = True
        return Session(decision, transcript, exported, remover, timings)
    finally:
        if not handed_off:
            stop_all()
