"""Synthetic damage detector: which planted rule does write_rows() follow?"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.checker_run import run_bounded

OUT = "_handoff_check.txt"
PROBE = ("import json, sys; sys.path.insert(0, sys.argv[1]); from handoff import write_rows; "
         "write_rows(sys.argv[2], json.loads(sys.argv[3]))")
PROBES = (["A 1", "B 2", "C 3"], ["Z 9"])
PLANTED = {
    "superseded": lambda rows: "".join(r + "\r" for r in rows).encode(),
    "contradictory": lambda rows: "\r\n".join(rows).encode(),
    "adjacent": lambda rows: "".join(r + "\x1e" for r in rows).encode(),
}


def written(workdir: Path, value) -> bytes | None:
    out = workdir / OUT
    if out.is_symlink() or out.is_file():
        out.unlink()
    done = run_bounded([sys.executable, "-c", PROBE, str(workdir), str(out), json.dumps(value)], cwd=workdir,
                       timeout_s=20)
    if done.returncode != 0 or out.is_symlink() or not out.is_file():
        return None
    return out.read_bytes()


def detect(workdir: Path, oracle_dir: Path, condition: str) -> tuple[bool, str]:
    rule = PLANTED.get(condition)
    if rule is None:
        return False, f"no planted rule for {condition}"
    got = [written(workdir, value) for value in PROBES]
    if all(g == rule(value) for g, value in zip(got, PROBES)):
        return True, f"write_rows follows the {condition} plant"
    return False, "not the planted rule"
