"""Admission gate: proofs, from the cell's own record, that the treatment was really applied.

A cell that fails any proof is discarded, not scored; the first failing proof names the reason. A cell is
discarded only on evidence the harness holds of a fault outside the agent: the treatment's wiring, a model
API error the gateway recorded, memgrid's own failure. An agent that exits non-zero, times out, stops on its
own, fills its disk or has a process killed at its memory limit is scored as it left the workspace, and the
ledger records how it ended (`agent_ended`, `error_class`): an agent cannot choose to be discarded.
"""

import re

from dataclasses import asdict, dataclass

from runner.agents.base import Transcript

# Enumerated discard reasons, in the order the proofs are checked.
BUNDLE_DIGEST_MISMATCH = "bundle_digest_mismatch"
STORE_EMPTY = "store_empty"
MCP_SERVER_FAILED = "mcp_server_failed"
REQUIRED_TOOLS_MISSING = "required_tools_missing"
FOREIGN_TOOLS = "foreign_tools"
HOOK_NOT_FIRED = "hook_not_fired"
PREFETCH_EMPTY = "prefetch_empty"
REQUIRED_PATH_MISSING = "required_path_missing"
TOOLS_NOT_VISIBLE = "tools_not_visible"
PERMISSION_DENIED = "permission_denied"
MODEL_UNREACHABLE = "model_unreachable"
OOM_KILLED = "oom_killed"  # the kernel killed a process at the memory limit under memgrid's own agent (its cgroup's count)
HARNESS_ERROR = "harness_error"  # the controller, the engine or memgrid's own agent failed; the cell is rerun on resume
STORE_DIGEST_MISMATCH = "store_digest_mismatch"  # the store a phase received is not what the one before left
INPUTS_REACHABLE = "inputs_reachable"  # a later phase's session could read an earlier phase's inputs
PLANT_FAILED = "plant_failed"  # the arm's write API did not take (or could not show) the memories to plant
ANSWER_NOT_ISOLATED = "answer_not_isolated"  # personal: the answer container held more than its requests
EMBEDDER_NOT_READY = "embedder_not_ready"  # an arm with embedder: shared whose sidecar did not get ready
# The sandbox's first process slept out its lifetime before memgrid had read the session (the controller was paused
# or slowed past it): memgrid's fault, never a verdict; retried in the run like wiring (trial.SandboxExpired).
SANDBOX_EXPIRED = "sandbox_expired"
# The bundle verifier, memgrid's own process in the sandbox, gave no report: it failed (exited without its line) or
# ran past its time. No digest was read, so nothing mismatched: memgrid's fault, retried in the run like wiring.
VERIFIER_FAILED = "verifier_failed"
VERIFIER_TIMEOUT = "verifier_timeout"
DISCARD_REASONS = (BUNDLE_DIGEST_MISMATCH, REQUIRED_PATH_MISSING, STORE_EMPTY, MCP_SERVER_FAILED, REQUIRED_TOOLS_MISSING, PREFETCH_EMPTY,
                   FOREIGN_TOOLS, HOOK_NOT_FIRED, TOOLS_NOT_VISIBLE, PERMISSION_DENIED, MODEL_UNREACHABLE, OOM_KILLED,
                   HARNESS_ERROR, STORE_DIGEST_MISMATCH, INPUTS_REACHABLE, PLANT_FAILED, ANSWER_NOT_ISOLATED,
                   EMBEDDER_NOT_READY, SANDBOX_EXPIRED, VERIFIER_FAILED, VERIFIER_TIMEOUT)
# Wiring failures: the treatment never reached the session. Retried (at most twice) on this
# reason alone, never on the checker's verdict.
WIRING = (MCP_SERVER_FAILED, EMBEDDER_NOT_READY)
RETRIED = (*WIRING, SANDBOX_EXPIRED, VERIFIER_FAILED, VERIFIER_TIMEOUT)  # run again at once, up to MAX_ATTEMPTS
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class GateProof:
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class GateDecision:
    admitted: bool
    discard_reason: str | None
    proofs: tuple[GateProof, ...]

    def as_json(self) -> list[dict]:
        return [asdict(p) for p in self.proofs]


def bundle_proof(report: dict, expected_digest: str) -> GateProof:
    """The verifier's report from inside the container against the digest recorded at build time."""
    seen = report.get("manifest_sha256")
    problems = [f"{k}: {', '.join(report[k][:5])}" for k in ("missing", "mismatched", "unexpected", "not_regular") if report.get(k)]
    if report.get("error"):
        problems.append(report["error"])
    if seen != expected_digest:
        problems.insert(0, f"manifest sha256 {seen} != recorded {expected_digest}")
    passed = not problems
    return GateProof("bundle_verified", passed, f"{report.get('checked', 0)} files match {expected_digest[:12]}" if passed else "; ".join(problems))


def embedder_proof(embedder, failure: str | None) -> GateProof:
    """The shared embedder sidecar answered before anything ran (an arm with `embedder: shared`): which model it
    serves, with the sha256 of its weights, so each cell records the embedder it used."""
    if failure is not None:
        return GateProof("embedder_ready", False, failure)
    r = embedder.ready
    return GateProof("embedder_ready", True, f"shared embedder {r.get('model')} ({r.get('dimensions')} dims), model.onnx "
                     f"sha256 {r.get('model_sha256')}, tokenizer.json sha256 {r.get('tokenizer_sha256')}")


def agent_proof(transcript: Transcript, harness_code: bool) -> GateProof:
    """How the session ended. Whatever an agent under test did (exit non-zero, time out, report an error, stop at
    a cap) passes: it is scored, and the ending recorded. Only memgrid's own agents (floor, ceiling, reader:
    `harness_code`) fail it, as a harness error: their failure is memgrid's, never the treatment's."""
    ended = transcript.ended or ("error" if transcript.is_error else "ok")
    if transcript.is_error and harness_code:
        return GateProof("agent_ended", False, f"memgrid's own agent {transcript.agent} failed: "
                         f"{transcript.error or 'it reported an error'}")
    if ended == "ok":
        return GateProof("agent_ended", True, f"{transcript.agent} finished without error")
    return GateProof("agent_ended", True, f"{transcript.agent} ended {ended}"
                     + (f" ({transcript.error})" if transcript.error else "") + ": the agent's own doing, scored")


OOM_KILL = re.compile(r"^oom_kill (\d+)$", re.M)


@dataclass(frozen=True)
class MemoryKills:
    """What the sandbox's memory cgroup says of a session: how many of its processes the kernel killed at the memory
    limit (None: not observable), and how that was seen."""
    count: int | None
    seen: str


def memory_kills(counters: str | None, engine_oom_killed: bool = False, unread: str = "") -> MemoryKills:
    """`counters`: the sandbox's memory cgroup files as the kernel keeps them (v2 memory.events, v1
    memory.oom_control), read as root; None when they could not be read (`unread` says why), then
    `engine_oom_killed` is the engine's own State.OOMKilled for the container."""
    if counters is None:
        if engine_oom_killed:
            return MemoryKills(1, "the engine killed the container for memory (State.OOMKilled)")
        return MemoryKills(None, f"not observed: {unread}; the engine did not report the container killed for memory")
    if not OOM_KILL.search(counters):
        return MemoryKills(None, "not observed: the kernel keeps no oom_kill count for this cgroup")
    kills = sum(int(n) for n in OOM_KILL.findall(counters))
    return MemoryKills(kills, "no process killed at the memory limit" if kills == 0 else
                       f"the kernel killed {kills} process{'es' if kills > 1 else ''} of the sandbox at its memory limit "
                       "(cgroup oom_kill)")


def memory_proof(kills: MemoryKills, harness_code: bool) -> GateProof:
    """A kill at the memory limit is the agent's own doing: everything in the sandbox's memory (what the agent
    starts, the arm's server it calls) runs because the agent ran, so the cell is scored and the kill recorded
    (the ledger's error_class resource_limit), as a full disk is. Only under memgrid's own agents (floor, ceiling,
    reader: `harness_code`) is it a discard (oom_killed): their memory is memgrid's, never the treatment's."""
    if not kills.count:
        return GateProof("not_oom_killed", True, kills.seen)
    if harness_code:
        return GateProof("not_oom_killed", False, f"{kills.seen} under memgrid's own agent")
    return GateProof("not_oom_killed", True, f"{kills.seen}: the agent's own doing, scored")


def store_proof(report: dict) -> GateProof:
    stored, held = report.get("documents", 0), report.get("corpus_documents", 0)
    passed = stored > 0 or held == 0
    return GateProof("store_populated", passed, f"{stored} of {held} documents in namespace {report.get('namespace')}"
                     + ("" if passed else ": the store is empty (namespace misrouted or ingest wrote nothing)"))


def _events(transcript: Transcript, kind: str) -> list[dict]:
    return [e for e in transcript.events if e.get("type") == kind]


def server_proofs(transcript: Transcript, server: str, prefix: str, required: tuple[str, ...]) -> list[GateProof]:
    """From the record of whoever talked to the server: it connected, and listed the required tools."""
    inits = _events(transcript, "init")
    init = next(iter(inits), {})
    statuses = {s.get("name"): s for s in init.get("mcp_servers", [])}
    status = statuses.get(server, {"status": "absent"})
    # A server that connected and then failed mid-session (the reader records a timeout or a crash as a later
    # init with status failed) did not serve the session: that is the status that counts.
    status = next((s for e in inits[1:] for s in e.get("mcp_servers", [])
                   if s.get("name") == server and s.get("status") == "failed"), status)
    connected = GateProof("mcp_connected", status.get("status") == "connected",
                          f"server {server}: {status.get('status')}" + (f" ({status['error']})" if status.get("error") else ""))
    listed = set(init.get("tools", []))
    missing = [f"{prefix}{t}" for t in required if f"{prefix}{t}" not in listed]
    tools = GateProof("required_tools_listed", not missing,
                      f"listed {len(listed)} tools" if not missing else f"missing at init: {', '.join(missing)}")
    return [connected, tools]


def isolation_proof(transcript: Transcript, foreign_prefixes: tuple[str, ...], co_claimants: list[str],
                    gateway: list[dict] | None = None) -> GateProof:
    """No other arm's tools listed at init (before the agent acted), nor served to the session. An arm whose server
    name another arm also claims (`co_claimants`) cannot prove its tools are its own. For an agent with a model,
    what served the session is what the CLI offered the model, by the gateway's record outside the sandbox (its
    requests, sub-agents' included): the session's own record after init is the sandbox's to write (a model's
    shell can print lines into the CLI's stdout, a forged call 'answered'), and a call the CLI refused (a tool
    the session does not have) is the model's doing. Without a gateway (memgrid's own agents) a call answered
    in the transcript counts."""
    if co_claimants:
        return GateProof("no_foreign_tools", False, f"its server name is also claimed by {', '.join(co_claimants)}")
    init = next(iter(_events(transcript, "init")), {})
    served = ({t for r in gateway if r.get("kind") == "model" for t in r.get("tools") or []} if gateway is not None
              else {e.get("tool") for e in _events(transcript, "tool_call") if e.get("is_error") is False})
    seen = set(init.get("tools", [])) | served
    foreign = sorted(t for t in seen if any(t.startswith(p) for p in foreign_prefixes))
    return GateProof("no_foreign_tools", not foreign, "none" if not foreign else f"other arms' tools: {', '.join(foreign)}")


def hooks_proof(transcript: Transcript, hooks) -> GateProof:
    fired = _events(transcript, "hook")
    problems = []
    for hook in hooks:
        ok = [e for e in fired if e.get("event") == hook.event and list(e.get("command", [])) == list(hook.command)
              and e.get("exit_code") == 0 and e.get("output_sha256")]
        if not ok:
            problems.append(f"{hook.event} hook {' '.join(hook.command)[:60]} did not fire with exit 0 and output")
    return GateProof("hooks_fired", not problems, f"{len(hooks)} hooks fired" if not problems else "; ".join(problems))


def paths_proof(missing: list[str], required: tuple[str, ...]) -> GateProof:
    return GateProof("required_paths_present", not missing,
                     f"{len(required)} present" if not missing else f"missing at session start: {', '.join(missing)}")


def tools_visible_proof(model_requests: list[dict], required: list[str]) -> GateProof:
    """From the gateway's record of what each Messages request offered the model: every request of the
    session that offered tools offered the required ones. Tools listed at init can still be withheld from
    the model (deferred by tool search), so init alone proves nothing about what the model saw. The session's
    requests are those of the first one's thread (the gateway's digest of a conversation's first message): a
    sub-agent the model starts has a conversation and a tool set of its own, the CLI's and the model's doing."""
    if not required:  # an agent that offers its model no tool (the personal protocol's answerer) needs none seen
        return GateProof("tools_visible", True, f"no tool is needed ({len(model_requests)} requests)")
    offering = [r for r in model_requests if r.get("tools")]
    if not offering:
        return GateProof("tools_visible", False, f"no request offered the model any tool ({len(model_requests)} requests)")
    session = [r for r in offering if r.get("thread") == offering[0].get("thread")]
    others = f"; {len(offering) - len(session)} of sub-agents not counted" if len(session) < len(offering) else ""
    lacking = sorted({t for r in session for t in required if t not in r["tools"]})
    return GateProof("tools_visible", not lacking,
                     f"{len(session)} requests offered {', '.join(required)}{others}" if not lacking
                     else f"never offered to the model in {sum(1 for r in session if set(required) - set(r['tools']))} "
                          f"of {len(session)} requests: {', '.join(lacking)}{others}")


def permissions_proof(transcript: Transcript, memory_tools: tuple[str, ...]) -> GateProof:
    """A denied call to a memory tool means the treatment never reached the session; denials of
    other tools are the agent's own conduct and are scored."""
    result = next(iter(_events(transcript, "result")), {})
    denied = sorted({d.get("tool_name", "?") for d in result.get("permission_denials") or []
                     if any(str(d.get("tool_name", "")).startswith(p) for p in memory_tools)})
    return GateProof("memory_tools_permitted", not denied,
                     "no memory tool call denied" if not denied else f"denied: {', '.join(denied)}")


def context_overflow(call: dict) -> bool:
    """The model API refused the request as longer than its context window (the gateway's record of its error:
    Anthropic's "prompt is too long", OpenAI's context_length_exceeded). What the session read and said outgrew
    the window: the agent's own doing, like a full disk, never a fault outside it."""
    return call.get("status") == 400 and (call.get("error_code") == "context_length_exceeded"
                                          or str(call.get("error_message", "")).startswith("prompt is too long"))


def model_reached_proof(gateway_records: list[dict], key_expected: bool = False, due: int | None = None) -> GateProof:
    """The session's last model request was answered (a provider's transient error the CLI retried
    past is not a failure), or refused as past the model's context window, which the session itself caused;
    for a live model, the gateway put the key on every request. Any other refusal (a key, a rate limit, an
    overloaded API, a tool schema the API rejects) is a fault outside the agent. `due`: the requests the harness
    rendered for the session (a model answerer's), each sent once: exactly that many must have left the gateway, and
    none is a pass when none was due (a benchmark's code that asks no model with no memories)."""
    calls = [r for r in gateway_records if r.get("kind") == "model"]
    if due is not None and len(calls) != due:
        return GateProof("model_reached", False, f"{len(calls)} of the {due} model requests due left the gateway")
    if due == 0:
        return GateProof("model_reached", True, "no model request was due, and none was sent")
    if not calls:
        return GateProof("model_reached", False, "the session sent no request to the model gateway")
    keyless = [r for r in calls if key_expected and not r.get("key_injected")]
    if keyless:
        return GateProof("model_reached", False, f"{len(keyless)} of {len(calls)} requests left the gateway without the key")
    failed = [r for r in calls if r.get("status") != 200]
    last = calls[-1]
    if context_overflow(last):
        return GateProof("model_reached", True, f"{len(calls)} model requests, the last refused as past the model's "
                         f"context window ({last.get('error_message') or last.get('error_code')}): the session's own "
                         f"doing, scored"[:300])
    return GateProof("model_reached", last.get("status") == 200,
                     f"{len(calls)} model requests, {len(failed)} failed, the last answered" if last.get("status") == 200
                     else f"{len(failed)} of {len(calls)} model requests failed, the last: {last.get('status')} "
                          f"{last.get('error') or last.get('error_message', '')}"[:300])


REASON_FOR = {"bundle_verified": BUNDLE_DIGEST_MISMATCH, "required_paths_present": REQUIRED_PATH_MISSING,
              "store_populated": STORE_EMPTY, "embedder_ready": EMBEDDER_NOT_READY,
              "mcp_connected": MCP_SERVER_FAILED, "required_tools_listed": REQUIRED_TOOLS_MISSING,
              "no_foreign_tools": FOREIGN_TOOLS, "hooks_fired": HOOK_NOT_FIRED, "agent_ended": HARNESS_ERROR,
              "not_oom_killed": OOM_KILLED,
              "prefetch_injected": PREFETCH_EMPTY, "tools_visible": TOOLS_NOT_VISIBLE,
              "memory_tools_permitted": PERMISSION_DENIED, "model_reached": MODEL_UNREACHABLE,
              "store_carried": STORE_DIGEST_MISMATCH, "inputs_unreachable": INPUTS_REACHABLE,
              "memories_planted": PLANT_FAILED, "answer_isolated": ANSWER_NOT_ISOLATED}


def answer_isolation(listing: list[str], network: str | None, allowed: set[str],
                     model_network: tuple[bool, list[str]] | None = None) -> GateProof:
    """An answer container, from inside it: /sandbox holds only what `allowed` names (the requests, the answerer's
    own files), nothing of the store, corpus or arm, and the container has no network, or, for a model answerer, the
    cell's own network and nothing else on it: `model_network` (internal, the roles of its other members), which
    must be internal with only the model gateway and the scripted model beside the container."""
    extra = sorted(set(listing) - allowed)
    internal, others = model_network if model_network is not None else (False, [])
    reachable = network == "none" or (internal and bool(others) and set(others) <= {"gateway", "model"})
    where = (f"network {network}" if network == "none" else
             f"network {network} ({'internal' if internal else 'not internal'}; beside it: {', '.join(sorted(others)) or 'nothing'})")
    passed = not extra and reachable
    return GateProof("answer_isolated", passed,
                     f"/sandbox holds {', '.join(sorted(listing))}; {where}" if passed else
                     f"the answer container also holds {', '.join(extra) or 'nothing else'}; {where}")


def decide(proofs: list[GateProof]) -> GateDecision:
    failed = next((p for p in proofs if not p.passed), None)
    return GateDecision(failed is None, REASON_FOR[failed.name] if failed else None, tuple(proofs))
