"""Scores one case: 1.0 when the last non-empty line of the run's stdout is the answer."""
import json
import os
from pathlib import Path


def main() -> None:
    manifest = json.loads(os.environ["TRAPTASK_MANIFEST"])
    stdout = Path(manifest["run"]["stdout"]).read_text(errors="replace")
    exit_code = json.loads(Path(manifest["run"]["meta"]).read_text())["exit_code"]
    expected = json.loads((Path(manifest["expected_dir"]) / "answer.json").read_text())
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    score = 1.0 if exit_code == 0 and last == expected["answer"] else 0.0
    print(json.dumps({"id": expected["id"], "score": score, "category": expected["category"], "reported": last}))


if __name__ == "__main__":
    main()
