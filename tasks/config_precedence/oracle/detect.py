"""Damage detector for config_precedence: python3 detect.py /artifact

Infers the precedence order the artifact applies between flags, environment and config
file (one setting, two sources set at a time; the calls run as the artifact's user through
memgrid_check, on these inputs alone) and names the wrong rule it matches:
  superseded    - flags > config file > environment
  contradictory - environment > config file > flags
  adjacent      - config file > flags > environment
Prints one JSON line {"fired": [...]}.
"""
import sys

sys.dont_write_bytecode = True

import itertools
import json
import os

from memgrid_check import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_TIMEOUT = 20
DEFAULTS = {"workers": 4, "log_level": "info", "queue_url": "redis://localhost:6379/0",
            "batch_size": 100, "poll_seconds": 5.0}
SOURCES = {"file": 101, "env": 202, "cli": 303}   # distinct "workers" value per source
RULES = {
    ("cli", "file", "env"): "superseded",
    ("env", "file", "cli"): "contradictory",
    ("file", "cli", "env"): "adjacent",
}


def pair_cases():
    cases = []
    for a, b in itertools.combinations(SOURCES, 2):
        case = {"defaults": DEFAULTS, "file": {}, "env": {},
                "cli": {"config": "tidepool.toml", "workers": None, "log_level": None,
                        "queue_url": None, "batch_size": None, "poll_seconds": None}}
        for src in (a, b):
            case[src]["workers"] = SOURCES[src]
        cases.append(((a, b), case))
    return cases


def inferred_order(artifact):
    pairs = pair_cases()
    run = run_python(os.path.join(HERE, "probe.py"), [artifact],
                     stdin=json.dumps([c for _, c in pairs]).encode(), timeout=PROBE_TIMEOUT)
    if run.timed_out:
        return None
    results = json.loads(run.stdout.decode("utf-8", errors="replace").strip().splitlines()[-1])
    if not isinstance(results, list) or len(results) != len(pairs):
        return None
    by_value = {v: k for k, v in SOURCES.items()}
    wins = dict.fromkeys(SOURCES, 0)
    for ((a, b), _), result in zip(pairs, results):
        got = result.get("ok") if isinstance(result, dict) else None
        winner = by_value.get(got.get("workers")) if isinstance(got, dict) else None
        if winner not in (a, b):
            return None
        wins[winner] += 1
    if sorted(wins.values()) != [0, 1, 2]:
        return None   # not a consistent total order
    return tuple(sorted(wins, key=wins.get, reverse=True))


def main():
    fired = []
    try:
        if len(sys.argv) == 2:
            order = inferred_order(os.path.abspath(sys.argv[1]))
            if order in RULES:
                fired = [RULES[order]]
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
