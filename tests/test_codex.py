"""The real Codex CLI in the sandbox against the scripted model server over the Responses API, and the canaries
that prove its gate can fail: a failing MCP server, tool search left on, another arm's server, an unreachable
model, and a planted API key that must appear in no file of the run. The first tests need no engine: the parse of
the CLI's recorded streams, its configuration, and the two translations the scripted model and the gateway make
between the Responses API and what they record."""

import importlib.machinery
import importlib.util
import json
import os
import shlex
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from runner.agents import codex
from runner.agents.base import Usage
from runner.exec.job import run_grid
from runner.env.model_endpoint import ModelEndpoint
from runner.plan.spec import grid_from_dict, load_all_arms
from runner.results.ledger import latest_attempts

from conftest import files_holding, model_upstream, received_requests, scripted_model_plays

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "codex_events"
ALL_ARMS = ["bare", "placebo", "claude_md", "fs_grep", "recall", "recall_prefetch", "oracle_memory"]


# Every recall cell of the file takes the store the first one ingested (conftest.fresh_store_cache): the store is
# not what these tests are about, and none asserts how it was made.
pytestmark = pytest.mark.store_cache_per_file


def load(name: str, path: str, env: dict | None = None):
    os.environ.update(env or {})
    try:
        loader = importlib.machinery.SourceFileLoader(name, str(REPO / path))
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
        loader.exec_module(module)
    finally:
        for key in env or {}:
            os.environ.pop(key)
    return module


# ---- no engine ----------------------------------------------------------------------------------

def recorded(name: str) -> dict:
    stderr = DATA / f"{name}.stderr"
    return codex.parse_events((DATA / f"{name}.jsonl").read_text().splitlines(),
                              stderr.read_text() if stderr.exists() else "", ["recall"])


def test_a_connected_session_parses_into_calls_usage_and_a_result():
    parsed = recorded("recall_connected")
    assert parsed["mcp_servers"] == [{"name": "recall", "status": "connected"}]
    assert {c["tool"] for c in parsed["calls"]} == {"mcp__recall__search", "exec_command"}
    search = next(c for c in parsed["calls"] if c["tool"] == "mcp__recall__search")
    assert json.loads(search["input"]) == {"k": 3, "query": "clock"} and "lap-clock" in search["result"]
    assert parsed["turns"] == 1 and parsed["failed"] is None and parsed["messages"] == ["Finished."]
    usage = codex.as_usage(parsed["usage"])  # OpenAI counts cached input inside input_tokens
    assert (usage.fresh_input, usage.cache_read, usage.output) == (120, 80, 14)
    assert codex.classify(parsed, False, 0, "", 600) == (None, None)


def test_a_refused_model_is_a_session_error_and_its_retries_are_not():
    parsed = recorded("model_refused")
    assert parsed["failed"].startswith("unexpected status 403") and parsed["turns"] == 0
    assert sum(w.startswith("Reconnecting") for w in parsed["warnings"]) == 5  # retried, each only a warning
    assert codex.classify(parsed, False, 1, "", 600)[0] == "session_error"


def test_a_required_server_that_failed_is_named_from_stderr():
    parsed = recorded("server_failed")
    (recall,) = parsed["mcp_servers"]
    assert recall["status"] == "absent" and parsed["started"] is None  # the thread never started
    failed = codex.parse_events([], (DATA / "server_failed.stderr").read_text(), ["recall2"])["mcp_servers"]
    assert failed[0]["status"] == "failed" and "handshaking" in failed[0]["error"]
    assert codex.classify(recorded("server_failed"), False, 1, "boom", 600)[0] == "no_result"


def test_a_server_failure_printed_after_the_thread_started_is_not_the_clis():
    """Codex stops before its thread when a required server fails; the same line on stderr once the thread ran was
    printed by something else (a model's shell can write into the CLI's stderr): the server served the session."""
    started = json.dumps({"type": "thread.started", "thread_id": "t"})
    (recall,) = codex.parse_events([started], (DATA / "server_failed.stderr").read_text(), ["recall2"])["mcp_servers"]
    assert recall["status"] == "connected", recall


def test_the_config_names_only_the_arms_server_and_switches_off_what_reaches_past_the_session():
    arms = load_all_arms(REPO)
    recall = arms["recall"]
    config = tomllib.loads(codex.config_toml(recall, {"mcp": {"server": "recall", "command": ["recall-server", "--store", "/s"],
                                                            "env": {"RECALL_OFF": "1"}}}))
    assert list(config["mcp_servers"]) == ["recall"]
    server = config["mcp_servers"]["recall"]
    assert server["command"] == "recall-server" and server["args"] == ["--store", "/s"] and server["required"] is True
    assert server["env"] == {"RECALL_OFF": "1"}
    assert config["approval_policy"] == "never" and config["sandbox_mode"] == "danger-full-access"
    assert config["model_providers"]["memgrid"]["base_url"] == "http://gateway:8080/v1"
    assert config["features"]["memories"] is False and config["features"]["tool_search"] is False
    assert config["analytics"]["enabled"] is False and config["web_search"] == "disabled"
    assert "mcp_servers" not in tomllib.loads(codex.config_toml(arms["bare"], {}))


def test_the_scripted_models_file_tools_run_as_shell_commands_codex_executes(tmp_path):
    """Read and Write reach codex as commands of its shell; run here by bash, Write leaves exactly the content
    (quotes, no final newline) and Read prints it; an MCP tool goes out in its namespace."""
    server = load("model_server", "images/model/memgrid-model-server")
    content = "it's \"quoted\" $HOME `x`\nno newline"
    target = tmp_path / "deep" / "f.py"
    items = server.to_responses(1, [("toolu_write_0", "Write", {"file_path": str(target), "content": content}),
                                    ("toolu_search_0", "mcp__recall__search", {"query": "q", "k": 10})], "")
    write, search = items
    subprocess.run(["bash", "-c", json.loads(write["arguments"])["cmd"]], check=True, timeout=30)
    assert target.read_text() == content
    assert (search["namespace"], search["name"], search["call_id"]) == ("mcp__recall", "search", "toolu_search_0")
    (read,) = server.to_responses(2, [("toolu_open_0", "Read", {"file_path": str(target)})], "")
    shown = subprocess.run(["bash", "-c", json.loads(read["arguments"])["cmd"]], capture_output=True, text=True, timeout=30)
    assert shown.stdout == content
    # What codex sends back is read as the Messages history the script steps through.
    request = {"tools": [{"type": "function", "name": "exec_command"},
                         {"type": "namespace", "name": "mcp__recall", "tools": [{"type": "function", "name": "search"}]}],
               "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "task"}]},
                         search, {"type": "function_call_output", "call_id": "toolu_search_0",
                                  "output": 'Wall time: 0.0056 seconds\nOutput:\n{"hits": []}'},
                         read, {"type": "function_call_output", "call_id": "toolu_open_0",
                                "output": "Chunk ID: a\nWall time: 0 seconds\nProcess exited with code 1\n"
                                          "Original token count: 2\nOutput:\nno such file\n"}]}
    messages = server.from_responses(request)
    assert {t["name"] for t in messages["tools"]} == {"exec_command", "mcp__recall__search", "Bash", "Read", "Write"}
    assert server.issued(messages["messages"]) == ["toolu_search_0", "toolu_open_0"]
    assert server.tool_results(messages["messages"]) == {"toolu_search_0": ('{"hits": []}', False),
                                                         "toolu_open_0": ("no such file\n", True)}


def test_the_gateway_forwards_only_the_responses_route_and_credits_results_to_the_called_tool():
    gateway = load("gateway_openai", "images/model/memgrid-gateway", {"MEMGRID_API": "openai"})
    assert gateway.ROUTE.fullmatch("/v1/responses") and not gateway.ROUTE.fullmatch("/v1/messages")
    assert not gateway.ROUTE.fullmatch("/v1/responses/../files") and not gateway.ROUTE.fullmatch("/v1/files")
    body = json.dumps({"model": "m", "stream": True, "tools": [
        {"type": "function", "name": "exec_command"},
        {"type": "namespace", "name": "mcp__recall", "tools": [{"type": "function", "name": "search"}]}],
        "input": [{"type": "function_call", "call_id": "c1", "namespace": "mcp__recall", "name": "search", "arguments": "{}"},
                  {"type": "function_call_output", "call_id": "c1", "output": "hit mem-1"},
                  {"type": "function_call_output", "call_id": "forged", "output": "mem-2"}]}).encode()
    offered = gateway.offered_tools(body, "/v1/responses")
    assert offered["tools"] == ["exec_command", "mcp__recall__search"]
    assert [(r["tool"], r["text"]) for r in offered["tool_results"]] == [("mcp__recall__search", "hit mem-1"), ("", "mem-2")]
    anthropic = load("gateway_anthropic", "images/model/memgrid-gateway")
    assert anthropic.ROUTE.fullmatch("/v1/messages") and not anthropic.ROUTE.fullmatch("/v1/responses")


def test_the_gateway_reads_each_responses_usage_as_its_api_states_it_and_never_from_the_models_text():
    """The ledger's tokens are these (ModelCliAgent.read_gateway): OpenAI's from response.completed at a stream's end,
    Anthropic's input classes from message_start at its head; a model that writes usage-like JSON into its own text
    moves nothing, since there it is a JSON string with its quotes escaped."""
    from runner.agents.model_cli import gateway_usage

    openai = load("gateway_openai_usage", "images/model/memgrid-gateway", {"MEMGRID_API": "openai"})
    said = json.dumps({"type": "response.output_text.delta", "delta": '"input_tokens": 1, "output_tokens": 1'})
    done = json.dumps({"type": "response.completed", "response": {"output": [], "usage": {
        "input_tokens": 900, "input_tokens_details": {"cached_tokens": 600}, "output_tokens": 70,
        "output_tokens_details": {"reasoning_tokens": 5}}}})
    stream = f"event: response.output_text.delta\ndata: {said}\n\nevent: response.completed\ndata: {done}\n\n".encode()
    usage = openai.reported_usage(stream[:50], stream)
    assert usage == {"output_tokens": 70, "input_tokens": 900, "cached_tokens": 600}
    assert openai.reported_usage(b"", f"data: {said}\n\n".encode()) == {"output_tokens": 0}
    assert gateway_usage([{"kind": "model", "usage": usage}, {"kind": "model", "status": 429}], "openai") == \
        Usage(fresh_input=300, cache_read=600, cache_creation=0, output=70)
    anthropic = load("gateway_anthropic_usage", "images/model/memgrid-gateway")
    start = json.dumps({"type": "message_start", "message": {"usage": {
        "input_tokens": 12, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 40000, "output_tokens": 1}}})
    delta = json.dumps({"type": "message_delta", "usage": {"output_tokens": 321}})
    stream = f"event: message_start\ndata: {start}\n\nevent: message_delta\ndata: {delta}\n\n".encode()
    usage = anthropic.reported_usage(stream[:len(start) + 30], stream[-len(delta) - 10:])
    assert gateway_usage([{"kind": "model", "usage": usage}], "anthropic") == \
        Usage(fresh_input=12, cache_read=40000, cache_creation=3000, output=321)


# ---- the real CLI, through the cell path ----------------------------------------------------------

def run_codex(run_id, tmp_path, arms, **spec):
    grid = grid_from_dict({"name": "codex", "tasks": ["slug_ids"], "arms": arms, "agents": ["codex"], "seeds": 1,
                           "conditions": ["present"], "model": "scripted", **spec}, Path("(test grid)"))
    outcome = run_grid(grid, Path("(test grid)"), root=REPO, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=2,
                       progress=False, log=lambda m: None)
    rows = list(latest_attempts([json.loads(line) for line in (outcome.run_dir / "ledger.jsonl").open()]).values())
    return {r["arm"]: r for r in rows}, outcome.run_dir


def proofs(row) -> dict:
    return {p["name"]: p for p in json.loads(row["gate_proofs"])}


def events(run_dir, row, kind) -> list[dict]:
    return [e for e in map(json.loads, (run_dir / "cells" / row["cell_id"] / "transcript.jsonl").open()) if e["type"] == kind]


def test_scripted_grid_admits_every_arm_and_memory_decides(engine, images, run_id, tmp_path, no_leftovers):
    rows, run_dir = run_codex(run_id, tmp_path, ALL_ARMS)
    assert {a: r["admitted"] for a, r in rows.items()} == {a: True for a in ALL_ARMS}, \
        {a: r["discard_reason"] for a, r in rows.items()}
    recall = proofs(rows["recall"])
    assert "mcp__recall__search" in recall["tools_visible"]["detail"] and "exec_command" in recall["tools_visible"]["detail"]
    assert recall["mcp_connected"]["detail"] == "server recall: connected" and recall["no_foreign_tools"]["passed"]
    (init,) = events(run_dir, rows["recall"], "init")
    assert {"mcp__recall__search", "mcp__recall__get"} <= set(init["tools"])
    assert init["cli_version"] == codex.CodexAgent.load_pin().version
    assert [c["tool"] for c in events(run_dir, rows["recall"], "tool_call")][:2] == ["mcp__recall__search", "mcp__recall__get"]
    # What the session retrieved decides what it writes: the injected evidence solves, nothing does not.
    assert rows["oracle_memory"]["checker_passed"] is True
    assert rows["bare"]["checker_passed"] is False
    for r in rows.values():
        assert r["agent"] == "codex" and r["agent_ended"] == "ok"
        assert r["tokens_fresh_input"] > 0 and r["tokens_output"] > 0 and r["cost_usd"] == 0.0
        assert set(json.loads(r["timings"])) >= {"container_start", "cli_to_init", "session"}
        assert (run_dir / "cells" / r["cell_id"] / "codex.events.jsonl.gz").stat().st_size > 0
    lock = json.loads((run_dir / "run.json").read_text())
    assert lock["codex"]["cli"]["version"] == codex.CodexAgent.load_pin().version and "claude_code" not in lock


def test_failing_mcp_server_is_discarded_and_retried(engine, images, run_id, tmp_path, no_leftovers, monkeypatch):
    monkeypatch.setattr(codex, "mcp_servers", lambda arm, config: {
        "recall": {"command": "false", "args": [], "required": True}})
    rows, _ = run_codex(run_id, tmp_path, ["recall"])
    row = rows["recall"]
    assert not row["admitted"] and row["discard_reason"] == "mcp_server_failed"
    assert row["attempt"] == 3 and row["checker_passed"] is None
    assert "server recall: failed (handshaking" in proofs(row)["mcp_connected"]["detail"]


def test_memory_tools_withheld_from_the_model_are_caught_by_the_model_side_record(engine, images, run_id, tmp_path,
                                                                                  no_leftovers, monkeypatch):
    """The server starts but its search tool is withheld from the model (the server's disabled_tools). Codex
    prints no tool list of its own, so the tools it lists are the gateway's record of what it offered, and that
    is what fails first."""
    own = codex.mcp_servers
    monkeypatch.setattr(codex, "mcp_servers", lambda arm, config: {
        name: {**server, "disabled_tools": ["search"]} for name, server in own(arm, config).items()})
    rows, _ = run_codex(run_id, tmp_path, ["recall"])
    row = rows["recall"]
    checks = proofs(row)
    assert checks["mcp_connected"]["passed"], "the server started: only the model-side record can catch this"
    assert not row["admitted"] and row["discard_reason"] == "required_tools_missing", row["discard_reason"]
    assert "mcp__recall__search" in checks["required_tools_listed"]["detail"]


def test_another_arms_server_is_discarded_as_foreign_tools(engine, images, run_id, tmp_path, no_leftovers, monkeypatch):
    recall = load_all_arms(REPO)["recall"]
    server = {"recall": {"command": "recall-server", "args": ["--store", "/sandbox/store"], "required": True}}
    own = codex.mcp_servers
    monkeypatch.setattr(codex, "mcp_servers", lambda arm, config: server if arm.name == "recall_prefetch" else own(arm, config))
    rows, _ = run_codex(run_id, tmp_path, ["recall_prefetch"])
    row = rows["recall_prefetch"]
    assert recall.mcp.server == "recall"
    assert not row["admitted"] and row["discard_reason"] == "foreign_tools", row["discard_reason"]
    assert "mcp__recall__search" in proofs(row)["no_foreign_tools"]["detail"]


def test_unreachable_model_fails_bounded_and_is_not_scored(engine, images, run_id, tmp_path, no_leftovers, monkeypatch):
    ready = ModelEndpoint._wait_ready

    def then_kill_the_model(self):
        ready(self)
        self.containers["model"].kill()

    monkeypatch.setattr(ModelEndpoint, "_wait_ready", then_kill_the_model)
    started = time.monotonic()
    rows, _ = run_codex(run_id, tmp_path, ["bare"])
    row = rows["bare"]
    assert not row["admitted"] and row["discard_reason"] == "model_unreachable"
    assert row["checker_passed"] is None and row["outcome"] is None
    assert time.monotonic() - started < 120, "the CLI's retries were not bounded"


CANARY = "sk-proj-canary-" + "5c1d" * 8


def test_canary_key_reaches_the_model_and_no_file(engine, images, run_id, tmp_path, no_leftovers, monkeypatch):
    """A live-model run whose upstream is a model server this test owns: the key must arrive there as the
    bearer token (injected by the gateway) and appear in no file the run wrote."""
    with model_upstream(engine, images, run_id) as (upstream, url):
        monkeypatch.setenv("OPENAI_API_KEY", CANARY)
        monkeypatch.setenv("MEMGRID_MODEL_UPSTREAM", url)
        prices = {"canary-model": {"input": 1.25, "output": 10.0, "cache_read": 0.125, "cache_creation": 0.0,
                                   "as_of": "2026-11-01", "source": "test prices"}}
        rows, run_dir = run_codex(run_id, tmp_path, ["bare", "claude_md"], model="canary-model", prices=prices)
        received = received_requests(upstream)
    assert b'"api_key": "injected"' in received, "the gateway never delivered the key upstream"
    assert b'"api_key": "placeholder"' not in received and b'"/v1/responses"' in received
    for row in rows.values():
        assert row["admitted"], row["discard_reason"]
        usage = (row["tokens_fresh_input"], row["tokens_output"], row["tokens_cache_read"])
        assert row["cost_usd"] == pytest.approx((usage[0] * 1.25 + usage[1] * 10.0 + usage[2] * 0.125) / 1e6, abs=1e-6)
    leaked, scanned = files_holding(run_dir, CANARY)
    assert not leaked, f"the API key leaked into {leaked}"
    assert scanned > 10


def test_two_sessions_remember_through_the_arm(engine, images, run_id, tmp_path, no_leftovers):
    grid = grid_from_dict({"name": "codex-two", "protocol": "two-session", "cases": 1, "arms": ["bare", "recall", "notes"],
                           "agents": ["codex"], "seeds": 1, "conditions": ["closing_balance"], "model": "scripted"},
                          Path("(test grid)"))
    outcome = run_grid(grid, Path("(test grid)"), root=REPO, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=2,
                       progress=False, log=lambda m: None)
    rows = {r["arm"]: r for r in latest_attempts([json.loads(l) for l in (outcome.run_dir / "ledger.jsonl").open()]).values()}
    assert all(r["admitted"] for r in rows.values()), {a: r["discard_reason"] for a, r in rows.items()}
    assert {a: json.loads(r["result"])["score"] for a, r in rows.items()} == {"bare": 0, "recall": 1, "notes": 1}
    cell = outcome.run_dir / "cells" / rows["recall"]["cell_id"]
    calls = {ph: [e["tool"] for e in map(json.loads, (cell / ph / "transcript.jsonl").open()) if e["type"] == "tool_call"]
             for ph in ("step1", "step2")}
    assert calls == {"step1": ["mcp__recall__remember"], "step2": ["mcp__recall__search"]}


def test_planted_memory_on_and_off(engine, images, run_id, tmp_path, no_leftovers):
    from runner.protocols.registry import PROTOCOLS

    task = sorted(PROTOCOLS["planted"].tasks(REPO))[0]
    grid = grid_from_dict({"name": "codex-planted", "protocol": "planted", "tasks": [task], "arms": ["recall"],
                           "agents": ["codex"], "seeds": 1, "conditions": ["off", "on"], "model": "scripted"},
                          Path("(test grid)"))
    outcome = run_grid(grid, Path("(test grid)"), root=REPO, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=2,
                       progress=False, log=lambda m: None)
    rows = {r["condition"]: r for r in latest_attempts([json.loads(l) for l in (outcome.run_dir / "ledger.jsonl").open()]).values()}
    assert all(r["admitted"] for r in rows.values()), {c: (r["discard_reason"], r["error_detail"]) for c, r in rows.items()}
    on, off = json.loads(rows["on"]["result"]), json.loads(rows["off"]["result"])
    assert rows["on"]["checker_passed"] and on["injection"]["confirmed"], on
    assert not rows["off"]["checker_passed"] and not off["injection"]["confirmed"], off


def test_a_turn_cap_codex_cannot_enforce_is_refused_by_name():
    """Codex has no turn limit: a grid's or a task's max_turns would be passed over unsaid, so the run refuses it
    naming the file and the field; claude-code (--max-turns) is not refused."""
    from dataclasses import replace

    from runner.errors import SpecError
    from runner.exec.job import check_turn_caps
    from runner.plan.spec import SessionLimits, load_all_tasks

    tasks = load_all_tasks(REPO)
    spec = {"name": "capped", "tasks": ["slug_ids"], "arms": ["bare"], "seeds": 1, "conditions": ["present"],
            "model": "scripted"}
    with pytest.raises(SpecError, match=r"limits\.max_turns.*codex agent has no turn cap"):
        check_turn_caps(grid_from_dict({**spec, "agents": ["codex"], "limits": {"max_turns": 5}}, Path("g.yaml")),
                        Path("g.yaml"), tasks, {})
    capped = {**tasks, "slug_ids": replace(tasks["slug_ids"], session_limits=SessionLimits(max_turns=5))}
    with pytest.raises(SpecError, match=r"slug_ids/task\.yaml.*limits\.max_turns"):
        check_turn_caps(grid_from_dict({**spec, "agents": ["codex"]}, Path("g.yaml")), Path("g.yaml"), capped, {})
    check_turn_caps(grid_from_dict({**spec, "agents": ["claude-code"], "limits": {"max_turns": 5}}, Path("g.yaml")),
                    Path("g.yaml"), capped, {})


# The model's shell finds the CLI by its command line, prints `lines` into its stdout (through /proc) and kills every
# process of the agent's user, the CLI among them, so what it printed is the session's last word.
FORGE = ("import json, os\nlines = %r\nfor p in os.listdir('/proc'):\n    try:\n"
         "        argv0 = open('/proc/%%s/cmdline' %% p, 'rb').read().split(b'\\0')[0]\n    except OSError:\n"
         "        continue\n    if argv0.endswith(b'codex'):\n        with open('/proc/%%s/fd/1' %% p, 'a') as f:\n"
         "            f.write(''.join(l + '\\n' for l in lines))\nos.kill(-1, 9)\n")


def test_a_forged_usage_in_the_clis_output_cannot_understate_the_sessions_tokens(engine, images, run_id, tmp_path,
                                                                                 no_leftovers, monkeypatch):
    """Codex's side of claude-code's test: a turn.completed claiming one token in and one out, printed into the CLI's
    stdout before the CLI is killed, is what the CLI's own count holds; the ledger's is the gateway's record."""
    forged = {"type": "turn.completed", "usage": {"input_tokens": 1, "cached_input_tokens": 0, "output_tokens": 1}}
    scripted_model_plays(monkeypatch, shell="python3 -c " + shlex.quote(FORGE % [json.dumps(forged)]))
    rows, run_dir = run_codex(run_id, tmp_path, ["bare"])
    row = rows["bare"]
    assert row["admitted"], row["discard_reason"]
    gateway = [json.loads(l) for l in (run_dir / "cells" / row["cell_id"] / "gateway.jsonl").open()]
    answered = [g["usage"] for g in gateway if g.get("kind") == "model" and "usage" in g]
    assert answered, gateway
    assert row["tokens_output"] == sum(u["output_tokens"] for u in answered) > 1
    assert row["tokens_fresh_input"] + row["tokens_cache_read"] == sum(u["input_tokens"] for u in answered) > 1
    claimed = events(run_dir, row, "cli_usage")
    assert claimed and (claimed[-1]["fresh_input"], claimed[-1]["output"]) == (1, 1), claimed


def test_a_session_past_the_models_window_is_scored_not_discarded(engine, images, run_id, tmp_path, no_leftovers,
                                                                  monkeypatch):
    """Codex's side of claude-code's test: the Responses API's context_length_exceeded ends the session, which is
    scored with error class context_window, not discarded."""
    scripted_model_plays(monkeypatch, context_headroom_tokens=2000, shell="python3 -c \"print('word ' * 4000)\"")
    rows, run_dir = run_codex(run_id, tmp_path, ["bare"])
    row = rows["bare"]
    assert row["admitted"] and row["discard_reason"] is None, (row["discard_reason"], row["error_detail"])
    assert row["error_class"] == "context_window" and row["checker_passed"] is False, (row["error_class"], row["error_detail"])
    gateway = [json.loads(l) for l in (run_dir / "cells" / row["cell_id"] / "gateway.jsonl").open()]
    refused = [g for g in gateway if g.get("kind") == "model" and g["status"] == 400]
    assert refused and refused[-1]["error_code"] == "context_length_exceeded", gateway
