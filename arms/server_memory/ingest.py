"""server_memory's ingest: each session of the corpus becomes one entity of the knowledge graph, written
by the product itself through its own MCP write tool (create_entities), never by this script.

    server-memory-ingest --corpus DIR --store DIR

The product's server is started as the agent will start it (MEMORY_FILE_PATH={store}/memory.jsonl) and
fed in batches; the receipt counts the entities its read_graph returns afterwards, so a write the
product dropped shows as a shortfall instead of being taken on trust.
"""
import argparse
import os
import sys
import time

sys.path[:0] = ["/opt/memgrid/pydeps", "/opt/memgrid/lib"]

import anyio  # noqa: E402  (the mcp SDK's async runtime, from the sandbox image's pydeps)
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from memgrid_corpus import sessions, write_receipt  # noqa: E402

SERVER = "mcp-server-memory"
BATCH = 500  # entities per create_entities call: the product rewrites its whole JSONL file on every call


def entity(session):
    """A session as the product models memory: a named entity with one observation per line."""
    lines = [line for line in session.text.splitlines() if line.strip()]
    return {"name": session.id, "entityType": "session",
            "observations": ([f"date: {session.date}"] if session.date else []) + lines}


async def write(store, found):
    params = StdioServerParameters(command=SERVER, args=[], env={"MEMORY_FILE_PATH": os.path.join(store, "memory.jsonl"),
                                                               "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")})
    async with stdio_client(params) as (read, send):
        async with ClientSession(read, send) as s:
            await s.initialize()
            for i in range(0, len(found), BATCH):
                result = await s.call_tool("create_entities", {"entities": [entity(x) for x in found[i:i + BATCH]]})
                if result.is_error:
                    said = " ".join(getattr(c, "text", "") for c in result.content)
                    raise RuntimeError(f"create_entities refused sessions {i}..{i + BATCH - 1}: {said[:300]}")
            graph = await s.call_tool("read_graph", {})
            return len((graph.structured_content or {}).get("entities", []))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="server-memory-ingest")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--store", required=True)
    args = parser.parse_args(argv)
    started = time.monotonic()
    found = sessions(args.corpus)
    os.makedirs(args.store, exist_ok=True)
    stored = anyio.run(write, args.store, found) if found else 0
    if stored != len(found):
        print(f"server-memory-ingest: the product holds {stored} entities after writing {len(found)} sessions",
              file=sys.stderr)
        return 1
    write_receipt(args.store, documents=stored, product="@modelcontextprotocol/server-memory", store_format="jsonl",
                  ingest_seconds=round(time.monotonic() - started, 3), model_tokens=0, local_model=None)
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
        print(f"server-memory-ingest: {innermost(e)}", file=sys.stderr)
        sys.exit(1)
