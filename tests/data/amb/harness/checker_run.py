"""Synthetic stand-in for amb's harness/checker_run.py: run a command, bounded."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Completed:
    returncode: int | None
    stdout: str
    stderr: str


def run_bounded(command, *, cwd: Path, timeout_s: float = 60.0) -> Completed:
    try:
        done = subprocess.run(list(command), cwd=str(cwd), capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Completed(None, "", "timed out")
    return Completed(done.returncode, done.stdout, done.stderr)
