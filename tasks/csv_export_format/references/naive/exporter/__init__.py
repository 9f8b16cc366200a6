"""CSV exports of ledger data for the accounting team."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Mapping, Sequence


def header(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Column names in output order: the keys of the first row, in insertion order."""
    return list(rows[0]) if rows else []


def export_rows(rows: Sequence[Mapping[str, Any]], path: str | Path) -> int:
    """Write ``rows`` to ``path`` as a CSV file and return the number of data rows.

    The file has one header line (``header(rows)``) followed by one line per row.
    Every row has the same keys as the first one. ``None`` is written as an empty
    field, any other value with ``str()``.
    """
    columns = header(rows)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if row[c] is None else str(row[c]) for c in columns])
    return len(rows)


def export_journal(entries: Sequence[Mapping[str, Any]], path: str | Path) -> int:
    """Export journal entries (date, account, description, amount) for the month."""
    rows = [
        {
            "date": e["date"],
            "account": e["account"],
            "description": e["description"],
            "amount": f"{e['amount']:.2f}",
        }
        for e in entries
    ]
    return export_rows(rows, path)
