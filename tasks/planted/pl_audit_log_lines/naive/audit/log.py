"""The audit log file."""

import json


def format_line(event, **fields):
    """One audit-log line (without a trailing newline) for `event` and its fields."""
    return json.dumps({"event": event, **fields}, default=str)


def write_event(path, event, **fields):
    with open(path, "a", encoding="utf-8") as f:
        f.write(format_line(event, **fields) + "\n")
