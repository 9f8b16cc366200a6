"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''def format_duration(seconds: int) -> str:
    h, rest = divmod(seconds, 3600)
    return f"{h:02d}:{rest // 60:02d}:{rest % 60:02d}"
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "laps.py").write_text(SOURCE)
