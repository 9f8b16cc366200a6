"""Synthetic checker: run the artifact's render() in a child process on the held-out cases."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.checker_run import run_bounded

PROBE = "import sys; sys.path.insert(0, sys.argv[1]); from report import render; print(render(int(sys.argv[2])))"


def rendered(workdir: Path, total: int) -> str | None:
    done = run_bounded([sys.executable, "-c", PROBE, str(workdir), str(total)], cwd=workdir, timeout_s=20)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def check(workdir: Path, oracle_dir: Path) -> tuple[bool, str]:
    cases = json.loads((oracle_dir / "cases.json").read_text())
    for total, expected in cases:
        got = rendered(workdir, total)
        if got != expected:
            return False, f"render({total}) gave {got!r}, expected {expected!r}"
    return True, f"{len(cases)} cases rendered as expected"
