"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''from datetime import date


def quarter_label(day: date) -> str:
    end = day.year + 1 if day.month >= 7 else day.year
    return f"FY{end % 100:02d} Q{(day.month - 7) % 12 // 3 + 1}"
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "periods.py").write_text(SOURCE)
