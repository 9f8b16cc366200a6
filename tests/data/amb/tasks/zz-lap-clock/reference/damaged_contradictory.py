"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''def format_duration(seconds: int) -> str:
    return f"{seconds / 60:.1f} min"
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "laps.py").write_text(SOURCE)
