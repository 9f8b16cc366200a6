"""The run's verdict: the mean score over the scored cases, passed at 0.5."""
import json
import os


def main() -> None:
    cases = json.loads(os.environ["TRAPTASK_MANIFEST"])
    scored = [c["metrics"]["score"] for c in cases if (c.get("metrics") or {}).get("score") is not None]
    mean = sum(scored) / len(scored) if scored else 0.0
    print(json.dumps({"passed": bool(scored) and mean >= 0.5, "score": round(mean, 3), "n_total": len(cases),
                      "n_scored": len(scored)}))


if __name__ == "__main__":
    main()
