"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''import math


def format_duration(seconds: int) -> str:
    return f"{math.ceil(seconds / 900) * 0.25:.2f} h"
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "laps.py").write_text(SOURCE)
