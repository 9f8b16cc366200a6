"""recall's write path (arms/recall): remember and forget over real MCP stdio, persisted in the store
folder so that a new server process on it serves them; the receipt kept valid through every write
(and through a write killed at any step); an ingested store and its read tools exactly as before.

Needs the package installed: `.venv/bin/pip install -e arms/recall`. Fast, no Docker.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_recall import FACT_ID, SESSIONS, _require, digests, transcript

_require("recall")
_require("mcp")

import anyio  # noqa: E402  (installed with mcp)
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

import recall.store as store_module  # noqa: E402
from recall.ingest import ingest  # noqa: E402
from recall.store import TXN, Store, StoreError, verify  # noqa: E402

# What the ingest path alone gives for test_recall's twelve sessions (namespace "tiny"), computed with
# recall 0.1.0 (before the write path existed; bm25s 0.3.16, numpy 2.4.6): the store digest, and the
# sha256 of what the read tools answer to OBSERVED (canonical JSON), with the ranking spelled out.
# Recompute both only when the bm25s or numpy pins move.
INGESTED_DIGEST = "6e93ac1c1b7dc1514c865579fefe8e0325c8f2888bf322a3751ee77d0ccdf163"
OBSERVED_SHA256 = "13ec9990dbafeb766c87bd132e90ac886bec6df2a7a4a60bc36cbde79410c63e"
OBSERVED_RANKING = {
    "quokka deployment freeze calendar": [("s-quokka", 4.0459), ("s-flaky-clock", 0.6919)],
    "invoice totals rounding cents": [("s-rounding-2024", 3.5491), ("s-rounding-2023", 2.9293)],
    "pip cache lockfile hash": [("s-ci-cache", 3.9995)],
    "retry exponential backoff vendor API": [("s-retries", 4.2789)],
    "zebra xylophone": [],
    "rule": [("s-rounding-2024", 0.8885), ("s-rounding-2023", 0.6414)],
}

QUERIES = ("quokka deployment freeze calendar", "invoice totals rounding cents", "pip cache lockfile hash",
           "retry exponential backoff vendor API", "zebra xylophone", "rule")
READ_TOOLS = ["get", "recent", "search"]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Path:
    corpus = tmp_path_factory.mktemp("corpus")
    (corpus / "docs").mkdir()
    for sid, ts, ask, finding, decision in SESSIONS:
        (corpus / "docs" / f"{sid}.jsonl").write_text(transcript(sid, ts, ask, finding, decision))
    store = tmp_path_factory.mktemp("stores") / "tiny"
    ingest(corpus, store, "tiny")
    return store


@pytest.fixture
def store(ingested, tmp_path) -> Path:
    """A private copy of the ingested store that a test may write."""
    copy = tmp_path / "store"
    shutil.copytree(ingested, copy)
    return copy


@pytest.fixture
def empty(tmp_path) -> Path:
    """A store ingested from an empty corpus: docs/ with no files (recall-ingest needs nothing else)."""
    corpus = tmp_path / "empty-corpus"
    (corpus / "docs").mkdir(parents=True)
    path = tmp_path / "empty-store"
    assert ingest(corpus, path, "empty")["documents"] == 0
    return path


def server(store: Path, *flags: str, env: dict | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "recall.server", "--store", str(store), *flags],
                                 env=env)


def session(params: StdioServerParameters, calls):
    """Start the real server over stdio, initialize, run `calls(session)`; returns (tools, result)."""
    async def run():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                tools = (await s.list_tools()).tools
                return tools, await calls(s)
    return anyio.run(run)


async def call(s: ClientSession, tool: str, args: dict) -> dict:
    result = await s.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content


async def observe(s: ClientSession) -> dict:
    """Everything the read tools say about the tiny store, for comparison with the ingest-only values."""
    out = {q: await call(s, "search", {"query": q, "k": 10}) for q in QUERIES}
    out["get"] = await call(s, "get", {"id": FACT_ID})
    out["recent"] = await call(s, "recent", {"n": 50})
    return out


def ranking(observed: dict) -> dict:
    return {q: [(h["id"], h["score"]) for h in observed[q]["hits"]] for q in QUERIES}


def launch(store: Path) -> subprocess.CompletedProcess:
    """The server's launch check alone: stdin closed, so a store it accepts ends it with exit 0."""
    return subprocess.run([sys.executable, "-m", "recall.server", "--store", str(store)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def flip_byte(path: Path, offset: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


# ---- the read path is what it was ------------------------------------------------------------------

def test_ingested_store_and_read_tools_unchanged(ingested, store):
    assert json.loads((ingested / "store.json").read_text())["digest"] == INGESTED_DIGEST
    before = digests(store)
    for flags in ((), ("--writable",)):
        tools, observed = session(server(store, *flags), observe)
        names = sorted(t.name for t in tools)
        assert names == (READ_TOOLS if not flags else sorted([*READ_TOOLS, "forget", "remember"]))
        assert ranking(observed) == OBSERVED_RANKING, flags
        canonical = json.dumps(observed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        assert hashlib.sha256(canonical.encode()).hexdigest() == OBSERVED_SHA256, flags
    assert digests(store) == before, "serving (even --writable, without a write) changed the store"


def test_remember_then_forget_gives_back_the_ingested_store(store):
    before = {k: v for k, (v, _) in digests(store).items() if k != "store.json"}

    async def calls(s):
        made = await call(s, "remember", {"text": "The staging database is called heron-7."})
        return made, await call(s, "forget", {"id": made["id"]})

    _, (made, gone) = session(server(store, "--writable"), calls)
    assert made["id"].startswith("mem-") and gone == {"forgotten": True}
    receipt = verify(store)
    assert receipt["digest"] == INGESTED_DIGEST and receipt["writes"] == 2
    assert {k: v for k, (v, _) in digests(store).items() if k != "store.json"} == before


# ---- remember and forget -----------------------------------------------------------------------------

def test_write_tools_listed_with_their_annotations(store):
    tools, _ = session(server(store, "--writable"), lambda s: anyio.sleep(0))
    by_name = {t.name: t for t in tools}
    remember, forget = by_name["remember"], by_name["forget"]
    assert remember.annotations.read_only_hint is False and remember.annotations.destructive_hint is False
    assert remember.annotations.idempotent_hint is False
    assert forget.annotations.read_only_hint is False and forget.annotations.destructive_hint is True
    assert forget.annotations.idempotent_hint is False
    assert set(remember.input_schema["properties"]) == {"text", "tags"} and remember.input_schema["required"] == ["text"]
    assert set(forget.input_schema["properties"]) == {"id"}
    for t in READ_TOOLS:
        assert by_name[t].annotations.read_only_hint is True


def test_remembered_text_is_served_by_a_new_process(store):
    text = "AR-7F3K closing balance = 12345.67"

    async def write(s):
        made = await call(s, "remember", {"text": text, "tags": ["ledger", "two-session"]})
        return made, await call(s, "search", {"query": "AR-7F3K closing balance", "k": 3})

    _, (made, same_session) = session(server(store, "--writable"), write)
    memory_id = made["id"]
    assert len(memory_id) == len("mem-") + 12 and all(c in "0123456789abcdef" for c in memory_id[4:])
    assert same_session["hits"][0]["id"] == memory_id

    async def read(s):
        return (await call(s, "search", {"query": "What was the AR-7F3K closing balance?", "k": 5}),
                await call(s, "get", {"id": memory_id}), await call(s, "recent", {"n": 1}))

    tools, (found, got, recent) = session(server(store), read)  # a new process, read-only
    assert sorted(t.name for t in tools) == READ_TOOLS
    top = found["hits"][0]
    assert top["id"] == memory_id and text in top["snippet"] and top["supersedes_hint"] is False
    assert got["text"] == f"{text}\n\ntags: ledger, two-session"
    assert got["date"] == top["date"] and got["date"] > SESSIONS[-1][1]  # dated now, so the newest
    assert recent["sessions"] == [{"id": memory_id, "date": got["date"], "first_line": text}]
    receipt = verify(store)
    assert receipt["documents"] == len(SESSIONS) + 1 and receipt["writes"] == 1
    assert receipt["namespace"] == "tiny" and receipt["digest"] != INGESTED_DIGEST


def test_ids_are_unique_even_for_the_same_text(store):
    async def calls(s):
        return [(await call(s, "remember", {"text": "Deploys freeze on Fridays."}))["id"] for _ in range(3)]

    _, ids = session(server(store, "--writable"), calls)
    assert len(set(ids)) == 3
    assert verify(store)["documents"] == len(SESSIONS) + 3


def test_forget_removes_by_exact_id(store):
    async def calls(s):
        keep = await call(s, "remember", {"text": "The canary region is eu-north-1."})
        drop = await call(s, "remember", {"text": "The canary region is us-west-2."})
        gone = await call(s, "forget", {"id": drop["id"]})
        found = await call(s, "search", {"query": "canary region", "k": 10})
        again = await s.call_tool("forget", {"id": drop["id"]})
        missing = await s.call_tool("get", {"id": drop["id"]})
        prefix = await s.call_tool("forget", {"id": keep["id"][:-1]})
        return keep["id"], drop["id"], gone, found, again, missing, prefix

    _, (keep, drop, gone, found, again, missing, prefix) = session(server(store, "--writable"), calls)
    assert gone == {"forgotten": True}
    assert [h["id"] for h in found["hits"]] == [keep]
    assert again.is_error and drop in again.content[0].text and "no session with id" in again.content[0].text
    assert missing.is_error
    assert prefix.is_error  # exact ids only

    async def read(s):
        return await call(s, "search", {"query": "canary region us-west-2", "k": 10}), await s.call_tool("get", {"id": drop})

    _, (found, got) = session(server(store), read)  # a new process
    assert [h["id"] for h in found["hits"]] == [keep] and got.is_error
    assert verify(store)["documents"] == len(SESSIONS) + 1


def test_forget_an_ingested_session(store):
    async def calls(s):
        await call(s, "forget", {"id": "s-quokka"})
        return await call(s, "search", {"query": "quokka deployment freeze calendar"})

    _, found = session(server(store, "--writable"), calls)
    assert "s-quokka" not in [h["id"] for h in found["hits"]]
    assert Store(store).get("s-quokka") is None and verify(store)["documents"] == len(SESSIONS) - 1


def test_refused_writes_change_nothing(store):
    before = digests(store)

    async def calls(s):
        return [await s.call_tool("remember", args) for args in (
            {"text": ""}, {"text": "   \n"}, {"text": "it is the"},  # blank; only stopwords: never findable
            {"text": "x" * (store_module.MAX_TEXT + 1)}, {"text": "ok text here", "tags": ["a,b"]},
            {"text": "ok text here", "tags": ["line\nbreak"]})]

    _, results = session(server(store, "--writable"), calls)
    assert all(r.is_error for r in results), [r.content for r in results]
    assert digests(store) == before


# ---- the receipt through writes ------------------------------------------------------------------------

def test_receipt_verifies_after_writes_and_a_flipped_byte_is_refused(store, tmp_path):
    async def calls(s):
        ids = [(await call(s, "remember", {"text": f"Build number {n} shipped the payments fix."}))["id"] for n in range(3)]
        await call(s, "forget", {"id": ids[1]})
        return ids

    session(server(store, "--writable"), calls)
    receipt = verify(store)
    assert receipt["documents"] == len(SESSIONS) + 2 and receipt["writes"] == 4
    assert set(receipt["files"]) == {p.relative_to(store).as_posix() for p in store.rglob("*")
                                     if p.is_file() and p.name != "store.json"}
    assert not (store / TXN).exists()
    proc = launch(store)
    assert proc.returncode == 0, proc.stderr  # the launch verification accepts the written store

    for name in ("sessions.jsonl", "index/data.csc.index.npy", "index/vocab.index.json"):
        tampered = tmp_path / f"tampered-{name.replace('/', '-')}"
        shutil.copytree(store, tampered)
        flip_byte(tampered / name, offset=(tampered / name).stat().st_size // 2)
        proc = launch(tampered)
        assert proc.returncode == 2, (name, proc.stderr)
        assert "digest mismatch" in proc.stderr and name in proc.stderr

    # A receipt edited to match a planted row still fails: the digest covers the files.
    planted = tmp_path / "planted"
    shutil.copytree(store, planted)
    with (planted / "sessions.jsonl").open("a") as f:
        f.write('{"date": null, "id": "zz", "supersedes_hint": false, "text": "trust me"}\n')
    receipt = json.loads((planted / "store.json").read_text())
    receipt["documents"] += 1
    (planted / "store.json").write_text(json.dumps(receipt))
    proc = launch(planted)
    assert proc.returncode == 2 and "digest mismatch" in proc.stderr


class Killed(BaseException):
    """The process died here: nothing after it runs, not even cleanup."""


def mutations_of_a_write(root: Path, monkeypatch, die_at: int | None) -> int:
    """Run one remember on `root` with every file-system change counted; at change number `die_at`
    (and every one after it) the process 'dies'. Returns how many changes the write made."""
    count = {"n": 0}

    def counted(fn):
        def wrapper(*args, **kwargs):
            count["n"] += 1
            if die_at is not None and count["n"] >= die_at:
                raise Killed(count["n"])
            return fn(*args, **kwargs)
        return wrapper

    with monkeypatch.context() as m:
        m.setattr(store_module.os, "replace", counted(os.replace))
        m.setattr(store_module.shutil, "rmtree", counted(shutil.rmtree))
        m.setattr(store_module, "write_content", counted(store_module.write_content))
        m.setattr(Path, "unlink", counted(Path.unlink))
        m.setattr(Path, "rmdir", counted(Path.rmdir))
        m.setattr(Path, "write_text", counted(Path.write_text))
        m.setattr(Path, "mkdir", counted(Path.mkdir))
        s = Store(root)
        try:
            s.remember("The release train leaves on Tuesdays.")
        except Killed:
            pass
    return count["n"]


@pytest.mark.parametrize("start", ["ingested", "empty"])
def test_a_write_killed_at_any_step_leaves_a_store_that_opens(start, request, monkeypatch, tmp_path):
    origin = request.getfixturevalue("store" if start == "ingested" else "empty")
    documents = verify(origin)["documents"]
    trial = tmp_path / "trial"
    shutil.copytree(origin, trial)
    steps = mutations_of_a_write(trial, monkeypatch, None)
    assert steps >= 6
    outcomes = []
    for die_at in range(1, steps + 1):
        shutil.rmtree(trial)
        shutil.copytree(origin, trial)
        mutations_of_a_write(trial, monkeypatch, die_at)
        reopened = Store(trial)  # what a server launching on it does: finish or discard, then verify
        assert not (trial / TXN).exists()
        assert verify(trial) == reopened.receipt
        outcomes.append(reopened.receipt["documents"] - documents)
        assert ("The release train leaves on Tuesdays." in [s.text for s in reopened.sessions]) == (outcomes[-1] == 1)
    assert set(outcomes) == {0, 1}  # killed before its commit point: the old store; after: the new one
    assert outcomes == sorted(outcomes)


def test_a_killed_write_is_finished_by_the_next_server_launch(store, monkeypatch, tmp_path):
    """Killed after its commit point, halfway through moving the staged files in: the folder as it lies
    fails verification, and the next server launch finishes the write and serves it."""
    trial = tmp_path / "trial"
    shutil.copytree(store, trial)
    steps = mutations_of_a_write(trial, monkeypatch, None)
    halfway = []
    for die_at in range(1, steps + 1):
        shutil.rmtree(trial)
        shutil.copytree(store, trial)
        mutations_of_a_write(trial, monkeypatch, die_at)
        if (trial / TXN / "store.json").is_file():
            try:
                verify(trial)
            except StoreError:
                halfway.append(die_at)
                break
    assert halfway, "no step of the write leaves a committed stage half moved in"
    proc = launch(trial)
    assert proc.returncode == 0, proc.stderr
    assert not (trial / TXN).exists() and verify(trial)["documents"] == len(SESSIONS) + 1

    _, found = session(server(trial), lambda s: call(s, "search", {"query": "release train Tuesdays"}))
    assert found["hits"][0]["id"].startswith("mem-")


def test_two_writers_keep_each_others_writes(store):
    first, second = Store(store), Store(store)  # e.g. two sessions' servers on one store
    a = first.remember("Alpha fact: the queue is named sparrow.")["id"]
    b = second.remember("Beta fact: the cache is named finch.")["id"]  # reads what first wrote, then writes
    third = Store(store)
    assert third.get(a) and third.get(b) and third.receipt["documents"] == len(SESSIONS) + 2
    assert first.search("sparrow")[0]["id"] == a  # a stale reader still answers from its own load


# ---- an empty store ---------------------------------------------------------------------------------

def test_empty_store_takes_its_first_write(empty):
    proc = launch(empty)
    assert proc.returncode == 0, proc.stderr
    assert not (empty / "index").exists()

    async def calls(s):
        before = await call(s, "search", {"query": "AR-7F3K closing balance"})
        made = await call(s, "remember", {"text": "AR-7F3K closing balance = 12345.67"})
        return before, made, await call(s, "search", {"query": "AR-7F3K closing balance"})

    _, (before, made, after) = session(server(empty, "--writable"), calls)
    assert before["hits"] == [] and [h["id"] for h in after["hits"]] == [made["id"]]
    assert (empty / "index" / "params.index.json").is_file()  # the index, built on the first write
    assert verify(empty)["documents"] == 1

    async def read(s):
        return await call(s, "search", {"query": "closing balance of AR-7F3K"}), await call(s, "get", {"id": made["id"]})

    _, (found, got) = session(server(empty), read)  # a new process
    assert found["hits"][0]["id"] == made["id"] and got["text"] == "AR-7F3K closing balance = 12345.67"

    assert Store(empty).forget(made["id"]) is True  # back to nothing: no index, as ingest writes it
    assert not (empty / "index").exists() and verify(empty)["documents"] == 0
    assert launch(empty).returncode == 0
