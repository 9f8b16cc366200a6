"""Synthetic damage detector: which planted rule does compress() follow?"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.checker_run import run_bounded

PROBE = ("import json, sys; sys.path.insert(0, sys.argv[1]); from pages import compress; "
         "print(json.dumps(compress(json.loads(sys.argv[2]))))")
PROBES = ([1, 2, 3, 7, 8, 12], [3, 4, 5, 6])


def _spans(pages, sep, joiner, minimum):
    out, i = [], 0
    while i < len(pages):
        j = i
        while j + 1 < len(pages) and pages[j + 1] == pages[j] + 1:
            j += 1
        if j - i + 1 >= minimum:
            out.append(f"{pages[i]}{sep}{pages[j]}")
            i = j + 1
        else:
            out.append(str(pages[i]))
            i += 1
    return joiner.join(out)


PLANTED = {
    "superseded": lambda p: _spans(p, "\u2013", ", ", 2),
    "contradictory": lambda p: _spans(p, ":", ",", 2),
    "adjacent": lambda p: ",".join(str(n) for n in p),
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
        return True, f"compress follows the {condition} plant"
    return False, "not the planted rule"
