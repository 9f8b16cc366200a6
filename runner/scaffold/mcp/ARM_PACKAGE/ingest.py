"""__ARM__'s write path: a folder of JSONL sessions -> a store folder.

    __ARM__-ingest --corpus DIR --store DIR [--namespace NAME]

Reads every DIR/docs/*.jsonl (one session per file, one JSON event per line: session, ts, role,
content, tool_name, tool_input), renders each session as text and writes DIR (the store):

    sessions.jsonl   one line per session, sorted by id: {"id", "date", "text"}
    store.json       the receipt memgrid reads: {"format", "namespace", "documents"}

memgrid freezes the store after this command exits 0 and checks store.json "documents" > 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

FORMAT = 1
RECEIPT = "store.json"
SESSIONS = "sessions.jsonl"


def render(event: dict[str, Any]) -> str:
    """One event as readable text: its role, its tool if any, then its content."""
    role, tool = str(event.get("role", "?")), event.get("tool_name")
    content = str(event.get("content", "")).strip()
    head = f"{role} [{tool}]" if tool else role
    parts = [content] if content else []
    if "tool_input" in event:
        parts.append(json.dumps(event["tool_input"], sort_keys=True, ensure_ascii=False))
    return f"{head}: {' '.join(parts)}"


def read_session(path: Path) -> dict[str, Any]:
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    session_id = next((str(e["session"]) for e in events if e.get("session")), path.stem)
    date = next((str(e["ts"]) for e in events if e.get("ts")), None)
    return {"id": session_id, "date": date, "text": "\n".join(render(e) for e in events)}


def ingest(corpus: Path, store: Path, namespace: str) -> dict[str, Any]:
    folder = corpus / "docs" if (corpus / "docs").is_dir() else corpus
    sessions = sorted((read_session(p) for p in sorted(folder.glob("*.jsonl"))), key=lambda s: s["id"])
    store.mkdir(parents=True, exist_ok=True)
    with (store / SESSIONS).open("w", encoding="utf-8", newline="\n") as f:
        for s in sessions:
            f.write(json.dumps(s, sort_keys=True, ensure_ascii=False) + "\n")
    receipt = {"format": FORMAT, "namespace": namespace, "documents": len(sessions)}
    (store / RECEIPT).write_text(json.dumps(receipt, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return receipt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="__ARM__-ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="folder holding docs/*.jsonl")
    parser.add_argument("--store", type=Path, required=True, help="store folder to write")
    parser.add_argument("--namespace", default="default", help="name recorded in store.json")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"__ARM__-ingest: {args.corpus}: no such folder", file=sys.stderr)
        return 2
    receipt = ingest(args.corpus, args.store, args.namespace)
    print(f"__ARM__-ingest: {receipt['documents']} sessions into {args.store} (namespace {receipt['namespace']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
