"""mcp_memory_service's ingest: each session of the corpus becomes one memory, stored by the product
itself through its own MCP write tool (memory_store), which embeds it with the product's ONNX model
and writes it into its SQLite-vec database; this script never touches the database's contents.

    mcp-memory-service-ingest --corpus DIR --store DIR [--embedder-url URL]

The server is started as the agent will start it (memory-service-mcp STORE [URL]; with URL, the product embeds
through that OpenAI-compatible endpoint, memgrid's shared embedder, instead of its in-process ONNX model). Each memory opens with
"session <id> <date>", the line a reader of a hit sees first. conversation_id is the session id, which
the product documents as the way to store incremental memories without its semantic deduplication
(a corpus holds sessions on one project that a deduplicator would merge). The receipt counts the rows
of the product's memories table after the server has exited, so a dropped write shows as a shortfall.
"""
import argparse
import os
import sqlite3
import sys
import time

sys.path[:0] = ["/opt/memgrid/pydeps", "/opt/memgrid/lib"]

import anyio  # noqa: E402  (the mcp SDK's async runtime, from the sandbox image's pydeps)
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from memgrid_corpus import sessions, write_receipt  # noqa: E402

SERVER = "memory-service-mcp"
DATABASE = "sqlite_vec.db"


def content(session):
    return f"session {session.id} {session.date or ''}".rstrip() + "\n" + session.text


async def write(store, found, embedder_url):
    params = StdioServerParameters(command=SERVER, args=[store, *([embedder_url] if embedder_url else [])],
                                   env={"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")})
    async with stdio_client(params) as (read, send):
        async with ClientSession(read, send) as s:
            await s.initialize()
            for x in found:
                result = await s.call_tool("memory_store", {"content": content(x), "conversation_id": x.id,
                                                            "metadata": {"tags": "session", "type": "observation"}})
                said = " ".join(getattr(c, "text", "") for c in result.content)
                if result.is_error or said.startswith(("Error", "Not stored")):
                    raise RuntimeError(f"memory_store refused session {x.id}: {said[:300]}")


def stored(store):
    """Rows of the product's memories table (read only; the vector table needs the product's extension)."""
    db = sqlite3.connect(f"file:{os.path.join(store, DATABASE)}?mode=ro", uri=True)
    try:
        return db.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        db.close()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="mcp-memory-service-ingest")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--embedder-url")
    args = parser.parse_args(argv)
    started = time.monotonic()
    found = sessions(args.corpus)
    os.makedirs(args.store, exist_ok=True)
    anyio.run(write, args.store, found, args.embedder_url)  # also for an empty corpus: the product creates its empty database
    held = stored(args.store)
    if held != len(found):
        print(f"mcp-memory-service-ingest: the product holds {held} memories after storing {len(found)} sessions",
              file=sys.stderr)
        return 1
    write_receipt(args.store, documents=held, product="mcp-memory-service", store_format="sqlite-vec",
                  ingest_seconds=round(time.monotonic() - started, 3), model_tokens=0,
                  local_model="all-MiniLM-L6-v2 (int8 ONNX" + (", memgrid's shared embedder)" if args.embedder_url else ")"))
    return 0


def innermost(error):
    """The first leaf of an exception group (anyio wraps a task's error in one)."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # one line naming what the product refused, not the task group's traceback
        print(f"mcp-memory-service-ingest: {innermost(e)}", file=sys.stderr)
        sys.exit(1)
