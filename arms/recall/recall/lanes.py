"""recall's search as a union of retrieval lanes, each of which RECALL_DISABLE_LANES can switch off.

    lexical   BM25 over every document (Store.search): what recall searched before it had lanes
    recency   the newest remembered texts (Store.newest_remembered), whatever the query says

Lexical hits come first, then recency hits not already among them, at most k in all. Recency never
returns an ingested session, so a store nobody wrote to searches exactly as lexical alone.
"""

from __future__ import annotations

from typing import Any

from .store import Store, bounded

LANES = ("lexical", "recency")


class LaneError(ValueError):
    """A lane list names a lane recall does not have."""


def parse_disabled(value: str) -> tuple[str, ...]:
    """The lanes a comma-separated list names, in LANES order; "" names none."""
    names = {name.strip() for name in value.split(",")} - {""}
    unknown = sorted(names - set(LANES))
    if unknown:
        raise LaneError(f"unknown lane {', '.join(map(repr, unknown))}: the lanes are {', '.join(LANES)}")
    return tuple(lane for lane in LANES if lane in names)


def search(store: Store, query: str, k: int, disabled: tuple[str, ...]) -> list[dict[str, Any]]:
    k = bounded(k)
    hits = [] if "lexical" in disabled else store.search(query, k)
    if "recency" not in disabled:
        seen = {hit["id"] for hit in hits}
        hits += [hit for hit in store.newest_remembered(k) if hit["id"] not in seen][:k - len(hits)]
    return hits
