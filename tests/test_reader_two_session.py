"""The reader's two-session modes in real sandbox containers of the recall arm's image: session 1
(`memgrid-reader --remember`) writes through the arm's write path; only /sandbox/store is carried,
by get_archive, into a fresh container where session 2 (`memgrid-reader --answer`) must print the
value as its last line, or UNKNOWN when nothing was written."""

import json

import pytest

from runner.env.archive import Entry, pack, safe_entries
from runner.env.bundle import AGENT_UID
from runner.corpus.build import MANIFEST
from runner.env.images import ensure_arm_image
from runner.arms.ingest import ingest
from runner.env.sandbox import Sandbox
from runner.plan.spec import load_all_arms
from runner.arms.kinds import STORE_DIR

from conftest import REPO

KEY, VALUE = "AR-7F3K closing balance", "12345.67"
TEXT = f"{KEY} = {VALUE}"
PROMPT_1 = "Here is the receivables ledger of account AR-7F3K. Remember its closing balance for a later session."
PROMPT_2 = "What is the AR-7F3K closing balance? Reply with the value only."
NOTES = f"{STORE_DIR}/NOTES.md"
READER_SECONDS = 180


@pytest.fixture(scope="module")
def recall_arm():
    return load_all_arms(REPO)["recall"]


@pytest.fixture(scope="module")
def recall_image(engine, images):
    return ensure_arm_image(engine, REPO / "arms" / "recall", images.sandbox, log=lambda m: None)


@pytest.fixture
def empty_store(engine, recall_arm, recall_image, run_id, tmp_path) -> list[Entry]:
    """recall's store of an empty corpus, made by the harness's own ingest path (runner.ingest) in the arm's
    image: the corpus is an empty MANIFEST.sha256 and a docs/ folder with no files."""
    corpus = tmp_path / "corpus"
    (corpus / "docs").mkdir(parents=True)
    (corpus / MANIFEST).write_text("")
    snapshot = ingest(engine, recall_image.tag, recall_arm, corpus, "present", 0, run_id=run_id)
    assert snapshot.report["documents"] == 0 and snapshot.report["corpus_documents"] == 0
    assert {e.path for e in snapshot.entries} == {"store.json", "sessions.jsonl"}
    return list(snapshot.entries)


def config(recall_arm, write: dict | None, mcp: bool = True) -> dict:
    """What the harness would hand the reader: recall's server, writable, and the arm's write path."""
    found = {"agent": "reader", "task": "two-session", "arm": recall_arm.name, "arm_kind": "mcp" if mcp else "files",
             "seed": 0, "condition": "present", "hooks": []}
    if mcp:
        found["mcp"] = {"server": recall_arm.mcp.server, "search_tool": recall_arm.mcp.search_tool,
                        "command": [*(p.replace("{store}", STORE_DIR) for p in recall_arm.mcp.command), "--writable"]}
    if write is not None:
        found["write"] = write
    return found


def session(engine, image, run_id, name: str, mode: str, cfg: dict, prompt: str, channel: dict,
            store: list[Entry]) -> tuple[object, list[dict], list[Entry]]:
    """One session in a fresh container (labelled with the test's run, removed by id): the reader in `mode`;
    returns (its exec result, its JSON events, the files of /sandbox/store after it)."""
    entries = [Entry("workspace/README.md", b"# two-session\n"),
               Entry("agent/config.json", json.dumps(cfg, sort_keys=True).encode()),
               Entry("agent/prompt.txt", prompt.encode()),
               *(Entry(f".reader/{k}", json.dumps(v).encode()) for k, v in channel.items()),
               *(Entry(f"store/{e.path}", e.data, e.mode) for e in store)]
    sandbox = Sandbox(engine, image.tag, run_id, f"two-session-{name}", bundle_tar=pack(entries, uid=AGENT_UID, gid=AGENT_UID),
                      lifetime=READER_SECONDS + 120)
    try:
        sandbox.start()
        result = sandbox.exec(["memgrid-reader", mode], timeout=READER_SECONDS, workdir="/sandbox")
        check = sandbox.exec(["test", "-d", STORE_DIR], timeout=30)
        after = []
        if check.exit_code == 0:
            stream, _ = sandbox.container.get_archive(STORE_DIR)
            after = safe_entries(b"".join(stream), strip="store")
    finally:
        sandbox.stop()
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return result, events, after


def of(events: list[dict], kind: str) -> list[dict]:
    """The events of a kind, without `at` (the reader's clock, which differs from run to run)."""
    return [{k: v for k, v in e.items() if k != "at"} for e in events if e["type"] == kind]


def last_line(result) -> str:
    return result.stdout.rstrip("\n").splitlines()[-1]


def test_remember_through_recall_then_answer_in_a_fresh_container(engine, recall_arm, recall_image, empty_store,
                                                                     run_id, no_leftovers):
    cfg = config(recall_arm, recall_arm.mcp.write.as_config())
    first, events, store = session(engine, recall_image, run_id, "tool-1", "--remember", cfg, PROMPT_1,
                                   {"remember.json": {"text": TEXT}}, empty_store)
    assert first.exit_code == 0, (first.stdout, first.stderr)
    init = of(events, "init")
    assert len(init) == 1 and init[0]["mcp_servers"] == [{"name": "recall", "status": "connected"}]
    assert {"mcp__recall__search", "mcp__recall__remember", "mcp__recall__forget"} <= set(init[0]["tools"])
    assert of(events, "tool_call") == [{"type": "tool_call", "tool": "mcp__recall__remember", "is_error": False}]
    assert all(isinstance(e["at"], float) and e["at"] >= 0 for e in events)  # each event on the reader's own clock
    memory_id = of(events, "remembered")[0]["id"]
    assert memory_id.startswith("mem-")
    assert of(events, "result") == [{"type": "result", "is_error": False}] and events[-1]["type"] == "result"
    receipt = json.loads(next(e.data for e in store if e.path == "store.json"))
    assert receipt["documents"] == 1 and receipt["writes"] == 1
    assert any(e.path.startswith("index/") for e in store) and not any(e.path.startswith(".recall-write") for e in store)

    second, events, _ = session(engine, recall_image, run_id, "tool-2", "--answer", cfg, PROMPT_2,
                                {"recall.json": {"key": KEY}}, store)
    assert second.exit_code == 0, (second.stdout, second.stderr)
    assert last_line(second) == VALUE
    assert of(events, "init")[0]["mcp_servers"] == [{"name": "recall", "status": "connected"}]
    assert of(events, "search")[0]["ranked"][0] == memory_id
    assert of(events, "recalled") == [{"type": "recalled", "key": KEY, "matched": True, "doc": memory_id}]
    assert of(events, "result") == [{"type": "result", "is_error": False}] and events[-1]["type"] == "result"

    # The control: the same second session over the store session 1 started from knows nothing.
    control, events, _ = session(engine, recall_image, run_id, "tool-control", "--answer", cfg, PROMPT_2,
                                 {"recall.json": {"key": KEY}}, empty_store)
    assert control.exit_code == 0 and last_line(control) == "UNKNOWN"
    assert of(events, "recalled")[0]["matched"] is False


def test_remember_to_a_file_then_answer_in_a_fresh_container(engine, recall_arm, recall_image, run_id, no_leftovers):
    cfg = config(recall_arm, {"file": NOTES}, mcp=False)
    first, events, store = session(engine, recall_image, run_id, "file-1", "--remember", cfg, PROMPT_1,
                                   {"remember.json": {"text": TEXT}}, [])
    assert first.exit_code == 0, (first.stdout, first.stderr)
    assert of(events, "init") == [{"type": "init", "agent": "reader", "arm_kind": "files", "tools": ["write_file"]}]
    assert of(events, "remembered") == [{"type": "remembered", "file": NOTES, "line": 1}]
    assert [(e.path, e.data) for e in store] == [("NOTES.md", f"{TEXT}\n".encode())]
    assert of(events, "result") == [{"type": "result", "is_error": False}] and events[-1]["type"] == "result"

    second, events, _ = session(engine, recall_image, run_id, "file-2", "--answer", cfg, PROMPT_2,
                                {"recall.json": {"key": KEY}}, store)
    assert second.exit_code == 0, (second.stdout, second.stderr)
    assert last_line(second) == VALUE
    assert of(events, "recalled") == [{"type": "recalled", "key": KEY, "matched": True, "doc": NOTES}]

    # A file that already holds lines: the text is appended as a line of its own, and the first match wins.
    older = [Entry("NOTES.md", b"AR-1111 closing balance = 1.00\nAR-7F3K closing balance = 999.99")]
    _, events, store = session(engine, recall_image, run_id, "file-3", "--remember", cfg, PROMPT_1,
                               {"remember.json": {"text": "AR-9 opening balance = 5.00"}}, older)
    assert of(events, "remembered")[0]["line"] == 3
    assert store[0].data == b"AR-1111 closing balance = 1.00\nAR-7F3K closing balance = 999.99\nAR-9 opening balance = 5.00\n"


def test_no_write_path_writes_nothing_and_answers_unknown(engine, recall_arm, recall_image, empty_store, run_id,
                                                          no_leftovers):
    cfg = config(recall_arm, None)
    first, events, store = session(engine, recall_image, run_id, "none-1", "--remember", cfg, PROMPT_1,
                                   {"remember.json": {"text": TEXT}}, empty_store)
    assert first.exit_code == 0, (first.stdout, first.stderr)
    assert [e["type"] for e in events] == ["init", "no_write_path", "result"]
    assert events[0]["mcp_servers"] == [{"name": "recall", "status": "connected"}]
    assert sorted((e.path, e.data) for e in store) == sorted((e.path, e.data) for e in empty_store)

    second, events, _ = session(engine, recall_image, run_id, "none-2", "--answer", cfg, PROMPT_2,
                                {"recall.json": {"key": KEY}}, store)
    assert second.exit_code == 0, (second.stdout, second.stderr)
    assert last_line(second) == "UNKNOWN"
    assert of(events, "recalled") == [{"type": "recalled", "key": KEY, "matched": False, "doc": None}]
    assert of(events, "search")[0]["ranked"] == []
