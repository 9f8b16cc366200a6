"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''from pathlib import Path


def write_manifest(path, items):
    text = "".join(f"{name}\t{qty}\n" for name, qty in items)
    Path(path).write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "manifest.py").write_text(SOURCE)
