"""The store: its on-disk layout, its digest, and the read-only searcher the server uses.

A store folder, written once by `recall.ingest` and never changed afterwards:

    store.json       the receipt: namespace, document count, ingest wall seconds, model tokens (0),
                     local model (none), per-file sha256 and the store digest
    sessions.jsonl   one session per line, sorted by id: {"id", "date", "supersedes_hint", "text"}
    index/           the BM25 index as bm25s saves it (absent when the namespace has no documents)

The digest covers every content file plus the receipt's deterministic fields, so the same corpus
gives the same digest; only `ingest_seconds` varies between two ingests, and it is left out of
the digest because a wall time is not content.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s  # type: ignore[import-untyped]  # bm25s ships no type hints
import numpy as np

FORMAT = 1
RECEIPT = "store.json"
SESSIONS = "sessions.jsonl"
INDEX = "index"

# One tokenizer for the index and the queries: bm25s's own (scikit-learn's token pattern,
# lower-cased, English stopwords). No stemmer: it would be another dependency, and a stable
# vocabulary matters more here than recall on inflections.
STOPWORDS = "en"
TOKEN = re.compile(r"(?u)\b\w\w+\b")

SNIPPET_CHARS = 600
LEAD = 120  # a snippet opens up to this many characters before its first match, for context
MAX_K = 50

# A lexical heuristic, not understanding: a session whose own words (user and assistant turns,
# not tool output) say a rule replaces, supersedes, or is used "instead of" / "no longer" an older
# practice is flagged, so an agent knows to compare dates. "instead of" is also ordinary prose,
# so the flag is a hint to read the dates, never a verdict.
SUPERSEDES = re.compile(r"\b(replaces|replaced by|supersedes|superseded|no longer|instead of)\b", re.IGNORECASE)


class StoreError(Exception):
    """The store is missing, malformed or does not match its recorded digest."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_files(root: Path) -> list[Path]:
    """Every file of a store except its receipt, in a fixed order."""
    return sorted((p for p in root.rglob("*") if p.is_file() and p.relative_to(root).as_posix() != RECEIPT),
                  key=lambda p: p.relative_to(root).as_posix())


def file_digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in content_files(root)}


def store_digest(namespace: str, documents: int, files: dict[str, str]) -> str:
    """sha256 of the canonical JSON of what the store is: format, namespace, count and file hashes."""
    canonical = json.dumps({"format": FORMAT, "namespace": namespace, "documents": documents,
                            "files": sorted(files.items())}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def query_tokens(text: str) -> list[str]:
    tokens = bm25s.tokenize([text], stopwords=STOPWORDS, return_ids=False, show_progress=False)[0]
    return [t for t in tokens if t]


@dataclass(frozen=True)
class Session:
    id: str
    date: str | None  # ISO 8601 timestamp of the session's first event
    supersedes_hint: bool
    text: str

    def first_line(self) -> str:
        return next((line for line in self.text.splitlines() if line.strip()), "")


def verify(root: Path) -> dict[str, Any]:
    """The receipt of a store after checking every file against it; raises StoreError naming the fault."""
    receipt_path = root / RECEIPT
    if not root.is_dir():
        raise StoreError(f"{root}: store missing (run 'python -m recall.ingest --corpus DIR --store {root}')")
    if not receipt_path.is_file():
        raise StoreError(f"{receipt_path}: missing: not a recall store (run recall.ingest)")
    try:
        receipt: dict[str, Any] = json.loads(receipt_path.read_text(encoding="utf-8"))
        namespace, documents, recorded = receipt["namespace"], receipt["documents"], receipt["files"]
        digest = receipt["digest"]
    except (ValueError, KeyError, TypeError) as e:
        raise StoreError(f"{receipt_path}: unreadable receipt ({e!r})") from e
    if receipt.get("format") != FORMAT:
        raise StoreError(f"{receipt_path}: format {receipt.get('format')!r}, this recall reads format {FORMAT}")
    actual = file_digests(root)
    problems = [f"{name}: sha256 {actual[name][:12]} != recorded {recorded[name][:12]}"
                for name in sorted(actual.keys() & recorded.keys()) if actual[name] != recorded[name]]
    problems += [f"{name}: not in the receipt" for name in sorted(actual.keys() - recorded.keys())]
    problems += [f"{name}: in the receipt but missing" for name in sorted(recorded.keys() - actual.keys())]
    recomputed = store_digest(namespace, documents, actual)
    if problems or recomputed != digest:
        detail = "; ".join(problems) or "receipt fields edited"
        raise StoreError(f"{root}: store digest mismatch: recorded {digest[:12]}, content {recomputed[:12]} ({detail})")
    return receipt


class Store:
    """A verified store loaded into memory for searching; it holds no handle that writes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.receipt = verify(root)
        self.namespace: str = self.receipt["namespace"]
        with (root / SESSIONS).open("r", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        self.sessions = [Session(r["id"], r["date"], r["supersedes_hint"], r["text"]) for r in rows]
        self.by_id = {s.id: s for s in self.sessions}
        if len(self.sessions) != self.receipt["documents"]:
            raise StoreError(f"{root}: {len(self.sessions)} sessions but the receipt says {self.receipt['documents']}")
        self.retriever: bm25s.BM25 | None = None
        if self.sessions:
            self.retriever = bm25s.BM25.load(str(root / INDEX), mmap=False, load_corpus=False, show_progress=False)
            if self.retriever.scores["num_docs"] != len(self.sessions):
                raise StoreError(f"{root}: index holds {self.retriever.scores['num_docs']} documents, "
                                 f"sessions.jsonl {len(self.sessions)}")

    def _idf(self, token_id: int) -> float:
        assert self.retriever is not None
        indptr = self.retriever.scores["indptr"]
        df = int(indptr[token_id + 1] - indptr[token_id])  # CSC over the vocabulary: a column per token
        n = len(self.sessions)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def search(self, query: str, k: int = 5) -> list[dict[str, Any]]:
        """The k best sessions by BM25 (score > 0 only), ties broken by id; each with its best passage."""
        k = max(1, min(int(k), MAX_K))
        if self.retriever is None:
            return []
        tokens = query_tokens(query)
        ids = self.retriever.get_tokens_ids(tokens)
        if not ids:
            return []
        scores = self.retriever.get_scores_from_ids(ids)
        # Stable sort on -score: equal scores keep index order, which is id order (sessions are sorted).
        order = np.argsort(-scores, kind="stable")[:k]
        weights = {t: self._idf(self.retriever.vocab_dict[t]) for t in set(tokens) if t in self.retriever.vocab_dict}
        hits = []
        for i in order:
            score = float(scores[i])
            if score <= 0:
                break
            s = self.sessions[int(i)]
            hits.append({"id": s.id, "date": s.date, "score": round(score, 4),
                         "snippet": snippet(s.text, weights), "supersedes_hint": s.supersedes_hint})
        return hits

    def get(self, session_id: str) -> dict[str, Any] | None:
        s = self.by_id.get(session_id)
        return None if s is None else {"id": s.id, "date": s.date, "text": s.text}

    def recent(self, n: int = 5) -> list[dict[str, Any]]:
        n = max(0, min(int(n), MAX_K))
        # Newest first; undated sessions last; equal dates by id so the order is stable.
        dated = sorted((s for s in self.sessions if s.date), key=lambda s: (s.date, s.id), reverse=True)
        undated = sorted((s for s in self.sessions if not s.date), key=lambda s: s.id)
        return [{"id": s.id, "date": s.date, "first_line": s.first_line()} for s in (dated + undated)[:n]]


def snippet(text: str, weights: dict[str, float], width: int = SNIPPET_CHARS) -> str:
    """The ~width-character passage holding the most query weight: each distinct query token counts its
    idf once, repeats a little, so a passage naming several rare query words beats one repeating a common one."""
    matches = [(m.start(), m.group().lower()) for m in TOKEN.finditer(text) if m.group().lower() in weights]
    if not matches:
        return _clip(text, 0, width)
    best, best_start = -1.0, 0
    counts: dict[str, int] = {}
    j = 0
    for i, (start, _) in enumerate(matches):  # window = [start of match i, start + width)
        while j < len(matches) and matches[j][0] < start + width - LEAD:
            counts[matches[j][1]] = counts.get(matches[j][1], 0) + 1
            j += 1
        value = sum(weights[t] * (1 + 0.1 * (c - 1)) for t, c in counts.items() if c)
        if value > best:
            best, best_start = value, start
        counts[matches[i][1]] -= 1
    # Open the window a little before the first match, at a line start when one is near.
    lead = max(0, best_start - LEAD)
    newline = text.rfind("\n", lead, best_start)
    return _clip(text, newline + 1 if newline >= 0 else lead, width)


def _clip(text: str, start: int, width: int) -> str:
    end = min(len(text), start + width)
    return ("…" if start > 0 else "") + text[start:end].strip() + ("…" if end < len(text) else "")
