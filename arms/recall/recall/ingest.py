"""recall's write path: a folder of JSONL sessions -> a frozen, digest-stamped store.

    python -m recall.ingest --corpus DIR --store DIR [--namespace NAME]

Reads every *.jsonl under DIR/docs (or DIR itself when it has no docs/), one session per file,
renders each as readable text, indexes it with bm25s and writes the store into a scratch folder
that is swapped in whole, so a failed ingest never leaves half a store. Deterministic: sessions
are sorted by id, JSON is written with sorted keys and the bm25s vocabulary is built in first-seen
order, so the same corpus gives byte-identical content files and the same digest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bm25s  # type: ignore[import-untyped]  # bm25s ships no type hints

from .store import (FORMAT, INDEX, RECEIPT, SESSIONS, STOPWORDS, SUPERSEDES, Session, file_digests,
                    store_digest)


class IngestError(Exception):
    """The corpus cannot be ingested as it is; the message names the file."""


def source_files(corpus: Path) -> list[Path]:
    """The session files, refusing symlinks and anything that resolves outside the corpus folder."""
    if not corpus.is_dir():
        raise IngestError(f"{corpus}: corpus folder missing")
    root = corpus.resolve()
    docs = corpus / "docs"
    if docs.is_symlink():
        raise IngestError(f"{docs}: symbolic link refused (a corpus holds regular files only)")
    folder = docs if docs.is_dir() else corpus
    files = []
    for p in sorted(folder.glob("*.jsonl")):
        if p.is_symlink():
            raise IngestError(f"{p}: symbolic link refused (a corpus holds regular files only)")
        if not p.resolve().is_relative_to(root):
            raise IngestError(f"{p}: resolves outside the corpus folder {root}")
        if not p.is_file():
            raise IngestError(f"{p}: not a regular file")
        files.append(p)
    return files


def render(event: dict[str, Any]) -> str:
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


def read_session(path: Path) -> Session:
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise IngestError(f"{path}: not UTF-8 ({e})") from e
    events = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as e:
            raise IngestError(f"{path}:{n}: not JSON ({e})") from e
        if not isinstance(event, dict):
            raise IngestError(f"{path}:{n}: an event must be a JSON object")
        events.append(event)
    # The session id is what the transcript says it is; the file name only when it says nothing.
    session_id = next((str(e["session"]) for e in events if e.get("session")), path.stem)
    date = next((str(e["ts"]) for e in events if e.get("ts")), None)
    own_words = " ".join(str(e.get("content", "")) for e in events if e.get("role") in ("user", "assistant"))
    text = "\n".join(block for block in map(render, events) if block)
    return Session(session_id, date, bool(SUPERSEDES.search(own_words)), text)


def write_store(sessions: list[Session], target: Path, namespace: str, started: float) -> dict[str, Any]:
    """Write into a scratch folder beside the target, then swap it in."""
    if target.exists() and not (target / RECEIPT).is_file() and any(target.iterdir()):
        raise IngestError(f"{target}: exists and is not a recall store; refusing to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with (tmp / SESSIONS).open("w", encoding="utf-8", newline="\n") as f:
            for s in sessions:
                f.write(json.dumps({"id": s.id, "date": s.date, "supersedes_hint": s.supersedes_hint, "text": s.text},
                                   sort_keys=True, ensure_ascii=False) + "\n")
        if sessions:  # bm25s cannot index nothing; an empty namespace is a store with no index
            tokenized = bm25s.tokenize([s.text for s in sessions], stopwords=STOPWORDS, show_progress=False)
            retriever = bm25s.BM25()
            retriever.index(tokenized, show_progress=False)
            retriever.save(str(tmp / INDEX), show_progress=False)
        files = file_digests(tmp)
        receipt = {
            "format": FORMAT,
            "namespace": namespace,
            "documents": len(sessions),
            "ingest_seconds": round(time.monotonic() - started, 3),
            "model_tokens": 0,  # no model is called on ingest or search
            "local_model": None,  # no embedding or reranking model
            "files": files,
            "digest": store_digest(namespace, len(sessions), files),
        }
        (tmp / RECEIPT).write_text(json.dumps(receipt, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.chmod(0o755)  # mkdtemp makes it 0700; a store is read by whoever serves it
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return receipt


def ingest(corpus: Path, store: Path, namespace: str | None = None) -> dict[str, Any]:
    started = time.monotonic()
    sessions = sorted((read_session(p) for p in source_files(corpus)), key=lambda s: s.id)
    seen: set[str] = set()
    for s in sessions:
        if s.id in seen:
            raise IngestError(f"{corpus}: two sessions share the id {s.id!r}")
        seen.add(s.id)
    return write_store(sessions, store, namespace if namespace is not None else corpus.resolve().name, started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="recall.ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="folder of *.jsonl sessions (or holding docs/)")
    parser.add_argument("--store", type=Path, required=True, help="store folder to write (replaced whole)")
    parser.add_argument("--namespace", help="name recorded in the store (default: the corpus folder's name)")
    args = parser.parse_args(argv)
    try:
        receipt = ingest(args.corpus, args.store, args.namespace)
    except IngestError as e:
        print(f"recall.ingest: {e}", file=sys.stderr)
        return 2
    print(f"recall.ingest: {receipt['documents']} sessions into {args.store} (namespace {receipt['namespace']}, "
          f"{receipt['ingest_seconds']:.2f} s, digest {receipt['digest'][:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
