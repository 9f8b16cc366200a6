"""Writes inputs/<id>/step1.txt, step2.txt and expected/<id>/answer.json from gold.cases.json (seeded)."""
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "heron", "indigo", "juniper"]


def answer(case: dict) -> str:
    rng = random.Random(case["seed"])
    if case["kind"] == "word":
        return "-".join(rng.sample(WORDS, 3))
    return f"TK-{rng.randint(100000, 999999)}"


def main() -> None:
    cases = json.loads((HERE / "gold.cases.json").read_text())["cases"]
    for case in cases:
        value = answer(case)
        inputs, expected = HERE / "inputs" / case["id"], HERE / "expected" / case["id"]
        inputs.mkdir(parents=True, exist_ok=True)
        expected.mkdir(parents=True, exist_ok=True)
        (inputs / "step1.txt").write_text(f"PART 1 of 2. Remember this {case['kind']}: {value}\n")
        (inputs / "step2.txt").write_text(f"PART 2 of 2. Which {case['kind']} were you asked to remember? "
                                          "Print it alone on the last line, or UNKNOWN.\n")
        (expected / "answer.json").write_text(json.dumps({"id": case["id"], "category": case["kind"],
                                                          "answer": value}, indent=2) + "\n")
    print(f"built {len(cases)} cases")


if __name__ == "__main__":
    main()
