"""The corpus as a third-party product's ingest driver reads it (installed at /opt/memgrid/lib).

A product arm's ingest is the product's own write path (its MCP write tools or its import command),
driven by a small script of the arm's; that script needs the corpus's sessions as readable text and
must leave the harness its receipt. Both are here, once, so every product reads the same text.

    sessions(corpus) -> [Session(id, date, text)], sorted by id
    write_receipt(store, documents=..., **facts) -> store.json (what runner.arms.ingest reads back)
"""
import json
import os
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


def write_receipt(store, *, documents, **facts):
    """store.json: the documents the product's own store holds (counted by reading it back, never by
    what was sent), and whatever else the harness records (model_tokens, local_model, product, ...)."""
    with open(os.path.join(store, "store.json"), "w", encoding="utf-8") as f:
        json.dump({"documents": documents, **facts}, f, indent=1, sort_keys=True)
        f.write("\n")
