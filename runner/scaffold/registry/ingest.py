"""__ARM__'s ingest: every session of the corpus written into __PACKAGE__'s own store by the product
itself, through its own MCP write tool; this script never writes the store's files.

    __ARM__-ingest --corpus DIR --store DIR

memgrid runs it once per corpus condition and seed, in the arm's image, with no network, as uid 1000.
memgrid_corpus.run_ingest (from the sandbox image) does everything around the write: the command line,
the corpus's sessions as text (each a Session with .id, .date and .text), the check that the product holds
every session written, the receipt store.json, and a one-line error. What is the product's own is write().

TODO: fill in write() below, and store_format at the bottom. Until then it starts the product's server and
stops with an error that lists the tools the server offers.
"""
import sys

sys.path[:0] = ["/opt/memgrid/pydeps", "/opt/memgrid/lib"]  # the MCP SDK and memgrid_corpus, from the sandbox image

from memgrid_corpus import call, count, product_server, run_ingest, said  # noqa: E402,F401  (for write())


async def write(store, sessions):
    """Writes every session through the product's own write tool; returns how many sessions the product
    holds afterwards, read back from the product (never the number sent: a dropped write must show)."""
    async with product_server(["__ARM__-server", store]) as server:  # started as arm.yaml's mcp.command starts it
        # TODO: call the product's write tool for every session (or batch of sessions), for example
        #     for s in sessions:
        #         await call(server, "save_memory", {"title": s.id, "content": s.text}, f"session {s.id}")
        # then read the count back through one of its own tools, for example
        #     stats = await call(server, "memory_stats", {}, "the count")
        #     return json.loads(said(stats))["memories"]
        # or, after the `async with` block (the server gone), from its SQLite database, read only:
        #     return count(f"{store}/memory.db", "SELECT count(*) FROM memories")
        tools = [tool.name for tool in (await server.list_tools()).tools]
        raise NotImplementedError(f"write() in arms/__ARM__/ingest.py is not filled in yet; the server lists: "
                                  f"{', '.join(tools)}")


if __name__ == "__main__":
    # TODO: store_format: a word or two for the product's store files (e.g. sqlite, jsonl), kept in the receipt.
    sys.exit(run_ingest("__ARM__-ingest", "__PACKAGE__", store_format="TODO", write=write))
