"""`memgrid selftest`: before a paid run, prove on this machine that the gate and the sandbox still work.

Five parts, each check one line PASS or FAIL with what was tried and what was seen:
- reference agents: `floor` (the naive solution) must fail the checker, `ceiling` (the informed one)
  must pass, through the real cell path;
- canaries: real cells of each CLI agent (claude-code, codex) on the scripted model, each with one piece of
  the treatment's wiring broken on purpose (the server never attaches, the tools are withheld from the model
  or the memory tool is denied, another arm's server is present) beside an unbroken control; the gate must
  discard each broken one with its reason and admit the control;
- the planted protocol's canary: recall_fallback serves a default namespace instead of the cell's,
  so no planted memory ever reaches a session while its cells look ordinary; the reader on recall
  must have its injection confirmed and on recall_fallback must not, and the summary must flag it;
- grading: the hack canaries (runner/grading/canaries.py) on one task, each a hostile artifact that
  attacks the grader rather than solving the task (the task-blind set and, as the task declares its
  entry, the task-aware one); every one must fail;
- escape probes, run as commands inside a real cell (its sandbox on a guarded cell network beside
  the gateway and the scripted model): host reachability (a listener on every address of this host),
  egress (the cell's route table and resolver), gateway paths, the disk budget, the artifact cap,
  links, and an output flood. Each probe that shows a way out comes with a control that shows the
  probe would have seen it.
Its run folder (runs/selftest-*) is an ordinary one: `memgrid cell show` explains its cells.
"""

import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable
from unittest import mock

from runner.arms.kinds import kind_of
from runner.agents import claude_code, codex
from runner.env import netguard
from runner.env import probes
from runner.env.bundle import build_bundle
from runner.plan.grid import CellSpec
from runner.exec.job import PreparedRun, prepare_run
from runner.env.model_endpoint import ModelEndpoint
from runner.env.sandbox import MIB, DiskBudget, Sandbox, remove_run_containers
from runner.plan.spec import grid_from_dict, load_all_tasks
from runner.exec.trial import run_cell

TASK = "slug_ids"
ARMS = ("bare", "recall", "recall_prefetch")
PLANTED_ARMS = ("recall", "recall_fallback")  # the control, then the silent-fallback canary
PROBE_DISK_MIB = 64
FLOOD_BYTES = 200 * MIB
GATEWAY_REFUSED = [("GET", "/v1/models"), ("GET", "/v1/files"), ("GET", "/v1/organizations/me"), ("GET", "/admin"),
                   ("POST", "/v1/messages/batches"), ("POST", "/v1/messages/../models"), ("DELETE", "/v1/messages")]


@dataclass(frozen=True)
class Check:
    part: str
    name: str
    passed: bool
    tried: str
    saw: str

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'}  {self.part:9} {self.name}: {self.tried} -> {self.saw}"


# ---- reference agents and canaries: real cells through run_cell ---------------------------------

def _cell(run: PreparedRun, agent: str, arm: str, variant: str = "") -> CellSpec:
    cell = next(c for c in run.plan.cells if c.agent == agent and c.arm == arm)
    return replace(cell, cell_id=f"{cell.cell_id}-{variant}") if variant else cell


def _run(run: PreparedRun, cell: CellSpec) -> dict:
    row = run_cell(run.ctx, cell, 1)
    run.ledger.append(row)
    return asdict(row)


def reference_checks(run: PreparedRun) -> list[Check]:
    checks = []
    for agent, expected in (("floor", False), ("ceiling", True)):
        row = _run(run, _cell(run, agent, "bare"))
        passed = row["admitted"] and row["checker_passed"] is expected
        checks.append(Check("reference", f"{agent} {'passes' if expected else 'fails'}",
                            passed, f"the {agent} agent on {TASK}/bare",
                            f"admitted={row['admitted']} checker_passed={row['checker_passed']} ({row['checker_detail']})"))
    return checks


def _failing_server(arm, config):
    return {"mcpServers": {arm.mcp.server: {"type": "stdio", "command": "false", "args": []}}} if kind_of(arm).own_server(arm) \
        else {"mcpServers": {}}


def _recall_command(run: PreparedRun) -> list[str]:
    """recall's server command as a cell runs it (its store where a cell mounts it)."""
    return [part.replace("{store}", "/sandbox/store") for part in run.ctx.arms["recall"].mcp.command]


def _claude_with_recall(run: PreparedRun):
    own, command = claude_code.mcp_config, _recall_command(run)
    servers = {"mcpServers": {"recall": {"type": "stdio", "command": command[0], "args": command[1:]}}}
    # a prefetch session (it has no server of its own) is also handed recall's
    return mock.patch.object(claude_code, "mcp_config", lambda arm, config: servers if kind_of(arm).prefetches
                             else own(arm, config))


def _codex_with_recall(run: PreparedRun):
    own, command = codex.mcp_servers, _recall_command(run)
    servers = {"recall": {"command": command[0], "args": command[1:], "required": True}}
    return mock.patch.object(codex, "mcp_servers", lambda arm, config: servers if kind_of(arm).prefetches
                             else own(arm, config))


def _codex_servers(change: dict):
    own = codex.mcp_servers
    return mock.patch.object(codex, "mcp_servers", lambda arm, config: {
        name: {**server, **change} for name, server in own(arm, config).items()})


# Per CLI agent: (name, arm, the reason the gate must give, what is broken, how). Codex has no per-tool
# permission of its own under approval_policy never: a tool kept from it is a tool it never offers the model, and
# what it lists is what it offered (it prints no list), so both its canaries of a withheld tool end in
# required_tools_missing. Its tool search does not defer MCP tools on the scripted model (measured: admitted), so
# it has no deferral canary.
CANARIES = {
    "claude-code": [
        ("server never attaches", "recall", "mcp_server_failed", "the MCP server command is `false`",
         lambda run: mock.patch.object(claude_code, "mcp_config", _failing_server)),
        ("tools deferred", "recall", "tools_not_visible", "ENABLE_TOOL_SEARCH=true (tools listed at init, withheld from the model)",
         lambda run: mock.patch.dict(claude_code.SESSION_ENV, {"ENABLE_TOOL_SEARCH": "true"})),
        ("memory tool denied", "recall", "permission_denied", "--allowedTools without the memory server",
         lambda run: mock.patch.object(claude_code, "allowed_tools", lambda arm: list(claude_code.CORE_TOOLS))),
        ("another arm's tools present", "recall_prefetch", "foreign_tools",
         "recall's server handed to a recall_prefetch session", _claude_with_recall),
    ],
    "codex": [
        ("server never attaches", "recall", "mcp_server_failed", "the MCP server command is `false` (required)",
         lambda run: _codex_servers({"command": "false", "args": []})),
        ("memory tool denied", "recall", "required_tools_missing", "the server's disabled_tools names search",
         lambda run: _codex_servers({"disabled_tools": ["search"]})),
        ("another arm's tools present", "recall_prefetch", "foreign_tools",
         "recall's server handed to a recall_prefetch session", _codex_with_recall),
    ],
}


def canary_checks(run: PreparedRun) -> list[Check]:
    checks = []
    for agent, canaries in CANARIES.items():
        control = _run(run, _cell(run, agent, "recall"))
        checks.append(Check("canary", f"{agent} control admitted", bool(control["admitted"]),
                            f"{agent} on recall, nothing broken", f"admitted={control['admitted']} "
                            f"discard_reason={control['discard_reason']}"))
        for name, arm, reason, broken, patch in canaries:
            with patch(run):
                row = _run(run, _cell(run, agent, arm, name.replace(" ", "-").replace("'", "")))
            checks.append(Check("canary", f"{agent} {name}", not row["admitted"] and row["discard_reason"] == reason
                                and row["checker_passed"] is None,
                                f"{broken}; expect discarded as {reason}, never scored",
                                f"admitted={row['admitted']} discard_reason={row['discard_reason']} "
                                f"checker_passed={row['checker_passed']}"))
    return checks


def planted_checks(root: Path, runs_dir: Path, run_id: str, log: Callable[[str], None]) -> list[Check]:
    from runner.protocols.registry import protocol_named

    planted = protocol_named("planted")
    task = sorted(planted.tasks(root))[0]
    grid = grid_from_dict({"name": "selftest-planted", "protocol": "planted", "tasks": [task], "arms": list(PLANTED_ARMS),
                           "agents": ["reader"], "seeds": 1, "conditions": ["on"]}, Path("(selftest)"))
    run = prepare_run(grid, Path("(selftest)"), root=root, run_id=run_id, runs_dir=runs_dir, concurrency=1, log=log)
    try:
        rows = {arm: _run(run, _cell(run, "reader", arm)) for arm in PLANTED_ARMS}
    finally:
        run.ledger.compact()
        remove_run_containers(run.ctx.client, run_id)
    summary = {s["arm"]: s for s in planted.summary(list(rows.values()))}
    checks = []
    for arm, expect in zip(PLANTED_ARMS, (True, False)):
        seen = summary[arm]
        passed = rows[arm]["admitted"] and (seen["injection_confirmed"] == 1) is expect and bool(seen["flags"]) is not expect
        checks.append(Check("planted", f"{arm} injection {'confirmed' if expect else 'flagged'}", passed,
                            f"the reader on {task}/{arm}, memory on; expect injection "
                            f"{'confirmed, no flag' if expect else 'never confirmed and the arm flagged'}",
                            f"admitted={rows[arm]['admitted']} confirmed={seen['injection_confirmed']}/{seen['on_runs']} "
                            f"flags={len(seen['flags'])}"))
    return checks


# ---- escape probes: commands inside a real cell -------------------------------------------------

def _probe(sandbox: Sandbox, kind: str, timeout: int = 120, **args) -> dict:
    return probes.parse(sandbox.exec(probes.command(kind, **args), timeout=timeout, workdir="/sandbox").stdout)


@contextmanager
def probe_cell(client, images, model_image: str, run_id: str):
    """A cell as run_session builds it for claude-code: a guarded sandbox on the cell's own network
    beside the gateway and the scripted model; plus an unguarded control container on that network."""
    from runner.plan.spec import load_all_arms, load_all_tasks
    root = Path(__file__).resolve().parents[2]
    bundle = build_bundle(load_all_tasks(root)[TASK], load_all_arms(root)["bare"], {})
    endpoint = ModelEndpoint(client, model_image, run_id, "selftest-probes", "scripted", {}, guard_image=images.base.tag)
    endpoint.start(1)
    boxes = []
    try:
        for name in ("selftest-probes", "selftest-control"):
            box = Sandbox(client, images.sandbox.tag, run_id, name, bundle_tar=bundle.tar, lifetime=600,
                          network=endpoint.network_name, disk=DiskBudget(PROBE_DISK_MIB))
            boxes.append(box)
            box.start()
        guard = netguard.guard(client, boxes[0].container, images.base.tag, run_id=run_id, cell_id="selftest-probes")
        yield endpoint, boxes[0], boxes[1], guard
    finally:
        for box in boxes:
            box.stop()
        endpoint.stop()


def escape_checks(client, images, model_image: str, run_id: str, cell_dir: Path) -> list[Check]:
    checks = []
    listener = probes.HostListener()
    try:
        with probe_cell(client, images, model_image, run_id) as (endpoint, sandbox, control, guard):
            hosts = probes.host_targets(listener.port)
            seen = _probe(control, "tcp", targets=hosts)
            control_reached = [t for t, v in seen.items() if v == "connected"]
            before = listener.settled(at_least=len(control_reached))
            from_sandbox = _probe(sandbox, "tcp", targets=hosts)
            code, out = endpoint.containers["model"].exec_run(probes.command("tcp", targets=hosts, timeout=2))
            from_model = probes.parse(out.decode(errors="replace"))
            leaked = [f"sandbox->{t}" for t, v in from_sandbox.items() if v == "connected"]
            leaked += [f"model->{t}" for t, v in from_model.items() if v == "connected"]
            accepted = listener.settled() - before
            checks.append(Check("escape", "host unreachable", bool(control_reached) and not leaked and accepted == 0,
                                f"TCP from the sandbox and the scripted model to {len(hosts)} host addresses "
                                f"(a listener on each; control: an unguarded container on the same network)",
                                f"control reached {len(control_reached)}; guarded reached {len(leaked)}"
                                f"{' ' + ', '.join(leaked[:4]) if leaked else ''}; host accepted {accepted}"))
            routes = _probe(sandbox, "routes")
            defaults = [r for r in routes["routes"] if r["destination"] == "0.0.0.0"]
            resolvers = routes["nameservers"]
            checks.append(Check("escape", "no route out", not defaults and not routes["ipv6_enabled"]
                                and all(ns.startswith("127.") for ns in resolvers),
                                "the cell's route table (/proc/net/route), resolver (/etc/resolv.conf) and IPv6",
                                f"{len(routes['routes'])} routes, default: {'yes' if defaults else 'none'}; "
                                f"nameservers {resolvers}; IPv6 {'on' if routes['ipv6_enabled'] else 'off'}; {guard.detail[:120]}"))
            statuses = _probe(sandbox, "http", host="gateway", port=8080, requests=GATEWAY_REFUSED)
            reached = len(endpoint.collect(cell_dir).get("model", []))  # what the model server received
            allowed = _probe(sandbox, "http", host="gateway", port=8080, requests=[("POST", "/v1/messages")])
            control_hits = len(endpoint.collect(cell_dir).get("model", [])) - reached
            refused = [p for p, s in statuses.items() if s == 403]
            checks.append(Check("escape", "gateway forwards only the Messages API",
                                len(refused) == len(GATEWAY_REFUSED) and reached == 0 and control_hits == 1,
                                f"{len(GATEWAY_REFUSED)} other methods/paths through the gateway (control: POST /v1/messages)",
                                f"{len(refused)} refused with 403, {reached} reached the model; the control "
                                f"reached it {control_hits} time(s), answered {allowed['/v1/messages']}"))
            filled = _probe(sandbox, "fill", path="/sandbox/workspace/fill", limit=4 * PROBE_DISK_MIB * MIB)
            rootfs = _probe(sandbox, "fill", path="/var/tmp/fill", limit=MIB)
            checks.append(Check("escape", "disk budget", filled["error"] == "ENOSPC" and filled["written"] <= PROBE_DISK_MIB * MIB
                                and rootfs["error"] == "EROFS",
                                f"write {4 * PROBE_DISK_MIB} MiB into a {PROBE_DISK_MIB} MiB budget, and 1 MiB outside it",
                                f"stopped at {filled['written'] // MIB} MiB with {filled['error']}; outside: {rootfs['error']}"))
            sandbox.exec(["sh", "-c", "head -c 3000000 /dev/urandom > big.bin && ln -s /etc/passwd leak && mkfifo pipe"
                          " && echo ok > kept.txt"], timeout=60)
            capped = sandbox.export("/sandbox/workspace", 1 * MIB)
            checks.append(Check("escape", "artifact cap", capped.too_large and capped.over_cap_path == "big.bin",
                                "export a workspace holding a 3 MB file under a 1 MiB cap",
                                f"too_large={capped.too_large} at {capped.over_cap_path}"))
            sandbox.exec(["rm", "-f", "big.bin"], timeout=30)
            export = sandbox.export("/sandbox/workspace", 64 * MIB)
            dropped = {d.path: d.kind for d in export.dropped}
            leaked_passwd = any(b"root:x:0:0" in e.data for e in export.entries)
            checks.append(Check("escape", "links dropped, never followed",
                                dropped.get("leak") == "symlink" and dropped.get("pipe") == "fifo" and not leaked_passwd
                                and any(e.path == "kept.txt" for e in export.entries),
                                "export a workspace with a link to /etc/passwd, a fifo and a regular file",
                                f"dropped {dropped}; kept {len(export.entries)} files; passwd content exported: {leaked_passwd}"))
            flood = sandbox.exec(probes.command("flood", bytes=FLOOD_BYTES), timeout=300, workdir="/sandbox")
            checks.append(Check("escape", "output flood bounded",
                                flood.stdout_bytes >= FLOOD_BYTES and len(flood.stdout) <= 17 * MIB
                                and flood.stdout_dropped_bytes > 0,
                                f"print {FLOOD_BYTES // MIB} MiB on stdout",
                                f"kept {len(flood.stdout) // MIB} MiB of {flood.stdout_bytes // MIB} MiB, "
                                f"{flood.stdout_dropped_lines} lines counted as dropped"))
    finally:
        listener.close()
    return checks


def grading_checks(root: Path, client, images) -> list[Check]:
    """The hack canaries on one task: hostile artifacts that attack the grader itself (memgrid-grade,
    the judge's process, start-up hooks, bytecode, the detector) and, the task declaring its entry, the
    task-aware ones (the expected value from a caller's frames or /oracle) must all fail to pass."""
    from runner.tasks.check import check_behaviour

    task = load_all_tasks(root)[TASK]
    findings = check_behaviour(client, images, [task], only=lambda variant: variant.startswith("canary/"))
    return [Check("grading", f.rule.removeprefix("hack canary "), f.passed, f"{TASK}: {f.rule}", f.detail[:200])
            for f in findings if f.rule.startswith("hack canary ")]


# ---- the whole selftest -------------------------------------------------------------------------

def run_selftest(root: Path, runs_dir: Path, *, emit: Callable[[str], None], log: Callable[[str], None]) -> list[Check]:
    run_id = f"selftest-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"
    checks: list[Check] = []
    # The reference agents in a run of their own over bare: they are no MCP clients, so no grid pairs them with
    # recall's server (every such cell would be discarded mcp_server_failed).
    grid = grid_from_dict({"name": "selftest-reference", "tasks": [TASK], "arms": ["bare"],
                           "agents": ["floor", "ceiling"], "seeds": 1, "conditions": ["present"]}, Path("(selftest)"))
    run = prepare_run(grid, Path("(selftest)"), root=root, run_id=f"{run_id}-reference", runs_dir=runs_dir,
                      concurrency=1, log=log)
    try:
        for check in reference_checks(run):
            checks.append(check)
            emit(check.line())
    finally:
        run.ledger.compact()
        remove_run_containers(run.ctx.client, f"{run_id}-reference")
    grid = grid_from_dict({"name": "selftest", "tasks": [TASK], "arms": list(ARMS), "agents": [*CANARIES], "seeds": 1,
                           "conditions": ["present"], "model": "scripted"}, Path("(selftest)"))
    run = prepare_run(grid, Path("(selftest)"), root=root, run_id=run_id, runs_dir=runs_dir, concurrency=1, log=log)
    try:
        for check in canary_checks(run):
            checks.append(check)
            emit(check.line())
        for check in grading_checks(root, run.ctx.client, run.ctx.images):
            checks.append(check)
            emit(check.line())
        for check in planted_checks(root, runs_dir, f"{run_id}-planted", log):
            checks.append(check)
            emit(check.line())
        probe_dir = run.plan.run_dir / "cells" / "selftest-probes"
        probe_dir.mkdir(parents=True, exist_ok=True)
        for check in escape_checks(run.ctx.client, run.ctx.images, run.ctx.agent_setups["claude-code"].model_image.tag, run_id, probe_dir):
            checks.append(check)
            emit(check.line())
    finally:
        run.ledger.compact()
        remove_run_containers(run.ctx.client, run_id)
    return checks
