"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''from datetime import date


def quarter_label(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "periods.py").write_text(SOURCE)
