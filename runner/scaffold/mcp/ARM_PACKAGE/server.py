"""__ARM__'s MCP server: the store its ingest wrote, served read-only over stdio.

    __ARM__-server --store DIR

Tools (the shapes memgrid's reader agent reads; keep them when you replace the scoring):
    search(query, k) -> {"hits": [{"id", "date", "score", "snippet"}, ...]}   best first
    get(id)          -> {"id", "date", "text"}                                 one whole session
A missing store ends the process with one stderr line and exit 2, so a broken memory shows at
launch instead of as empty answers.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from . import __version__
from .ingest import RECEIPT, SESSIONS

TOKEN = re.compile(r"[a-z0-9_]{3,}")
SNIPPET_CHARS = 300
MAX_K = 50


class Hit(BaseModel):
    id: str
    date: str | None = Field(description="time of the session's first event")
    score: float = Field(description="higher is better")
    snippet: str = Field(description="the passage around the first matching word")


class SearchResult(BaseModel):
    hits: list[Hit]


class SessionText(BaseModel):
    id: str
    date: str | None
    text: str


class Store:
    """The sessions of one store, with a word index for a small TF-IDF search."""

    def __init__(self, root: Path) -> None:
        receipt = root / RECEIPT
        if not receipt.is_file():
            raise FileNotFoundError(f"{receipt}: missing (run __ARM__-ingest --corpus DIR --store {root})")
        self.namespace = str(json.loads(receipt.read_text(encoding="utf-8")).get("namespace", ""))
        with (root / SESSIONS).open(encoding="utf-8") as f:
            self.sessions: dict[str, dict[str, Any]] = {s["id"]: s for s in (json.loads(line) for line in f if line.strip())}
        self.words = {sid: Counter(TOKEN.findall(s["text"].lower())) for sid, s in self.sessions.items()}
        df = Counter(w for counts in self.words.values() for w in counts)
        self.idf = {w: math.log((1 + len(self.sessions)) / n) for w, n in df.items()}

    def search(self, query: str, k: int) -> list[Hit]:
        terms = set(TOKEN.findall(query.lower())) & self.idf.keys()
        scores = {sid: sum(self.idf[t] * (1 + math.log(counts[t])) for t in terms if counts[t])
                  for sid, counts in self.words.items()}
        ranked = sorted((sid for sid, score in scores.items() if score > 0), key=lambda sid: (-scores[sid], sid))
        return [self.hit(sid, scores[sid], terms) for sid in ranked[:max(1, min(k, MAX_K))]]

    def hit(self, sid: str, score: float, terms: set[str]) -> Hit:
        text = self.sessions[sid]["text"]
        where = min((i for t in terms if (i := text.lower().find(t)) >= 0), default=0)
        start = max(0, where - SNIPPET_CHARS // 4)
        return Hit(id=sid, date=self.sessions[sid]["date"], score=round(score, 4),
                   snippet=text[start:start + SNIPPET_CHARS])


def build_server(store: Store) -> MCPServer:
    # WARNING, not INFO: the SDK logs every request at INFO, which is noise on a harness's stderr.
    server = MCPServer("__ARM__", version=__version__, log_level="WARNING",
                       instructions="Transcripts of earlier coding sessions on this project: `search` them "
                                    "with the subject of your task, `get` reads a whole session.")

    @server.tool()
    def search(query: str, k: int = 5) -> SearchResult:
        """Search earlier sessions. Returns up to k hits (max 50), best first, each with a snippet."""
        return SearchResult(hits=store.search(query, k))

    @server.tool()
    def get(id: str) -> SessionText:
        """The whole text of one session, by the id a search hit gave."""
        session = store.sessions.get(id)
        if session is None:  # the SDK hands a ToolError's text to the caller as an is_error result
            raise ToolError(f"no session with id {id!r} in namespace {store.namespace!r}")
        return SessionText(**session)

    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="__ARM__-server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="store folder written by __ARM__-ingest")
    args = parser.parse_args(argv)
    try:
        store = Store(args.store)
    except (OSError, ValueError, KeyError) as e:
        print(f"__ARM__-server: {e}", file=sys.stderr, flush=True)
        return 2
    build_server(store).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
