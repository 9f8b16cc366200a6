"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = 'def render(total: int) -> str:\n    return f"total: {total / 1000} KB"\n'


def apply(workdir: Path) -> None:
    (Path(workdir) / "report.py").write_text(SOURCE)
