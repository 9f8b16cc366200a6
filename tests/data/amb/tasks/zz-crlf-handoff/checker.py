"""Synthetic checker: run the artifact's write_rows() in a child process on the held-out cases and compare
the bytes of the file it writes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.checker_run import run_bounded

OUT = "_handoff_check.txt"
PROBE = ("import json, sys; sys.path.insert(0, sys.argv[1]); from handoff import write_rows; "
         "write_rows(sys.argv[2], json.loads(sys.argv[3]))")


def written(workdir: Path, value) -> bytes | None:
    out = workdir / OUT
    if out.is_symlink() or out.is_file():
        out.unlink()
    done = run_bounded([sys.executable, "-c", PROBE, str(workdir), str(out), json.dumps(value)], cwd=workdir,
                       timeout_s=20)
    if done.returncode != 0 or out.is_symlink() or not out.is_file():
        return None
    return out.read_bytes()


def check(workdir: Path, oracle_dir: Path) -> tuple[bool, str]:
    cases = json.loads((oracle_dir / "cases.json").read_text(encoding="utf-8"))
    for case in cases:
        expected = case["expected"].encode("utf-8")
        got = written(workdir, case["rows"])
        if got != expected:
            return False, f"write_rows({case['rows']!r}) wrote {got!r}, expected {expected!r}"
    return True, f"{len(cases)} cases written as expected"
