"""In-memory record store keyed by ids derived from record names."""
from __future__ import annotations

import hashlib
from typing import Any


def make_id(name: str) -> str:
    """Return the id under which the record called ``name`` is stored."""
    normalized = name.strip().casefold()
    return hashlib.blake2b(normalized.encode("utf-8"), digest_size=8).hexdigest()


class RecordStore:
    """Holds records (plain dicts) by id."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}

    def put(self, name: str, data: dict[str, Any]) -> str:
        """Store ``data`` for the record called ``name`` and return its id."""
        record_id = make_id(name)
        self._records[record_id] = {"name": name, **data}
        return record_id

    def get(self, name: str) -> dict[str, Any] | None:
        """Return the record called ``name``, or None."""
        return self._records.get(make_id(name))

    def ids(self) -> list[str]:
        return sorted(self._records)
