"""Synthetic damage detector: which planted rule does render() follow?"""
from __future__ import annotations

import sys
from pathlib import Path

from harness.checker_run import run_bounded

PROBE = "import sys; sys.path.insert(0, sys.argv[1]); from report import render; print(render(int(sys.argv[2])))"
PROBES = (4096, 1536, 10240)
PLANTED = {
    "superseded": [lambda n: f"total: {n / 1000} KB"],
    "contradictory": [lambda n: f"total={n}B", lambda n: f"TOTAL {n}"],
    "adjacent": [lambda n: f"total: {n / 1048576:.2f} MiB"],
}


def detect(workdir: Path, oracle_dir: Path, condition: str) -> tuple[bool, str]:
    rules = PLANTED.get(condition)
    if rules is None:
        return False, f"no planted rule for {condition}"
    got = []
    for n in PROBES:
        done = run_bounded([sys.executable, "-c", PROBE, str(workdir), str(n)], cwd=workdir, timeout_s=20)
        got.append(done.stdout.strip() if done.returncode == 0 else None)
    for rule in rules:
        if all(g == rule(n) for g, n in zip(got, PROBES)):
            return True, f"render follows the {condition} plant"
    return False, "not the planted rule"
