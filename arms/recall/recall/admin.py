"""recall's admin CLI: plant memories into a namespace, forget them by exact id, count a namespace.

    recall-admin plant  --root ROOT --namespace N  < [{"content": "...", "type": "wisdom"}, ...]
    recall-admin forget --root ROOT --namespace N  < {"ids": ["mem-...", ...]}
    recall-admin count  --root ROOT --namespace N

A namespace is the store ROOT/N (see recall.store); `recall-server --store ROOT` serves it when
RECALL_NAMESPACE=N. plant creates it empty when absent, then remembers each memory in order, tagged
with its type, and prints {"namespace", "ids"}. forget prints {"namespace", "forgotten", "missing",
"left"} (left: given ids still in the store afterwards) and exits 1 unless left is empty. count
prints {"namespace", "documents", "ids"}; a namespace with no store counts 0. Each prints one JSON
line on stdout. Bad input (stdin, a namespace name recall refuses, a store that does not verify)
exits 2 with one line on stderr; nothing is written before the whole input has been checked.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from .ingest import IngestError, write_store
from .store import (NAMESPACE_RULE, Store, StoreError, memory_document, namespace_folder, namespace_store,
                    store_lock)

TYPES = ("wisdom", "belief", "episode", "correction")
PROG = "recall-admin"


class AdminError(Exception):
    """The input cannot be used as it is; the message names what and how to fix it."""


class Memory(NamedTuple):
    content: str
    type: str


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        self.exit(2, f"{PROG}: {message} (see {PROG} --help)\n")


def read_stdin() -> Any:
    try:
        return json.loads(sys.stdin.buffer.read().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise AdminError(f"stdin: not UTF-8 JSON ({e})") from None


def parse_memories(data: Any) -> list[Memory]:
    """The memories of plant's input, each checked as remember would check it."""
    if not isinstance(data, list):
        raise AdminError('stdin: give a JSON list of {"content": str, "type": str} objects')
    memories = []
    for n, item in enumerate(data):
        if not isinstance(item, dict) or set(item) != {"content", "type"}:
            raise AdminError(f'stdin: memory {n}: give an object with exactly the keys "content" and "type"')
        if not isinstance(item["content"], str):
            raise AdminError(f"stdin: memory {n}: content must be a string, not {type(item['content']).__name__}")
        if item["type"] not in TYPES:
            raise AdminError(f"stdin: memory {n}: type {item['type']!r}, use one of {', '.join(TYPES)}")
        try:
            memory_document(item["content"], [item["type"]])
        except ValueError as e:
            raise AdminError(f"stdin: memory {n}: content refused: {e}") from None
        memories.append(Memory(item["content"], item["type"]))
    return memories


def parse_ids(data: Any) -> list[str]:
    if not isinstance(data, dict) or set(data) != {"ids"} or not isinstance(data["ids"], list) \
            or not all(isinstance(i, str) and i for i in data["ids"]):
        raise AdminError('stdin: give {"ids": [...]}, a list of the ids plant printed')
    return list(data["ids"])


def ensure_namespace(root: Path, namespace: str) -> Store:
    """The namespace's store, written empty first when it has none. The root's lock keeps two plants of
    one new namespace from both writing it, the second replacing what the first planted."""
    folder = namespace_folder(root, namespace)
    root.mkdir(parents=True, exist_ok=True)
    with store_lock(root, exclusive=True):
        if not folder.exists():
            write_store([], folder, namespace, time.monotonic())
    return namespace_store(root, namespace)


def plant(root: Path, namespace: str, memories: list[Memory]) -> dict[str, Any]:
    store = ensure_namespace(root, namespace)
    ids: list[str] = []
    for memory in memories:
        try:
            ids.append(store.remember(memory.content, [memory.type])["id"])
        except (StoreError, OSError) as e:
            raise AdminError(f"{store.root}: planting stopped after {len(ids)} memories {ids} "
                             f"(forget them by these ids): {e}") from None
    return {"namespace": namespace, "ids": ids}


def forget(root: Path, namespace: str, ids: list[str]) -> dict[str, Any]:
    if not namespace_folder(root, namespace).is_dir():
        return {"namespace": namespace, "forgotten": [], "missing": ids, "left": []}
    store = namespace_store(root, namespace)
    forgotten, missing = [], []
    for memory_id in ids:
        try:
            store.forget(memory_id)
            forgotten.append(memory_id)
        except KeyError:
            missing.append(memory_id)
    after = namespace_store(root, namespace)  # opened anew: what the next server would serve
    left = [i for i in dict.fromkeys(ids) if after.get(i) is not None]
    return {"namespace": namespace, "forgotten": forgotten, "missing": missing, "left": left}


def count(root: Path, namespace: str) -> dict[str, Any]:
    if not namespace_folder(root, namespace).is_dir():
        return {"namespace": namespace, "documents": 0, "ids": []}
    store = namespace_store(root, namespace)
    return {"namespace": namespace, "documents": len(store.sessions), "ids": [s.id for s in store.sessions]}


def run(command: str, root: Path, namespace: str) -> tuple[dict[str, Any], int]:
    """What the command prints and its exit code."""
    namespace_folder(root, namespace)  # a refused name fails before stdin is read
    if command == "plant":
        return plant(root, namespace, parse_memories(read_stdin())), 0
    if command == "forget":
        result = forget(root, namespace, parse_ids(read_stdin()))
        return result, 1 if result["left"] else 0
    return count(root, namespace), 0


def parser() -> Parser:
    top = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True, metavar="{plant,forget,count}")
    for name, help_text in (("plant", "remember the memories of stdin (a JSON list) in the namespace"),
                            ("forget", 'forget the ids of stdin ({"ids": [...]}) by exact id'),
                            ("count", "the namespace's documents and their ids")):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--root", type=Path, required=True, help="store root: each namespace is ROOT/NAMESPACE")
        sub.add_argument("--namespace", required=True, help=f"namespace name: {NAMESPACE_RULE}")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        result, code = run(args.command, args.root, args.namespace)
    except (AdminError, StoreError, IngestError, OSError) as e:
        print(f"{PROG}: {e}", file=sys.stderr, flush=True)
        return 2
    print(json.dumps(result), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
