"""Synthetic checker: run the artifact's format_duration() in a child process on the held-out cases."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.checker_run import run_bounded

PROBE = ("import json, sys; sys.path.insert(0, sys.argv[1]); from laps import format_duration; "
         "print(json.dumps(format_duration(json.loads(sys.argv[2]))))")


def shown(workdir: Path, value) -> str | None:
    done = run_bounded([sys.executable, "-c", PROBE, str(workdir), json.dumps(value)], cwd=workdir, timeout_s=20)
    if done.returncode != 0:
        return None
    try:
        got = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return None
    return got if isinstance(got, str) else None


def check(workdir: Path, oracle_dir: Path) -> tuple[bool, str]:
    cases = json.loads((oracle_dir / "cases.json").read_text())
    for value, expected in cases:
        got = shown(workdir, value)
        if got != expected:
            return False, f"format_duration({value!r}) gave {got!r}, expected {expected!r}"
    return True, f"{len(cases)} cases as expected"
