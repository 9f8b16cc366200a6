"""Claude Code's stream-json record, parsed into what the gate and the ledger read.

The CLI prints one JSON event per line: `system/init` (the tools it listed, each MCP server's
status, its version), `assistant` / `user` messages (tool calls and their results, paired here by
id), and a final `result` (usage by token class, `is_error`, `terminal_reason`,
`permission_denials`, the CLI's own cost figure). Its `subtype` is never trusted: a session whose
tool calls were all denied still reports `subtype: success`. A session killed before its `result`
has no usage: tokens stay None, never 0.
"""

import json
from dataclasses import dataclass, field

from runner.agents.base import Usage

EXCERPT = 300


@dataclass
class ToolCall:
    id: str
    tool: str
    input_excerpt: str
    is_error: bool | None = None  # None: no result came back
    result_excerpt: str | None = None


@dataclass
class StreamSession:
    init: dict | None = None
    calls: list[ToolCall] = field(default_factory=list)
    result: dict | None = None
    noise_lines: int = 0
    init_line: int | None = None  # where init and result stood in the stream (to time them)
    result_line: int | None = None

    @property
    def usage(self) -> Usage:
        usage = (self.result or {}).get("usage")
        if not isinstance(usage, dict):
            return Usage()
        return Usage(fresh_input=usage.get("input_tokens"), cache_read=usage.get("cache_read_input_tokens"),
                     cache_creation=usage.get("cache_creation_input_tokens"), output=usage.get("output_tokens"))

    @property
    def permission_denials(self) -> list[dict]:
        return list((self.result or {}).get("permission_denials") or [])

    @property
    def cli_cost_usd(self) -> float | None:
        return (self.result or {}).get("total_cost_usd")


def content_text(content) -> str:
    """A message block's content as text: a string as it is, a list of blocks by their text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def parse_stream(lines) -> StreamSession:
    """`lines`: the CLI's stdout lines, in order. Lines that are not JSON objects are counted, not fatal."""
    session = StreamSession()
    by_id: dict[str, ToolCall] = {}
    for index, line in enumerate(lines):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            session.noise_lines += bool(line.strip())
            continue
        if not isinstance(event, dict):
            session.noise_lines += 1
            continue
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init" and session.init is None:
            session.init, session.init_line = event, index
        elif kind == "assistant":
            for block in (event.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    call = ToolCall(block.get("id", ""), block.get("name", ""),
                                    json.dumps(block.get("input"), sort_keys=True)[:EXCERPT])
                    by_id[call.id] = call
                    session.calls.append(call)
        elif kind == "user":
            for block in (event.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") in by_id:
                    call = by_id[block["tool_use_id"]]
                    call.is_error = bool(block.get("is_error"))
                    call.result_excerpt = content_text(block.get("content"))[:EXCERPT]
        elif kind == "result":
            session.result, session.result_line = event, index
    return session


def transcript_events(session: StreamSession) -> list[tuple[str, dict]]:
    """The session as the typed events the gate reads (init, tool_call, result)."""
    events = []
    if session.init is not None:
        init = session.init
        events.append(("init", {
            "tools": list(init.get("tools") or []),
            "mcp_servers": [{k: s.get(k) for k in ("name", "status", "error") if k in s}
                            for s in init.get("mcp_servers") or [] if isinstance(s, dict)],
            "cli_version": init.get("claude_code_version"), "model": init.get("model"),
            "permission_mode": init.get("permissionMode")}))
    for call in session.calls:
        events.append(("tool_call", {"id": call.id, "tool": call.tool, "input": call.input_excerpt,
                                     "is_error": call.is_error, "result": call.result_excerpt}))
    if session.result is not None:
        r = session.result
        events.append(("result", {"is_error": bool(r.get("is_error")), "terminal_reason": r.get("terminal_reason"),
                                  "subtype": r.get("subtype"), "permission_denials": session.permission_denials,
                                  "num_turns": r.get("num_turns"), "usage": r.get("usage"),
                                  "cli_cost_usd_unverified": session.cli_cost_usd,
                                  "result_excerpt": str(r.get("result", ""))[:EXCERPT]}))
    return events
