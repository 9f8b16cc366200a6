"""The codex agent: the real OpenAI Codex CLI in the sandbox, on the same gateway and scripted model as claude-code.

Install: the pinned linux-x64 platform package of @openai/codex (a static musl binary; the npm package itself is
only a launcher) is fetched from the npm registry on the host, checked against the registry's checksums
(images/codex/pin.yaml), and layered over the image a cell runs in.

Run: `codex exec --json`, its whole configuration one file carried in the verified bundle (agent/codex.toml,
copied into a fresh CODEX_HOME, so nothing of the user's or an earlier session's reaches it): the model provider is
the cell's gateway over the Responses API (the key a placeholder), the arm's MCP server and no other, marked
required so a server that does not start ends the session, the arm's instruction as developer instructions, its
own memories, web search, tool search and update checks off, and CLAUDE.md read as the project's instructions file
when there is no AGENTS.md (so the claude_md arm reaches codex as it reaches claude-code).

Sandbox and approvals: `sandbox_mode = "danger-full-access"` and `approval_policy = "never"`. The container is
the sandbox (hardened, no network but the gateway, its own disk budget); Codex's own sandbox (bubblewrap,
landlock, seccomp) would need user namespaces the hardened container does not grant, so it would fail every
command, and under any approval policy but `never` an unattended session waits for a human who never comes.

The raw event stream is kept (gzip); its parse feeds the gate and the ledger. Codex prints no list of its tools or
of its MCP servers' status: a required server that fails stops the CLI before its thread starts (its stderr says
which), and the tools it offers the model are read from the gateway's record of its first request (read_gateway).
"""

import json
import re
import time

from runner.agents.base import Transcript, Usage, record_truncation
from runner.agents.model_cli import ModelCliAgent
from runner.arms.kinds import kind_of
from runner.env.archive import Entry
from runner.env.images import IMAGES_DIR
from runner.env.sandbox import Sandbox
from runner.plan.spec import ArmSpec

NAME = "codex"
CONTEXT = IMAGES_DIR / "codex"
CORE_TOOLS = ("exec_command",)  # its shell: how it reads, writes and runs anything
CONFIG = "/sandbox/agent/codex.toml"
CODEX_HOME = "/home/agent/.codex"
# The CLI retries an unreachable model for minutes unless bounded. Its stream retries already cover an error
# status, and each would multiply its request retries (3 x 3 requests of up to 10 s each on a dead upstream):
# two stream retries and no request retry send at most three requests, as claude-code's two retries do.
MAX_RETRIES = 2
MCP_STARTUP_SECONDS = 60  # a product's server may load an embedding model before it answers
EXCERPT = 300
SESSION_ENV = {"HOME": "/home/agent", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
               "CODEX_HOME": CODEX_HOME, "RUST_LOG": "warn,codex_models_manager=error", "NO_COLOR": "1"}
# Its features that would reach past the session or the arm: its own memories, MCP tools deferred behind tool
# search, plugins and apps synced from its vendor (on the cell network each sync waits out its timeout), sub-agents,
# goals, image generation and computer or browser use.
FEATURES = {"tool_search": False, "memories": False, "plugins": False, "remote_plugin": False, "apps": False,
            "multi_agent": False, "multi_agent_v2": False, "goals": False, "image_generation": False,
            "computer_use": False, "browser_use": False}
SERVER_FAILED = re.compile(r"required MCP servers failed to initialize: ([^:\s]+):([^\n]*)")


def toml_value(value) -> str:
    """A TOML value: JSON's strings, numbers, booleans and arrays are TOML's too; a table is written inline."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def mcp_servers(arm: ArmSpec, agent_config: dict) -> dict:
    """The session's only MCP servers: the arm's own (none for other kinds), required to start."""
    if kind_of(arm).own_server(arm) is None:
        return {}
    spec = agent_config["mcp"]
    server = {"command": spec["command"][0], "args": spec["command"][1:], "required": True,
              "startup_timeout_sec": MCP_STARTUP_SECONDS}
    if spec.get("env"):  # a protocol's switches for the arm (planted: namespace, off, ablated lanes)
        server["env"] = spec["env"]
    return {spec["server"]: server}


def config_toml(arm: ArmSpec, agent_config: dict, features: dict | None = None) -> str:
    """The CLI's whole configuration for a session of this arm (the model is given on the command line)."""
    lines = ['model_provider = "memgrid"', 'approval_policy = "never"', 'sandbox_mode = "danger-full-access"',
             'web_search = "disabled"', "check_for_update_on_startup = false",
             'project_doc_fallback_filenames = ["CLAUDE.md"]', "",
             "[analytics]", "enabled = false", "", "[otel]", 'exporter = "none"', "",
             "[features]", *(f"{k} = {toml_value(v)}" for k, v in {**FEATURES, **(features or {})}.items()), "",
             "[model_providers.memgrid]", 'name = "memgrid model gateway"', 'base_url = "http://gateway:8080/v1"',
             'env_key = "OPENAI_API_KEY"', 'wire_api = "responses"', "request_max_retries = 0",
             f"stream_max_retries = {MAX_RETRIES}"]
    for name, server in mcp_servers(arm, agent_config).items():
        lines += ["", f"[mcp_servers.{json.dumps(name)}]", *(f"{k} = {toml_value(v)}" for k, v in server.items())]
    return "\n".join(lines) + "\n"


# ---- its event stream ---------------------------------------------------------------------------

def item_call(item: dict) -> dict | None:
    """A completed item that is a tool call, as the transcript's tool_call event (None for any other item)."""
    kind = item.get("type")
    if kind == "mcp_tool_call":
        result = item.get("result") or {}
        text = "\n".join(b.get("text", "") for b in result.get("content") or [] if isinstance(b, dict))
        error = item.get("error")
        return {"id": str(item.get("id", "")), "tool": f"mcp__{item.get('server')}__{item.get('tool')}",
                "input": json.dumps(item.get("arguments"), sort_keys=True)[:EXCERPT],
                "is_error": bool(error) or item.get("status") == "failed",
                "result": (str(error.get("message", error)) if isinstance(error, dict) else error or text)[:EXCERPT]}
    if kind == "command_execution":
        return {"id": str(item.get("id", "")), "tool": "exec_command", "input": str(item.get("command", ""))[:EXCERPT],
                "is_error": item.get("exit_code") != 0, "result": str(item.get("aggregated_output") or "")[:EXCERPT]}
    if kind in ("file_change", "web_search"):
        return {"id": str(item.get("id", "")), "tool": kind, "input": json.dumps(item, sort_keys=True)[:EXCERPT],
                "is_error": item.get("status") == "failed", "result": None}
    return None


def parse_events(lines, stderr: str, servers: list[str]) -> dict:
    """The CLI's --json stream (thread.started, turn.started, item.started/completed, turn.completed with usage,
    turn.failed, error) and its stderr, as what the transcript records."""
    started = failed = None
    calls, messages, errors, usage, turns = [], [], [], None, 0
    noise = 0
    for index, line in enumerate(lines):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            noise += bool(line.strip())
            continue
        if not isinstance(event, dict):
            noise += 1
            continue
        kind = event.get("type")
        if kind == "thread.started" and started is None:
            started = index
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            item = event["item"]
            call = item_call(item)
            if call is not None:
                calls.append(call)
            elif item.get("type") == "agent_message":
                messages.append(str(item.get("text", "")))
            elif item.get("type") == "error":  # a warning the CLI shows the user; the session goes on
                errors.append(str(item.get("message", ""))[:EXCERPT])
        elif kind == "turn.completed":
            turns += 1
            usage = add_usage(usage, event.get("usage") or {})
        elif kind == "turn.failed":
            error = event.get("error")
            failed = str(error.get("message", error) if isinstance(error, dict) else error)[:EXCERPT]
        elif kind == "error":  # a retry it announces ("Reconnecting... 1/2"); a fatal one ends in turn.failed
            errors.append(str(event.get("message", ""))[:EXCERPT])
    # A required server that fails stops the CLI before its thread starts; once it started, the model's shell could
    # have printed that line into the CLI's stderr (through /proc) to have its cell discarded: not the CLI's.
    broken = {m.group(1): m.group(2).strip()[:EXCERPT] for m in SERVER_FAILED.finditer(stderr)} if started is None else {}
    status = [{"name": s, "status": "failed", "error": broken[s]} if s in broken
              else {"name": s, "status": "connected" if started is not None else "absent"} for s in servers]
    return {"started": started, "calls": calls, "messages": messages, "warnings": errors, "usage": usage,
            "turns": turns, "failed": failed, "mcp_servers": status, "noise_lines": noise}


def last_message(parsed: dict) -> str:
    """The session's last agent message (`codex exec`'s answer)."""
    return (parsed["messages"] or [""])[-1]


def add_usage(total: dict | None, usage: dict) -> dict:
    keys = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens", "reasoning_output_tokens")
    return {k: (total or {}).get(k, 0) + int(usage.get(k) or 0) for k in keys}


def as_usage(usage: dict | None):
    """Its usage by the ledger's classes: OpenAI counts cached input inside input_tokens, and reasoning inside
    output_tokens (priced as output; the transcript keeps the reasoning count apart)."""
    if usage is None:
        return Usage()
    cached, written = usage["cached_input_tokens"], usage["cache_write_input_tokens"]
    return Usage(fresh_input=usage["input_tokens"] - cached - written, cache_read=cached, cache_creation=written,
                 output=usage["output_tokens"])


def classify(parsed: dict, timed_out: bool, exit_code: int | None, stderr: str,
             agent_seconds: float) -> tuple[str | None, str | None]:
    """(error_class, error) of a finished session; (None, None) when it ended well."""
    if timed_out:
        return "session_timeout", f"the session was killed after {agent_seconds}s (never retried)"
    if parsed["failed"] is not None:
        return "session_error", f"codex reported: {parsed['failed']}"
    if not parsed["turns"]:
        return "no_result", f"codex exited {exit_code} without finishing a turn: {stderr.strip()[-300:]}"
    if exit_code:
        return "session_error", f"codex exited {exit_code} after its turn: {stderr.strip()[-300:]}"
    return None, None


# ---- the agent ----------------------------------------------------------------------------------

class CodexAgent(ModelCliAgent):
    name = NAME
    context = CONTEXT
    members = {"package/vendor/x86_64-unknown-linux-musl/bin/codex": "codex"}
    api = "openai"
    lock_key, cli_input = "codex", "codex_cli"
    core_tools = CORE_TOOLS
    turn_cap = False  # `codex exec` has no turn limit; the gateway's output-token cap still holds
    session_env = SESSION_ENV
    raw_name = "codex.events.jsonl.gz"

    @classmethod
    def bundle_entries(cls, arm: ArmSpec, agent_config: dict) -> list:
        # Its whole configuration travels in the verified bundle.
        return [Entry("agent/codex.toml", config_toml(arm, agent_config).encode())]

    def command(self, prompt: str) -> list[str]:
        # CODEX_HOME is fresh per session (the container is); the bundle's file becomes its only configuration.
        return ["sh", "-c", 'mkdir -p "$CODEX_HOME" && cp "$0" "$CODEX_HOME/config.toml" && exec codex "$@"', CONFIG,
                "exec", "--json", "--ephemeral", "--strict-config", "--skip-git-repo-check", "--color", "never",
                "-m", self.model,
                "-c", f"developer_instructions={json.dumps(self.instructions)}", "--", prompt]

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=NAME, model=self.model)
        servers = [s for s in [getattr(kind_of(self.arm).own_server(self.arm), "server", None)] if s]
        self.launch(transcript, prompt, approval_policy="never", sandbox_mode="danger-full-access", mcp_servers=servers)
        started = time.monotonic()
        result = self.exec_session(sandbox, prompt)
        parsed = parse_events((line for _, line in result.lines), result.stderr, servers)
        transcript.add("init", tools=[], mcp_servers=parsed["mcp_servers"],
                       cli_version=self.setup.run_setup.pin.version, model=self.model,
                       permission_mode="approval never, sandbox danger-full-access", tools_from="the gateway's record of the first model request")
        for call in parsed["calls"]:
            transcript.add("tool_call", **call)
        if parsed["turns"] or parsed["failed"] is not None:
            transcript.add("result", is_error=parsed["failed"] is not None, terminal_reason=parsed["failed"] or "completed",
                           permission_denials=[], num_turns=parsed["turns"], usage=parsed["usage"],
                           warnings=parsed["warnings"], result_excerpt=last_message(parsed)[:EXCERPT])
        record_truncation(transcript, result)
        t_init = None if parsed["started"] is None else result.lines[parsed["started"]][0]
        self.timings = {"cli_to_init": None if t_init is None else round(t_init - started, 3),
                        "session": None if t_init is None else round(started + result.seconds - t_init, 3),
                        "exec": round(result.seconds, 3)}
        transcript.usage = as_usage(parsed["usage"])
        transcript.output = last_message(parsed)
        self.conclude(transcript, *classify(parsed, result.timed_out, result.exit_code, result.stderr,
                                            self.setup.agent_seconds), result.exit_code)
        return transcript

    @staticmethod
    def final_reply(lines) -> str:
        return last_message(parse_events(lines, "", []))

    def read_gateway(self, transcript: Transcript, gateway: list[dict]) -> None:
        """The tools the CLI listed: those its first model request offered the model (it prints no list)."""
        super().read_gateway(transcript, gateway)  # its tokens
        first = next((g for g in gateway if g.get("kind") == "model" and "tools" in g), None)
        init = next((e for e in transcript.events if e.get("type") == "init"), None)
        if first is not None and init is not None:
            init["tools"] = list(first["tools"])
