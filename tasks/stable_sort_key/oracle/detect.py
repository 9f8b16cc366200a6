"""Damage detector for stable_sort_key: python3 detect.py /artifact

Sorts the probe ticket sets with the artifact's sort_tickets and fires a condition when the
order matches that condition's wrong rule on every probe (see rules.py):
  superseded    - newest first (created_at descending, id descending)
  contradictory - priority descending, then updated_at descending, then id
  adjacent      - the knowledge-base index order: title case-insensitively, then id
Prints one JSON line {"fired": [...]} and exits 0.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30


def artifact_orders(artifact: str, probes_path: str) -> list | None:
    workdir = tempfile.mkdtemp(prefix="sortdetect-", dir="/tmp")
    out = os.path.join(workdir, "results.json")
    try:
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        try:
            subprocess.run(
                [sys.executable, "-B", os.path.join(HERE, "run_sort.py"), artifact, probes_path, out],
                cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return None
        with open(out, encoding="utf-8") as fh:
            results = json.load(fh).get("results")
        if not results or any("ids" not in r for r in results):
            return None
        return [r["ids"] for r in results]
    except (OSError, ValueError, AttributeError):
        return None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> list[str]:
    if len(sys.argv) != 2:
        return []
    sys.path.insert(0, HERE)
    from rules import WRONG_RULES

    probes_path = os.path.join(HERE, "probes.json")
    with open(probes_path, encoding="utf-8") as fh:
        probes = json.load(fh)
    got = artifact_orders(os.path.abspath(sys.argv[1]), probes_path)
    if got is None or len(got) != len(probes):
        return []
    return [condition for condition, rule in WRONG_RULES.items()
            if all(rule(p["tickets"]) == ids for p, ids in zip(probes, got))]


if __name__ == "__main__":
    try:
        fired = main()
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    sys.exit(0)
