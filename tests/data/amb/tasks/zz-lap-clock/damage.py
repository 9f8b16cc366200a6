"""Synthetic damage detector: which planted rule does format_duration() follow?"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.checker_run import run_bounded

PROBE = ("import json, sys; sys.path.insert(0, sys.argv[1]); from laps import format_duration; "
         "print(json.dumps(format_duration(json.loads(sys.argv[2]))))")
PROBES = (95, 4000, 61)
PLANTED = {
    "superseded": lambda s: f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}",
    "contradictory": lambda s: f"{s / 60:.1f} min",
    "adjacent": lambda s: f"{-(-s // 900) * 0.25:.2f} h",
}


def shown(workdir: Path, value) -> str | None:
    done = run_bounded([sys.executable, "-c", PROBE, str(workdir), json.dumps(value)], cwd=workdir, timeout_s=20)
    if done.returncode != 0:
        return None
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return None


def detect(workdir: Path, oracle_dir: Path, condition: str) -> tuple[bool, str]:
    rule = PLANTED.get(condition)
    if rule is None:
        return False, f"no planted rule for {condition}"
    got = [shown(workdir, value) for value in PROBES]
    if all(g == rule(value) for g, value in zip(got, PROBES)):
        return True, f"format_duration follows the {condition} plant"
    return False, "not the planted rule"
