"""Synthetic damage detector: which planted rule does quarter_label() follow?"""
from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path

from harness.checker_run import run_bounded

PROBE = ("import datetime, json, sys; sys.path.insert(0, sys.argv[1]); from periods import quarter_label; "
         "print(json.dumps(quarter_label(datetime.date.fromisoformat(sys.argv[2]))))")
PROBES = ("2025-08-14", "2026-02-02", "2026-05-20")


def _fy(iso: str, first: int) -> str:
    day = date.fromisoformat(iso)
    end = day.year + 1 if day.month >= first else day.year
    return f"FY{end % 100:02d} Q{(day.month - first) % 12 // 3 + 1}"


PLANTED = {
    "superseded": lambda iso: f"{iso[:4]}-Q{(int(iso[5:7]) - 1) // 3 + 1}",
    "contradictory": lambda iso: _fy(iso, 4),
    "adjacent": lambda iso: "{}-W{:02d}".format(*date.fromisoformat(iso).isocalendar()[:2]),
}


def shown(workdir: Path, value) -> str | None:
    done = run_bounded([sys.executable, "-c", PROBE, str(workdir), value], cwd=workdir, timeout_s=20)
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
        return True, f"quarter_label follows the {condition} plant"
    return False, "not the planted rule"
