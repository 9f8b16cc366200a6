"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''def format_duration(seconds: int) -> str:
    return f"{seconds // 60}m{seconds % 60:02d}s"
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "laps.py").write_text(SOURCE)
