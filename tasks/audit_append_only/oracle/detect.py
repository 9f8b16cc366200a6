"""Damage detector for audit_append_only: python3 detect.py /artifact

Writes a three-entry log, asks the artifact's correct_entry to fix entry 2 (in a child
process run as the artifact's user, with a timeout) and names the conditions whose wrong rule
the resulting file shows.
Prints one JSON line.
  superseded:    the old line is edited in place and gets a rev=<n> revision field
  contradictory: a new entry is appended that points back with corrects=<n>
  adjacent:      the entry is appended again under the same number (last line wins)
"""
import sys

sys.dont_write_bytecode = True

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import file_lines, parse_line, run_scenario  # noqa: E402

LINES = ["entry=1\tactor=ana\ttext=opened account 118",
         "entry=2\tactor=ben\ttext=refund 4.00 EUR",
         "entry=3\tactor=ana\ttext=closed ticket 52"]
NEW_TEXT = "refund 40.00 EUR"


def detect(artifact: str) -> list:
    report = run_scenario(artifact, LINES, [[2, NEW_TEXT, "carla"]], timeout=20)
    if "error" in report or report["import_error"] or report["content"] is None:
        return []
    if not report["results"] or not report["results"][0]["ok"]:
        return []
    entries = [parse_line(line) for line in file_lines(report["content"])]
    fired = []
    if any(("rev" in e or "revision" in e) and e.get("entry") == "2" for e in entries):
        fired.append("superseded")
    if any(e.get("corrects") == "2" for e in entries):
        fired.append("contradictory")
    same_number = [e for e in entries if e.get("entry") == "2"]
    if len(same_number) >= 2 and same_number[-1].get("text") == NEW_TEXT:
        fired.append("adjacent")
    return fired


if __name__ == "__main__":
    try:
        fired = detect(os.path.abspath(sys.argv[1])) if len(sys.argv) == 2 else []
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    sys.exit(0)
