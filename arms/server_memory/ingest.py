"""server_memory's ingest: each session of the corpus becomes one entity of the knowledge graph, written
by the product itself through its own MCP write tool (create_entities), never by this script.

    server-memory-ingest --corpus DIR --store DIR

The product's server is started as the agent will start it (MEMORY_FILE_PATH={store}/memory.jsonl) and
fed in batches; the receipt counts the entities its read_graph returns afterwards, so a write the
product dropped shows as a shortfall instead of being taken on trust (memgrid_corpus.run_ingest).
"""
import os
import sys

sys.path[:0] = ["/opt/memgrid/pydeps", "/opt/memgrid/lib"]

from memgrid_corpus import call, product_server, progress, run_ingest  # noqa: E402

BATCH = 500  # entities per create_entities call: the product rewrites its whole JSONL file on every call


def entity(session):
    """A session as the product models memory: a named entity with one observation per line."""
    lines = [line for line in session.text.splitlines() if line.strip()]
    return {"name": session.id, "entityType": "session",
            "observations": ([f"date: {session.date}"] if session.date else []) + lines}


async def write(store, found):
    async with product_server(["mcp-server-memory"], env={"MEMORY_FILE_PATH": os.path.join(store, "memory.jsonl")}) as s:
        # An empty corpus still gets one call, of no entities: the product then writes its (empty) memory.jsonl,
        # the store a protocol's first session starts from and writes to (two-session).
        for i in range(0, max(len(found), 1), BATCH):
            await call(s, "create_entities", {"entities": [entity(x) for x in found[i:i + BATCH]]},
                       f"sessions {i}..{i + BATCH - 1}")
            progress(min(i + BATCH, len(found)), len(found))
        graph = await s.call_tool("read_graph", {})
        return len((graph.structured_content or {}).get("entities", []))


if __name__ == "__main__":
    sys.exit(run_ingest("server-memory-ingest", "@modelcontextprotocol/server-memory", "jsonl", write))
