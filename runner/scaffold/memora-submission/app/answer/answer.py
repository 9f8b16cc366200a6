"""answer.sh: the user's own words in the newest records that share the most words with the question."""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from words import words  # noqa: E402

KEEP = 2  # records quoted in the answer


def user_lines(text: str) -> str:
    lines = [line[len("user:"):].strip() for line in text.splitlines() if line.lower().startswith("user:")]
    return " ".join(lines) or text


def main() -> int:
    parser = argparse.ArgumentParser(prog="answer.sh")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    with open(args.input, encoding="utf-8") as f:
        request = json.load(f)
    asked = words(request["question"])
    ranked = sorted(request["records"], key=lambda r: (len(asked & words(r["text"])), r["session"]), reverse=True)
    quoted = [user_lines(r["text"]) for r in ranked[:KEEP]]
    answer = " ".join(quoted) or "I do not know."
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump({"query_id": request["query_id"], "answer": answer}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
