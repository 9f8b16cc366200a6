"""The store: its on-disk layout, its digest, the searcher the server uses, and its write path.

A store folder, written by `recall.ingest` (the whole corpus at once) and afterwards changed only
through `Store.remember` / `Store.forget` (the server's write tools, when it serves with --writable):

    store.json       the receipt: namespace, document count, ingest wall seconds, model tokens (0),
                     local model (none), per-file sha256 and the store digest (after a write also
                     `writes`, how many writes the store has taken since its ingest)
    sessions.jsonl   one session per line, sorted by id: {"id", "date", "supersedes_hint", "text"}; a
                     remembered text also has "written", the number of the write that added it
    index/           the BM25 index as bm25s saves it (absent when the namespace has no documents)

The digest covers every content file plus the receipt's deterministic fields, so the same corpus
gives the same digest; only `ingest_seconds` varies between two ingests, and it is left out of
the digest because a wall time is not content.

A write rebuilds the next store whole (every row, a fresh index, a fresh receipt) in a staging
folder inside the store, `.recall-write/`, whose receipt is written last: its appearance is the
commit point. The staged files are then moved into place and the receipt last. Whoever opens the
store next (a server launching, or the next write) finishes a committed stage and discards an
uncommitted one, so a write killed at any point leaves either the store before it or the store
after it, never one its own verification refuses. Writers hold an exclusive flock on the store
folder; opening holds a shared one.

A store root may hold one store per namespace, ROOT/<namespace>/ (`namespace_folder`), each a store
as above whose receipt names that namespace; `recall-admin` plants memories into one and the server
serves one when RECALL_NAMESPACE names it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
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

# The write path (Store.remember / Store.forget).
TXN = ".recall-write"  # the staging folder of a write in progress, inside the store folder
MEMORY_PREFIX = "mem-"  # ids of remembered texts: mem-<12 hex>
MAX_TEXT = 100_000  # characters of one remembered text
MAX_TAGS, MAX_TAG = 16, 64  # tags of one remembered text, characters of one tag

# A namespace is one folder name under a store root: no separators, no leading dot, so it can neither
# leave the root nor name a hidden folder such as a write's scratch folder.
NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
NAMESPACE_RULE = "1 to 128 of A-Z a-z 0-9 . _ -, starting with a letter or digit"

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
    written: int | None = None  # the write that remembered it; None for an ingested session

    def first_line(self) -> str:
        return next((line for line in self.text.splitlines() if line.strip()), "")


def bounded(k: int) -> int:
    """How many hits a search returns for a requested k."""
    return max(1, min(int(k), MAX_K))


def namespace_folder(root: Path, namespace: str) -> Path:
    """ROOT/<namespace>, for a namespace name recall accepts; StoreError naming the rule otherwise."""
    if not NAMESPACE.fullmatch(namespace):
        raise StoreError(f"namespace {namespace!r} refused: a namespace is {NAMESPACE_RULE}")
    return root / namespace


def memory_document(text: str, tags: list[str] | None) -> str:
    """The document `remember` stores for a text and its tags (as a last line `tags: a, b`); ValueError
    for a text or tags the store cannot keep."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("text is empty: nothing to remember")
    if len(text) > MAX_TEXT:
        raise ValueError(f"text is {len(text)} characters; at most {MAX_TEXT} are kept in one memory")
    tags = list(tags or [])
    if len(tags) > MAX_TAGS or any(not isinstance(t, str) or not t.strip() or len(t) > MAX_TAG
                                   or "\n" in t or "," in t for t in tags):
        raise ValueError(f"tags: at most {MAX_TAGS}, each 1 to {MAX_TAG} characters without commas or newlines")
    document = f"{text.rstrip()}\n\ntags: {', '.join(t.strip() for t in tags)}" if tags else text
    if not query_tokens(document):
        raise ValueError("text has no searchable word (only stopwords, punctuation or single characters)")
    return document


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


def write_content(folder: Path, rows: list[dict[str, Any]]) -> None:
    """sessions.jsonl and index/ for `rows` (sorted by id), byte for byte as recall.ingest writes them."""
    with (folder / SESSIONS).open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
    if rows:  # bm25s cannot index nothing; a store with no documents has no index
        tokenized = bm25s.tokenize([row["text"] for row in rows], stopwords=STOPWORDS, show_progress=False)
        retriever = bm25s.BM25()
        retriever.index(tokenized, show_progress=False)
        retriever.save(str(folder / INDEX), show_progress=False)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(folder: Path) -> None:
    """Every file under `folder`, then every folder deepest first, so what is named is on disk."""
    paths = sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True)
    for p in paths:
        if p.is_file():
            _fsync(p)
    for p in [*(p for p in paths if p.is_dir()), folder]:
        _fsync(p)


def _inside(root: Path, name: object) -> Path:
    """root/name for a receipt's file name, refusing one that would leave the store or enter the stage."""
    path = PurePosixPath(str(name))
    if not isinstance(name, str) or path.is_absolute() or not path.parts or ".." in path.parts or path.parts[0] == TXN \
            or path.as_posix() == RECEIPT:
        raise StoreError(f"{root / TXN}: staged receipt names an impossible file {name!r}")
    return root / path


def stage(root: Path, rows: list[dict[str, Any]], previous: dict[str, Any]) -> dict[str, Any]:
    """Write the next store (rows sorted by id) into root/.recall-write/ with its receipt written last
    (the commit point); returns that receipt. Nothing outside the staging folder changes."""
    folder = root / TXN
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    try:
        write_content(folder, rows)
        files = file_digests(folder)
        receipt = {**previous, "documents": len(rows), "files": files, "writes": int(previous.get("writes", 0)) + 1,
                   "digest": store_digest(previous["namespace"], len(rows), files)}
        _fsync_tree(folder)
        part = folder / f"{RECEIPT}.part"
        part.write_text(json.dumps(receipt, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        _fsync(part)
        os.replace(part, folder / RECEIPT)  # committed: from here on the write is finished, not undone
        _fsync(folder)
    except BaseException:
        if not (folder / RECEIPT).is_file():
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return receipt


def roll_forward(root: Path) -> None:
    """Move a committed stage into place: its files, then the removal of files it no longer has, then its
    receipt; then the stage goes. Idempotent, so a kill anywhere in it is finished by the next call."""
    folder = root / TXN
    try:
        receipt = json.loads((folder / RECEIPT).read_text(encoding="utf-8"))
        names = receipt["files"]
        if not isinstance(names, dict):
            raise TypeError("files is not a mapping")
    except (ValueError, KeyError, TypeError) as e:
        raise StoreError(f"{folder / RECEIPT}: unreadable staged receipt ({e!r})") from e
    for name in sorted(names):
        target, staged = _inside(root, name), folder / name
        if staged.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, target)
    for p in content_files(root):
        rel = p.relative_to(root)
        if rel.parts[0] != TXN and rel.as_posix() not in names:
            p.unlink()
    for d in sorted((p for p in root.rglob("*") if p.is_dir() and p.relative_to(root).parts[0] != TXN),
                    key=lambda p: len(p.parts), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()
    for d in sorted({_inside(root, name).parent for name in names} | {root}):
        _fsync(d)
    os.replace(folder / RECEIPT, root / RECEIPT)
    _fsync(root)
    shutil.rmtree(folder)


def recover(root: Path) -> bool:
    """Finish or discard a write that was interrupted (the caller holds the exclusive lock); True when
    there was one. An ingested store never has a stage, so this never touches one."""
    folder = root / TXN
    if not folder.exists() and not folder.is_symlink():
        return False
    if folder.is_symlink() or not folder.is_dir():
        raise StoreError(f"{folder}: not a staging folder (a recall store holds regular files only)")
    if (folder / RECEIPT).is_file():
        roll_forward(root)
    else:
        shutil.rmtree(folder)  # never committed: the store in place is the one before that write
    return True


@contextlib.contextmanager
def store_lock(root: Path, exclusive: bool) -> Iterator[int]:
    """An flock on the store folder itself (a lock file would be a file the receipt does not list)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield fd
    finally:
        os.close(fd)  # releases the lock


def utc_now() -> str:
    """Now, in the format of a session's date (ISO 8601, UTC, seconds)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """A verified store loaded into memory for searching. It writes only through remember and forget,
    each a whole new store committed atomically (see the module's docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.RLock()  # the SDK runs tools in worker threads
        if not root.is_dir():
            verify(root)  # raises, naming the fault
        try:
            with store_lock(root, exclusive=False) as fd:
                if (root / TXN).exists() or (root / TXN).is_symlink():
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    recover(root)
                self._load()
        except OSError as e:
            raise StoreError(f"{root}: cannot open the store ({e})") from e

    def _load(self) -> None:
        root = self.root
        receipt = verify(root)
        with (root / SESSIONS).open("r", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        sessions = [Session(r["id"], r["date"], r["supersedes_hint"], r["text"], r.get("written")) for r in rows]
        if len(sessions) != receipt["documents"]:
            raise StoreError(f"{root}: {len(sessions)} sessions but the receipt says {receipt['documents']}")
        retriever: bm25s.BM25 | None = None
        if sessions:
            retriever = bm25s.BM25.load(str(root / INDEX), mmap=False, load_corpus=False, show_progress=False)
            if retriever.scores["num_docs"] != len(sessions):
                raise StoreError(f"{root}: index holds {retriever.scores['num_docs']} documents, "
                                 f"sessions.jsonl {len(sessions)}")
        self.receipt = receipt
        self.namespace: str = receipt["namespace"]
        self._rows = rows
        self.sessions = sessions
        self.by_id = {s.id: s for s in sessions}
        self.retriever = retriever

    def _idf(self, token_id: int) -> float:
        assert self.retriever is not None
        indptr = self.retriever.scores["indptr"]
        df = int(indptr[token_id + 1] - indptr[token_id])  # CSC over the vocabulary: a column per token
        n = len(self.sessions)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def search(self, query: str, k: int = 5) -> list[dict[str, Any]]:
        """The k best sessions by BM25 (score > 0 only), ties broken by id; each with its best passage."""
        with self._lock:
            k = bounded(k)
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
        with self._lock:
            s = self.by_id.get(session_id)
            return None if s is None else {"id": s.id, "date": s.date, "text": s.text}

    def recent(self, n: int = 5) -> list[dict[str, Any]]:
        with self._lock:
            n = max(0, min(int(n), MAX_K))
            # Newest first; undated sessions last; equal dates by id so the order is stable.
            dated = sorted((s for s in self.sessions if s.date), key=lambda s: (s.date, s.id), reverse=True)
            undated = sorted((s for s in self.sessions if not s.date), key=lambda s: s.id)
            return [{"id": s.id, "date": s.date, "first_line": s.first_line()} for s in (dated + undated)[:n]]

    def newest_remembered(self, k: int = 5) -> list[dict[str, Any]]:
        """The k latest remembered texts (never ingested sessions), latest write first, as search hits
        scored 0.0 with a snippet from the start of the text: what was written, not what matches."""
        with self._lock:
            remembered = sorted((s for s in self.sessions if s.written is not None),
                                key=lambda s: s.written, reverse=True)
            return [{"id": s.id, "date": s.date, "score": 0.0, "snippet": _clip(s.text, 0, SNIPPET_CHARS),
                     "supersedes_hint": s.supersedes_hint} for s in remembered[:bounded(k)]]

    # ---- the write path ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Exclusive: this process's threads and every other process on the store; brings the loaded
        store up to what is on disk first (an interrupted write finished, another process's writes read)."""
        with self._lock, store_lock(self.root, exclusive=True):
            recovered = recover(self.root)
            try:
                on_disk = json.loads((self.root / RECEIPT).read_text(encoding="utf-8")).get("digest")
            except (OSError, ValueError, AttributeError):
                on_disk = None
            if recovered or on_disk != self.receipt.get("digest"):
                self._load()
            yield

    def _commit(self, rows: list[dict[str, Any]]) -> None:
        stage(self.root, rows, self.receipt)
        roll_forward(self.root)
        self._load()

    def remember(self, text: str, tags: list[str] | None = None) -> dict[str, Any]:
        """Store `text` as a new document (its tags, if any, as a last line `tags: a, b`); returns its id.
        Raises ValueError for a text or tags the store cannot keep."""
        document = memory_document(text, tags)
        with self._writing():
            writes, n = int(self.receipt.get("writes", 0)), 0
            while True:
                memory_id = MEMORY_PREFIX + hashlib.sha256(f"{writes}:{n}:{document}".encode()).hexdigest()[:12]
                if memory_id not in self.by_id:
                    break
                n += 1
            # `written` orders remembered texts where dates (to the second) tie, as a plant of several does.
            row = {"id": memory_id, "date": utc_now(), "supersedes_hint": bool(SUPERSEDES.search(text)),
                   "text": document, "written": writes + 1}
            self._commit(sorted([*self._rows, row], key=lambda r: r["id"]))
        return {"id": memory_id}

    def forget(self, session_id: str) -> bool:
        """Remove the document with exactly this id (a remembered text or an ingested session); KeyError
        when there is none."""
        with self._writing():
            if session_id not in self.by_id:
                raise KeyError(session_id)
            self._commit([r for r in self._rows if r["id"] != session_id])
        return True


def namespace_store(root: Path, namespace: str) -> Store:
    """The store of one namespace under a store root, refused unless its receipt names that namespace."""
    folder = namespace_folder(root, namespace)
    if not folder.is_dir():
        raise StoreError(f"{folder}: namespace {namespace!r} has no store under {root} "
                         f"(plant it with 'recall-admin plant --root {root} --namespace {namespace}')")
    store = Store(folder)
    if store.namespace != namespace:  # a store copied under another name would serve someone else's memories
        raise StoreError(f"{folder}: its receipt names namespace {store.namespace!r}, not {namespace!r}")
    return store


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
