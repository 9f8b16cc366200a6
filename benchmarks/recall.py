"""recall figures: ingest one full condition (wall time, store size, documents, determinism), then 200
`search` calls end to end through MCP stdio (p50 / p95 ms), and the same searches in-process.

Needs the package: `.venv/bin/pip install -e arms/recall`, and a built corpus (`memgrid corpus build`);
--quick builds a small one (present, seed 0) in a temp dir instead and makes 20 calls. The store goes to
a temp dir; nothing under corpus/ is touched.

    .venv/bin/python benchmarks/recall.py [--corpus corpus/build/present/seed-0] [--calls 200] [--seed 0] [--quick]
"""

import argparse
import dataclasses
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# This script is named recall.py, so its own folder on sys.path[0] would shadow the recall package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import anyio  # noqa: E402
import yaml  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from recall.store import TOKEN, Store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
QUICK = {"scale": 200, "calls": 20}


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def ingest(corpus: Path, store: Path) -> tuple[float, dict]:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "recall.ingest", "--corpus", str(corpus), "--store", str(store),
                    "--namespace", f"{corpus.parent.name}-{corpus.name}"], check=True, capture_output=True)
    return time.monotonic() - t0, json.loads((store / "store.json").read_text())


def queries(store: Store, calls: int, seed: int) -> tuple[list[str], list[str]]:
    """The task prompts, then random pairs of corpus words (4+ letters), seeded."""
    prompts = [yaml.safe_load(p.read_text())["prompt"] for p in sorted(ROOT.glob("tasks/*/task.yaml"))]
    rng = random.Random(seed)
    pairs = []
    while len(prompts) + len(pairs) < calls:
        words = [w for w in TOKEN.findall(rng.choice(store.sessions).text) if w.isalpha() and len(w) >= 4]
        if len(words) >= 2:
            pairs.append(" ".join(rng.sample(words, 2)))
    return prompts, pairs


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


async def through_mcp(store: Path, qs: list[str], k: int) -> tuple[float, list[float], list[list[str]]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "recall.server", "--store", str(store)])
    t0 = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            startup = time.perf_counter() - t0
            for q in qs[:3]:  # warm-up, untimed: first calls pay lazy imports and allocator growth
                await session.call_tool("search", {"query": q, "k": k})
            latencies, ranked = [], []
            for q in qs:
                t = time.perf_counter()
                result = await session.call_tool("search", {"query": q, "k": k})
                latencies.append((time.perf_counter() - t) * 1000)
                assert not result.is_error, result.content
                ranked.append([h["id"] for h in result.structured_content["hits"]])
    return startup, latencies, ranked


def small_corpus(build_dir: Path, scale: int) -> Path:
    """The present condition of seed 0 with a haystack of `scale` documents, built by the real corpus builder."""
    from runner.corpus.build import build, load_settings
    from runner.plan.spec import load_all_tasks

    settings = dataclasses.replace(load_settings(ROOT), scale=scale)
    build(settings, list(load_all_tasks(ROOT).values()), ("present",), (0,), build_dir, log=lambda m: None)
    return settings.condition_dir("present", 0, build_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus/build/present/seed-0")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help=f"build a corpus of {QUICK['scale']} haystack documents in a temp dir, "
                             f"make {QUICK['calls']} calls")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as tmp:
        if args.quick:
            args.corpus, args.calls = small_corpus(Path(tmp) / "corpus", QUICK["scale"]), QUICK["calls"]
        if not (args.corpus / "docs").is_dir():
            sys.exit(f"{args.corpus}: not built: run 'memgrid corpus build --seeds 0'")
        store_dir = Path(tmp) / "store"
        wall, receipt = ingest(args.corpus, store_dir)
        print(f"ingest {args.corpus.relative_to(ROOT) if args.corpus.is_relative_to(ROOT) else args.corpus}: "
              f"{receipt['documents']} documents, {wall:.2f} s wall incl. interpreter start "
              f"({receipt['ingest_seconds']:.2f} s in store.json) (target <= 60 s)")
        print(f"store size: {disk_bytes(store_dir) / 2**20:.1f} MiB (sessions.jsonl "
              f"{(store_dir / 'sessions.jsonl').stat().st_size / 2**20:.1f} MiB, index "
              f"{disk_bytes(store_dir / 'index') / 2**20:.1f} MiB), digest {receipt['digest'][:12]}")
        _, again = ingest(args.corpus, Path(tmp) / "again")
        print(f"second ingest: digest {again['digest'][:12]} ({'same' if again['digest'] == receipt['digest'] else 'DIFFERENT'})")

        store = Store(store_dir)
        flagged = sum(s.supersedes_hint for s in store.sessions)
        print(f"supersedes_hint: {flagged} of {len(store.sessions)} sessions ({flagged / len(store.sessions):.1%})")
        prompts, pairs = queries(store, args.calls, args.seed)
        qs = prompts + pairs

        startup, latencies, ranked = anyio.run(through_mcp, store_dir, qs, args.k)
        print(f"server start to initialized: {startup * 1000:.0f} ms")

        key_path = args.corpus / "key.json"
        if key_path.is_file():  # where the planted fact sessions rank for their own task's prompt
            key = json.loads(key_path.read_text())
            task_ids = [p.parent.name for p in sorted(ROOT.glob("tasks/*/task.yaml"))]
            facts = {t: {n for n, e in key.items() if e["task"] == t and e["role"] == "fact"} for t in task_ids}
            asked = [(i, t) for i, t in enumerate(task_ids) if facts[t]]
            at1 = sum(bool(set(ranked[i][:1]) & facts[t]) for i, t in asked)
            atk = sum(bool(set(ranked[i]) & facts[t]) for i, t in asked)
            print(f"task prompts: a fact session at rank 1 for {at1}/{len(asked)}, in the top {args.k} for {atk}/{len(asked)}")

        inproc = []
        for q in qs:
            t = time.perf_counter()
            store.search(q, args.k)
            inproc.append((time.perf_counter() - t) * 1000)
        print(f"server-side search alone (Store.search in-process, same {len(qs)} queries): "
              f"p50 {statistics.median(inproc):.2f} ms, p95 {pct(inproc, 95):.2f} ms")
        print(f"figure: search through MCP stdio, {len(qs)} calls ({len(prompts)} task prompts + {len(pairs)} word pairs, k={args.k}): "
              f"p50 {statistics.median(latencies):.2f} ms, p95 {pct(latencies, 95):.2f} ms, max {max(latencies):.2f} ms "
              f"(target p50 <= 50 ms)")


if __name__ == "__main__":
    main()
