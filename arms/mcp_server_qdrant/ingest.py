"""mcp_server_qdrant's ingest: each session of the corpus becomes one entry, stored by the product itself
through its own MCP write tool (qdrant-store), which embeds it with fastembed and upserts it into its local
Qdrant collection; this script never touches the store's files.

    mcp-server-qdrant-ingest --corpus DIR --store DIR

The server is started as the agent will start it (qdrant-mcp STORE), also for an empty corpus: the server
must start, its model with it. Each entry opens with "session <id> <date>", the line a reader of a hit sees
first; its metadata names the session too. The count is the points of the product's collection after the
server has exited (read only), so a write the product dropped shows as a shortfall (memgrid_corpus.run_ingest).
"""
import os
import sys

sys.path[:0] = ["/opt/memgrid/pydeps", "/opt/memgrid/lib"]

from memgrid_corpus import call, count, product_server, progress, run_ingest, said  # noqa: E402

COLLECTION = "sessions"  # the launcher's COLLECTION_NAME


def content(session):
    return f"session {session.id} {session.date or ''}".rstrip() + "\n" + session.text


async def write(store, found):
    async with product_server(["qdrant-mcp", store]) as s:
        for done, x in enumerate(found, 1):
            metadata = {"session": x.id, **({"date": x.date} if x.date else {})}
            result = await call(s, "qdrant-store", {"information": content(x), "metadata": metadata}, f"session {x.id}")
            if not said(result).startswith("Remembered:"):  # its answer names what it stored
                raise RuntimeError(f"qdrant-store refused session {x.id}: {said(result)[:300]}")
            progress(done, len(found))
    # local mode keeps one row per point in storage.sqlite, created with the collection at the first store
    path = os.path.join(store, "collection", COLLECTION, "storage.sqlite")
    return count(path, "SELECT count(*) FROM points") if os.path.exists(path) else 0


if __name__ == "__main__":
    sys.exit(run_ingest("mcp-server-qdrant-ingest", "mcp-server-qdrant", "qdrant-local", write,
                        local_model="all-MiniLM-L6-v2 (int8 ONNX)"))
