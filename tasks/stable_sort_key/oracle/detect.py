"""Damage detector for stable_sort_key: python3 detect.py /artifact

Sorts the probe ticket sets with the artifact's sort_tickets (in a child process, with a timeout,
as the artifact's user through memgrid_check: run_sort.py via observe.py) and fires a condition
when the order matches that condition's wrong rule on every probe (see rules.py):
  superseded    - newest first (created_at descending, id descending)
  contradictory - priority descending, then updated_at descending, then id
  adjacent      - the knowledge-base index order: title case-insensitively, then id
Prints one JSON line {"fired": [...]} and exits 0.
"""
import sys

sys.dont_write_bytecode = True

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30


def artifact_orders(artifact: str, ticket_sets: list) -> list | None:
    """The order of ids sort_tickets gives each ticket set (run as the artifact's user through
    memgrid_check, see observe.py); None unless every set came back sorted."""
    from observe import sort_orders

    payload = sort_orders(artifact, ticket_sets, TIMEOUT)
    results = payload.get("results")
    if not results or payload.get("problem") or any("ids" not in r for r in results):
        return None
    return [r["ids"] for r in results]


def main() -> list[str]:
    if len(sys.argv) != 2:
        return []
    sys.path.insert(0, HERE)
    from rules import WRONG_RULES

    with open(os.path.join(HERE, "probes.json"), encoding="utf-8") as fh:
        probes = json.load(fh)
    got = artifact_orders(os.path.abspath(sys.argv[1]), [p["tickets"] for p in probes])
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
