"""recall (arms/recall): ingest a tiny corpus, serve it over real MCP stdio, check what an agent would see.

Needs the package installed: `.venv/bin/pip install -e arms/recall`. Fast, no Docker.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest


def _require(module: str):
    try:
        return __import__(module)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {module!r} is not installed: run '.venv/bin/pip install -e arms/recall'")
        pytest.skip(f"{module!r} not installed: run '.venv/bin/pip install -e arms/recall'", allow_module_level=True)


_require("recall")
_require("mcp")

import anyio  # noqa: E402  (installed with mcp)
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from recall.ingest import ingest  # noqa: E402

STALE_ID, FACT_ID = "s-rounding-2023", "s-rounding-2024"

# (id, first timestamp, user ask, assistant finding, decision said in passing)
SESSIONS = [
    ("s-ci-cache", "2023-02-03T09:10:00Z", "CI is slow, the wheel cache never hits.",
     "The cache key includes the commit sha, so it is unique every run.", "Key the pip cache on the lockfile hash."),
    ("s-flaky-clock", "2023-03-14T11:00:00Z", "test_expiry flakes on Mondays.",
     "It compares against datetime.now() twice across a second boundary.", "Freeze the clock with a fixture."),
    ("s-logging", "2023-04-01T15:30:00Z", "Logs from the worker are unreadable in the aggregator.",
     "Lines are multi-line tracebacks without a request id.", "Emit one JSON object per line with request_id."),
    (STALE_ID, "2023-05-20T10:00:00Z", "How should invoice totals be rounded to cents?",
     "invoice.py sums floats and formats with %.2f.",
     "Rule: round invoice totals half-up to cents with Decimal.quantize(ROUND_HALF_UP)."),
    ("s-migrations", "2023-06-11T08:45:00Z", "The orders migration locks the table for minutes.",
     "It adds a column with a default on a large table.", "Add the column nullable, backfill in batches."),
    ("s-quokka", "2023-07-07T13:20:00Z", "Set up the quokka deployment freeze calendar for the holidays.",
     "The deploy bot reads freeze windows from ops/freeze.yaml.", "Quokka freeze runs from Dec 20 to Jan 3."),
    ("s-retries", "2023-08-19T16:05:00Z", "The sync job hammers the vendor API when it flaps.",
     "sync/client.py retries three times with no delay.", "Retry with exponential backoff, capped at 30 seconds."),
    ("s-feature-flags", "2023-09-02T10:10:00Z", "Old feature flags pile up in settings.",
     "Nobody owns removal; flags never expire.", "Every flag gets an owner and an expiry date."),
    ("s-pagination", "2023-10-10T12:00:00Z", "The list endpoint times out on big accounts.",
     "It uses OFFSET pagination over millions of rows.", "Switch to keyset pagination on (created_at, id)."),
    ("s-secrets", "2023-11-11T09:00:00Z", "A token showed up in the debug log.",
     "The request logger dumps all headers.", "Mask Authorization and Cookie headers before logging."),
    (FACT_ID, "2024-01-15T14:00:00Z", "Finance says invoice cents are off by one sometimes.",
     "Half-up rounding biases totals upward across many invoices.",
     "New rule: banker's rounding (ROUND_HALF_EVEN) replaces the old half-up rule for invoice totals."),
    ("s-docs-build", "2024-02-02T17:45:00Z", "The docs build fails on a fresh clone.",
     "sphinx is not pinned and a new major dropped an extension.", "Pin sphinx below the next major."),
]


def transcript(session: str, ts: str, ask: str, finding: str, decision: str) -> str:
    """One session in the corpus transcript format, events a minute apart from `ts`."""
    events = [
        {"role": "user", "content": ask},
        {"role": "assistant", "content": "Let me look at the code first.", "tool_name": "Bash",
         "tool_input": {"command": "grep -rn TODO src/"}},
        {"role": "tool", "tool_name": "Bash", "content": "src/app.py:12: # TODO tidy"},
        {"role": "assistant", "content": finding},
        {"role": "user", "content": "ok, go ahead"},
        {"role": "assistant", "content": f"Done. {decision}"},
    ]
    start = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")
    return "".join(json.dumps({"session": session, "ts": (start + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                               **e}, sort_keys=True) + "\n" for i, e in enumerate(events))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "docs").mkdir()
    for sid, ts, ask, finding, decision in SESSIONS:
        (root / "docs" / f"{sid}.jsonl").write_text(transcript(sid, ts, ask, finding, decision))
    return root


@pytest.fixture(scope="module")
def store(corpus, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("stores") / "tiny"
    ingest(corpus, path, "tiny")
    return path


def digests(root: Path) -> dict[str, tuple[str, int]]:
    return {p.relative_to(root).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def server_params(store: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "recall.server", "--store", str(store)])


def mcp_session(store: Path, calls):
    """Start the real server over stdio, initialize, then run `calls(session)`; returns (init, tools, result)."""
    async def run():
        async with stdio_client(server_params(store)) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                return init, tools, await calls(session)
    return anyio.run(run)


async def call(session: ClientSession, tool: str, args: dict) -> dict:
    result = await session.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content


def test_store_receipt(store):
    receipt = json.loads((store / "store.json").read_text())
    assert receipt["namespace"] == "tiny"
    assert receipt["documents"] == len(SESSIONS)
    assert receipt["model_tokens"] == 0 and receipt["local_model"] is None
    assert receipt["ingest_seconds"] >= 0 and len(receipt["digest"]) == 64
    assert (store / "index" / "params.index.json").is_file()  # bm25s's own save format


def test_served_over_mcp_stdio(store):
    before = digests(store)

    async def calls(session):
        return {
            "quokka": await call(session, "search", {"query": "quokka deployment freeze calendar"}),
            "rounding": await call(session, "search", {"query": "invoice totals rounding cents", "k": 3}),
            "nothing": await call(session, "search", {"query": "zebra xylophone"}),
            "get": await call(session, "get", {"id": FACT_ID}),
            "missing": await session.call_tool("get", {"id": "no-such-session"}),
            "recent": await call(session, "recent", {"n": 4}),
        }

    init, tools, out = mcp_session(store, calls)
    assert init.server_info.name == "recall"
    assert sorted(t.name for t in tools.tools) == ["get", "recent", "search"]

    top = out["quokka"]["hits"][0]
    assert top["id"] == "s-quokka" and top["date"] == "2023-07-07T13:20:00Z"
    assert "Quokka freeze runs from Dec 20" in top["snippet"] and len(top["snippet"]) <= 610
    assert top["score"] > 0 and top["supersedes_hint"] is False

    # The competing rules both surface with their dates; the newer one says it replaces the older.
    rounding = {h["id"]: h for h in out["rounding"]["hits"]}
    assert {STALE_ID, FACT_ID} <= set(list(rounding)[:2])
    assert rounding[FACT_ID]["date"] > rounding[STALE_ID]["date"]
    assert rounding[FACT_ID]["supersedes_hint"] is True and rounding[STALE_ID]["supersedes_hint"] is False

    assert out["nothing"]["hits"] == []

    text = out["get"]["text"]
    assert out["get"]["date"] == "2024-01-15T14:00:00Z"
    assert text.startswith("user: Finance says invoice cents are off by one sometimes.")
    assert 'assistant [Bash]: {"command": "grep -rn TODO src/"}' in text
    assert "tool [Bash]: src/app.py:12: # TODO tidy" in text
    assert text.rstrip().endswith("replaces the old half-up rule for invoice totals.")
    assert out["missing"].is_error and "no-such-session" in out["missing"].content[0].text

    recent = out["recent"]["sessions"]
    assert [r["id"] for r in recent] == ["s-docs-build", FACT_ID, "s-secrets", "s-pagination"]
    assert recent[0]["first_line"] == "user: The docs build fails on a fresh clone."

    assert digests(store) == before, "the server wrote to its store"


def test_tampered_store_refused(store, tmp_path):
    tampered = tmp_path / "tampered"
    shutil.copytree(store, tampered)
    with (tampered / "sessions.jsonl").open("a") as f:
        f.write('{"id": "planted", "date": null, "supersedes_hint": false, "text": "trust me"}\n')
    proc = subprocess.run([sys.executable, "-m", "recall.server", "--store", str(tampered)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "digest mismatch" in proc.stderr and "sessions.jsonl" in proc.stderr

    proc = subprocess.run([sys.executable, "-m", "recall.server", "--store", str(tmp_path / "absent")],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "store missing" in proc.stderr


def test_ingest_is_deterministic(corpus, store, tmp_path):
    again = tmp_path / "again"
    subprocess.run([sys.executable, "-m", "recall.ingest", "--corpus", str(corpus), "--store", str(again),
                    "--namespace", "tiny"], check=True, capture_output=True, timeout=60)
    first, second = json.loads((store / "store.json").read_text()), json.loads((again / "store.json").read_text())
    assert first["digest"] == second["digest"]
    # Every content file is byte-identical; the receipt differs at most in its wall time.
    assert {k: v for k, (v, _) in digests(store).items() if k != "store.json"} == \
           {k: v for k, (v, _) in digests(again).items() if k != "store.json"}
    first.pop("ingest_seconds"), second.pop("ingest_seconds")
    assert first == second


def test_empty_namespace_is_visible(tmp_path):
    empty = tmp_path / "empty-corpus"
    (empty / "docs").mkdir(parents=True)
    store = tmp_path / "empty-store"
    receipt = ingest(empty, store, "misrouted")
    assert receipt["documents"] == 0

    async def calls(session):
        return (await call(session, "search", {"query": "invoice rounding"}), await call(session, "recent", {}))

    _, tools, (found, recent) = mcp_session(store, calls)
    assert found["hits"] == [] and recent["sessions"] == []


def test_ingest_refuses_symlinks(corpus, tmp_path):
    linked = tmp_path / "linked"
    (linked / "docs").mkdir(parents=True)
    shutil.copy(corpus / "docs" / "s-quokka.jsonl", linked / "docs" / "a.jsonl")
    outside = tmp_path / "outside.jsonl"
    outside.write_text((corpus / "docs" / "s-secrets.jsonl").read_text())
    (linked / "docs" / "b.jsonl").symlink_to(outside)
    proc = subprocess.run([sys.executable, "-m", "recall.ingest", "--corpus", str(linked), "--store", str(tmp_path / "s")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "symbolic link refused" in proc.stderr and "b.jsonl" in proc.stderr
    assert not (tmp_path / "s").exists()
