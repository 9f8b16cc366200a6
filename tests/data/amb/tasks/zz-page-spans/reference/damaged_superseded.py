"""Synthetic reference for the importer tests."""
from pathlib import Path

SOURCE = r'''def compress(pages: list[int]) -> str:
    out, i = [], 0
    while i < len(pages):
        j = i
        while j + 1 < len(pages) and pages[j + 1] == pages[j] + 1:
            j += 1
        if j - i + 1 >= 2:
            out.append(f"{pages[i]}\u2013{pages[j]}")
            i = j + 1
        else:
            out.append(str(pages[i]))
            i += 1
    return ', '.join(out)
'''


def apply(workdir: Path) -> None:
    (Path(workdir) / "pages.py").write_text(SOURCE)
