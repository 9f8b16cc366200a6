"""Claude Code's stream-json parse, the driver's error classification and the gate's model proofs,
on real recorded transcripts (tests/data/claude_stream/README.md says how each was produced)."""

import json
from pathlib import Path

import pytest

from runner.grading import gate
from runner.agents.base import Transcript, Usage
from runner.agents.claude_code import classify
from runner.agents.stream_json import EXCERPT, parse_stream, transcript_events

DATA = Path(__file__).parent / "data" / "claude_stream"
CLI_VERSION = "2.1.332"
RECALL_TOOLS = ["mcp__recall__get", "mcp__recall__recent", "mcp__recall__search"]


def lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def session(name: str):
    return parse_stream(lines(name))


def transcript_of(s) -> Transcript:
    t = Transcript(agent="claude-code", model="scripted")
    for kind, data in transcript_events(s):
        t.add(kind, **data)
    return t


def statuses(s) -> dict:
    return {m["name"]: m["status"] for m in s.init["mcp_servers"]}


# ---- the normal session: server connected, tool calls, a result --------------------------------

def test_connected_session_init():
    s = session("recall_connected.jsonl")
    assert s.init["claude_code_version"] == CLI_VERSION
    assert statuses(s) == {"recall": "connected"}
    assert set(RECALL_TOOLS) <= set(s.init["tools"]) and {"Read", "Write", "Edit", "Bash"} <= set(s.init["tools"])
    assert len(s.init["tools"]) == 25
    assert s.noise_lines == 0


def test_connected_session_calls_paired_by_id():
    s = session("recall_connected.jsonl")
    assert [c.id for c in s.calls] == ["toolu_search_0", *[f"toolu_get_{i}" for i in range(10)], "toolu_open_0", "toolu_write_0"]
    assert [c.tool for c in s.calls] == ["mcp__recall__search", *["mcp__recall__get"] * 10, "Read", "Write"]
    assert all(c.is_error is False for c in s.calls)
    # The gets were issued 0-4, answered 0-4, issued 5-9, answered 5-9: each result found its own call.
    for i, hit in enumerate(["dddce83c9f5265d41973", "db486369bb303687feb2", "39fea16c7cfc8535ca96",
                             "626bd14a2d26e6c923c6", "96c94d1b74efe9237aa0", "77cfbdd94c0855b9c969",
                             "603ad95aeb8a5663dd83", "69185f034b24701270ed", "f79581827fa08b9f3112",
                             "8222120d1306ecdcff09"]):
        call = s.calls[1 + i]
        assert json.loads(call.input_excerpt) == {"id": hit}
        assert call.result_excerpt.startswith(f'{{"id":"{hit}"'), call.result_excerpt[:60]
    assert s.calls[-1].result_excerpt.startswith("The file /sandbox/workspace/records/__init__.py has been updated")
    assert all(len(c.result_excerpt) <= EXCERPT for c in s.calls)


def test_connected_session_result_and_usage():
    s = session("recall_connected.jsonl")
    assert s.result["subtype"] == "success" and s.result["is_error"] is False
    assert s.result["terminal_reason"] == "completed"
    assert s.usage == Usage(fresh_input=142543, cache_read=0, cache_creation=0, output=774)
    assert s.permission_denials == []
    assert s.cli_cost_usd == pytest.approx(0.585652)
    assert classify(s, False, 0, "", 600) == (None, None)


def test_usage_classes_are_read_by_name():
    """The recordings all have 0 cache tokens (the scripted server reports none), so each class's
    source key is checked on the recorded result event with four distinct counts put in."""
    raw = lines("recall_connected.jsonl")
    result = json.loads(raw[-1])
    result["usage"].update(input_tokens=11, cache_read_input_tokens=22, cache_creation_input_tokens=33, output_tokens=44)
    s = parse_stream([*raw[:-1], json.dumps(result)])
    assert s.usage == Usage(fresh_input=11, cache_read=22, cache_creation=33, output=44)
    del result["usage"]["cache_read_input_tokens"]
    assert parse_stream([json.dumps(result)]).usage.cache_read is None  # unobserved, never 0


# ---- a failed MCP server (the model also unreachable) -------------------------------------------

def test_failed_server_session():
    s = session("server_failed.jsonl")
    assert s.init["claude_code_version"] == CLI_VERSION
    assert statuses(s) == {"recall": "failed"}
    assert not any(t.startswith("mcp__recall__") for t in s.init["tools"])
    assert s.calls == []
    # The CLI says success; is_error and terminal_reason say otherwise.
    assert s.result["subtype"] == "success"
    assert s.result["is_error"] is True and s.result["terminal_reason"] == "api_error"
    assert s.usage == Usage(fresh_input=0, cache_read=0, cache_creation=0, output=0)


def test_success_subtype_with_is_error_is_an_error():
    s = session("server_failed.jsonl")
    error_class, error = classify(s, False, 1, "", 600)
    assert error_class == "session_error"
    assert "is_error=True" in error and "terminal_reason=api_error" in error and "ECONNREFUSED" in error


def test_terminal_reason_alone_marks_an_error():
    raw = lines("recall_connected.jsonl")
    result = json.loads(raw[-1])
    assert result["is_error"] is False
    result["terminal_reason"] = "max_turns"
    error_class, error = classify(parse_stream([*raw[:-1], json.dumps(result)]), False, 0, "", 600)
    assert error_class == "session_error" and "terminal_reason=max_turns" in error


def test_failed_server_fails_the_server_proofs():
    t = transcript_of(session("server_failed.jsonl"))
    connected, listed = gate.server_proofs(t, "recall", "mcp__recall__", ("search", "get"))
    assert not connected.passed and connected.detail == "server recall: failed"
    assert not listed.passed and "mcp__recall__search" in listed.detail and "mcp__recall__get" in listed.detail
    ok = transcript_of(session("recall_connected.jsonl"))
    assert all(p.passed for p in gate.server_proofs(ok, "recall", "mcp__recall__", ("search", "get")))


# ---- killed before the result -------------------------------------------------------------------

def test_killed_session_has_no_usage():
    s = session("killed_before_result.jsonl")
    assert s.result is None
    assert s.usage == Usage(None, None, None, None)
    assert s.cli_cost_usd is None and s.permission_denials == []
    assert statuses(s) == {"recall": "connected"}
    assert [(c.id, c.tool, c.is_error, c.result_excerpt) for c in s.calls] == [
        ("toolu_search_0", "mcp__recall__search", None, None)]  # the call that never came back
    kinds = [k for k, _ in transcript_events(s)]
    assert kinds == ["init", "tool_call"]


def test_killed_session_classification():
    s = session("killed_before_result.jsonl")
    assert classify(s, True, 137, "", 600) == ("session_timeout", "the session was killed after 600s (never retried)")
    error_class, error = classify(s, False, 137, "some stderr\nKilled\n", 600)
    assert error_class == "no_result" and error == "claude exited 137 without a result: some stderr\nKilled"


def test_stream_cut_mid_line():
    """A kill mid-write leaves half a line: counted as noise, never a result."""
    result_line = lines("recall_connected.jsonl")[-1]
    s = parse_stream([*lines("killed_before_result.jsonl"), result_line[: len(result_line) // 2]])
    assert s.result is None and s.noise_lines == 1 and s.usage.output is None


# ---- permission denials -------------------------------------------------------------------------

def test_permission_denials_surface():
    s = session("permission_denied.jsonl")
    assert statuses(s) == {"recall": "connected"}
    assert s.permission_denials == [{"tool_name": "mcp__recall__search", "tool_use_id": "toolu_search_0",
                                     "tool_input": {"query": "make_id records store", "k": 10}}]
    search = next(c for c in s.calls if c.id == "toolu_search_0")
    assert search.is_error is True and "haven't granted it" in search.result_excerpt
    assert [c.tool for c in s.calls] == ["mcp__recall__search", "Write"]
    # The CLI reports a clean session; the driver agrees (denials are the gate's to judge)...
    assert s.result["subtype"] == "success" and s.result["is_error"] is False
    assert s.result["terminal_reason"] == "completed"
    assert classify(s, False, 0, "", 600) == (None, None)
    assert s.usage == Usage(fresh_input=59470, cache_read=0, cache_creation=0, output=78)
    # ...and the gate refuses it, naming the tool.
    proof = gate.permissions_proof(transcript_of(s), ("mcp__recall__",))
    assert not proof.passed and proof.detail == "denied: mcp__recall__search"
    assert gate.decide([proof]).discard_reason == gate.PERMISSION_DENIED


def test_denials_of_other_tools_are_not_a_memory_denial():
    s = session("permission_denied.jsonl")
    assert gate.permissions_proof(transcript_of(s), ("mcp__other__",)).passed
    assert gate.permissions_proof(transcript_of(s), ()).passed
    assert gate.permissions_proof(transcript_of(session("recall_connected.jsonl")), ("mcp__recall__",)).passed


# ---- noise --------------------------------------------------------------------------------------

def test_noise_lines_are_counted_not_fatal():
    raw = lines("recall_connected.jsonl")
    noisy = ["Warning: something the CLI printed", "", "   ", raw[0], "[1, 2]", '"a string"', *raw[1:], "{not json"]
    s = parse_stream(noisy)
    assert s.noise_lines == 4  # blank lines are not noise; non-object JSON is
    clean = parse_stream(raw)
    assert s.calls == clean.calls and s.usage == clean.usage and s.init == clean.init


def test_transcript_events_carry_what_the_gate_reads():
    events = dict(transcript_events(session("permission_denied.jsonl")))
    assert events["init"]["cli_version"] == CLI_VERSION
    assert events["init"]["mcp_servers"] == [{"name": "recall", "status": "connected"}]
    assert events["result"]["is_error"] is False and events["result"]["terminal_reason"] == "completed"
    assert events["result"]["permission_denials"][0]["tool_name"] == "mcp__recall__search"
    assert events["result"]["cli_cost_usd_unverified"] == session("permission_denied.jsonl").cli_cost_usd


# ---- the gate's proofs from the gateway's record ------------------------------------------------

def model_record(tools, status=200, **extra):
    return {"kind": "model", "method": "POST", "path": "/v1/messages", "status": status, "tools": sorted(tools), **extra}


def test_tools_visible_proof_names_tools_listed_but_not_offered():
    init_tools = session("recall_connected.jsonl").init["tools"]
    required = ["Read", "Write", "Edit", "Bash", *RECALL_TOOLS]
    assert gate.tools_visible_proof([model_record(init_tools)] * 3, required).passed
    # Listed at init, withheld from the model (what tool search's deferral does):
    withheld = [t for t in init_tools if not t.startswith("mcp__recall__")]
    proof = gate.tools_visible_proof([model_record(init_tools), model_record(withheld)], required)
    assert not proof.passed
    assert proof.detail == ("never offered to the model in 1 of 2 requests: "
                            "mcp__recall__get, mcp__recall__recent, mcp__recall__search")
    assert gate.decide([proof]).discard_reason == gate.TOOLS_NOT_VISIBLE


def test_tools_visible_proof_needs_a_request_offering_tools():
    proof = gate.tools_visible_proof([model_record([]), model_record([])], ["Read"])
    assert not proof.passed and proof.detail == "no request offered the model any tool (2 requests)"
    assert not gate.tools_visible_proof([], ["Read"]).passed
    # A tool-less request beside tool-offering ones (e.g. a title request) is not held against it.
    assert gate.tools_visible_proof([model_record([]), model_record(["Read", "Write"])], ["Read"]).passed


def test_tools_visible_counts_the_sessions_own_requests_not_a_sub_agents():
    """A sub-agent the model starts (its own thread: another first message) may offer fewer tools; the session's
    own requests must still offer every required tool, whatever a sub-agent's offered."""
    required = ["Read", "Write", "mcp__recall__search"]
    session = model_record(required, thread="aaa")
    explore = model_record(["Read", "mcp__recall__search"], thread="bbb")
    proof = gate.tools_visible_proof([session, explore, session], required)
    assert proof.passed and proof.detail.endswith("; 1 of sub-agents not counted"), proof
    withheld = gate.tools_visible_proof([model_record(["Read", "Write"], thread="aaa"), model_record(required, thread="bbb")],
                                        required)
    assert not withheld.passed and "mcp__recall__search" in withheld.detail, withheld
    # Records without a thread (one conversation) count every request, as before.
    assert not gate.tools_visible_proof([model_record(required), model_record(["Read"])], required).passed


def test_model_reached_proof():
    egress = {"kind": "egress", "host": "example.com:443", "allowed": False}
    none = gate.model_reached_proof([egress])
    assert not none.passed and none.detail == "the session sent no request to the model gateway"
    retried = gate.model_reached_proof([model_record([], status=529), model_record([], status=200), egress])
    assert retried.passed and retried.detail == "2 model requests, 1 failed, the last answered"
    last_failed = gate.model_reached_proof([model_record([]), model_record([], status=502, error="ConnectionRefusedError: x")])
    assert not last_failed.passed
    assert last_failed.detail == "1 of 2 model requests failed, the last: 502 ConnectionRefusedError: x"
    assert gate.decide([last_failed]).discard_reason == gate.MODEL_UNREACHABLE
    # A live model: every request must have left the gateway with the key on it.
    keyed = {**model_record([]), "key_injected": True}
    assert gate.model_reached_proof([keyed, keyed], key_expected=True).passed
    keyless = gate.model_reached_proof([keyed, model_record([])], key_expected=True)
    assert not keyless.passed and keyless.detail == "1 of 2 requests left the gateway without the key"


def test_a_context_past_the_models_window_is_the_sessions_own_ending():
    """A refusal the session caused (what it read outgrew the model's window), in either API's words, is scored;
    a 400 for anything else (a tool schema the API rejects: the arm's wiring) and a rate limit still discard."""
    anthropic = model_record([], status=400, error_type="invalid_request_error", error_code="",
                             error_message="prompt is too long: 210883 tokens > 200000 maximum")
    openai = model_record([], status=400, error_type="invalid_request_error", error_code="context_length_exceeded",
                          error_message="Your input exceeds the context window of this model.")
    for last in (anthropic, openai):
        proof = gate.model_reached_proof([model_record([]), last])
        assert proof.passed and "past the model's context window" in proof.detail, proof
        assert gate.context_overflow(last)
    schema = model_record([], status=400, error_type="invalid_request_error", error_code="",
                          error_message="tools.3.custom.input_schema: JSON schema is invalid")
    limited = model_record([], status=429, error_type="rate_limit_error", error_code="",
                           error_message="prompt is too long for your rate limit")
    for last in (schema, limited):
        proof = gate.model_reached_proof([model_record([]), last])
        assert not proof.passed and gate.decide([proof]).discard_reason == gate.MODEL_UNREACHABLE, proof
        assert last["error_message"] in proof.detail
    # An overflow the CLI recovered from (it compacted and went on) is not the ending.
    assert gate.model_reached_proof([anthropic, model_record([])]).detail == "2 model requests, 1 failed, the last answered"



def test_a_cli_agents_last_answer_is_read_back_from_its_raw_stream(tmp_path):
    """What SMRITI's export gives its scorer as the transcript: `claude -p`'s result, codex's last message, read
    from the raw stream kept in the cell's folder; "" for a session killed before its result, None with no stream
    and for an agent that keeps none."""
    import gzip

    from runner.agents.claude_code import ClaudeCodeAgent
    from runner.agents.codex import CodexAgent
    from runner.agents.registry import AGENTS

    def kept(cls, recorded: Path) -> Path:
        folder = tmp_path / f"{cls.raw_name}-{recorded.parent.name}-{recorded.stem}"
        folder.mkdir()
        with gzip.open(folder / cls.raw_name, "wt", encoding="utf-8") as f:
            f.write(recorded.read_text())
        return folder

    assert ClaudeCodeAgent.reply(kept(ClaudeCodeAgent, DATA / "recall_connected.jsonl")) == "Applied the naive solution."
    assert ClaudeCodeAgent.reply(kept(ClaudeCodeAgent, DATA / "killed_before_result.jsonl")) == ""
    codex = DATA.parent / "codex_events" / "recall_connected.jsonl"
    assert CodexAgent.reply(kept(CodexAgent, codex)) == "Finished."
    assert ClaudeCodeAgent.reply(tmp_path) is None and AGENTS["reader"].reply(kept(ClaudeCodeAgent, codex)) is None
