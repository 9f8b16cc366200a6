"""Every module imports on its own, in a fresh interpreter: no circular import hides behind import order."""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def modules() -> list[str]:
    found = []
    for path in sorted((REPO / "runner").rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        if "scaffold" in parts or "stubs" in parts:  # templates and sandbox scripts, not modules of the package
            continue
        found.append(".".join(parts).removesuffix(".__init__"))
    return found


def test_every_module_imports_alone():
    names = modules()
    assert len(names) > 50 and "runner.protocols.two_session.protocol" in names
    program = "import importlib, sys\nfor n in sys.argv[1:]:\n    importlib.import_module(n)\n"

    def imported(name: str) -> str | None:  # one interpreter each: a module imported earlier cannot mask a cycle
        result = subprocess.run([sys.executable, "-c", program, name], cwd=REPO, capture_output=True, text=True, timeout=60)
        return f"{name}: {result.stderr.strip().splitlines()[-1]}" if result.returncode else None

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        failed = [f for f in pool.map(imported, names) if f]
    assert not failed, "\n".join(failed)
