"""Injection confirmation cannot be forged from inside the sandbox: the arm's log is written there, so an
agent that is not memgrid's own needs a record from outside (the model gateway's) showing a planted id
arriving in one of the arm's own tool results; an agent with no such record is never confirmed. And a
planted memory that reaches the model around the arm first (a shell reading the store) is never credited to it."""

from runner.agents.claude_code import ClaudeCodeAgent
from runner.agents.command import CommandAgent
from runner.agents.reference import ReaderAgent
from runner.protocols.planted.protocol import confirm, delivered, read_around_the_arm
from runner.units.planted import Memory

PLANTED = ["mem-0123456789ab", "mem-ba9876543210"]
PREFIX = "mcp__recall__"
MEMORIES = [Memory("wisdom", "Settings files in this project are always written with a trailing newline and sorted keys.")]
LOG_CONFIRMED = {"confirmed": True, "planted_ids_served": [PLANTED[0]], "log_lines": 1, "outside_window": 0}


def request(*results) -> dict:
    return {"kind": "model", "path": "/v1/messages", "tools": ["Bash", "mcp__recall__search"],
            "tool_results": [{"call": f"toolu_{i}", "tool": tool, "text": text, "chars": len(text), "is_error": error}
                             for i, (tool, text, error) in enumerate(results)]}


def test_the_arm_log_alone_confirms_memgrids_own_agent():
    assert confirm(LOG_CONFIRMED, ReaderAgent, None, PREFIX, PLANTED, MEMORIES)["confirmed"]


def test_a_model_agent_needs_the_gateway_to_see_a_planted_id_in_the_arms_own_result():
    hit = request(("mcp__recall__search", '{"hits": [{"id": "mem-0123456789ab", "score": 2.1}]}', False))
    got = confirm(LOG_CONFIRMED, ClaudeCodeAgent, [hit], PREFIX, PLANTED, MEMORIES)
    assert got["confirmed"] and got["delivered_ids"] == [PLANTED[0]]


def test_a_forged_log_line_with_the_id_read_by_a_shell_is_not_confirmed():
    """The attack: the model reads the store with a shell, writes the ids into the arm's log itself."""
    forged = request(("Bash", "['mem-0123456789ab', 'mem-ba9876543210']", False))
    got = confirm(LOG_CONFIRMED, ClaudeCodeAgent, [forged], PREFIX, PLANTED, MEMORIES)
    assert not got["confirmed"] and got["delivered_ids"] == []
    assert not confirm(LOG_CONFIRMED, ClaudeCodeAgent, [], PREFIX, PLANTED, MEMORIES)["confirmed"]


def test_an_error_result_or_a_log_without_the_id_does_not_confirm():
    failed = request(("mcp__recall__get", "mem-0123456789ab not found", True))
    assert not confirm(LOG_CONFIRMED, ClaudeCodeAgent, [failed], PREFIX, PLANTED, MEMORIES)["confirmed"]
    hit = request(("mcp__recall__search", "mem-0123456789ab", False))
    unlogged = {**LOG_CONFIRMED, "confirmed": False, "planted_ids_served": []}
    assert not confirm(unlogged, ClaudeCodeAgent, [hit], PREFIX, PLANTED, MEMORIES)["confirmed"]
    assert delivered([hit], "mcp__other__", PLANTED) == []


def test_an_agent_with_no_record_outside_the_sandbox_is_never_confirmed():
    got = confirm(LOG_CONFIRMED, CommandAgent, None, PREFIX, PLANTED, MEMORIES)
    assert not got["confirmed"] and "sandbox" in got["unverifiable"]


def test_memory_first_delivered_by_the_arm_is_not_read_around_it():
    """The model searches the memory, writes code from it, and reads its own file back."""
    log = request(("mcp__recall__search", "mem-0123456789ab: Settings files in this project", False),
                  ("Read", "# Settings files in this project are always written with a trailing newline", False))
    assert read_around_the_arm([log], PREFIX, PLANTED, MEMORIES) is None
    assert read_around_the_arm([request(("Read", "def load(): pass", False))], PREFIX, PLANTED, MEMORIES) is None


def test_memory_read_around_the_arm_by_id_or_by_its_words_is_found_and_never_confirmed():
    """The arm delivers the memory after a shell did: the log and the gateway would confirm it, but the model
    had it from the store first, so the arm is not credited."""
    by_id = request(("Bash", "store/ns/sessions.jsonl: mem-ba9876543210", False))
    by_words = request(("Read", "are always written with a trailing newline and sorted keys", False))
    for first in (by_id, by_words):
        gateway = [first, request(("mcp__recall__search", "mem-0123456789ab", False))]
        assert read_around_the_arm(gateway, PREFIX, PLANTED, MEMORIES) == {"tool": first["tool_results"][0]["tool"],
                                                                            "call": "toolu_0"}
        got = confirm(LOG_CONFIRMED, ClaudeCodeAgent, gateway, PREFIX, PLANTED, MEMORIES)
        assert got["delivered_ids"] == [PLANTED[0]] and not got["confirmed"], got
    # The same arm result alone confirms: the refusal above is the shell's doing.
    assert confirm(LOG_CONFIRMED, ClaudeCodeAgent, [gateway[1]], PREFIX, PLANTED, MEMORIES)["confirmed"]
