"""mcp_server_qdrant's ingest: each session of the corpus becomes one entry, stored by the product itself
through its own MCP write tool (qdrant-store), which embeds it with fastembed and upserts it into its local
Qdrant collection; this script never touches the store's files.

    mcp-server-qdrant-ingest --corpus DIR --store DIR

The server is started as the agent will start it (qdrant-mcp STORE). Each entry opens with
"session <id> <date>", the line a reader of a hit sees first; its metadata names the session too. The
receipt counts the points of the product's collection after the server has exited (read only), so a write
the product dropped shows as a shortfall instead of being taken on trust.
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

SERVER = "qdrant-mcp"
COLLECTION = "sessions"  # the launcher's COLLECTION_NAME


def content(session):
    return f"session {session.id} {session.date or ''}".rstrip() + "\n" + session.text


async def write(store, found):
    params = StdioServerParameters(command=SERVER, args=[store],
                                   env={"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")})
    async with stdio_client(params) as (read, send):
        async with ClientSession(read, send) as s:
            await s.initialize()
            for x in found:
                metadata = {"session": x.id, **({"date": x.date} if x.date else {})}
                result = await s.call_tool("qdrant-store", {"information": content(x), "metadata": metadata})
                said = " ".join(getattr(c, "text", "") for c in result.content)
                if result.is_error or not said.startswith("Remembered:"):
                    raise RuntimeError(f"qdrant-store refused session {x.id}: {said[:300]}")


def stored(store):
    """Points in the product's collection: local mode keeps one row per point in its storage.sqlite, which
    it creates with the collection at the first store (none for an empty corpus)."""
    path = os.path.join(store, "collection", COLLECTION, "storage.sqlite")
    if not os.path.exists(path):
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute("SELECT count(*) FROM points").fetchone()[0]
    finally:
        db.close()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="mcp-server-qdrant-ingest")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--store", required=True)
    args = parser.parse_args(argv)
    started = time.monotonic()
    found = sessions(args.corpus)
    os.makedirs(args.store, exist_ok=True)
    anyio.run(write, args.store, found)  # also for an empty corpus: the server must start, its model with it
    held = stored(args.store)
    if held != len(found):
        print(f"mcp-server-qdrant-ingest: the product holds {held} points after storing {len(found)} sessions",
              file=sys.stderr)
        return 1
    write_receipt(args.store, documents=held, product="mcp-server-qdrant", store_format="qdrant-local",
                  ingest_seconds=round(time.monotonic() - started, 3), model_tokens=0,
                  local_model="all-MiniLM-L6-v2 (int8 ONNX)")
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
        print(f"mcp-server-qdrant-ingest: {innermost(e)}", file=sys.stderr)
        sys.exit(1)
