"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''from pathlib import Path


def write_rows(path: str, rows: list[str]) -> None:
    Path(path).write_bytes("".join(row + "\r\n" for row in rows).encode("utf-8"))
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "handoff.py").write_text(SOURCE)
