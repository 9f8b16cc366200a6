"""The corpus as a third-party product's ingest driver reads it, and the driver's skeleton (installed at
/opt/memgrid/lib).

A product arm's ingest is the product's own write path (its MCP write tools or its import command),
driven by a small script of the arm's. Everything around that write is the same for every product and
lives here, once: the command line, the corpus's sessions as readable text, the count read back from the
product, the shortfall check, the receipt and a one-line error. The script keeps only its `write`.

    run_ingest(prog, product, store_format, write) -> exit code   (write(store, sessions) -> count held)
    sessions(corpus) -> [Session(id, date, text)], sorted by id
    count(database, sql) -> a count read back from the product's own SQLite database, read only
    product_server(command) -> an MCP session with the product's server, started as the agent starts it
    call(session, tool, arguments, what) -> the tool's result; an error result raises, naming `what`
    progress(done, total) -> a progress line on stderr for the harness (at most one a second)
"""
import argparse
import contextlib
import inspect
import json
import os
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Session:
    id: str  # the transcript's own session id, else the file name
    date: str | None  # the first event's timestamp
    text: str  # every event rendered as a line or block


def render(event):
    """One event as a readable line or block: the role, the tool if any, then the content."""
    role = str(event.get("role", "?"))
    content = str(event.get("content", "")).strip()
    tool = event.get("tool_name")
    if role == "tool":
        return f"tool [{tool}]: {content}" if tool else f"tool: {content}"
    lines = [f"{role}: {content}"] if content else []
    if "tool_input" in event:
        lines.append(f"{role} [{tool or 'tool'}]: {json.dumps(event['tool_input'], sort_keys=True, ensure_ascii=False)}")
    elif tool:
        lines.append(f"{role} [{tool}]")
    return "\n".join(lines)


def sessions(corpus):
    """Every docs/*.jsonl of the corpus folder as a Session; a file that is not JSON lines is an error naming it."""
    folder = os.path.join(corpus, "docs")
    if not os.path.isdir(folder) and _manifest_is_empty(corpus):
        return []  # a corpus of no sessions (a protocol's empty store): an archive carries no empty docs/ folder
    found = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".jsonl"):
            continue
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8") as f:
            try:
                events = [json.loads(line) for line in f if line.strip()]
            except ValueError as e:
                raise ValueError(f"{path}: not JSON lines ({e})") from None
        session_id = next((str(e["session"]) for e in events if e.get("session")), name[:-len(".jsonl")])
        date = next((str(e["ts"]) for e in events if e.get("ts")), None)
        found.append(Session(session_id, date, "\n".join(b for b in map(render, events) if b)))
    return sorted(found, key=lambda s: s.id)


def _manifest_is_empty(corpus):
    """The corpus lists no document (its MANIFEST.sha256 is there and empty); a missing manifest is not empty."""
    try:
        with open(os.path.join(corpus, "MANIFEST.sha256"), encoding="utf-8") as f:
            return not f.read().strip()
    except FileNotFoundError:
        return False


PROGRESS = "memgrid-ingest-progress"  # the harness reads "PROGRESS DONE TOTAL" lines off stderr (runner/arms/ingest.py)
_last_progress = [0.0]


def progress(done: int, total: int) -> None:
    """`done` of the `total` sessions are in the product's store. Printed at most once a second and always at the
    end, so a long ingest says how far it is without filling its log (the harness keeps a bounded one)."""
    now = time.monotonic()
    if done < total and now - _last_progress[0] < 1.0:
        return
    _last_progress[0] = now
    print(f"{PROGRESS} {done} {total}", file=sys.stderr, flush=True)


def write_receipt(store, *, documents, **facts):
    """store.json: the documents the product's own store holds (counted by reading it back, never by
    what was sent), and whatever else the harness records (model_tokens, local_model, product, ...)."""
    with open(os.path.join(store, "store.json"), "w", encoding="utf-8") as f:
        json.dump({"documents": documents, **facts}, f, indent=1, sort_keys=True)
        f.write("\n")


def innermost(error: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio wraps a task's error in one)."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


# write(store, sessions) writes every session through the product and returns how many the product holds
# afterwards, read back from the product itself; a coroutine function is run under anyio (an MCP client).
Write = Callable[..., int | Awaitable[int]]  # (store, sessions[, embedder_url]) -> the count the product holds


def run_ingest(prog: str, product: str, store_format: str, write: Write, *, local_model: str | None = None,
               embedder: bool = False, argv: list[str] | None = None) -> int:
    """`prog --corpus DIR --store DIR`: the corpus's sessions written into the store by `write`, the count
    it read back checked against the sessions sent, then the receipt. Returns the exit code; any error is
    one line on stderr, `prog: <what failed>`, which the harness quotes. `embedder`: the product can embed
    through memgrid's shared embedder; `--embedder-url URL` (the arm's "{embedder_url}") reaches `write`
    as its third argument (None without it)."""
    parser = argparse.ArgumentParser(prog=prog, description=f"Writes a memgrid corpus into {product}'s own store.")
    parser.add_argument("--corpus", required=True, help="folder holding docs/*.jsonl")
    parser.add_argument("--store", required=True, help="the store folder to write (created if missing)")
    if embedder:
        parser.add_argument("--embedder-url", help="the shared embedder's /v1/embeddings (instead of the product's own model)")
    args = parser.parse_args(argv)
    extra = (args.embedder_url,) if embedder else ()
    if embedder and args.embedder_url and local_model:
        local_model += ", through memgrid's shared embedder"
    started = time.monotonic()
    try:
        found = sessions(args.corpus)
        os.makedirs(args.store, exist_ok=True)
        if inspect.iscoroutinefunction(write):
            import anyio  # the mcp SDK's async runtime: only MCP-driven ingests have /opt/memgrid/pydeps on sys.path

            held = anyio.run(write, args.store, found, *extra)
        else:
            held = write(args.store, found, *extra)
    except Exception as e:  # one line naming what the product refused, not a task group's traceback
        print(f"{prog}: {innermost(e)}", file=sys.stderr)
        return 1
    if held != len(found):  # a write the product dropped shows here instead of being taken on trust
        print(f"{prog}: {product} holds {held} of the {len(found)} sessions written to it", file=sys.stderr)
        return 1
    write_receipt(args.store, documents=held, product=product, store_format=store_format,
                  ingest_seconds=round(time.monotonic() - started, 3), model_tokens=0, local_model=local_model)
    return 0


def count(database: str, sql: str) -> int:
    """One number read back from the product's own SQLite database, opened read only (never written)."""
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.close()


@contextlib.asynccontextmanager
async def product_server(command: list[str], env: dict[str, str] | None = None) -> AsyncIterator:
    """A session with the product's MCP server, started over stdio as the agent's arm.yaml starts it (`env` on
    top of the safe variables the SDK passes on: PATH, HOME, ...). Needs /opt/memgrid/pydeps on sys.path."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with stdio_client(StdioServerParameters(command=command[0], args=command[1:], env=env)) as (read, send):
        async with ClientSession(read, send) as session:
            await session.initialize()
            yield session


def said(result) -> str:
    """A tool result's text."""
    return " ".join(getattr(c, "text", "") for c in result.content)


async def call(session, tool: str, arguments: dict, what: str):
    """One call of the product's tool; an error result raises `<tool> refused <what>: <what it said>`."""
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} refused {what}: {said(result)[:300]}")
    return result
