"""recall's MCP server: a store served over stdio, read-only unless asked to take writes.

    python -m recall.server --store DIR [--writable]

Tools: search(query, k), get(id), recent(n); with --writable also remember(text, tags) and
forget(id), which change the store in place (each write a whole new store committed atomically,
see recall.store), so a later server on the same folder serves what was written. Without
--writable the server lists exactly the three read tools and never writes its store. The store is
verified against its receipt before the transport starts; a missing or altered store ends the
process with one stderr line and exit 2, so a harness sees a broken memory at launch instead of an
agent seeing empty answers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from . import __version__
from .store import Store, StoreError

INSTRUCTIONS = (
    "recall holds transcripts of earlier coding sessions on this project. Use `search` with the "
    "subject of your task to find decisions and conventions settled before; `get` reads a whole "
    "session. When hits disagree, prefer the later date, and read hits flagged supersedes_hint: "
    "they say a rule replaced an older one."
)

WRITE_INSTRUCTIONS = (
    " `remember` keeps a text (a fact, a decision, a value) as a new memory that later sessions find "
    "with `search`; `forget` removes one by the id `remember` or `search` gave."
)

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
REMOVES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


class Hit(BaseModel):
    id: str
    date: str | None = Field(description="ISO 8601 time of the session's first event")
    score: float = Field(description="BM25 score; higher is better")
    snippet: str = Field(description="the best-matching passage, about 600 characters")
    supersedes_hint: bool = Field(description="the session says a rule replaces/supersedes an older one "
                                              "(a lexical hint: compare dates)")


class SearchResult(BaseModel):
    hits: list[Hit]


class SessionText(BaseModel):
    id: str
    date: str | None
    text: str


class RecentSession(BaseModel):
    id: str
    date: str | None
    first_line: str


class RecentResult(BaseModel):
    sessions: list[RecentSession]


class Remembered(BaseModel):
    id: str = Field(description="the new memory's id (mem-...), for get and forget")


class Forgotten(BaseModel):
    forgotten: bool


def build_server(store: Store, writable: bool = False) -> MCPServer:
    # WARNING, not INFO: the SDK logs every request at INFO, which is noise on a harness's stderr.
    server = MCPServer("recall", instructions=INSTRUCTIONS + (WRITE_INSTRUCTIONS if writable else ""),
                       version=__version__, log_level="WARNING")

    @server.tool(annotations=READ_ONLY)
    def search(query: str, k: int = 5) -> SearchResult:
        """Search earlier sessions (BM25). Returns up to k hits (max 50), best first, each with its
        date, score, best-matching snippet and supersedes_hint."""
        return SearchResult(hits=[Hit(**h) for h in store.search(query, k)])

    @server.tool(annotations=READ_ONLY)
    def get(id: str) -> SessionText:
        """The whole text of one session, by the id a search hit gave."""
        found = store.get(id)
        if found is None:  # ToolError: the SDK passes its text to the caller as an is_error result
            raise ToolError(f"no session with id {id!r} in namespace {store.namespace!r}")
        return SessionText(**found)

    @server.tool(annotations=READ_ONLY)
    def recent(n: int = 5) -> RecentResult:
        """The n latest sessions by date (max 50), newest first: id, date and first line."""
        return RecentResult(sessions=[RecentSession(**r) for r in store.recent(n)])

    if not writable:
        return server

    @server.tool(annotations=ADDS)
    def remember(text: str, tags: list[str] | None = None) -> Remembered:
        """Remember a text for later sessions: it becomes a new memory, dated now, that search, get and
        recent return like any session. Tags, if given, are kept as its last line (`tags: a, b`)."""
        try:
            return Remembered(**store.remember(text, tags))
        except (ValueError, StoreError, OSError) as e:
            raise ToolError(f"not remembered: {e}") from e

    @server.tool(annotations=REMOVES)
    def forget(id: str) -> Forgotten:
        """Forget one memory (or session) by its exact id: search, get and recent no longer return it."""
        try:
            return Forgotten(forgotten=store.forget(id))
        except KeyError:
            raise ToolError(f"no session with id {id!r} in namespace {store.namespace!r}") from None
        except (StoreError, OSError) as e:
            raise ToolError(f"not forgotten: {e}") from e

    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="recall.server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="store folder written by recall.ingest")
    parser.add_argument("--writable", action="store_true",
                        help="also serve the write tools remember and forget, which change the store in place")
    args = parser.parse_args(argv)
    try:
        store = Store(args.store)
    except StoreError as e:
        print(f"recall.server: {e}", file=sys.stderr, flush=True)
        return 2
    build_server(store, writable=args.writable).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
