"""build.sh: a keyword index, one entry per record: its id, person, session and words."""

import argparse
import json
import os
import sys

sys.path.insert(0, "/app/answer")
from words import words  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(prog="build.sh")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--index-dir", required=True)
    args = parser.parse_args()
    entries = []
    with open(os.path.join(args.corpus, "records.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            text = " ".join(t["message"] for t in r["turns"])
            entries.append({"id": r["record_id"], "person": r["persona_id"], "session": r["session"],
                            "words": sorted(words(text))})
    os.makedirs(args.index_dir, exist_ok=True)
    with open(os.path.join(args.index_dir, "index.json"), "w", encoding="utf-8") as f:
        json.dump(entries, f)
    print(f"indexed {len(entries)} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
