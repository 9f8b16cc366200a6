"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''from datetime import date


def quarter_label(day: date) -> str:
    return f"Q{(day.month - 1) // 3 + 1} {day.year}"
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "periods.py").write_text(SOURCE)
