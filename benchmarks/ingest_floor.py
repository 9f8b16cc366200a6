"""Each product's ingest against its floor: the same sessions written (a) through memgrid's ingest, the product's own
write path as a run uses it (runner.arms.ingest.ingest: a container of the arm's image, 1 CPU, the product's write
tool or import command), and (b) at the product's floor, in a container of the same image with the same limits: the
product's own embedder alone, in-process, on the same texts it embeds (server_memory embeds nothing: its floor is
node serialising the same entities into one JSONL file, as its own save does). Side by side in one run, per product:
seconds per session of each and their ratio, with the product's own share of (a) (its receipt's ingest_seconds:
server start and writes, without memgrid's container, copy-in and copy-out).

The floors per product (the FLOORS script below):
- mcp_memory_service: its ONNXEmbeddingModel (mcp_memory_service.embeddings.onnx_embeddings) on each memory's text;
- mcp_server_qdrant: fastembed's TextEmbedding on each entry's text, one call per entry as qdrant-store makes;
- mempalace: mempalace.miner.chunk_text's drawers of each session, embedded by its configured_embedding_function;
The texts are the arm's own ingest script's (its content / entity / session_file), imported in the container.
- server_memory: JSON.stringify of each entity and one writeFileSync of the lot.

    .venv/bin/python benchmarks/ingest_floor.py [--arms server_memory,mcp_memory_service,mempalace,mcp_server_qdrant]
                                                [--documents 300] [--corpus corpus/build/present/seed-0] [--quick]

Needs a built corpus (`memgrid corpus build --seeds 0`); --quick takes arm check's six-session corpus instead, and
server_memory only.
The target (issue 27) is (a) within 3x (b).
"""

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _engine import cleanup, foreign_containers
from runner.arms.check import write_tiny_corpus
from runner.arms.ingest import INGEST_ROOT, corpus_entries, ingest
from runner.env.archive import Entry, pack
from runner.env.bundle import AGENT_UID
from runner.env.containers import CELL_LABEL, RUN_LABEL, Limits, hardened, remove_quietly
from runner.env.engine import connect
from runner.env.images import ensure_arm_image, ensure_images
from runner.plan.spec import load_arm

ROOT = Path(__file__).resolve().parent.parent
PRODUCTS = ("server_memory", "mcp_memory_service", "mempalace", "mcp_server_qdrant")
TARGET = 3.0

# Runs in the arm's image as the ingest does (uid 1000, network none, 1 CPU): FLOORS[product](sessions) -> items
# embedded or written; the time printed is the whole of it, the model's load included (as the product's own share
# includes its server's start).
FLOOR = r'''
import importlib.util, json, os, subprocess, sys, time
sys.path[:0] = ["/opt/memgrid/lib"]
from memgrid_corpus import sessions

def own_ingest(path):
    """The arm's own ingest script, for the texts it hands its product (content, entity, session_file)."""
    spec = importlib.util.spec_from_file_location("own_ingest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def mcp_memory_service(found):
    content = own_ingest("/opt/mcp-memory-service/ingest.py").content
    sys.path[:0] = ["/opt/mcp-memory-service/pydeps"]  # ahead of memgrid's, as the product's server has them
    os.environ.update(HOME="/opt/mcp-memory-service/home", HF_HUB_OFFLINE="1")
    from mcp_memory_service.embeddings.onnx_embeddings import get_onnx_embedding_model
    model = get_onnx_embedding_model("all-MiniLM-L6-v2")
    for s in found:
        model.encode([content(s)])
    return len(found)

def mcp_server_qdrant(found):
    content = own_ingest("/opt/mcp-server-qdrant/ingest.py").content
    sys.path[:0] = ["/opt/mcp-server-qdrant/pydeps"]
    os.environ.update(HF_HUB_OFFLINE="1")
    from fastembed import TextEmbedding
    model = TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", cache_dir="/opt/mcp-server-qdrant/fastembed")
    for s in found:
        list(model.embed([content(s)]))
    return len(found)

def mempalace(found):
    session_file = own_ingest("/opt/mempalace/ingest.py").session_file
    home = "/tmp/floor-home"
    os.makedirs(f"{home}/.cache/chroma/onnx_models", exist_ok=True)
    os.symlink("/opt/mempalace/model", f"{home}/.cache/chroma/onnx_models/all-MiniLM-L6-v2")
    os.environ.update(HOME=home, HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
    sys.path[:0] = ["/opt/mempalace/pydeps"]
    from mempalace.embedding import configured_embedding_function
    from mempalace.miner import chunk_text
    ef, drawers = configured_embedding_function(), 0
    for s in found:  # the file mempalace-ingest lays out for the session, chunked as mine chunks it
        chunks = chunk_text(session_file(s), f"{s.id}.md")
        ef([c["content"] for c in chunks])
        drawers += len(chunks)
    return drawers

def server_memory(found):
    entity = own_ingest("/opt/server-memory/ingest.py").entity
    with open("/tmp/entities.json", "w") as f:  # each line as the product's saveGraph writes it: type first
        json.dump([{"type": "entity", **entity(s)} for s in found], f)
    subprocess.run(["node", "-e", "const fs = require('fs'); const e = JSON.parse(fs.readFileSync('/tmp/entities.json'));"
                    "fs.writeFileSync('/tmp/memory.jsonl', e.map(x => JSON.stringify(x)).join('\\n'));"], check=True)
    return len(found)

started = time.perf_counter()
found = sessions(sys.argv[2])
items = globals()[sys.argv[1]](found)
print(json.dumps({"seconds": time.perf_counter() - started, "sessions": len(found), "items": items}))
'''


def sample_corpus(corpus: Path, documents: int, into: Path) -> int:
    """The corpus's first `documents` sessions (by file name) as a corpus folder of their own, manifest included."""
    docs = sorted((corpus / "docs").glob("*.jsonl"))[:documents]
    if not docs:
        sys.exit(f"{corpus}/docs: no sessions: fix: run 'memgrid corpus build --seeds 0'")
    (into / "docs").mkdir(parents=True)
    lines = []
    for p in docs:
        shutil.copyfile(p, into / "docs" / p.name)
        lines.append(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  docs/{p.name}\n")
    (into / "MANIFEST.sha256").write_text("".join(lines))
    return len(docs)


def floor(client, image: str, product: str, corpus: Path, run_id: str) -> dict:
    """The product's floor over the corpus, in a container of its image under the ingest's limits."""
    args = hardened(image, user="1000:1000", network="none", limits=Limits(memory="2g"),
                    labels={RUN_LABEL: run_id, CELL_LABEL: f"floor-{product}"}, working_dir="/sandbox",
                    command=["python3", "-I", f"{INGEST_ROOT}/floor.py", product, f"{INGEST_ROOT}/corpus"])
    container = client.containers.create(**args)
    try:
        entries = [*corpus_entries(corpus), Entry("ingest/floor.py", FLOOR.encode())]
        container.put_archive("/sandbox", pack(entries, uid=AGENT_UID, gid=AGENT_UID))
        container.start()
        code = container.wait(timeout=7200)["StatusCode"]
        out = container.logs(stdout=True, stderr=False).decode(errors="replace").strip().splitlines()
        if code != 0 or not out:
            err = container.logs(stdout=False, stderr=True).decode(errors="replace").strip()[-600:]
            raise RuntimeError(f"floor of {product} exited {code}: {err}")
        return json.loads(out[-1])
    finally:
        remove_quietly(container)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", default=",".join(PRODUCTS))
    parser.add_argument("--documents", type=int, default=300, help="sessions from the start of the corpus")
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus/build/present/seed-0")
    parser.add_argument("--quick", action="store_true", help="arm check's six sessions, server_memory only")
    args = parser.parse_args()
    if args.quick:
        args.arms = "server_memory"
    client = connect()
    run_id = f"bench-floor-{uuid.uuid4().hex[:8]}"
    images = ensure_images(client, log=lambda m: None)
    tmp = Path(tempfile.mkdtemp(prefix="memgrid-floor-"))
    ratios = {}
    try:
        if args.quick:
            args.corpus, _ = write_tiny_corpus(tmp / "tiny")
        n = sample_corpus(args.corpus, args.documents, tmp / "corpus")
        print(f"{n} sessions of {args.corpus}; {foreign_containers(client, run_id)} containers of other runs on the engine")
        print(f"{'arm':<20} {'path s/session':>15} {'product share':>14} {'floor s/session':>16} {'ratio':>6}  floor items")
        for name in args.arms.split(","):
            arm = load_arm(ROOT / "arms" / name)
            image = ensure_arm_image(client, arm.root, images.sandbox, log=lambda m: None).tag
            t0 = time.monotonic()
            snapshot = ingest(client, image, arm, tmp / "corpus", "present", 0, run_id=run_id)
            path = time.monotonic() - t0
            if snapshot.report["documents"] != n:
                sys.exit(f"{name}: the store holds {snapshot.report['documents']} of {n} sessions")
            own = json.loads(next(e.data for e in snapshot.entries if e.path == "store.json"))["ingest_seconds"]
            low = floor(client, image, name, tmp / "corpus", run_id)
            ratios[name] = path / low["seconds"]
            print(f"{name:<20} {path / n:>15.3f} {own / path:>13.0%} {low['seconds'] / n:>16.3f} {ratios[name]:>6.1f}  "
                  f"{low['items']} {'drawers' if name == 'mempalace' else 'sessions'}", flush=True)
    finally:
        cleanup(client, run_id)
        shutil.rmtree(tmp, ignore_errors=True)
    worst = max(ratios, key=ratios.get)
    print(f"figure: ingest / floor per product: {', '.join(f'{k} {v:.1f}x' for k, v in ratios.items())}; "
          f"worst {worst} {ratios[worst]:.1f}x (target {TARGET:.0f}x)")


if __name__ == "__main__":
    main()
