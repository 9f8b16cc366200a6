"""recall's planted-memory write API (arms/recall, issue 11): recall-admin plants memories into a
namespace of a store root, counts and forgets them by exact id; the server, selected by its
environment, serves that namespace (RECALL_NAMESPACE), goes dark on the kill switch (RECALL_OFF),
drops retrieval lanes (RECALL_DISABLE_LANES) and logs every call (RECALL_LOG). Names recall refuses
and bad input end a command with exit 2 and one stderr line; a store nobody wrote to searches as before.

Needs the package installed: `.venv/bin/pip install -e arms/recall`. Fast, no Docker.
"""

import io
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from test_recall import SESSIONS, _require, transcript
from test_recall_write import QUERIES, call, session

_require("recall")
_require("mcp")

from mcp.client.stdio import StdioServerParameters  # noqa: E402

import recall.store as store_module  # noqa: E402
from recall import admin  # noqa: E402
from recall.ingest import ingest  # noqa: E402
from recall.store import Store, verify  # noqa: E402

ADMIN = Path(sys.executable).parent / "recall-admin"  # the console script pyproject declares
NAMESPACE = "trial-1.a_b"
PLANTED = [
    {"content": "Name every pytest fixture module conftest_helpers, never plain helpers.", "type": "wisdom"},
    {"content": "The billing service wraps money in the Cents newtype; floats are refused at review.", "type": "belief"},
    {"content": "Squash migrations before each quarterly release tag.", "type": "correction"},
]
BILLING = "billing Cents newtype"  # the words of PLANTED[1] alone
UNRELATED = "zebra xylophone"  # no word of any planted memory or session
READ_TOOLS = ["get", "recent", "search"]
BAD_NAMESPACES = ["../x", "a/b", "", ".hidden", "-dash", "a\n", "x" * 129, "spa ce", "ünï"]
TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")


def run_admin(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([str(ADMIN), *args], input=stdin, capture_output=True, text=True, timeout=120)


def planted_ids(root: Path, namespace: str, memories: list[dict]) -> list[str]:
    proc = run_admin("plant", "--root", str(root), "--namespace", namespace, stdin=json.dumps(memories))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.count("\n") == 1, proc.stdout  # one JSON line
    printed = json.loads(proc.stdout)
    assert printed["namespace"] == namespace and len(printed["ids"]) == len(memories)
    return printed["ids"]


def count(root: Path, namespace: str) -> dict:
    proc = run_admin("count", "--root", str(root), "--namespace", namespace)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def server(store: Path, env: dict[str, str], *flags: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "recall.server", "--store", str(store), *flags],
                                 env=env)


def launch(store: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The server's launch checks alone: stdin closed, so a launch it accepts ends with exit 0."""
    return subprocess.run([sys.executable, "-m", "recall.server", "--store", str(store)], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def one_line_refusal(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


async def searched(s, query: str, k: int = 5) -> list[tuple[str, float]]:
    return [(h["id"], h["score"]) for h in (await call(s, "search", {"query": query, "k": k}))["hits"]]


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[Path, list[str]]:
    """A store root holding one namespace with PLANTED in it, planted in order; read-only for tests."""
    root = tmp_path_factory.mktemp("planted") / "root"
    return root, planted_ids(root, NAMESPACE, PLANTED)


@pytest.fixture
def tiny_root(tmp_path) -> Path:
    """A store root whose namespace "tiny" is test_recall's twelve sessions, ingested, nothing remembered."""
    corpus = tmp_path / "corpus"
    (corpus / "docs").mkdir(parents=True)
    for sid, ts, ask, finding, decision in SESSIONS:
        (corpus / "docs" / f"{sid}.jsonl").write_text(transcript(sid, ts, ask, finding, decision))
    ingest(corpus, tmp_path / "root" / "tiny", "tiny")
    return tmp_path / "root"


# ---- recall-admin -----------------------------------------------------------------------------------

def test_plant_creates_the_namespace_and_count_shows_the_ids(planted):
    root, ids = planted
    assert len(set(ids)) == 3 and all(re.fullmatch(r"mem-[0-9a-f]{12}", i) for i in ids)
    assert count(root, NAMESPACE) == {"namespace": NAMESPACE, "documents": 3, "ids": sorted(ids)}
    assert verify(root / NAMESPACE)["namespace"] == NAMESPACE
    store = Store(root / NAMESPACE)
    for memory_id, memory in zip(ids, PLANTED):
        assert store.get(memory_id)["text"] == f"{memory['content']}\n\ntags: {memory['type']}"
    assert [h["id"] for h in store.newest_remembered(5)] == ids[::-1]  # planted in order
    assert count(root, "never-planted") == {"namespace": "never-planted", "documents": 0, "ids": []}
    assert not (root / "never-planted").exists()


def test_planted_order_is_kept_when_dates_tie(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "utc_now", lambda: "2030-01-01T00:00:00Z")  # dates are to the second
    ids = admin.plant(tmp_path, "ns", [admin.Memory(**m) for m in PLANTED])["ids"]
    assert ids != sorted(ids)  # else newest by (date, id), the tie-break recent uses, would pass as well
    assert [h["id"] for h in Store(tmp_path / "ns").newest_remembered(5)] == ids[::-1]


def test_a_second_plant_adds_to_the_namespace(tmp_path):
    first = planted_ids(tmp_path, "ns", PLANTED[:1])
    second = planted_ids(tmp_path, "ns", PLANTED[1:])
    assert count(tmp_path, "ns")["ids"] == sorted(first + second)


def test_two_plants_of_one_new_namespace_keep_both(tmp_path, monkeypatch):
    write_store = admin.write_store

    def slow_write_store(*args):  # widens the gap between "no store yet" and the empty store written
        time.sleep(0.5)
        return write_store(*args)

    monkeypatch.setattr(admin, "write_store", slow_write_store)
    ids: list[str] = []
    threads = [threading.Thread(target=lambda m=m: ids.extend(admin.plant(tmp_path, "ns", [admin.Memory(**m)])["ids"]))
               for m in PLANTED[:2]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 2 and count(tmp_path, "ns")["ids"] == sorted(ids)


def test_forget_by_the_exact_ids_empties_the_namespace(tmp_path):
    ids = planted_ids(tmp_path, "ns", PLANTED)
    proc = run_admin("forget", "--root", str(tmp_path), "--namespace", "ns",
                     stdin=json.dumps({"ids": [ids[0][:-1], *ids]}))  # a prefix of an id is not an id
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"namespace": "ns", "forgotten": ids, "missing": [ids[0][:-1]], "left": []}
    assert count(tmp_path, "ns") == {"namespace": "ns", "documents": 0, "ids": []}
    assert verify(tmp_path / "ns")["documents"] == 0


def test_forget_exits_1_when_an_id_is_left(tmp_path, monkeypatch, capsys):
    ids = planted_ids(tmp_path, "ns", PLANTED[:2])
    monkeypatch.setattr(Store, "forget", lambda self, memory_id: True)  # a forget that loses the write
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps({"ids": ids}).encode())))
    assert admin.main(["forget", "--root", str(tmp_path), "--namespace", "ns"]) == 1
    assert json.loads(capsys.readouterr().out)["left"] == ids


@pytest.mark.parametrize("namespace", BAD_NAMESPACES)
def test_a_namespace_recall_refuses_is_refused_by_every_command(namespace, tmp_path, monkeypatch, capsys):
    root = tmp_path / "root"
    for command, stdin in (("plant", json.dumps(PLANTED)), ("count", ""), ("forget", '{"ids": ["mem-0"]}')):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        code = admin.main([command, "--root", str(root), f"--namespace={namespace}"])
        out, err = capsys.readouterr()
        one_line_refusal(subprocess.CompletedProcess([], code, out, err), "namespace", repr(namespace))
    assert not tmp_path.joinpath("x").exists() and not root.exists()  # nothing written, inside or out


def test_the_cli_refuses_a_namespace_in_one_line(tmp_path):
    one_line_refusal(run_admin("plant", "--root", str(tmp_path / "root"), "--namespace", "../x",
                               stdin=json.dumps(PLANTED)), "recall-admin: namespace '../x' refused")
    assert list(tmp_path.iterdir()) == []  # neither the root nor root/../x


@pytest.mark.parametrize("stdin, words", [
    ("not json", ["not UTF-8 JSON"]),
    ('{"content": "a fact", "type": "wisdom"}', ["JSON list"]),
    ('[{"content": "a fact", "type": "rumour"}]', ["memory 0", "'rumour'", "wisdom, belief, episode, correction"]),
    ('[{"content": "a fact", "type": "wisdom", "id": "x"}]', ["memory 0", "exactly the keys"]),
    ('[{"content": "fine words here", "type": "wisdom"}, {"content": "   ", "type": "belief"}]', ["memory 1", "empty"]),
    ('[{"content": 7, "type": "episode"}]', ["memory 0", "content must be a string"]),
])
def test_bad_plant_input_is_refused_before_anything_is_written(stdin, words, tmp_path):
    one_line_refusal(run_admin("plant", "--root", str(tmp_path / "root"), "--namespace", "ns", stdin=stdin),
                     "recall-admin: stdin", *words)
    assert not (tmp_path / "root").exists()


def test_bad_forget_input_and_usage_are_one_line(tmp_path):
    for stdin in ('["mem-0"]', '{"ids": "mem-0"}', '{"ids": [""]}', '{"ids": [], "more": 1}'):
        one_line_refusal(run_admin("forget", "--root", str(tmp_path), "--namespace", "ns", stdin=stdin), '{"ids"')
    one_line_refusal(run_admin("plant", "--root", str(tmp_path)), "--namespace", "--help")
    one_line_refusal(run_admin("grow", "--root", str(tmp_path), "--namespace", "ns"), "invalid choice")


# ---- the server, selected by its environment ---------------------------------------------------------

def test_the_namespace_is_served_and_every_call_logged(planted, tmp_path):
    root, ids = planted
    log = tmp_path / "not" / "yet" / "calls.jsonl"
    before = datetime.now(timezone.utc)

    async def calls(s):
        return (await searched(s, BILLING), await searched(s, BILLING, k=2),
                await call(s, "get", {"id": ids[1]}), await call(s, "recent", {"n": 2}),
                await s.call_tool("get", {"id": "s-nothing"}))

    tools, (found, union, got, recent, missing) = session(
        server(root, {"RECALL_NAMESPACE": NAMESPACE, "RECALL_LOG": str(log)}), calls)
    after = datetime.now(timezone.utc)
    assert sorted(t.name for t in tools) == READ_TOOLS
    assert found[0][0] == ids[1] and found[0][1] > 0
    # Lexical hits first, then the newest remembered ones not among them, k in all.
    assert union == [found[0], (ids[2], 0.0)]
    assert got["text"].startswith(PLANTED[1]["content"])
    assert len(recent["sessions"]) == 2 and {r["id"] for r in recent["sessions"]} <= set(ids)
    assert missing.is_error and NAMESPACE in missing.content[0].text

    lines = log.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [(r["tool"], r["ids"]) for r in records] == [
        ("search", [i for i, _ in found]), ("search", [i for i, _ in union]), ("get", [ids[1]]),
        ("recent", [r["id"] for r in recent["sessions"]]), ("get", [])]
    floor = before.replace(microsecond=before.microsecond // 1000 * 1000)  # ts is cut to milliseconds
    for r in records:
        assert set(r) == {"ts", "namespace", "tool", "ids", "off", "lanes_disabled"}
        assert TS.fullmatch(r["ts"]), r["ts"]
        assert floor <= datetime.fromisoformat(r["ts"]) <= after
        assert r["namespace"] == NAMESPACE and r["off"] is False and r["lanes_disabled"] == []


def test_the_kill_switch_answers_nothing_with_every_tool_listed(planted, tmp_path):
    root, ids = planted
    log = tmp_path / "calls.jsonl"

    async def calls(s):
        return (await searched(s, BILLING), await call(s, "recent", {"n": 5}),
                await s.call_tool("get", {"id": ids[1]}), await s.call_tool("remember", {"text": "a new fact here"}))

    env = {"RECALL_NAMESPACE": NAMESPACE, "RECALL_OFF": "1", "RECALL_LOG": str(log)}
    tools, (found, recent, got, remembered) = session(server(root, env, "--writable"), calls)
    assert sorted(t.name for t in tools) == sorted([*READ_TOOLS, "forget", "remember"])
    assert found == [] and recent == {"sessions": []}
    assert got.is_error and got.content[0].text.endswith(": memory is off")
    assert remembered.is_error and remembered.content[0].text.endswith(": memory is off")
    assert count(root, NAMESPACE)["documents"] == 3  # nothing written while off
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["tool"], r["ids"], r["off"]) for r in records] == [
        ("search", [], True), ("recent", [], True), ("get", [], True), ("remember", [], True)]

    _, on = session(server(root, {"RECALL_NAMESPACE": NAMESPACE, "RECALL_OFF": "0"}), lambda s: searched(s, BILLING))
    assert on[0][0] == ids[1]  # "0" is on


@pytest.mark.parametrize("disabled, billing, unrelated", [
    # Lexical alone finds the memory by its words, and nothing for words it does not hold.
    ("recency", [1], []),
    # Recency alone finds the planted memories whatever the query, newest first, scored 0.
    ("lexical", [2, 1, 0], [2, 1, 0]),
    (" recency , lexical ", [], []),
])
def test_each_lane_alone_and_none(disabled, billing, unrelated, planted, tmp_path):
    root, ids = planted
    log = tmp_path / "calls.jsonl"

    async def calls(s):
        return await searched(s, BILLING), await searched(s, UNRELATED)

    env = {"RECALL_NAMESPACE": NAMESPACE, "RECALL_DISABLE_LANES": disabled, "RECALL_LOG": str(log)}
    _, (by_words, by_nothing) = session(server(root, env), calls)
    assert [i for i, _ in by_words] == [ids[n] for n in billing]
    assert [i for i, _ in by_nothing] == [ids[n] for n in unrelated]
    lexical_on = "lexical" not in disabled
    assert all((score > 0) == lexical_on for _, score in by_words)
    lanes = [lane for lane in ("lexical", "recency") if lane in disabled]
    assert {tuple(json.loads(line)["lanes_disabled"]) for line in log.read_text().splitlines()} == {tuple(lanes)}


def test_a_recency_hit_is_the_start_of_its_text(planted):
    root, ids = planted
    _, found = session(server(root, {"RECALL_NAMESPACE": NAMESPACE, "RECALL_DISABLE_LANES": "lexical"}),
                       lambda s: call(s, "search", {"query": UNRELATED, "k": 1}))
    (hit,) = found["hits"]
    assert hit["id"] == ids[2] and hit["score"] == 0.0 and hit["supersedes_hint"] is False
    assert hit["snippet"].startswith(PLANTED[2]["content"])


def test_an_ingested_store_searches_as_before_and_recency_never_returns_a_session(tiny_root):
    tiny = tiny_root / "tiny"
    direct = {q: Store(tiny).search(q, 10) for q in QUERIES}  # BM25 alone, no lanes

    async def calls(s):
        return {q: (await call(s, "search", {"query": q, "k": 10}))["hits"] for q in QUERIES}

    _, default = session(server(tiny, {}), calls)  # no environment: every lane on
    _, lexical = session(server(tiny_root, {"RECALL_NAMESPACE": "tiny", "RECALL_DISABLE_LANES": "recency"}), calls)
    assert default == lexical == direct
    assert any(default.values())

    (memory,) = planted_ids(tiny_root, "tiny", PLANTED[:1])
    _, recency = session(server(tiny_root, {"RECALL_NAMESPACE": "tiny", "RECALL_DISABLE_LANES": "lexical"}), calls)
    assert all([h["id"] for h in hits] == [memory] for hits in recency.values())


@pytest.mark.parametrize("namespace", BAD_NAMESPACES[:5])
def test_the_server_refuses_a_namespace_recall_refuses(namespace, planted):
    root, _ = planted
    one_line_refusal(launch(root, {"RECALL_NAMESPACE": namespace}), "recall.server: namespace", repr(namespace))


def test_the_server_refuses_what_it_cannot_serve(planted, tmp_path):
    root, _ = planted
    one_line_refusal(launch(root, {"RECALL_NAMESPACE": "absent"}), "'absent' has no store", "recall-admin plant")
    one_line_refusal(launch(root, {}), "store.json")  # a root is not a store: no silent fallback
    shutil.copytree(root / NAMESPACE, tmp_path / "other")
    one_line_refusal(launch(tmp_path, {"RECALL_NAMESPACE": "other"}), f"names namespace {NAMESPACE!r}")
    assert launch(root, {"RECALL_NAMESPACE": NAMESPACE}).returncode == 0
    assert launch(root / NAMESPACE, {}).returncode == 0  # a namespace's folder is a store of its own


@pytest.mark.parametrize("env, words", [
    ({"RECALL_OFF": "yes"}, ["RECALL_OFF='yes'", "1", "0"]),
    ({"RECALL_OFF": ""}, ["RECALL_OFF=''"]),
    ({"RECALL_DISABLE_LANES": "lexical,vector"}, ["'vector'", "lexical, recency"]),
    ({"RECALL_LOG": ""}, ["RECALL_LOG"]),
])
def test_the_server_refuses_an_environment_it_cannot_use(env, words, planted):
    root, _ = planted
    one_line_refusal(launch(root, {"RECALL_NAMESPACE": NAMESPACE, **env}), "recall.server: ", *words)


def test_the_console_script_and_the_module_are_one_cli(tmp_path):
    module = subprocess.run([sys.executable, "-m", "recall.admin", "count", "--root", str(tmp_path), "--namespace", "n"],
                            capture_output=True, text=True, timeout=60)
    assert module.returncode == 0 and json.loads(module.stdout) == count(tmp_path, "n")
