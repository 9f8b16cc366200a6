"""Third-party memory products as arms: per product, its ingest of one condition through its own write path
(wall seconds, store MiB, documents) and its search through its own MCP server (p50 / p95 ms over 200 calls),
each in a container of the arm's image on network none, as a cell runs them.

Queries are what the arm's agents send: for a product searched with the prompt (mcp.search.query: prompt) the
task prompts, then random pairs of corpus words; for a substring product (query: keywords) single corpus words
of 6+ letters, one call each (the reader makes up to 8 such calls per session). Seeded. Needs a built corpus
(`memgrid corpus build --seeds 0`); --quick takes arm check's six-session corpus, 5 calls, and only
server_memory unless --arms names others (mcp_memory_service, mempalace and mcp_server_qdrant embed every text
on ingest).
--run RUN takes the stores a grid run already ingested (runs/RUN/stores/<arm>/present-seed0, with the
ingest seconds it recorded) instead of ingesting again: a full condition of mcp_memory_service takes most
of an hour on a loaded 2-core machine.

    .venv/bin/python benchmarks/products.py [--arms server_memory,mcp_memory_service,mempalace,mcp_server_qdrant]
                                            [--corpus corpus/build/present/seed-0] [--run runs/ID] [--calls 200] [--quick]
"""

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

import yaml

from _engine import cleanup, foreign_containers
from runner.arms.check import write_tiny_corpus
from runner.arms.ingest import ingest, load
from runner.env.archive import Entry, pack
from runner.env.bundle import AGENT_UID
from runner.env.embedder import EMBEDDER_URL
from runner.env.engine import connect
from runner.env.images import ensure_arm_image, ensure_images
from runner.env.containers import CELL_LABEL, RUN_LABEL, Limits, hardened, remove_quietly
from runner.plan.spec import load_arm

ROOT = Path(__file__).resolve().parent.parent
PRODUCTS = ("server_memory", "mcp_memory_service", "mempalace", "mcp_server_qdrant")
QUICK = {"calls": 5, "arms": "server_memory"}
WARMUP = 3  # untimed first calls: lazy imports, the model's first run, the page cache

# Runs in the arm's image: the arm's server over /sandbox/store, each query timed from call to answer.
TIMER = r'''
import json, sys, time
sys.path.insert(0, "/opt/memgrid/pydeps")
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
command, tool, calls, warmup = json.load(open(sys.argv[1]))
async def go():
    t0 = time.perf_counter()
    async with stdio_client(StdioServerParameters(command=command[0], args=command[1:])) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            startup = time.perf_counter() - t0
            for arguments in calls[:warmup]:
                await s.call_tool(tool, arguments)
            ms, errors, texts = [], 0, []
            for arguments in calls:
                t = time.perf_counter()
                res = await s.call_tool(tool, arguments)
                ms.append((time.perf_counter() - t) * 1000)
                errors += bool(res.is_error)
                texts.append("\n".join(getattr(c, "text", "") for c in res.content))
    print(json.dumps({"startup_s": startup, "ms": ms, "errors": errors, "texts": texts}))
anyio.run(go)
'''


def corpus_words(corpus: Path, rng: random.Random, minimum: int) -> list[str]:
    texts = [json.loads(line).get("content", "") for p in sorted((corpus / "docs").glob("*.jsonl"))
             for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    words = sorted({w for t in texts for w in re.findall(r"[a-z]+", str(t).lower()) if len(w) >= minimum})
    rng.shuffle(words)
    return words


def queries(arm, corpus: Path, calls: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    if arm.mcp.search.query == "keywords":
        return corpus_words(corpus, rng, 6)[:calls]
    prompts = [yaml.safe_load(p.read_text())["prompt"] for p in sorted(ROOT.glob("tasks/*/task.yaml"))][:calls]
    words = corpus_words(corpus, rng, 4)
    pairs = [" ".join(words[i:i + 2]) for i in range(0, 2 * (calls - len(prompts)), 2)]
    return prompts + pairs


def arguments(arm, query: str) -> dict:
    return {k: query if v == "{query}" else 10 if v == "{k}" else v for k, v in arm.mcp.search.arguments.items()}


def timed_search(client, image: str, arm, snapshot, qs: list[str], run_id: str, network: str = "none") -> dict:
    """`network`: 'none', or 'container:<id>' of the shared embedder an arm with `embedder: shared` searches through."""
    command = [part.replace("{store}", "/sandbox/store").replace("{embedder_url}", EMBEDDER_URL) for part in arm.mcp.command]
    plan = json.dumps([command, arm.mcp.search_tool, [arguments(arm, q) for q in qs], WARMUP]).encode()
    args = hardened(image, user="1000:1000", network=network, limits=Limits(memory="2g"),
                    labels={RUN_LABEL: run_id, CELL_LABEL: f"bench-{arm.name}"}, command=["sleep", "3600"],
                    working_dir="/sandbox")
    container = client.containers.create(**args)
    try:
        entries = [Entry(f"store/{e.path}", e.data) for e in snapshot.entries]
        entries += [Entry("bench/plan.json", plan), Entry("bench/timer.py", TIMER.encode())]
        container.put_archive("/sandbox", pack(entries, uid=AGENT_UID, gid=AGENT_UID))
        container.start()
        code, out = container.exec_run(["python3", "-IS", "/sandbox/bench/timer.py", "/sandbox/bench/plan.json"],
                                       user="1000:1000")
    finally:
        remove_quietly(container)
    if code != 0:
        sys.exit(f"{arm.name}: the timed search failed: {out.decode(errors='replace')[-500:]}")
    return json.loads(out.decode().strip().splitlines()[-1])


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", default=None, help=f"default: {','.join(PRODUCTS)}")
    parser.add_argument("--run", type=Path, default=None, help="take each arm's store from this run folder")
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus/build/present/seed-0")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help=f"arm check's six sessions, {QUICK['calls']} calls, arms {QUICK['arms']} unless --arms")
    args = parser.parse_args()
    client = connect()
    run_id = f"bench-products-{uuid.uuid4().hex[:8]}"
    images = ensure_images(client, log=lambda m: None)
    with tempfile.TemporaryDirectory(prefix="memgrid-bench-products-") as tmp:
        args.arms = args.arms or (QUICK["arms"] if args.quick else ",".join(PRODUCTS))
        if args.quick:
            (args.corpus, _), args.calls = write_tiny_corpus(Path(tmp) / "corpus"), QUICK["calls"]
        elif not (args.corpus / "docs").is_dir():
            sys.exit(f"{args.corpus}: not built: run 'memgrid corpus build --seeds 0'")
        documents = len(list((args.corpus / "docs").glob("*.jsonl")))
        print(f"corpus {args.corpus} ({documents} documents), {args.calls} calls per product, "
              f"{foreign_containers(client, run_id)} containers of other runs on the engine")
        try:
            for name in args.arms.split(","):
                arm = load_arm(ROOT / "arms" / name)
                image = ensure_arm_image(client, arm.root, images.sandbox, log=lambda m: None).tag
                snapshot = (load(args.run, name, "present", args.seed) if args.run else
                            ingest(client, image, arm, args.corpus, "present", args.seed, run_id=run_id))
                if snapshot is None:
                    sys.exit(f"{args.run}: holds no store of {name} for present seed {args.seed}")
                r = snapshot.report
                mib = sum(len(e.data) for e in snapshot.entries) / 2 ** 20
                timed = timed_search(client, image, arm, snapshot, queries(arm, args.corpus, args.calls, args.seed), run_id)
                ms = timed["ms"]
                print(f"{name}: ingest {r['seconds']:.1f} s for {r['documents']} of {r['corpus_documents']} documents, "
                      f"store {mib:.1f} MiB in {r['files']} files; server start {timed['startup_s']:.2f} s; "
                      f"{len(ms)} searches ({arm.mcp.search.query} queries), {timed['errors']} errors, "
                      f"median result {statistics.median(map(len, timed['texts'])) / 1000:.1f} k chars")
                print(f"figure: {name} ingest_s={r['seconds']:.1f} store_mib={mib:.1f} "
                      f"search_p50_ms={pct(ms, 50):.1f} search_p95_ms={pct(ms, 95):.1f}")
        finally:
            cleanup(client, run_id)


if __name__ == "__main__":
    main()
