"""The claude-code agent (Harbor's installed agent): the real Claude Code CLI in the sandbox.

Install: the pinned platform binary is fetched from the npm registry on the host, checked against
the checksums the registry published for that version (images/claude-code/pin.yaml), and layered
over the image a cell runs in. Run: `claude -p` with stream-json output, the arm's MCP servers and
nothing else (--strict-mcp-config), the core editing tools plus the arm's, docker commands
disallowed, the arm's instruction appended to the system prompt, and an environment made only of
what the session needs. The raw stream is kept (gzip); its parse feeds the gate and the ledger.
"""

import json
import time
from pathlib import Path

from runner.agents import npm_pin
from runner.agents.base import BUDGET_EXHAUSTED, Transcript, record_truncation
from runner.agents.model_cli import ModelCliAgent
from runner.agents.npm_pin import NpmPin
from runner.agents.stream_json import StreamSession, parse_stream, transcript_events
from runner.arms.kinds import kind_of
from runner.env.archive import Entry
from runner.env.images import IMAGES_DIR
from runner.env.sandbox import Sandbox
from runner.plan.spec import ArmSpec

NAME = "claude-code"
CONTEXT = IMAGES_DIR / "claude-code"
CORE_TOOLS = ("Read", "Write", "Edit", "Bash")
DISALLOWED_TOOLS = ("Bash(docker:*)", "Bash(docker *)", "WebFetch", "WebSearch")
MAX_RETRIES = 2  # the CLI retries an unreachable model for minutes unless bounded
# The session's whole environment. Without the first, the CLI looks up its vendor's hosts and, on an
# internal network, each lookup hangs ~20 s; without ENABLE_TOOL_SEARCH=false, MCP tools are
# deferred: listed at init but never sent to the model.
SESSION_ENV = {
    "HOME": "/home/agent", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1", "ENABLE_TOOL_SEARCH": "false", "CLAUDE_CODE_MAX_RETRIES": str(MAX_RETRIES),
}
MCP_CONFIG = "/sandbox/agent/mcp.json"


# ---- install ------------------------------------------------------------------------------------

def load_pin() -> NpmPin:
    return npm_pin.load_pin(CONTEXT)


def fetch_binary(pin: NpmPin, log=print) -> Path:
    """The verified binary in the build context; fetched only when missing or of another pin."""
    npm_pin.fetch_files(pin, CONTEXT, ClaudeCodeAgent.members, log)
    return CONTEXT / "claude"


# ---- run ----------------------------------------------------------------------------------------

def mcp_config(arm: ArmSpec, agent_config: dict) -> dict:
    """The session's only MCP servers: the arm's own (none for other kinds)."""
    if kind_of(arm).own_server(arm) is None:
        return {"mcpServers": {}}
    spec = agent_config["mcp"]
    server = {"type": "stdio", "command": spec["command"][0], "args": spec["command"][1:]}
    if spec.get("env"):  # a protocol's switches for the arm (planted: namespace, off, ablated lanes)
        server["env"] = spec["env"]
    return {"mcpServers": {spec["server"]: server}}


def allowed_tools(arm: ArmSpec) -> list[str]:
    server = kind_of(arm).own_server(arm)
    return [*CORE_TOOLS, *([f"mcp__{server.server}"] if server is not None else [])]


class ClaudeCodeAgent(ModelCliAgent):
    name = NAME
    context = CONTEXT
    members = {"package/claude": "claude"}
    api = "anthropic"
    lock_key, cli_input = "claude_code", "cli"
    core_tools = CORE_TOOLS
    session_env = SESSION_ENV
    raw_name = "claude.stream.jsonl.gz"

    @classmethod
    def bundle_entries(cls, arm: ArmSpec, agent_config: dict) -> list:
        # Its MCP servers travel in the verified bundle.
        return [Entry("agent/mcp.json", json.dumps(mcp_config(arm, agent_config), indent=1).encode())]

    def command(self, prompt: str) -> list[str]:
        return ["claude", "-p", prompt, "--output-format", "stream-json", "--verbose", "--model", self.model,
                "--mcp-config", MCP_CONFIG, "--strict-mcp-config",
                "--allowedTools", ",".join(allowed_tools(self.arm)),
                "--disallowedTools", ",".join(DISALLOWED_TOOLS),
                "--append-system-prompt", self.instructions,
                *(["--max-turns", str(self.setup.limits.max_turns)] if self.setup.limits.max_turns else [])]

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=NAME, model=self.model)
        self.launch(transcript, prompt, allowed_tools=allowed_tools(self.arm), disallowed_tools=list(DISALLOWED_TOOLS))
        started = time.monotonic()
        result = self.exec_session(sandbox, prompt)
        session = parse_stream(line for _, line in result.lines)
        for kind, data in transcript_events(session):
            transcript.add(kind, **data)
        record_truncation(transcript, result)
        t_init = None if session.init_line is None else result.lines[session.init_line][0]
        t_result = None if session.result_line is None else result.lines[session.result_line][0]
        self.timings = {"cli_to_init": None if t_init is None else round(t_init - started, 3),
                        "session": None if t_init is None or t_result is None else round(t_result - t_init, 3),
                        "exec": round(result.seconds, 3)}
        transcript.usage = session.usage
        transcript.output = result_text(session)
        transcript.cli_cost_usd = session.cli_cost_usd
        self.conclude(transcript, *classify(session, result.timed_out, result.exit_code, result.stderr,
                                            self.setup.agent_seconds), result.exit_code)
        return transcript

    @staticmethod
    def final_reply(lines) -> str:
        return result_text(parse_stream(lines))

    def read_gateway(self, transcript: Transcript, gateway: list[dict]) -> None:
        """The calls the CLI denied, as it answered them to the model by the gateway's record, replace those its
        result line names: that line is printed where a model's shell can print one too (the CLI's stdout, through
        /proc), and a forged result naming a memory tool, the CLI then killed, would discard the cell."""
        super().read_gateway(transcript, gateway)  # its tokens
        denied = [{"tool_name": r.get("tool"), "tool_use_id": r.get("call")} for g in gateway if g.get("kind") == "model"
                  for r in g.get("tool_results") or [] if r.get("is_error") and DENIED in str(r.get("text", ""))]
        for event in transcript.events:
            if event["type"] == "result":
                event["permission_denials"] = denied


def result_text(session: StreamSession) -> str:
    """The text of the session's result line (`claude -p`'s answer)."""
    return str((session.result or {}).get("result") or "")


# How the CLI answers the model a call it may not make (tests/data/claude_stream/permission_denied.jsonl).
DENIED = "requested permissions to use"


def classify(session: StreamSession, timed_out: bool, exit_code: int | None, stderr: str,
             agent_seconds: float) -> tuple[str | None, str | None]:
    """(error_class, error) of a finished session; (None, None) when it ended well. The result's
    `is_error` and `terminal_reason` decide, never its `subtype` (an API error still says success).
    Permission denials are not an error here: the gate judges those of memory tools."""
    if timed_out:
        return "session_timeout", f"the session was killed after {agent_seconds}s (never retried)"
    if session.result is None:
        return "no_result", f"claude exited {exit_code} without a result: {stderr.strip()[-300:]}"
    r = session.result
    if r.get("subtype") == "error_max_turns":
        return BUDGET_EXHAUSTED, f"the session reached its turn cap (--max-turns) after {r.get('num_turns')} turns"
    if r.get("is_error") or r.get("terminal_reason") not in ("completed", None):
        return "session_error", (f"is_error={r.get('is_error')}, terminal_reason={r.get('terminal_reason')}: "
                                 f"{str(r.get('result', ''))[:200]}")
    return None, None
