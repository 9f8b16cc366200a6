"""Third-party memory products as arms: each store is written by the product itself, in its own format, and a
search through the product's own MCP server finds a planted fact.

Per product: its image built from its pins (checksums checked on the host), its ingest run on a small corpus
with one planted session, the store read back as the product's own files, then its MCP server started in its
image over that store and searched as the reader searches it (arm.yaml mcp.search). `memgrid arm check` runs
the same path end to end through memgrid-reader.
"""

import hashlib
import json
import re
import sqlite3

import pytest

from conftest import REPO
from runner.arms.check import check_arm
from runner.arms.ingest import ingest
from runner.corpus.build import MANIFEST
from runner.digest import sha256_bytes
from runner.env.archive import Entry, pack
from runner.env.bundle import AGENT_UID
from runner.env.embedder import EMBEDDER_URL
from runner.env.images import ensure_arm_image
from runner.env.containers import CELL_LABEL, RUN_LABEL, Limits, hardened, remove_quietly
from runner.plan.spec import load_arm

PLANTED = "armtest-planted"
FACT = "Rotate the ledger signing key with keyctl rotate --grace 48h; never delete the old key first."
FILLER = [
    ("The docs build fails on a fresh clone.", "Pin sphinx below the next major version."),
    ("Worker logs are unreadable in the aggregator.", "Emit one JSON object per line with a request_id."),
    ("The orders migration locks the table.", "Add the column nullable and backfill it in batches."),
    ("test_expiry fails on Monday mornings.", "Freeze the clock with the frozen_clock fixture."),
]


def write_corpus(folder):
    """Five sessions in the corpus format; the planted one holds FACT."""
    docs = folder / "docs"
    docs.mkdir(parents=True)
    sessions = [(f"armtest-{i}", ask, answer) for i, (ask, answer) in enumerate(FILLER)]
    sessions.append((PLANTED, "Signing fails after the certificate renewal.", FACT))
    manifest = []
    for n, (name, ask, answer) in enumerate(sessions):
        events = [{"role": "user", "content": ask}, {"role": "assistant", "content": answer}]
        data = "".join(json.dumps({"session": name, "ts": f"2024-03-0{n + 1}T10:0{j}:00Z", **e}, sort_keys=True) + "\n"
                       for j, e in enumerate(events)).encode()
        (docs / f"{name}.jsonl").write_bytes(data)
        manifest.append(f"{sha256_bytes(data)}  docs/{name}.jsonl\n")
    (folder / MANIFEST).write_text("".join(sorted(manifest, key=lambda l: l.split("  ", 1)[1])))
    return folder, [s[0] for s in sessions]


# Run in the arm's image: the arm's server over /sandbox/store, its search tool called once, the result as JSON.
SEARCH = r'''
import json, sys
sys.path.insert(0, "/opt/memgrid/pydeps")
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
command, tool, arguments = json.loads(sys.argv[1])
async def go():
    async with stdio_client(StdioServerParameters(command=command[0], args=command[1:])) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool(tool, arguments)
            print(json.dumps({"is_error": bool(res.is_error), "structured": res.structured_content,
                              "text": "\n".join(getattr(c, "text", "") for c in res.content)}))
anyio.run(go)
'''


def search(engine, image, arm, snapshot, run_id, query, network="none"):
    """Call the arm's search tool as arm.yaml's mcp.search says, in a container of its image (network none, or
    'container:<id>': the shared embedder's namespace)."""
    command = [part.replace("{store}", "/sandbox/store").replace("{embedder_url}", EMBEDDER_URL) for part in arm.mcp.command]
    arguments = {k: query if v == "{query}" else 10 if v == "{k}" else v for k, v in arm.mcp.search.arguments.items()}
    args = hardened(image, user="1000:1000", network=network, limits=Limits(memory="2g"),
                    labels={RUN_LABEL: run_id, CELL_LABEL: f"search-{arm.name}"}, command=["sleep", "300"],
                    working_dir="/sandbox")
    container = engine.containers.create(**args)
    try:
        container.put_archive("/sandbox", pack([Entry(f"store/{e.path}", e.data) for e in snapshot.entries],
                                               uid=AGENT_UID, gid=AGENT_UID))
        container.start()
        code, out = container.exec_run(["python3", "-IS", "-c", SEARCH, json.dumps([command, arm.mcp.search_tool, arguments])],
                                       user="1000:1000")
    finally:
        remove_quietly(container)
    assert code == 0, out.decode(errors="replace")[-800:]
    return json.loads(out.decode().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("products-corpus"))


def built(engine, images, name):
    arm = load_arm(REPO / "arms" / name)
    return arm, ensure_arm_image(engine, arm.root, images.sandbox, log=lambda m: None).tag


def ingested(engine, images, corpus, run_id, name: str):
    """The product's image and its own ingest of the small present corpus: arm, image, snapshot, files by path,
    and the corpus's session names."""
    arm, image = built(engine, images, name)
    folder, names = corpus
    said = []
    snapshot = ingest(engine, image, arm, folder, "present", 0, run_id=run_id, log=said.append)
    # the driver reports its progress (memgrid_corpus.progress) and the harness logs it, the first report at once
    assert re.fullmatch(rf"ingest {name} present seed 0: started, \d of {len(names)} documents", said[0]), said
    assert "memgrid-ingest-progress" not in snapshot.report["log_tail"]
    return arm, image, snapshot, {e.path: e.data for e in snapshot.entries}, names


def test_server_memory_store_is_its_own_jsonl_and_search_nodes_finds_the_fact(engine, images, corpus, run_id,
                                                                             no_leftovers):
    arm, image, snapshot, files, names = ingested(engine, images, corpus, run_id, "server_memory")
    assert set(files) == {"memory.jsonl", "store.json"}
    assert snapshot.report["documents"] == len(names)
    lines = files["memory.jsonl"].decode().splitlines()
    # The product's saveGraph writes each entity as JSON.stringify({type, name, entityType, observations}):
    # that key order and compact separators, one line each, in the order it received them.
    entities = [json.loads(line) for line in lines]
    assert [e["name"] for e in entities] == sorted(names)
    for line, e in zip(lines, entities):
        assert list(e) == ["type", "name", "entityType", "observations"]
        assert line == json.dumps(e, separators=(",", ":"), ensure_ascii=False)
    # A substring search: one distinctive word finds the planted entity alone, a whole sentence finds nothing.
    found = search(engine, image, arm, snapshot, run_id, "keyctl")
    assert not found["is_error"]
    hits = found["structured"][arm.mcp.search.hits]
    assert [h["name"] for h in hits] == [PLANTED]
    assert any(FACT in o for o in hits[0]["observations"])
    whole = search(engine, image, arm, snapshot, run_id, "How do I rotate the ledger signing key safely?")
    assert whole["structured"][arm.mcp.search.hits] == []


def test_mcp_memory_service_store_is_its_own_sqlite_vec_db_and_semantic_search_finds_the_fact(
        engine, images, corpus, run_id, no_leftovers, tmp_path):
    arm, image, snapshot, files, names = ingested(engine, images, corpus, run_id, "mcp_memory_service")
    assert snapshot.report["documents"] == len(names)
    assert files["sqlite_vec.db"][:16] == b"SQLite format 3\x00"
    (tmp_path / "store.db").write_bytes(files["sqlite_vec.db"])
    db = sqlite3.connect(tmp_path / "store.db")
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert {"memories", "memory_embeddings", "metadata"} <= tables
    vec = db.execute("SELECT sql FROM sqlite_master WHERE name = 'memory_embeddings'").fetchone()[0]
    assert "vec0" in vec and "384" in vec  # the product's sqlite-vec table, sized for MiniLM's 384 dimensions
    rows = db.execute("SELECT content, content_hash FROM memories").fetchall()
    db.close()
    assert len(rows) == len(names)
    # The product names a memory by the sha256 of its normalised content: our ingest never computes that.
    for content, content_hash in rows:
        assert content_hash == hashlib.sha256(content.strip().lower().encode()).hexdigest()
    assert any(FACT in content for content, _ in rows)
    # No content word of the query is in the planted session ("sign" is not "signing"; only "the" is shared):
    # only a real embedding ranks it first (hash pseudo-embeddings, the product's fallback, would not).
    found = search(engine, image, arm, snapshot, run_id, "how should we change the credentials used to sign the books")
    assert not found["is_error"], found["text"][:300]
    ids = [m.group("id") for m in re.finditer(arm.mcp.search.hit_pattern, found["text"])]
    assert ids[0] == PLANTED, found["text"][:600]
    assert sorted(ids) == sorted(names)


def ingest_without_model(engine, image, folder, run_id, ingest: str, model: str) -> tuple[int, str]:
    """The product's ingest over the corpus in its image with its model folder removed (as root, first), no
    network: (exit code, what it said)."""
    args = hardened(image, user="0:0", network="none", limits=Limits(memory="2g"),
                    labels={RUN_LABEL: run_id, CELL_LABEL: "no-model"}, command=["sleep", "300"], working_dir="/sandbox")
    container = engine.containers.create(**args)
    try:
        container.put_archive("/sandbox", pack([Entry(f"corpus/{p.relative_to(folder)}", p.read_bytes())
                                               for p in sorted(folder.rglob("*")) if p.is_file()], uid=AGENT_UID, gid=AGENT_UID))
        container.start()
        code, _ = container.exec_run(["rm", "-r", model])
        assert code == 0
        code, out = container.exec_run([ingest, "--corpus", "/sandbox/corpus", "--store", "/sandbox/store"],
                                       user="1000:1000")
    finally:
        remove_quietly(container)
    return code, out.decode(errors="replace")


def test_mcp_memory_service_without_its_model_fails_loudly(engine, images, corpus, run_id, no_leftovers):
    """The product downloads its model at first use and can fall back to hash pseudo-embeddings: in this arm
    both are switched off, so an image without the model must refuse to ingest, naming why."""
    _, image = built(engine, images, "mcp_memory_service")
    code, said = ingest_without_model(engine, image, corpus[0], run_id, "mcp-memory-service-ingest",
                                      "/opt/mcp-memory-service/home/.cache/mcp_memory/onnx_models/all-MiniLM-L6-v2/onnx")
    assert code != 0, said[-600:]
    assert said.strip().splitlines()[-1].startswith("mcp-memory-service-ingest: memory_store refused"), said[-600:]
    assert "MCP_MEMORY_ALLOW_HASH_EMBEDDINGS is set to refuse the hash fallback" in said, said[-600:]


def test_mempalace_store_is_its_own_chroma_palace_and_search_finds_the_fact(engine, images, corpus, run_id,
                                                                           no_leftovers, tmp_path):
    arm, image, snapshot, files, names = ingested(engine, images, corpus, run_id, "mempalace")
    assert snapshot.report["documents"] == len(names)
    assert files["chroma.sqlite3"][:16] == b"SQLite format 3\x00"
    # chromadb's HNSW segment files, written by the product's mine, one folder per collection segment
    assert any(p.endswith("/header.bin") for p in files) and any(p.endswith("/data_level0.bin") for p in files)
    (tmp_path / "chroma.db").write_bytes(files["chroma.sqlite3"])
    db = sqlite3.connect(tmp_path / "chroma.db")
    sources = {r[0] for r in db.execute("SELECT string_value FROM embedding_metadata WHERE key = 'source_file'")}
    wings = {r[0] for r in db.execute("SELECT string_value FROM embedding_metadata WHERE key = 'wing'")}
    documents = [r[0] for r in db.execute("SELECT string_value FROM embedding_metadata WHERE key = 'chroma:document'")]
    db.close()
    # the product records the mined file's full path; its search shows the base name
    assert {s.rsplit("/", 1)[-1] for s in sources} == {f"{n}.md" for n in names} and wings == {"sessions"}
    assert any(FACT in d for d in documents)
    found = search(engine, image, arm, snapshot, run_id, "how should we change the credentials used to sign the books")
    assert not found["is_error"], found["text"][:300]
    hits = json.loads(found["text"])[arm.mcp.search.hits]
    assert hits[0][arm.mcp.search.hit_id] == f"{PLANTED}.md", found["text"][:800]
    assert FACT in hits[0]["text"]


def test_mempalace_files_a_session_shorter_than_its_default_minimum(engine, images, run_id, no_leftovers, tmp_path):
    """The product's mine skips a file shorter than its min_chunk_size (50 characters by default) and exits 0, which the
    read-back refused ("mempalace holds 368 of the 369 sessions": every LoCoMo cell of conv-30 discarded for one turn,
    'Jon said, "Bye!"'); the arm's ingest sets the product's own setting so that every session is filed."""
    arm, image = built(engine, images, "mempalace")
    docs = tmp_path / "docs"
    docs.mkdir()
    manifest = []
    for name, text in (("short-0", 'Jon said, "Bye!"'), ("short-1", "Gina said, \"I'll open the dance studio in June.\"")):
        data = (json.dumps({"session": name, "ts": "2023-07-09T12:00:00Z", "role": "user", "content": text},
                           sort_keys=True) + "\n").encode()
        (docs / f"{name}.jsonl").write_bytes(data)
        manifest.append(f"{sha256_bytes(data)}  docs/{name}.jsonl\n")
    (tmp_path / MANIFEST).write_text("".join(manifest))
    snapshot = ingest(engine, image, arm, tmp_path, "present", 0, run_id=run_id, log=lambda m: None)
    assert snapshot.report["documents"] == 2
    config = json.loads({e.path: e.data for e in snapshot.entries}[".mempalace/config.json"])
    assert config["min_chunk_size"] == 1


def test_mempalace_without_its_model_fails_loudly(engine, images, corpus, run_id, no_leftovers):
    """chromadb downloads its model at first use; with no network and no model the mine must fail, naming it."""
    _, image = built(engine, images, "mempalace")
    code, said = ingest_without_model(engine, image, corpus[0], run_id, "mempalace-ingest", "/opt/mempalace/model/onnx")
    assert code != 0, said[-600:]
    # Seen both ways: the mine aborts on chromadb's download ("ConnectError: ... name resolution", 5 files), or
    # exits 0 having filed nothing ("Files skipped (already filed or other): 1", 1 file), which the ingest's
    # read-back of the palace refuses.
    last = said.strip().splitlines()[-1]
    assert last.startswith("mempalace-ingest: "), said[-600:]
    assert "ConnectError" in last or "mempalace holds 0 of the 5 sessions written to it" in last, last


def pickled_strings_and_floats(blob: bytes) -> tuple[list[str], int]:
    """The strings and the number of floats in a pickle, read with pickletools (nothing is unpickled)."""
    import pickletools

    ops = list(pickletools.genops(blob))
    return [a for _, a, _ in ops if isinstance(a, str)], sum(op.name == "BINFLOAT" for op, _, _ in ops)


def test_mcp_server_qdrant_store_is_its_own_local_collection_and_search_finds_the_fact(
        engine, images, corpus, run_id, no_leftovers, tmp_path):
    arm, image, snapshot, files, names = ingested(engine, images, corpus, run_id, "mcp_server_qdrant")
    assert snapshot.report["documents"] == len(names)
    # qdrant-client's local mode: meta.json with the collection the product created, sized and named by its
    # fastembed model (the vector name is the product's own "fast-<model>"), and a storage.sqlite per collection.
    vectors = json.loads(files["meta.json"])["collections"]["sessions"]["vectors"]
    assert list(vectors) == ["fast-all-minilm-l6-v2"]
    assert (vectors["fast-all-minilm-l6-v2"]["size"], vectors["fast-all-minilm-l6-v2"]["distance"]) == (384, "Cosine")
    (tmp_path / "storage.sqlite").write_bytes(files["collection/sessions/storage.sqlite"])
    db = sqlite3.connect(tmp_path / "storage.sqlite")
    points = db.execute("SELECT point FROM points").fetchall()
    db.close()
    assert len(points) == len(names)
    # Each row is the product's pickled PointStruct: an id the product drew (a uuid; our ingest sends none), 384
    # floats under its vector name, and the session as its `document` payload.
    documents = []
    for (blob,) in points:
        strings, floats = pickled_strings_and_floats(blob)
        assert strings[:2] == ["qdrant_client.http.models.models", "PointStruct"]
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", strings[strings.index("id") + 1])
        assert "fast-all-minilm-l6-v2" in strings and floats == 384
        documents.append(strings[strings.index("document") + 1])
    assert any(FACT in d for d in documents)
    # No content word of the query is in the planted session: only a real embedding ranks it first.
    found = search(engine, image, arm, snapshot, run_id, "how should we change the credentials used to sign the books")
    assert not found["is_error"], found["text"][:300]
    hits = [(m.group("id"), m.group("text")) for m in re.finditer(arm.mcp.search.hit_pattern, found["text"])]
    assert hits[0][0] == PLANTED and "keyctl rotate --grace 48h" in hits[0][1], found["text"][:800]
    assert sorted(h for h, _ in hits) == sorted(names)


def test_mcp_server_qdrant_without_its_model_fails_loudly(engine, images, corpus, run_id, no_leftovers):
    """fastembed downloads its model at first use; the launcher's HF_HUB_OFFLINE=1 keeps it to its cache, so an
    image without the model must refuse to ingest: the server stops at start, naming the model."""
    _, image = built(engine, images, "mcp_server_qdrant")
    code, said = ingest_without_model(engine, image, corpus[0], run_id, "mcp-server-qdrant-ingest",
                                      "/opt/mcp-server-qdrant/fastembed/models--Qdrant--all-MiniLM-L6-v2-onnx")
    assert code != 0, said[-600:]
    assert "Could not load model sentence-transformers/all-MiniLM-L6-v2 from any source" in said, said[-600:]
    assert said.strip().splitlines()[-1].startswith("mcp-server-qdrant-ingest: "), said[-600:]


@pytest.mark.parametrize("name", ["server_memory", "mcp_memory_service", "mempalace", "mcp_server_qdrant"])
def test_arm_check_passes(engine, images, name, run_id, no_leftovers):
    lines = []
    report = check_arm(REPO, name, run_id=run_id, client=engine, emit=lines.append)
    out = "\n".join(lines)
    assert report.ok, out
    assert "6 of 6 sessions stored" in out
    assert "the session it names: rank 1" in out or name == "mempalace"  # its hit ids are file names, <session>.md
    # each remembers a line through its mcp.write and finds it again through its search
    assert re.search(r"^ok   write .* stored 'armcheck w", out, re.M) and re.search(r"^ok   recall ", out, re.M), out


def test_a_server_that_fails_mid_session_fails_the_gate():
    """The reader records a server that connected and then timed out (a substring search answering with most
    of a large store) as a second init, status failed: the cell must not be admitted as served."""
    from runner.agents.base import Transcript
    from runner.grading import gate

    t = Transcript(agent="reader", model=None)
    tools = ["mcp__server_memory__search_nodes", "mcp__server_memory__open_nodes", "mcp__server_memory__read_graph"]
    t.add("init", tools=tools, mcp_servers=[{"name": "server_memory", "status": "connected"}])
    t.add("tool_call", tool="mcp__server_memory__search_nodes", is_error=False)
    assert gate.server_proofs(t, "server_memory", "mcp__server_memory__", ("search_nodes",))[0].passed
    t.add("init", tools=[], mcp_servers=[{"name": "server_memory", "status": "failed", "error": "TimeoutError: "}])
    connected, listed = gate.server_proofs(t, "server_memory", "mcp__server_memory__", ("search_nodes",))
    assert not connected.passed and "TimeoutError" in connected.detail
    assert listed.passed  # it did list its tools; what failed is the serving


def test_the_scripted_model_calls_and_reads_each_product_as_its_arm_declares():
    """claude-code on the scripted model: a product's own argument names, one call per keyword for a substring
    search, and hits read out of the product's own answer, ranked, before the first option is picked."""
    import importlib.machinery
    import importlib.util

    from runner.agents.script import build_script
    from runner.plan.spec import load_all_arms, load_all_tasks

    loader = importlib.machinery.SourceFileLoader("model_server", str(REPO / "images/model/memgrid-model-server"))
    server = importlib.util.module_from_spec(importlib.util.spec_from_loader("model_server", loader))
    loader.exec_module(server)
    task, arms = load_all_tasks(REPO)["slug_ids"], load_all_arms(REPO)
    informed, wrong = task.fact_terms[0], next(iter(task.wrong_rules.values()))[0]

    def answer(name, results):
        script = build_script(task, arms[name], None, "present", 0)
        offered = [{"name": script["search"]["tool"]}, {"name": "Read"}, {"name": "Write"}]
        step, calls, _ = server.next_step(script, {"tools": offered, "messages": [{"role": "user", "content": "go"}]})
        assert step == "search"
        uses = [{"type": "tool_use", "id": c[0], "name": c[1], "input": c[2]} for c in calls]
        back = [{"type": "tool_result", "tool_use_id": c[0], "content": [{"type": "text", "text": results(i)}]}
                for i, c in enumerate(calls)]
        messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": uses}, {"role": "user", "content": back}]
        return calls, server.next_step(script, {"tools": offered, "messages": messages})

    def graph(*entities):
        return json.dumps({"entities": [{"name": n, "entityType": "session", "observations": [o]} for n, o in entities],
                          "relations": []})

    # server-memory: 8 keyword calls with its argument name; a session found by a rare keyword (one hit) ranks
    # above one found by a common keyword (many hits), though the product answered the common keyword first
    common = graph(("common", wrong), ("x1", "a"), ("x2", "b"), ("x3", "c"))
    answers = [common, graph(("rare", informed))] + [graph()] * 6
    calls, (step, _, _) = answer("server_memory", lambda i: answers[i])
    assert len(calls) == 8 and all(set(c[2]) == {"query"} and " " not in c[2]["query"] for c in calls)
    assert step == "open"
    hits = server.ranked_hits(arms["server_memory"].mcp.search.as_config(), answers)
    assert hits[:2] == [informed, wrong]
    # mcp-memory-service: one call with its own names (query, limit), hits split out of its text answer in rank order
    text = (f"Found 2 memories\n\n1. session s1 2024-01-01\nuser: {wrong}\n   Hash: {'a' * 64}\n   Created: 2024\n\n"
            f"2. session s2 2024-01-02\nuser: {informed}\n   Hash: {'b' * 64}\n   Created: 2024")
    calls, _ = answer("mcp_memory_service", lambda i: text)
    assert [set(c[2]) for c in calls] == [{"query", "limit"}]
    hits = server.ranked_hits(arms["mcp_memory_service"].mcp.search.as_config(), [text])
    assert len(hits) == 2 and wrong in hits[0] and informed in hits[1]
    # mempalace: its JSON answer, hits under results
    answer_json = json.dumps({"results": [{"source_file": "s2.md", "text": informed}, {"source_file": "s1.md", "text": wrong}]})
    assert server.ranked_hits(arms["mempalace"].mcp.search.as_config(), [answer_json]) == [informed, wrong]
    # mcp-server-qdrant: one call with its one argument (query; it takes no count), hits split out of its answer,
    # a JSON list of strings (fastmcp serialises the tool's list[str]), so the session text is JSON-escaped
    entry = "<entry><content>session {} 2024-01-0{}\nuser: {}</content><metadata>{{\"session\": \"{}\"}}</metadata></entry>"
    text = json.dumps(["Results for the query 'go'", entry.format("s1", 1, wrong, "s1"), entry.format("s2", 2, informed, "s2")],
                      indent=2)
    calls, _ = answer("mcp_server_qdrant", lambda i: text)
    assert [set(c[2]) for c in calls] == [{"query"}]
    hits = server.ranked_hits(arms["mcp_server_qdrant"].mcp.search.as_config(), [text])
    assert len(hits) == 2 and wrong in hits[0] and informed in hits[1]


def test_the_reader_reads_hits_a_product_returns_as_json_text():
    """Many FastMCP servers return their hits as JSON text, which the SDK also wraps as structured content
    {"result": text}: the reader reads the hits out of that text, as the scripted model (which sees only the
    text) does, instead of finding no `hits` key in the wrapper."""
    import importlib.machinery
    import importlib.util
    from types import SimpleNamespace

    loader = importlib.machinery.SourceFileLoader("memgrid_reader", str(REPO / "images/sandbox/memgrid-reader"))
    reader = importlib.util.module_from_spec(importlib.util.spec_from_loader("memgrid_reader", loader))
    loader.exec_module(reader)
    search = {"arguments": {"query": "{query}"}, "query": "prompt", "hits": "results", "hit_id": "topic",
              "hit_text": ["snippet"], "hit_pattern": None}
    text = json.dumps({"count": 1, "results": [{"id": 7, "topic": PLANTED, "snippet": FACT}]})
    result = SimpleNamespace(content=[SimpleNamespace(text=text)], structured_content={"result": text})
    assert reader.read_hits(search, result) == [(PLANTED, FACT)]
    structured = SimpleNamespace(content=[SimpleNamespace(text="2 hits")], structured_content=json.loads(text))
    assert reader.read_hits(search, structured) == [(PLANTED, FACT)]


def test_run_ingest_checks_the_count_read_back_and_says_one_line(tmp_path, capsys):
    """The skeleton every product's ingest shares (images/sandbox/memgrid_corpus.py): the count the product
    holds must equal the sessions sent, a failure is one line naming the innermost error, the receipt last."""
    import sys

    sys.path.insert(0, str(REPO / "images" / "sandbox"))
    try:
        from memgrid_corpus import run_ingest
    finally:
        sys.path.remove(str(REPO / "images" / "sandbox"))
    folder, names = write_corpus(tmp_path / "corpus")
    argv = ["--corpus", str(folder), "--store", str(tmp_path / "store")]
    assert run_ingest("demo-ingest", "demo", "jsonl", lambda store, found: len(found) - 1, argv=argv) == 1
    assert capsys.readouterr().err == f"demo-ingest: demo holds {len(names) - 1} of the {len(names)} sessions written to it\n"
    assert not (tmp_path / "store" / "store.json").exists()

    async def refused(store, found):  # an MCP client's error arrives wrapped in anyio's exception group
        raise BaseExceptionGroup("unhandled errors in a TaskGroup", [RuntimeError("create_entities refused sessions 0..4")])

    assert run_ingest("demo-ingest", "demo", "jsonl", refused, argv=argv) == 1
    assert capsys.readouterr().err == "demo-ingest: create_entities refused sessions 0..4\n"
    assert run_ingest("demo-ingest", "demo", "jsonl", lambda store, found: len(found), argv=argv) == 0
    receipt = json.loads((tmp_path / "store" / "store.json").read_text())
    assert receipt["documents"] == len(names) and receipt["product"] == "demo" and receipt["store_format"] == "jsonl"


def test_a_corpus_of_no_sessions_may_arrive_without_docs_but_a_lost_docs_folder_is_an_error(tmp_path):
    """An archive carries no empty folder, so a product's ingest of an empty corpus (two-session's start store)
    finds no docs/: that reads as no sessions only when the manifest lists none."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("memgrid_corpus", REPO / "images/sandbox/memgrid_corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    (tmp_path / MANIFEST).write_text("")
    assert corpus.sessions(tmp_path) == []
    (tmp_path / MANIFEST).write_text(f"{'0' * 64}  docs/a.jsonl\n")  # a session listed, its folder missing
    with pytest.raises(FileNotFoundError):
        corpus.sessions(tmp_path)
    (tmp_path / MANIFEST).unlink()  # no manifest either: not a corpus at all
    with pytest.raises(FileNotFoundError):
        corpus.sessions(tmp_path)


def test_progress_is_throttled_in_the_driver_and_in_the_harness(engine, images, run_id, no_leftovers, capsys):
    """A long ingest says how far it is without flooding: the driver prints at most one progress line a second (and
    always its last), the harness logs the first report at once and then at most one per interval."""
    import importlib.util

    from runner.arms.ingest import PROGRESS, watch_progress

    spec = importlib.util.spec_from_file_location("memgrid_corpus", REPO / "images/sandbox/memgrid_corpus.py")
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    for done in range(1, 11):
        driver.progress(done, 10)
    assert capsys.readouterr().err.splitlines() == [f"{PROGRESS} 1 10", f"{PROGRESS} 10 10"]

    script = f'for i in 1 2 3 4 5 6 7 8; do echo "{PROGRESS} $i 8" >&2; sleep 0.5; done; echo done'
    container = engine.containers.create(**hardened(images.base.tag, user="1000:1000", network="none", limits=Limits(),
                                                    labels={RUN_LABEL: run_id, CELL_LABEL: "progress"},
                                                    command=["sh", "-c", script]))
    try:
        said = []
        container.start()
        watch_progress(container, "ingest demo present seed 0", said.append, every=1.5).join(timeout=30)
    finally:
        remove_quietly(container)
    assert said[0] == "ingest demo present seed 0: started, 1 of 8 documents"
    assert 2 <= len(said) <= 4, said  # 4 s of reports every 0.5 s, logged at most every 1.5 s
    for line in said[1:]:  # two documents a second since the first report
        rate = re.fullmatch(r"ingest demo present seed 0: \d of 8 documents, ([\d.]+)/s, \d+ s left", line)
        assert rate and 1.5 <= float(rate.group(1)) <= 2.1, said
