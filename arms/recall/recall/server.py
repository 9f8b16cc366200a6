"""recall's MCP server: a store served over stdio, read-only unless asked to take writes.

    python -m recall.server --store DIR [--writable]

Tools: search(query, k), get(id), recent(n); with --writable also remember(text, tags) and
forget(id), which change the store in place (each write a whole new store committed atomically,
see recall.store), so a later server on the same folder serves what was written. Without
--writable the server lists exactly the three read tools and never writes its store. The store is
verified against its receipt before the transport starts; a missing or altered store ends the
process with one stderr line and exit 2, so a harness sees a broken memory at launch instead of an
agent seeing empty answers.

The environment selects what is served (the planted-memory protocol's harness sets these; with none
of them set the server is what it was before they existed):

    RECALL_NAMESPACE=N         serve the store ROOT/N of the store root given as --store ROOT (a name
                               recall refuses, or a missing or unverifiable store there: exit 2)
    RECALL_OFF=1               the kill switch: tools stay listed, search and recent return nothing,
                               get, remember and forget fail with "memory is off" ("0" or unset: on)
    RECALL_DISABLE_LANES=a,b   switch off retrieval lanes of search (lexical, recency; see recall.lanes)
    RECALL_LOG=PATH            append one JSON line per tool call to PATH: ts, namespace, tool, ids
                               returned, off, lanes_disabled

A value the server cannot use ends it at launch with one stderr line and exit 2, like a broken store.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from . import __version__, lanes
from .store import Store, StoreError, namespace_store

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


class SettingsError(ValueError):
    """An environment variable holds a value the server cannot use; the message names it and the fix."""


@dataclass(frozen=True)
class Settings:
    namespace: str | None = None
    off: bool = False
    lanes_disabled: tuple[str, ...] = ()
    log: Path | None = None


def settings_from(env: Mapping[str, str]) -> Settings:
    off = env.get("RECALL_OFF", "0")
    if off not in ("0", "1"):
        raise SettingsError(f"RECALL_OFF={off!r}: use 1 (memory off) or 0 or unset (memory on)")
    try:
        disabled = lanes.parse_disabled(env.get("RECALL_DISABLE_LANES", ""))
    except lanes.LaneError as e:
        raise SettingsError(f"RECALL_DISABLE_LANES: {e}") from None
    log = env.get("RECALL_LOG")
    if log == "":
        raise SettingsError("RECALL_LOG is empty: give the path of the call log, or leave it unset for none")
    return Settings(env.get("RECALL_NAMESPACE"), off == "1", disabled, None if log is None else Path(log))


def open_store(path: Path, namespace: str | None) -> Store:
    """The store --store names, or with a namespace the one under that store root."""
    return Store(path) if namespace is None else namespace_store(path, namespace)


class CallLog:
    """RECALL_LOG: one JSON line per tool call, written and flushed before the call returns, so a harness
    reading it after the session sees every call the agent saw answered."""

    def __init__(self, path: Path, namespace: str, settings: Settings) -> None:
        self.path, self.namespace, self.settings = path, namespace, settings
        self._lock = threading.Lock()  # the SDK runs tools in worker threads
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.open("a", encoding="utf-8").close()
        except OSError as e:
            raise SettingsError(f"RECALL_LOG={str(path)!r}: cannot append to it ({e.strerror}); "
                                f"give a writable path") from None

    def record(self, tool: str, ids: list[str]) -> None:
        ts = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        line = json.dumps({"ts": ts, "namespace": self.namespace, "tool": tool, "ids": ids,
                           "off": self.settings.off, "lanes_disabled": list(self.settings.lanes_disabled)})
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError as e:  # an unlogged answer would look like memory never served: fail the call instead
            raise ToolError(f"call log {self.path}: {e.strerror}") from None


def build_server(store: Store, writable: bool = False, settings: Settings = Settings(),
                 log: CallLog | None = None) -> MCPServer:
    # WARNING, not INFO: the SDK logs every request at INFO, which is noise on a harness's stderr.
    server = MCPServer("recall", instructions=INSTRUCTIONS + (WRITE_INSTRUCTIONS if writable else ""),
                       version=__version__, log_level="WARNING")

    def record(tool: str, ids: list[str]) -> None:
        if log is not None:
            log.record(tool, ids)

    def refuse_when_off(tool: str) -> None:
        if settings.off:
            record(tool, [])
            raise ToolError("memory is off")

    @server.tool(annotations=READ_ONLY)
    def search(query: str, k: int = 5) -> SearchResult:
        """Search earlier sessions (BM25). Returns up to k hits (max 50), best first, each with its
        date, score, best-matching snippet and supersedes_hint."""
        hits = [] if settings.off else lanes.search(store, query, k, settings.lanes_disabled)
        record("search", [h["id"] for h in hits])
        return SearchResult(hits=[Hit(**h) for h in hits])

    @server.tool(annotations=READ_ONLY)
    def get(id: str) -> SessionText:
        """The whole text of one session, by the id a search hit gave."""
        refuse_when_off("get")
        found = store.get(id)
        record("get", [] if found is None else [id])
        if found is None:  # ToolError: the SDK passes its text to the caller as an is_error result
            raise ToolError(f"no session with id {id!r} in namespace {store.namespace!r}")
        return SessionText(**found)

    @server.tool(annotations=READ_ONLY)
    def recent(n: int = 5) -> RecentResult:
        """The n latest sessions by date (max 50), newest first: id, date and first line."""
        sessions = [] if settings.off else store.recent(n)
        record("recent", [r["id"] for r in sessions])
        return RecentResult(sessions=[RecentSession(**r) for r in sessions])

    if not writable:
        return server

    @server.tool(annotations=ADDS)
    def remember(text: str, tags: list[str] | None = None) -> Remembered:
        """Remember a text for later sessions: it becomes a new memory, dated now, that search, get and
        recent return like any session. Tags, if given, are kept as its last line (`tags: a, b`)."""
        refuse_when_off("remember")
        try:
            made = store.remember(text, tags)
        except (ValueError, StoreError, OSError) as e:
            record("remember", [])
            raise ToolError(f"not remembered: {e}") from e
        record("remember", [made["id"]])
        return Remembered(**made)

    @server.tool(annotations=REMOVES)
    def forget(id: str) -> Forgotten:
        """Forget one memory (or session) by its exact id: search, get and recent no longer return it."""
        refuse_when_off("forget")
        try:
            forgotten = store.forget(id)
        except KeyError:
            record("forget", [])
            raise ToolError(f"no session with id {id!r} in namespace {store.namespace!r}") from None
        except (StoreError, OSError) as e:
            record("forget", [])
            raise ToolError(f"not forgotten: {e}") from e
        record("forget", [id])
        return Forgotten(forgotten=forgotten)

    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="recall.server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True,
                        help="store folder written by recall.ingest (with RECALL_NAMESPACE: the store root)")
    parser.add_argument("--writable", action="store_true",
                        help="also serve the write tools remember and forget, which change the store in place")
    args = parser.parse_args(argv)
    try:
        settings = settings_from(os.environ)
        store = open_store(args.store, settings.namespace)
        log = None if settings.log is None else CallLog(settings.log, store.namespace, settings)
    except (SettingsError, StoreError) as e:
        print(f"recall.server: {e}", file=sys.stderr, flush=True)
        return 2
    build_server(store, args.writable, settings, log).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
