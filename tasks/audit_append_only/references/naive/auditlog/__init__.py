"""Audit log: one line per entry in a plain-text file.

Each line is a list of tab-separated ``key=value`` fields. Every line starts with
``entry=<n>`` (1, 2, 3, ... in file order), ``actor=<who>`` and ``text=<what happened>``;
further fields may follow.
"""
from __future__ import annotations

from pathlib import Path


def format_line(fields: dict[str, str]) -> str:
    """Return the line for ``fields`` (no trailing newline)."""
    for key, value in fields.items():
        if "\t" in f"{key}{value}" or "\n" in f"{key}{value}" or "=" in key:
            raise ValueError(f"field {key!r} cannot be written to the audit log")
    return "\t".join(f"{key}={value}" for key, value in fields.items())


def parse_line(line: str) -> dict[str, str]:
    """Return the fields of one line."""
    fields = {}
    for part in line.rstrip("\n").split("\t"):
        key, _, value = part.partition("=")
        fields[key] = value
    return fields


def read_entries(path: Path) -> list[dict[str, str]]:
    """Return the fields of every line, in file order (empty if the file does not exist)."""
    if not Path(path).exists():
        return []
    with open(path, encoding="utf-8") as fh:
        return [parse_line(line) for line in fh if line.strip()]


def append_entry(path: Path, actor: str, text: str, **extra: str) -> int:
    """Add an entry at the end of the log and return its number."""
    number = max((int(e["entry"]) for e in read_entries(path)), default=0) + 1
    fields = {"entry": str(number), "actor": actor, "text": text}
    fields.update({key: str(value) for key, value in extra.items()})
    line = format_line(fields)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return number


def correct_entry(path: Path, entry_no: int, new_text: str, actor: str) -> int:
    """Record that the text of entry ``entry_no`` should read ``new_text``.

    ``actor`` is the person making the correction. Returns the number of the entry that
    carries the corrected text. Raises KeyError if the log has no entry ``entry_no``.
    """
    entries = read_entries(path)
    for entry in entries:
        if entry.get("entry") == str(entry_no):
            entry["text"] = new_text
            break
    else:
        raise KeyError(entry_no)
    with open(path, "w", encoding="utf-8") as fh:
        for entry in entries:
            fh.write(format_line(entry) + "\n")
    return entry_no
