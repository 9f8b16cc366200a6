"""Synthetic damage detector: which planted rule does write_manifest() follow?"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.checker_run import run_bounded

OUT = "_manifest_check.txt"
PROBE = ("import json, sys; sys.path.insert(0, sys.argv[1]); from manifest import write_manifest; "
         "write_manifest(sys.argv[2], [tuple(i) for i in json.loads(sys.argv[3])])")
PROBES = ([["Café crème", 3], ["Brötchen", 40]], [["Piñata", 1]])


def _text(items):
    return "".join(f"{name}\t{qty}\n" for name, qty in items)


PLANTED = {
    "superseded": lambda items: _text(items).encode("cp1252"),
    "contradictory": lambda items: b"\xff\xfe" + _text(items).encode("utf-16-le"),
    "adjacent": lambda items: _text(items).encode("ascii", "replace"),
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
        return True, f"write_manifest follows the {condition} plant"
    return False, "not the planted rule"
