"""The condition corpora: size, neutrality, determinism, verification, containment, difficulty."""

import json
import os
from pathlib import Path

import yaml

from runner.corpus import build as corpus_mod
from runner.corpus.build import load_settings, locus_findings, probe, verify_dir
from runner.plan.spec import CONDITIONS, load_all_tasks

from conftest import REPO, SEED


def cdir(built, condition):
    settings, _, build_dir, _ = built
    return settings.condition_dir(condition, SEED, build_dir)


def names(path: Path) -> set[str]:
    return {p.stem for p in (path / "docs").glob("*.jsonl")}


def test_every_condition_holds_at_least_4900_documents(built):
    for condition in CONDITIONS:
        meta = json.loads((cdir(built, condition) / "meta.json").read_text())
        assert meta["documents"] >= 4900 and len(names(cdir(built, condition))) == meta["documents"]


def test_only_the_tasks_plants_differ_between_conditions(built):
    present, absent = cdir(built, "present"), cdir(built, "absent")
    key = json.loads((present / "key.json").read_text())
    assert json.loads((absent / "key.json").read_text()) == {}
    assert names(present) - names(absent) == set(key)
    assert names(absent) <= names(present)
    for name in sorted(names(absent))[:200]:
        assert (present / "docs" / f"{name}.jsonl").read_bytes() == (absent / "docs" / f"{name}.jsonl").read_bytes()


def test_names_reveal_no_role(built):
    _, tasks, _, _ = built
    for condition in CONDITIONS:
        for name in names(cdir(built, condition)):
            assert len(name) == 20 and all(c in "0123456789abcdef" for c in name)


def test_superseded_dates_the_stale_rule_first(built):
    path = cdir(built, "superseded")
    key = json.loads((path / "key.json").read_text())
    by_task: dict[str, dict[str, list[str]]] = {}
    for entry in key.values():
        by_task.setdefault(entry["task"], {}).setdefault(entry["role"], []).append(entry["date"])
    assert by_task
    for task, roles in by_task.items():
        assert max(roles["stale"]) < min(roles["fact"]), task


def test_contradictory_order_is_permuted_per_seed_and_recorded():
    settings = load_settings(REPO)
    tasks = [t for t in load_all_tasks(REPO).values() if t.plants and "contradictory" in t.conditions]
    orders = {corpus_mod.plant_documents(settings, t, "contradictory", seed)[1]["order"][0].split(":")[0]
              for t in tasks for seed in range(6)}
    assert orders == {"fact", "rival"}, "the rival never (or always) comes first: the order is not permuted"


def test_fresh_build_verifies_and_tampering_is_named(built, tmp_path):
    import shutil

    for condition in CONDITIONS:
        assert verify_dir(cdir(built, condition)) == []
    copy = tmp_path / "copy"
    shutil.copytree(cdir(built, "present"), copy)
    docs = sorted((copy / "docs").glob("*.jsonl"))
    docs[0].write_bytes(docs[0].read_bytes() + b" ")
    docs[1].unlink()
    os.symlink("/etc/passwd", copy / "docs" / "zz.jsonl")
    (copy / "docs" / "extra.jsonl").write_text("{}\n")
    with open(copy / "MANIFEST.sha256", "a") as f:
        f.write("0" * 64 + "  docs/../../escape.jsonl\n")
    problems = "\n".join(verify_dir(copy))
    assert f"{docs[0]}: content does not match" in problems
    assert f"{docs[1].name}: listed in the manifest but missing" in problems
    assert "zz.jsonl: symbolic link" in problems and "extra.jsonl: not in the manifest" in problems
    assert "escapes the corpus root" in problems


def test_fact_terms_stay_in_their_fact_documents(built, tmp_path):
    import shutil

    _, tasks, _, _ = built
    for condition in CONDITIONS:
        assert locus_findings(cdir(built, condition), tasks) == []
    copy = tmp_path / "copy"
    shutil.copytree(cdir(built, "absent"), copy)
    victim = sorted((copy / "docs").glob("*.jsonl"))[7]
    victim.write_text(victim.read_text() + json.dumps({"role": "user", "content": tasks[0].fact_terms[0]}) + "\n")
    found = locus_findings(copy, tasks)
    assert len(found) == 1 and victim.name in found[0] and "the haystack" in found[0]


def test_rebuild_matches_the_committed_digests(built):
    settings, tasks, _, digests = built
    committed = yaml.safe_load(settings.digests_path.read_text())
    assert committed["generator_digest"] == corpus_mod.generator_digest(settings, tasks), \
        "the generator or its inputs changed: run 'memgrid corpus build' and commit corpus/digests.yaml"
    for condition in CONDITIONS:
        assert committed["digests"][condition][str(SEED)] == digests[condition][SEED], condition


def test_bm25_does_not_saturate(built):
    settings, tasks, build_dir, _ = built
    results = probe(settings, tasks, ("present", "superseded", "contradictory"), (SEED,), build_dir)
    assert len(results) == 3 * len(tasks)
    hit10 = sum(r.hit(10) for r in results) / len(results)
    assert hit10 < 1.0, "BM25 with the prompt finds every fact document in its top 10: the corpus is saturated"
    assert hit10 > 0, "no fact document is ever retrieved: the probe or the plants are broken"
