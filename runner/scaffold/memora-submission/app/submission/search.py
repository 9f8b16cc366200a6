"""search.sh: per query, the person's records up to the cutoff that share the most words with the question,
the newest first among equals."""

import argparse
import json
import os
import sys

sys.path.insert(0, "/app/answer")
from words import words  # noqa: E402

TOP = 20  # the contract allows up to 350


def main() -> int:
    parser = argparse.ArgumentParser(prog="search.sh")
    parser.add_argument("--index-dir", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    with open(os.path.join(args.index_dir, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    with open(args.queries, encoding="utf-8") as f, open(args.output, "w", encoding="utf-8") as out:
        for line in f:
            q = json.loads(line)
            asked = words(q["question"])
            scored = [(len(asked & set(e["words"])), e["session"], e["id"]) for e in index
                      if e["person"] == q["persona_id"] and e["session"] <= q["cutoff_session"]]
            best = sorted(scored, reverse=True)[:TOP]  # most words shared, then the newest
            out.write(json.dumps({"query_id": q["query_id"], "record_ids": [i for _, _, i in best]}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
