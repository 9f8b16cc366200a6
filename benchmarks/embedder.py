"""mcp_memory_service with its own in-process embedder against the same product on memgrid's shared embedder
sidecar (arm mcp_memory_service_shared; issue #13, fairness of embeddings), side by side: ingest seconds, search
p50 / p95, and whether the two answer the same queries with the same top-10 hits.

Same weights on both sides (the int8 all-MiniLM-L6-v2 out of the same pinned wheels), so the hits should agree;
what differs is where the embedding runs (in the product's process, or over HTTP in a sidecar limited to one CPU)
and what that costs. Each side ingests the same corpus in a container of the product's image on network none (the
shared side in the sidecar's namespace), then searches it as a cell does (benchmarks/products.py timed_search).

    .venv/bin/python benchmarks/embedder.py [--corpus corpus/build/present/seed-0] [--documents 300] [--calls 200]
                                            [--quick]

--quick takes arm check's six-session corpus and 5 calls; --documents N the first N sessions of --corpus (a full
condition takes the product most of an hour per side on this machine).
"""

import argparse
import re
import sys
import tempfile
import uuid
from pathlib import Path

from _engine import cleanup, foreign_containers
from products import pct, queries, timed_search
from runner.arms.check import write_tiny_corpus
from runner.arms.ingest import ingest
from runner.corpus.build import MANIFEST
from runner.env import embedder
from runner.env.engine import connect
from runner.env.images import ensure_arm_image, ensure_derived, ensure_images
from runner.plan.spec import load_arm

ROOT = Path(__file__).resolve().parent.parent
ARMS = ("mcp_memory_service", "mcp_memory_service_shared")
QUICK_CALLS = 5


def subset(corpus: Path, documents: int, folder: Path) -> Path:
    """The first `documents` sessions of a built corpus, with their manifest lines, as a corpus folder."""
    (folder / "docs").mkdir(parents=True)
    keep = sorted((corpus / "docs").glob("*.jsonl"))[:documents]
    for p in keep:
        (folder / "docs" / p.name).write_bytes(p.read_bytes())
    names = {f"docs/{p.name}" for p in keep}
    lines = [l for l in (corpus / MANIFEST).read_text().splitlines(keepends=True) if l.split("  ", 1)[-1].strip() in names]
    (folder / MANIFEST).write_text("".join(lines))
    return folder


def side(client, arm, image: str, embedder_image: str, corpus: Path, qs: list[str], run_id: str) -> dict:
    """One arm's ingest and timed searches; the shared arm's searches run in a sidecar's namespace."""
    snapshot = ingest(client, image, arm, corpus, "present", 0, run_id=run_id, embedder=embedder_image)
    sidecar = None
    if arm.embedder == "shared":
        sidecar = embedder.start(client, embedder_image, run_id=run_id, cell_id=f"bench-{arm.name}", network="none",
                                 lifetime=3600)
    try:
        timed = timed_search(client, image, arm, snapshot, qs, run_id,
                             network="none" if sidecar is None else f"container:{sidecar.container.id}")
    finally:
        if sidecar is not None:
            sidecar.stop()
    if timed["errors"]:
        sys.exit(f"{arm.name}: {timed['errors']} searches failed")
    hits = [[m.group("id") for m in re.finditer(arm.mcp.search.hit_pattern, text)][:10] for text in timed["texts"]]
    return {"report": snapshot.report, "ms": timed["ms"], "hits": hits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus/build/present/seed-0")
    parser.add_argument("--documents", type=int, default=300, help="the first N sessions of --corpus")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help=f"arm check's six sessions, {QUICK_CALLS} calls")
    args = parser.parse_args()
    client = connect()
    run_id = f"bench-embedder-{uuid.uuid4().hex[:8]}"
    images = ensure_images(client, log=lambda m: None)
    embedder_image = ensure_derived(client, "embedder", images.base, log=lambda m: None).tag
    arms = [load_arm(ROOT / "arms" / name) for name in ARMS]
    image = ensure_arm_image(client, ROOT / "arms" / ARMS[0], images.sandbox, log=lambda m: None).tag  # both run in it
    with tempfile.TemporaryDirectory(prefix="memgrid-bench-embedder-") as tmp:
        if args.quick:
            (corpus, _), args.calls = write_tiny_corpus(Path(tmp) / "corpus"), QUICK_CALLS
        elif not (args.corpus / "docs").is_dir():
            sys.exit(f"{args.corpus}: not built: run 'memgrid corpus build --seeds 0'")
        else:
            corpus = subset(args.corpus, args.documents, Path(tmp) / "corpus")
        qs = queries(arms[0], corpus, args.calls, args.seed)
        documents = len(list((corpus / "docs").glob("*.jsonl")))
        print(f"corpus {corpus} ({documents} documents), {len(qs)} queries per side, "
              f"{foreign_containers(client, run_id)} containers of other runs on the engine")
        try:
            own, shared = (side(client, arm, image, embedder_image, corpus, qs, run_id) for arm in arms)
        finally:
            cleanup(client, run_id)
    same = sum(a == b for a, b in zip(own["hits"], shared["hits"]))
    overlap = [len(set(a) & set(b)) / max(1, len(set(a) | set(b))) for a, b in zip(own["hits"], shared["hits"])]
    print(f"{'':<28}{'own (in-process)':>18}{'shared sidecar':>18}")
    for label, key in (("ingest s", lambda s: s["report"]["seconds"]), ("search p50 ms", lambda s: pct(s["ms"], 50)),
                       ("search p95 ms", lambda s: pct(s["ms"], 95))):
        print(f"{label:<28}{key(own):>18.1f}{key(shared):>18.1f}")
    print(f"{'embedding requests (ingest)':<28}{'-':>18}{shared['report']['embedder']['requests']:>18}")
    print(f"top-10 hits identical in order for {same} of {len(qs)} queries; mean top-10 Jaccard overlap "
          f"{sum(overlap) / len(overlap):.3f}")
    print(f"figure: own_ingest_s={own['report']['seconds']:.1f} shared_ingest_s={shared['report']['seconds']:.1f} "
          f"own_p50_ms={pct(own['ms'], 50):.1f} shared_p50_ms={pct(shared['ms'], 50):.1f} "
          f"own_p95_ms={pct(own['ms'], 95):.1f} shared_p95_ms={pct(shared['ms'], 95):.1f} "
          f"top10_identical={same}/{len(qs)}")


if __name__ == "__main__":
    main()
