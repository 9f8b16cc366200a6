"""The store cache: a store is keyed by everything that determines it (each input changes the key), reused by a later
run whose inputs match (no ingest, the same digest, run.json saying where it came from), set aside and ingested again
when it no longer matches its digest, and moved between machines by export / import, each entry verified."""

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from runner.arms import store_cache
from runner.arms.ingest import StoreSnapshot, ensure_stores, store_costs, store_key
from runner.corpus.build import MANIFEST
from runner.env.archive import Entry, pack, safe_entries
from runner.env.images import ImageRef, ensure_arm_image
from runner.errors import UserError
from runner.plan.spec import load_all_arms

from conftest import REPO, SEED

IMAGE = ImageRef("arm:recall", "memgrid-arm-recall:abc", "sha256:" + "1" * 64)


@pytest.fixture
def corpus(tmp_path) -> Path:
    folder = tmp_path / "corpus"
    (folder / "docs").mkdir(parents=True)
    (folder / MANIFEST).write_text("0" * 64 + "  docs/a.jsonl\n")
    return folder


def test_each_input_of_a_store_changes_its_key(project, corpus):
    arm = load_all_arms(project)["recall"]
    base = store_key(arm, IMAGE, corpus, "present", 0, None)
    assert store_key(arm, IMAGE, corpus, "present", 0, None).key == base.key  # the control: same inputs, same key
    (corpus.parent / "other").mkdir()
    other_corpus = corpus.parent / "other"
    (other_corpus / MANIFEST).write_text("1" * 64 + "  docs/a.jsonl\n")
    changed = {
        "image": store_key(arm, replace(IMAGE, id="sha256:" + "2" * 64), corpus, "present", 0, None),
        "corpus": store_key(arm, IMAGE, other_corpus, "present", 0, None),
        "condition": store_key(arm, IMAGE, corpus, "absent", 0, None),
        "seed": store_key(arm, IMAGE, corpus, "present", 1, None),
        "ingest recipe": store_key(replace(arm, ingest=(*arm.ingest, "--batch")), IMAGE, corpus, "present", 0, None),
        "shared embedder": store_key(replace(arm, embedder="shared"), IMAGE, corpus, "present", 0, "memgrid-embedder:aaa"),
    }
    changed["embedder image"] = store_key(replace(arm, embedder="shared"), IMAGE, corpus, "present", 0, "memgrid-embedder:bbb")
    (arm.root / "assets").mkdir()
    (arm.root / "assets" / "model.bin").write_bytes(b"weights")  # the product's own model, out of a pinned wheel
    changed["own model files"] = store_key(arm, IMAGE, corpus, "present", 0, None)
    (arm.root / "assets" / "model.bin").unlink()
    (arm.root / "recall" / "extra.py").write_text("# a change to the code its image builds from\n")
    changed["arm folder"] = store_key(arm, IMAGE, corpus, "present", 0, None)
    keys = {name: k.key for name, k in changed.items()}
    assert base.key not in keys.values(), [n for n, k in keys.items() if k == base.key]
    assert len(set(keys.values())) == len(keys)


def snapshot_of(files: dict[str, bytes]) -> tuple[bytes, dict]:
    raw = pack([Entry(p, d) for p, d in files.items()])
    return raw, {"documents": 1, "corpus_documents": 1, "seconds": 3.5}


def test_a_cached_store_is_read_back_verified_and_a_damaged_one_is_set_aside(project, corpus):
    key = store_key(load_all_arms(project)["recall"], IMAGE, corpus, "present", 0, None)
    assert store_cache.read(key) is None
    raw, report = snapshot_of({"store.json": b'{"documents": 1}', "index.bin": b"x" * 100})
    folder = store_cache.write(key, raw, report)
    assert json.loads((folder / "key.json").read_text())["corpus_digest"] == key.corpus_digest
    got, got_report = store_cache.read(key)
    assert got == raw and got_report["digest"] == store_cache.sha256_bytes(raw)
    (folder / "store.tar").write_bytes(raw[:-512] + b"\0" * 512 + b"tampered")
    logs = []
    assert store_cache.read(key, logs.append) is None
    assert "does not match its recorded digest" in logs[0] and not folder.exists()
    assert any(p.name.startswith(".bad-") for p in store_cache.stores_dir().iterdir())
    assert store_cache.entries() == []


def test_stores_move_between_machines_by_export_and_import_each_verified(project, corpus, tmp_path, monkeypatch):
    arm = load_all_arms(project)["recall"]
    for seed in (0, 1):
        store_cache.write(store_key(arm, IMAGE, corpus, "present", seed, None), *snapshot_of({"store.json": b"%d" % seed}))
    archive = tmp_path / "stores.tar"
    store_cache.export(store_cache.entries(), archive)
    monkeypatch.setenv("MEMGRID_CACHE", str(tmp_path / "other-machine"))
    added, present, loaded = store_cache.import_archive(archive)
    assert len(added) == 2 and present == [] and loaded == []
    assert store_cache.read(store_key(arm, IMAGE, corpus, "present", 1, None))[0] == snapshot_of({"store.json": b"1"})[0]
    assert store_cache.import_archive(archive) == ([], sorted(added), [])
    # a store changed in transit, or a key that does not hash its inputs, refuses the whole archive
    files = {e.path: e.data for e in safe_entries(archive.read_bytes())}
    for changed in ("store.tar", "key.json"):
        bad = dict(files)
        path = next(p for p in bad if p.endswith(changed))
        bad[path] = pack([Entry("store.json", b"forged")]) if changed == "store.tar" else \
            json.dumps({**json.loads(bad[path]), "seed": 7}).encode()
        (tmp_path / "bad.tar").write_bytes(pack([Entry(p, d) for p, d in bad.items()]))
        monkeypatch.setenv("MEMGRID_CACHE", str(tmp_path / f"third-{changed}"))
        with pytest.raises(UserError, match="nothing was imported"):
            store_cache.import_archive(tmp_path / "bad.tar")
        assert store_cache.entries() == []


def test_a_second_run_takes_its_stores_from_the_cache_with_no_ingest(engine, images, built, tmp_path, run_id,
                                                                     monkeypatch):
    settings, _, build_dir, _ = built
    arm = load_all_arms(REPO)["recall"]
    recall = {"recall": ensure_arm_image(engine, arm.root, images.sandbox, log=lambda m: None)}

    class Built:  # the session's corpus, built in its own folder
        def condition_dir(self, condition, seed):
            return settings.condition_dir(condition, seed, build_dir)

    pairs = [("present", SEED), ("absent", SEED)]
    first_logs, second_logs = [], []
    first = ensure_stores(engine, [arm], pairs, Built(), tmp_path / "run-1", recall, run_id=run_id, log=first_logs.append)
    second = ensure_stores(engine, [arm], pairs, Built(), tmp_path / "run-2", recall, run_id=run_id, log=second_logs.append)
    assert all(line.startswith("ingested recall") for line in first_logs), first_logs
    assert len(second_logs) == 2 and all("from the store cache" in line for line in second_logs), second_logs
    for key, store in second.items():
        assert store.digest == first[key].digest and store.source == "cache" and first[key].source == "ingested"
        assert (tmp_path / "run-2" / "stores" / "recall" / f"{key[1]}-seed{key[2]}" / "store.tar").is_file()
    costs = store_costs(second)
    assert {c["source"] for c in costs.values()} == {"cache"} and all(len(c["cache_key"]) == 64 for c in costs.values())
    # the control: another condition's corpus is another store, ingested
    third_logs = []
    ensure_stores(engine, [arm], [("superseded", SEED)], Built(), tmp_path / "run-3", recall, run_id=run_id,
                  log=third_logs.append)
    assert third_logs[0].startswith("ingested recall superseded")
    # ingested two at a time into an empty cache, the stores are the same bytes as one at a time
    monkeypatch.setenv("MEMGRID_CACHE", str(tmp_path / "empty-cache"))
    parallel_logs = []
    both = ensure_stores(engine, [arm], pairs, Built(), tmp_path / "run-4", recall, run_id=run_id,
                         log=parallel_logs.append, parallel=2)
    assert sorted(line.split(":")[0] for line in parallel_logs) == ["ingested recall absent seed 0",
                                                                    "ingested recall present seed 0"], parallel_logs
    assert {k: content(s) for k, s in both.items()} == {k: content(s) for k, s in first.items()}
    assert {k: s.cache_key for k, s in both.items()} == {k: s.cache_key for k, s in first.items()}


def content(store: StoreSnapshot) -> dict:
    """A store's files, but for the ingest's own wall time, which recall records in its store.json."""
    files = {e.path: e.data for e in store.entries}
    receipt = json.loads(files.pop("store.json"))
    receipt.pop("ingest_seconds")
    return {**files, "store.json": receipt}


def memgrid(*args, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".venv/bin/memgrid"), *args], env={**os.environ, "MEMGRID_CACHE": str(cache)},
                          capture_output=True, text=True, timeout=120)


def test_the_stores_commands_list_export_import_and_prune(project, corpus, tmp_path, monkeypatch):
    arm = load_all_arms(project)["recall"]
    here, there = tmp_path / "here", tmp_path / "there"
    monkeypatch.setenv("MEMGRID_CACHE", str(here))
    for seed in (0, 1):
        store_cache.write(store_key(arm, IMAGE, corpus, "present", seed, None), *snapshot_of({"store.json": b"%d" % seed}))
    listed = memgrid("stores", "list", cache=here)
    assert listed.returncode == 0 and listed.stdout.count("recall") == 2 and "2 stores" in listed.stdout, listed.stdout
    out = tmp_path / "stores.tar"
    assert memgrid("stores", "export", str(out), "--arm", "recall", cache=here).stdout.startswith("exported 2 stores")
    assert memgrid("stores", "import", str(out), cache=there).stdout.startswith("imported 2 stores")
    missing = memgrid("stores", "import", str(tmp_path / "nope.tar"), cache=there)
    assert missing.returncode == 2 and missing.stderr.startswith("memgrid: ") and len(missing.stderr.splitlines()) == 1
    assert "would remove 2 stores" in memgrid("stores", "prune", "--unused-days", "0", "--dry-run", cache=there).stdout
    assert "removed 2 stores" in memgrid("stores", "prune", "--unused-days", "0", cache=there).stdout
    assert "0 stores" in memgrid("stores", "list", cache=there).stdout
    assert "would remove 0 stores" in memgrid("stores", "prune", "--dry-run", cache=here).stdout  # used today: kept


def test_stores_carry_their_images_to_a_machine_that_never_built_them(engine, images, project, corpus, tmp_path, run_id,
                                                                      monkeypatch):
    """A store's key holds its image's id, which an image built elsewhere from the same recipe does not share: export
    --images carries the image, import loads it (the id checked) before it adds the stores, so the key matches there.
    A carried image that loads under another id refuses the archive with no store imported."""
    import io

    here, there = tmp_path / "here", tmp_path / "there"
    tag = f"memgrid-test-{run_id}:x"  # an image of this test's own, removed by its id at the end
    dockerfile = f"FROM {images.base.tag}\nLABEL memgrid.test={run_id}\n".encode()
    built, _ = engine.images.build(fileobj=io.BytesIO(dockerfile), tag=tag, rm=True, network_mode="none")
    try:
        arm = load_all_arms(project)["recall"]
        key = store_key(arm, ImageRef("arm:recall", tag, built.id), corpus, "present", 0, None)
        monkeypatch.setenv("MEMGRID_CACHE", str(here))
        store_cache.write(key, *snapshot_of({"store.json": b"0"}))
        out = tmp_path / "stores.tar"
        exported = memgrid("stores", "export", str(out), "--images", cache=here)
        assert exported.stdout.startswith("exported 1 stores and 1 images"), exported.stdout + exported.stderr
        engine.images.remove(built.id, force=True)  # the other machine has never seen it
        imported = memgrid("stores", "import", str(out), cache=there)
        assert imported.returncode == 0 and imported.stdout.startswith(f"loaded image {tag}\nimported 1 stores"), imported.stdout + imported.stderr
        assert engine.images.get(tag).id == built.id
        monkeypatch.setenv("MEMGRID_CACHE", str(there))
        assert store_cache.read(key) is not None
        files = {e.path: e.data for e in safe_entries(out.read_bytes())}  # an image that is not the one its stores name
        name = next(p for p in files if p.startswith("images/") and p.endswith(".json"))
        files[name] = json.dumps({**json.loads(files[name]), "id": "sha256:" + "2" * 64}).encode()
        (tmp_path / "bad.tar").write_bytes(pack([Entry(p, d) for p, d in files.items()]))
        refused = memgrid("stores", "import", str(tmp_path / "bad.tar"), cache=tmp_path / "third")
        assert refused.returncode == 2 and "no store was imported" in refused.stderr, refused.stderr
        assert not (tmp_path / "third" / "stores").exists() or not any((tmp_path / "third" / "stores").iterdir())
    finally:
        for image in engine.images.list(filters={"label": f"memgrid.test={run_id}"}):
            engine.images.remove(image.id, force=True)
