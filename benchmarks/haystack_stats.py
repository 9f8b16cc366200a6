"""Haystack generator: speed, variety and reproducibility at corpus scale.

Generates the haystack for seeds 0 and 1 (4,880 documents each, the default scale) from the
current tasks' prompts and fact terms, then prints: wall time per call, documents per tier,
distinct documents, vocabulary size, length distribution, reserved-term hits, and whether seed 0
is reproduced exactly and differs from seed 1. No Docker; nothing is written.

    .venv/bin/python benchmarks/haystack_stats.py [--count 4880] [--root /work/main] [--quick]
"""

import argparse
import json
import re
import resource
import sys
import time
from collections import Counter
from pathlib import Path

from runner.corpus import haystack
from runner.errors import UserError
from runner.plan.spec import load_all_tasks, load_task

REPO = Path(__file__).resolve().parent.parent
QUICK_COUNT = 200  # enough documents to draw from every tier
TARGET_DISTINCT = 99.0


def load_tasks(root: Path) -> tuple[list, list[str]]:
    """The tasks that load; others are mid-edit by someone else, so they are skipped and named."""
    try:
        return list(load_all_tasks(root).values()), []
    except UserError:
        pass
    tasks, skipped = [], []
    for task_dir in sorted(p.parent for p in (root / "tasks").glob("*/task.yaml")):
        try:
            tasks.append(load_task(task_dir))
        except (UserError, OSError, ValueError, KeyError, TypeError) as e:
            skipped.append(f"{task_dir.name} ({str(e).splitlines()[0][:120]})")
    return tasks, skipped


_SPLIT = re.compile(r"[^A-Za-z0-9]+")  # underscores, slashes, dots... all separate words
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def words(text: str) -> list[str]:
    """Lower-cased alphabetic word tokens: identifiers are split (snake_case, CamelCase), and
    anything with a digit (hex hashes, numbers, versions) is not a word."""
    out = []
    for chunk in _SPLIT.split(text):
        if not chunk:
            continue
        parts = [chunk] if chunk.islower() else _CAMEL.findall(chunk)
        out.extend(p.lower() for p in parts if p.isalpha())
    return out


def spread(values: list[int]) -> str:
    v = sorted(values)
    pick = lambda q: v[round(q * (len(v) - 1))]
    return f"min {v[0]} / p10 {pick(0.1)} / median {pick(0.5)} / p90 {pick(0.9)} / max {v[-1]}"


def timed(count: int, seed: int, prompts: list[str], terms: list[str]) -> tuple[list, float]:
    t0 = time.perf_counter()
    docs = haystack.generate(count, seed, prompts, terms)
    return docs, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=4880)
    ap.add_argument("--root", type=Path, default=REPO)
    ap.add_argument("--quick", action="store_true", help=f"--count {QUICK_COUNT}")
    args = ap.parse_args()
    if args.quick:
        args.count = QUICK_COUNT

    tasks, skipped = load_tasks(args.root)
    prompts = [t.prompt for t in tasks]
    terms = sorted({term for t in tasks for term in t.fact_terms})
    print(f"tasks loaded: {len(tasks)} ({', '.join(t.id for t in tasks)}); reserved terms: {len(terms)}")
    if skipped:
        print(f"tasks skipped (did not load, probably mid-edit): {'; '.join(skipped)}")

    haystack.generate(1, 0, prompts, terms)  # parse the data files once, outside the timings
    docs0, t0 = timed(args.count, 0, prompts, terms)
    docs1, t1 = timed(args.count, 1, prompts, terms)
    again, t2 = timed(args.count, 0, prompts, terms)
    print(f"wall time per call of generate({args.count}, seed, ...): seed 0 {t0:.2f} s, seed 1 {t1:.2f} s, "
          f"seed 0 again {t2:.2f} s")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")

    distinct_pct = {}
    for seed, docs in ((0, docs0), (1, docs1)):
        tiers = Counter(d.tier for d in docs)
        per_tier = ", ".join(f"{t} {tiers[t]} ({100 * tiers[t] / len(docs):.1f} %)" for t in haystack.TIERS)
        texts = [haystack.doc_text(d) for d in docs]
        distinct = len(set(texts))
        distinct_pct[seed] = 100 * distinct / len(docs)
        vocab = set()
        for text in texts:
            vocab.update(words(text))
        hits = sum(haystack.contains_reserved(d, terms) is not None for d in docs)
        print(f"seed {seed}: {len(docs)} documents: {per_tier}")
        print(f"seed {seed}: distinct documents by content: {distinct} of {len(docs)} ({100 * distinct / len(docs):.2f} %)")
        print(f"seed {seed}: vocabulary (distinct lower-cased word tokens): {len(vocab)}")
        print(f"seed {seed}: events per document: {spread([len(d.events) for d in docs])}")
        print(f"seed {seed}: characters per document: {spread([len(t) for t in texts])}")
        print(f"seed {seed}: documents containing a reserved term: {hits}")

    canon = lambda docs: [json.dumps([d.tier, d.events], sort_keys=True) for d in docs]
    c0, c1 = canon(docs0), canon(docs1)
    shared = len(set(c0) & set(c1))
    identical = c0 == canon(again)
    print(f"seed 0 vs seed 1: {'differ' if c0 != c1 else 'IDENTICAL'} ({shared} documents appear in both)")
    print(f"seed 0 twice: {'identical' if identical else 'DIFFERENT'}")
    worst = min(distinct_pct.values())
    print(f"figure: distinct documents {worst:.2f} % (the lower of seeds 0 and 1, {args.count} each); "
          f"target >= {TARGET_DISTINCT:.0f} %: {'met' if worst >= TARGET_DISTINCT else 'NOT met'}")
    if not identical or c0 == c1:
        sys.exit(1)


if __name__ == "__main__":
    main()
