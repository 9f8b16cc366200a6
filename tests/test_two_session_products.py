"""Two-session cells with the third-party products: step 1's reader remembers through the product's own write
tool, called as arm.yaml's mcp.write says; the store it leaves is the product's own format and holds the text;
step 2's reader, in a fresh container over that store alone, recalls the value through the product's own search
(mcp.search). One cell per product (their images take minutes to build the first time, and three of them load an
embedding model in each session). Also: what the scripted model that drives claude-code sends each product in
both steps, and the reader taking an answer that names nothing stored as a refusal.
"""

import hashlib
import importlib.machinery
import importlib.util
import io
import json
import sqlite3
import tarfile
from dataclasses import replace

import pytest

from conftest import REPO
from runner.arms.ingest import ensure_empty_stores
from runner.env.archive import Entry
from runner.env.images import ensure_arm_image
from runner.exec.trial import TrialContext
from runner.plan.grid import CellSpec
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.protocols.registry import PROTOCOLS
from runner.protocols.two_session import cases as casegen
from runner.protocols.two_session.protocol import model_script
from test_products import pickled_strings_and_floats
from test_reader_two_session import of, session

PROTOCOL = PROTOCOLS["two-session"]
CASE = casegen.generate_cases(1)[0]
TEXT = f"{casegen.key(CASE)} = {casegen.answer(CASE)}"


def product_ctx(engine, images, tmp_path, run_id, name: str) -> TrialContext:
    """A two-session context whose arm `name` has its image and its own ingest's empty store."""
    ctx = TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(REPO), load_all_arms(REPO), protocol=PROTOCOL)
    ctx.run_dir.mkdir(parents=True)
    ctx.images_by_arm[name] = ensure_arm_image(engine, REPO / "arms" / name, images.sandbox, log=lambda m: None)
    ctx.stores.update(ensure_empty_stores(engine, [ctx.arms[name]], ctx.run_dir, ctx.images_by_arm, run_id=run_id,
                                          log=lambda m: None))
    return ctx


def run_reader_cell(ctx: TrialContext, name: str):
    """One cell of the reader over the product: (ledger row, step 1's events, step 2's events, step 1's store)."""
    row = PROTOCOL.run_cell(ctx, CellSpec(CASE.id, name, 0, CASE.derivation, "reader", f"reader-{name}", 0), 1)
    cell = ctx.run_dir / "cells" / row.cell_id
    events = {ph: [json.loads(l) for l in (cell / ph / "transcript.jsonl").read_text().splitlines()] for ph in ("step1", "step2")}
    with tarfile.open(fileobj=io.BytesIO((cell / "step1" / "store.tar").read_bytes())) as tar:
        store = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    return row, events["step1"], events["step2"], store


def assert_remembered_and_recalled(row, step1, step2, arm) -> str:
    """Both sessions admitted with the product attached; step 1 called the product's write tool once, which
    answered an id; step 2 searched the product and answered the value. Returns the id."""
    assert row.admitted, (row.discard_reason, row.error_detail)
    prefix = arm.mcp.prefix
    assert [e["tool"] for e in of(step1, "tool_call")] == [prefix + arm.mcp.write.tool]
    assert of(step1, "tool_call")[0]["is_error"] is False
    remembered = of(step1, "remembered")
    assert len(remembered) == 1 and "error" not in remembered[0] and remembered[0]["id"], remembered
    assert {e["tool"] for e in of(step2, "tool_call")} == {prefix + arm.mcp.search_tool}
    assert of(step2, "recalled")[0]["matched"] is True
    result = json.loads(row.result)
    assert result["score"] == 1 and result["last_line"] == casegen.answer(CASE), result
    return remembered[0]["id"]


def remembered_cell(engine, images, tmp_path, run_id, name: str) -> tuple[str, dict]:
    """One reader cell over the product, held to remembering and recalling: (the id it stored, step 1's store)."""
    ctx = product_ctx(engine, images, tmp_path, run_id, name)
    row, step1, step2, store = run_reader_cell(ctx, name)
    return assert_remembered_and_recalled(row, step1, step2, ctx.arms[name]), store


def test_server_memory_remembers_an_entity_through_create_entities_and_recalls_it(engine, images, tmp_path, run_id,
                                                                                 no_leftovers):
    stored, store = remembered_cell(engine, images, tmp_path, run_id, "server_memory")
    assert stored == TEXT  # the entity's name, as the product answered it
    # The product's own serialisation (saveGraph: JSON.stringify of type, name, entityType, observations), one line.
    entity = {"type": "entity", "name": TEXT, "entityType": "memory", "observations": [TEXT]}
    assert store["memory.jsonl"].decode() == json.dumps(entity, separators=(",", ":"), ensure_ascii=False)


def test_mcp_memory_service_remembers_through_memory_store_and_recalls_it(engine, images, tmp_path, run_id, no_leftovers):
    stored, store = remembered_cell(engine, images, tmp_path, run_id, "mcp_memory_service")
    (tmp_path / "store.db").write_bytes(store["sqlite_vec.db"])
    for suffix in ("-wal", "-shm"):  # the product's write-ahead log, where its last write may still sit
        if f"sqlite_vec.db{suffix}" in store:
            (tmp_path / f"store.db{suffix}").write_bytes(store[f"sqlite_vec.db{suffix}"])
    db = sqlite3.connect(tmp_path / "store.db")
    rows = db.execute("SELECT content, content_hash FROM memories").fetchall()
    embedded = db.execute("SELECT count(*) FROM memory_embeddings_rowids").fetchone()[0]
    db.close()
    # One memory, named by the product's own content hash (sha256 of the normalised content), embedded.
    assert rows == [(TEXT, hashlib.sha256(TEXT.strip().lower().encode()).hexdigest())]
    assert stored == rows[0][1] and embedded == 1


def test_mempalace_remembers_a_drawer_through_add_drawer_and_recalls_it(engine, images, tmp_path, run_id, no_leftovers):
    stored, store = remembered_cell(engine, images, tmp_path, run_id, "mempalace")
    (tmp_path / "chroma.db").write_bytes(store["chroma.sqlite3"])
    db = sqlite3.connect(tmp_path / "chroma.db")
    meta = dict(db.execute("SELECT m.key, m.string_value FROM embedding_metadata m JOIN embeddings e ON e.id = m.id "
                           "WHERE e.embedding_id = ?", (stored,)).fetchall())
    drawers = db.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    db.close()
    # One drawer, under the id the product answered, in chromadb's store with the product's own metadata.
    assert drawers == 1
    assert meta["chroma:document"] == TEXT and meta["wing"] == "sessions" and meta["room"] == "remembered"
    assert meta["added_by"] == "mcp"
    assert any(p.endswith("/header.bin") for p in store)  # its HNSW segment, written by chromadb


def test_mcp_server_qdrant_remembers_through_qdrant_store_and_recalls_it(engine, images, tmp_path, run_id, no_leftovers):
    stored, store = remembered_cell(engine, images, tmp_path, run_id, "mcp_server_qdrant")
    assert stored == TEXT  # the product's answer names no id, only the text it stored (what qdrant-find shows of it)
    (tmp_path / "storage.sqlite").write_bytes(store["collection/sessions/storage.sqlite"])
    db = sqlite3.connect(tmp_path / "storage.sqlite")
    points = db.execute("SELECT point FROM points").fetchall()
    db.close()
    # One point in the product's local collection: its pickled PointStruct, 384 floats, the text as its document.
    assert len(points) == 1
    strings, floats = pickled_strings_and_floats(points[0][0])
    assert strings[:2] == ["qdrant_client.http.models.models", "PointStruct"] and floats == 384
    assert strings[strings.index("document") + 1] == TEXT


def test_a_write_in_recalls_shape_is_refused_by_the_product_and_recalls_nothing(engine, images, tmp_path, run_id,
                                                                               no_leftovers):
    """The control: server_memory written as recall is ({"text": ...}, what the harness sent before mcp.write) is
    refused by the product, so nothing is carried and step 2 answers UNKNOWN, scored 0, not discarded."""
    ctx = product_ctx(engine, images, tmp_path, run_id, "server_memory")
    arm = ctx.arms["server_memory"]
    ctx.arms["server_memory"] = replace(arm, mcp=replace(arm.mcp, write=replace(arm.mcp.write, arguments={"text": "{text}"})))
    row, step1, step2, store = run_reader_cell(ctx, "server_memory")
    assert row.admitted, (row.discard_reason, row.error_detail)
    assert of(step1, "tool_call")[0]["is_error"] is True
    assert of(step1, "remembered")[0]["id"] is None and of(step1, "remembered")[0]["error"]
    assert store["memory.jsonl"] == b""
    assert json.loads(row.result)["score"] == 0 and json.loads(row.result)["last_line"] == "UNKNOWN"


def test_an_answer_that_names_nothing_stored_is_a_refusal(engine, images, tmp_path, run_id, no_leftovers):
    """server_memory answers create_entities for a name its graph already holds with no error and an empty list:
    the reader must record that as a refusal (mcp.write's id names nothing), not as remembered."""
    arm = load_all_arms(REPO)["server_memory"]
    image = ensure_arm_image(engine, REPO / "arms" / "server_memory", images.sandbox, log=lambda m: None)
    held = json.dumps({"type": "entity", "name": TEXT, "entityType": "memory", "observations": ["older"]})
    cfg = {"agent": "reader", "task": CASE.id, "arm": arm.name, "arm_kind": "mcp", "seed": 0, "condition": CASE.derivation,
           "hooks": [], "write": arm.mcp.write.as_config(),
           "mcp": {"server": arm.mcp.server, "search_tool": arm.mcp.search_tool, "search": arm.mcp.search.as_config(),
                   "command": [p.replace("{store}", "/sandbox/store") for p in arm.mcp.command]}}
    result, events, after = session(engine, image, run_id, "refused", "--remember", cfg, casegen.step1_prompt(CASE),
                                    {"remember.json": {"text": TEXT}}, [Entry("memory.jsonl", held.encode())])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert of(events, "tool_call") == [{"type": "tool_call", "tool": "mcp__server_memory__create_entities", "is_error": False}]
    refused = of(events, "remembered")
    assert refused[0]["id"] is None and "names no entities.0.name" in refused[0]["error"], refused
    assert [json.loads(l)["observations"] for l in dict((e.path, e.data) for e in after)["memory.jsonl"].splitlines()] == [["older"]]


def load_program(name: str, path: str):
    loader = importlib.machinery.SourceFileLoader(name, str(REPO / path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


def test_the_reader_reads_each_products_stored_id_and_takes_an_answer_naming_none_as_refused():
    """What each product answers to a write, read as its mcp.write says: the stored item's id, or None (a refusal)
    for the answers some products give without an error flag; the reader fills "{text}" as the harness does."""
    reader, arms = load_program("memgrid_reader", "images/sandbox/memgrid-reader"), load_all_arms(REPO)
    write = {name: arms[name].mcp.write.as_config()
             for name in ("server_memory", "mcp_memory_service", "mempalace", "mcp_server_qdrant", "recall")}
    entity = {"name": TEXT, "entityType": "memory", "observations": [TEXT]}
    assert reader.stored_id(write["server_memory"], {"entities": [entity]}, "") == TEXT
    assert reader.stored_id(write["server_memory"], {"entities": []}, "[]") is None  # the name was taken: nothing created
    digest = "ab" * 32
    assert reader.stored_id(write["mcp_memory_service"], None, f"Memory stored successfully (hash: {digest})") == digest
    assert reader.stored_id(write["mcp_memory_service"], None, "Not stored: this content was deleted on 2026-12-01; "
                            "pass restore_deleted=true to bring it back") is None
    assert reader.stored_id(write["mempalace"], None, json.dumps({"success": True, "drawer_id": "drawer_x_1"})) == "drawer_x_1"
    assert reader.stored_id(write["mempalace"], None, json.dumps({"success": False, "error": "wing: invalid"})) is None
    assert reader.stored_id(write["mempalace"], None, "not JSON at all") is None
    assert reader.stored_id(write["recall"], {"id": "mem-0123456789ab"}, "") == "mem-0123456789ab"
    # mcp-server-qdrant names no id, only the text it stored (and the collection); an error result is its refusal
    assert reader.stored_id(write["mcp_server_qdrant"], None, f"Remembered: {TEXT} in collection sessions") == TEXT
    assert reader.stored_id(write["mcp_server_qdrant"], None, "Error executing tool qdrant-store: ...") is None
    for name, config in write.items():
        assert reader.fill_text(config["arguments"], TEXT) == arms[name].mcp.write.call(TEXT)




# Each product's answer to its search, holding the remembered line, as the product shapes it.
ANSWERS = {
    "server_memory": json.dumps({"entities": [{"name": TEXT, "entityType": "memory", "observations": [TEXT]}],
                                 "relations": []}),
    "mcp_memory_service": f"Found 1 memories\n\n1. {TEXT}\n   Hash: {'a' * 64}\n   Created: 2026-12-02",
    "mcp_memory_service_shared": f"Found 1 memories\n\n1. {TEXT}\n   Hash: {'a' * 64}\n   Created: 2026-12-02",
    "mempalace": json.dumps({"results": [{"source_file": "?", "text": TEXT, "similarity": 0.4}]}),
    "mcp_server_qdrant": json.dumps([f"Results for the query '{casegen.key(CASE)}'",
                                     f"<entry><content>{TEXT}</content><metadata></metadata></entry>"], indent=2),
    "recall": json.dumps({"hits": [{"id": "mem-0123456789ab", "snippet": TEXT}]}),
}


@pytest.mark.parametrize("name", ["server_memory", "mcp_memory_service", "mcp_memory_service_shared", "mempalace",
                                  "mcp_server_qdrant", "recall"])
def test_the_scripted_model_remembers_and_searches_each_product_as_its_arm_declares(name):
    """claude-code on the scripted model: step 1 calls the product's write tool with mcp.write's arguments (the
    text filled in), step 2 its search tool with mcp.search's argument names, for the key (a word of it at a time
    for a substring search), and answers the value found in the product's answer."""
    server, arm = load_program("model_server", "images/model/memgrid-model-server"), load_all_arms(REPO)[name]
    first = model_script(CASE, arm, "step1")
    write_tool = arm.mcp.prefix + arm.mcp.write.tool
    step, calls, _ = server.next_step(first, {"tools": [{"name": write_tool}, {"name": "Bash"}],
                                             "messages": [{"role": "user", "content": "go"}]})
    assert step == "remember" and [(c[1], c[2]) for c in calls] == [(write_tool, arm.mcp.write.call(TEXT))]
    assert TEXT in json.dumps(calls[0][2]) and "{text}" not in json.dumps(calls[0][2])

    second = model_script(CASE, arm, "step2")
    search_tool = arm.mcp.prefix + arm.mcp.search_tool
    offered = [{"name": search_tool}, {"name": "Read"}]
    step, calls, _ = server.next_step(second, {"tools": offered, "messages": [{"role": "user", "content": "go"}]})
    assert step == "search" and {c[1] for c in calls} == {search_tool}
    for c in calls:
        assert set(c[2]) == set(arm.mcp.search.arguments)
    queries = [c[2][next(k for k, v in arm.mcp.search.arguments.items() if v == "{query}")] for c in calls]
    if arm.mcp.search.query == "keywords":  # a substring search: each word of the key, never the whole prompt
        assert len(queries) > 1 and all(q in casegen.key(CASE).lower() for q in queries)
    else:
        assert queries == [casegen.key(CASE)]
    uses = [{"type": "tool_use", "id": c[0], "name": c[1], "input": c[2]} for c in calls]
    back = [{"type": "tool_result", "tool_use_id": c[0], "content": [{"type": "text", "text": ANSWERS[name]}]} for c in calls]
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": uses}, {"role": "user", "content": back}]
    step, _, said = server.next_step(second, {"tools": offered, "messages": messages})
    assert step == "finish" and said.splitlines()[-1] == casegen.answer(CASE)
