"""Event log: one plain-text line per event, appended to a log file."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path


def format_event(ts: datetime, message: str) -> str:
    """Return the log line for an event that happened at ``ts``.

    ``ts`` is always timezone-aware. The line is the timestamp, a single
    space, then ``message``; it has no trailing newline.
    """
    utc = ts.astimezone(timezone.utc)
    stamp = utc.strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp} {message}"


def append_event(path: Path, ts: datetime, message: str) -> None:
    """Append one event line to the log file at ``path``."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(format_event(ts, message) + "\n")


def read_events(path: Path) -> list[tuple[str, str]]:
    """Return ``(timestamp, message)`` pairs for every line in the log."""
    events = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line:
                stamp, _, message = line.partition(" ")
                events.append((stamp, message))
    return events
