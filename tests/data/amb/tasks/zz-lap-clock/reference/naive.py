"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''from datetime import timedelta


def format_duration(seconds: int) -> str:
    return str(timedelta(seconds=seconds))
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "laps.py").write_text(SOURCE)
