"""mcp_memory_service's ingest: each session of the corpus becomes one memory, stored by the product
itself through its own MCP write tool (memory_store), which embeds it with the product's ONNX model
and writes it into its SQLite-vec database; this script never touches the database's contents.

    mcp-memory-service-ingest --corpus DIR --store DIR [--embedder-url URL]

The server is started as the agent will start it (memory-service-mcp STORE [URL]; with URL, the product embeds
through that OpenAI-compatible endpoint, memgrid's shared embedder, instead of its in-process ONNX model). Each memory opens with
"session <id> <date>", the line a reader of a hit sees first. conversation_id is the session id, which
the product documents as the way to store incremental memories without its semantic deduplication
(a corpus holds sessions on one project that a deduplicator would merge). The count is the rows of the
product's memories table after the server has exited, so a dropped write shows as a shortfall
(memgrid_corpus.run_ingest). An empty corpus still starts the server: the product creates its empty database.
"""
import os
import sys

sys.path[:0] = ["/opt/memgrid/pydeps", "/opt/memgrid/lib"]

from memgrid_corpus import call, count, product_server, progress, run_ingest, said  # noqa: E402

DATABASE = "sqlite_vec.db"


def content(session):
    return f"session {session.id} {session.date or ''}".rstrip() + "\n" + session.text


async def write(store, found, embedder_url):
    async with product_server(["memory-service-mcp", store, *([embedder_url] if embedder_url else [])]) as s:
        for done, x in enumerate(found, 1):
            result = await call(s, "memory_store", {"content": content(x), "conversation_id": x.id,
                                                    "metadata": {"tags": "session", "type": "observation"}},
                                f"session {x.id}")
            if said(result).startswith(("Error", "Not stored")):  # it refuses in its answer's text, not as an error
                raise RuntimeError(f"memory_store refused session {x.id}: {said(result)[:300]}")
            progress(done, len(found))
    # rows of its memories table (the vector table would need the product's own SQLite extension)
    return count(os.path.join(store, DATABASE), "SELECT count(*) FROM memories")


if __name__ == "__main__":
    sys.exit(run_ingest("mcp-memory-service-ingest", "mcp-memory-service", "sqlite-vec", write,
                        local_model="all-MiniLM-L6-v2 (int8 ONNX)", embedder=True))
