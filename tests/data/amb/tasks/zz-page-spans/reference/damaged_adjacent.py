"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''def compress(pages: list[int]) -> str:
    return ",".join(str(p) for p in pages)
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "pages.py").write_text(SOURCE)
