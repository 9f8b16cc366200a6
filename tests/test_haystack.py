"""The haystack generator: reproducible, varied, in the asked tiers, and free of reserved terms.

No Docker. Synthetic prompts and terms keep these tests independent of the tasks being edited.
"""

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from runner.corpus import haystack
from runner.errors import SpecError
from runner.corpus.haystack import HaystackDoc, contains_reserved, doc_text, generate

REPO = Path(__file__).resolve().parent.parent
COUNT = 500
PROMPTS = [
    "`frobnicate_widget(spec)` in `widgets/core.py` is still a stub that raises NotImplementedError, so\n"
    "`WidgetFactory` cannot build anything. Implement it.\n\nIt must return the gasket tolerance of the widget\n"
    "as a string. Do not change the function signatures.\n",
    "`tally_sprockets(rows)` in `sprockets/__init__.py` is still a stub, so the quarterly sprocket\n"
    "inventory cannot be reconciled. Implement it: it returns the number of sprockets per warehouse bay.\n",
]
TERMS = ["gasket clearance rule", "sprocket-42 scheme"]
ALLOWED_KEYS = {"role", "content", "tool_name", "tool_input"}


def canon(docs: list[HaystackDoc]) -> list[str]:
    return [json.dumps([d.tier, d.events], sort_keys=True) for d in docs]


@pytest.fixture(scope="module")
def docs() -> list[HaystackDoc]:
    return generate(COUNT, 0, PROMPTS, TERMS)


def test_same_arguments_give_identical_documents(docs):
    assert canon(generate(COUNT, 0, PROMPTS, TERMS)) == canon(docs)


def test_output_does_not_depend_on_the_process_hash_seed(docs):
    # hash() and set order change with PYTHONHASHSEED; a generator that used them would differ here.
    code = ("import hashlib, json, sys; from runner.corpus.haystack import generate; "
            f"d = generate(60, 0, {PROMPTS!r}, {TERMS!r}); "
            "print(hashlib.sha256(json.dumps([[x.tier, x.events] for x in d], sort_keys=True).encode()).hexdigest())")
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        digests.add(proc.stdout.strip())
    assert len(digests) == 1


def test_different_seeds_give_different_documents(docs):
    other = canon(generate(COUNT, 1, PROMPTS, TERMS))
    assert other != canon(docs)
    assert len(set(other) & set(canon(docs))) <= COUNT // 100


def test_documents_are_varied(docs):
    texts = [doc_text(d) for d in docs]
    assert len(set(texts)) >= 0.99 * COUNT
    openers = {d.events[0]["content"] for d in docs}
    assert len(openers) >= 0.9 * COUNT


def test_every_tier_in_the_asked_proportions(docs):
    counts = Counter(d.tier for d in docs)
    assert set(counts) == set(haystack.TIERS)
    total = sum(haystack.TIER_SHARES.values())
    for tier, share in haystack.TIER_SHARES.items():
        assert abs(counts[tier] - COUNT * share / total) <= 1, (tier, counts)
    assert len(docs) == COUNT
    # The tiers are interleaved, not in blocks.
    assert len({d.tier for d in docs[:40]}) == len(haystack.TIERS)


def test_events_are_well_formed(docs):
    for i, doc in enumerate(docs):
        events = doc.events
        assert isinstance(events, tuple) and events, i
        assert events[0]["role"] == "user", i
        for j, ev in enumerate(events):
            where = f"document {i} event {j}: {ev}"
            assert set(ev) <= ALLOWED_KEYS, where
            assert ev["role"] in ("user", "assistant", "tool"), where
            assert isinstance(ev.get("content", ""), str), where
            assert ev.get("content") or ev.get("tool_input"), where
            if ev["role"] == "tool":
                assert isinstance(ev.get("tool_name"), str) and ev["tool_name"], where
                prev = events[j - 1]
                assert prev["role"] == "assistant" and prev.get("tool_name") == ev["tool_name"] and "tool_input" in prev, where
                assert "tool_input" not in ev, where
            if "tool_input" in ev:
                assert ev["role"] == "assistant" and isinstance(ev["tool_input"], dict) and ev["tool_input"], where
                assert isinstance(ev.get("tool_name"), str), where
            if ev["role"] == "user":
                assert "tool_name" not in ev, where
        json.dumps(events)  # plain JSON data, nothing else


def test_lengths_stay_in_bounds(docs):
    for doc in docs:
        assert haystack.MIN_EVENTS <= len(doc.events) <= haystack.MAX_EVENTS
        assert haystack.MIN_CHARS <= len(doc_text(doc)) <= haystack.MAX_CHARS


def test_no_document_contains_a_reserved_term(docs):
    assert all(contains_reserved(d, TERMS) is None for d in docs)


@pytest.mark.parametrize("term, redrawn", [
    ("Re-running the suite", False),  # an entry of a pool: removed from the vocabulary before drawing
    ("passed in 1", True),  # made only by filling a template ("passed in {{secs}}s"): caught, document redrawn
])
def test_a_term_the_vocabulary_produces_is_avoided(docs, term, redrawn):
    produced = [d for d in docs if term.lower() in doc_text(d).lower()]
    assert len(produced) >= 10, "pick a term the generator really produces"
    reserved = TERMS + [term.upper()]  # matching ignores case
    clean = generate(COUNT, 0, PROMPTS, reserved)
    assert len(clean) == COUNT
    assert [contains_reserved(d, reserved) for d in clean] == [None] * COUNT
    assert Counter(d.tier for d in clean) == Counter(d.tier for d in docs)
    if redrawn:
        # Only the documents that contained it changed: each index redraws from its own stream.
        changed = sum(a != b for a, b in zip(canon(clean), canon(docs)))
        assert changed == len(produced)


def test_an_unavoidable_term_fails_loudly():
    with pytest.raises(haystack.HaystackError, match="reserved term"):
        generate(20, 0, PROMPTS, ["e"])


def test_contains_reserved_finds_a_planted_hit(docs):
    doc = docs[0]
    assert contains_reserved(doc, TERMS) is None
    planted = HaystackDoc(doc.tier, doc.events + (
        {"role": "assistant", "content": "Writing it down.", "tool_name": "Write",
         "tool_input": {"file_path": "docs/x.md", "content": {"nested": ["see the Sprocket-42 Scheme"]}}},))
    assert contains_reserved(planted, TERMS) == "sprocket-42 scheme"
    in_content = HaystackDoc(doc.tier, ({"role": "user", "content": "the GASKET CLEARANCE RULE and the sprocket-42 scheme"},))
    assert contains_reserved(in_content, TERMS) == "gasket clearance rule"  # the first term in the given order
    assert contains_reserved(in_content, ["", "  "]) is None
    # A term is never found across two fields.
    split = HaystackDoc(doc.tier, ({"role": "user", "content": "gasket clearance"}, {"role": "user", "content": "rule"}))
    assert contains_reserved(split, TERMS) is None


def test_near_misses_reuse_the_prompts_and_others_never_name_their_components(docs):
    names = ("frobnicate_widget", "WidgetFactory", "widgets/core.py", "tally_sprockets", "sprockets/__init__.py")
    near = [doc_text(d) for d in docs if d.tier == "near_miss"]
    hits = [t for t in near if any(n in t for n in names)]
    assert len(hits) >= 0.9 * len(near)
    prompt_words = {"gasket", "tolerance", "sprocket", "warehouse", "reconciled", "quarterly", "widget"}
    assert all(any(w in t.lower() for w in prompt_words) for t in near)
    for d in docs:
        if d.tier != "near_miss":
            text = doc_text(d)
            assert not any(n in text for n in names), (d.tier, [n for n in names if n in text])


def test_prompt_vocabulary():
    vocab = haystack.prompt_vocabulary(PROMPTS[0], frozenset({"that", "does"}))
    assert vocab["pident"] == ("frobnicate_widget(spec)", "widgets/core.py", "WidgetFactory", "NotImplementedError")
    vocab = haystack.prompt_vocabulary(PROMPTS[0], frozenset({"that", "notimplementederror"}))
    assert vocab["pident"] == ("frobnicate_widget(spec)", "widgets/core.py", "WidgetFactory")
    assert "Do not change the function signatures." in vocab["pline"]
    assert "gasket" in vocab["pword"] and "gasket tolerance" in vocab["pphrase"]
    assert "that" not in vocab["pword"]


def test_no_prompts_still_works():
    docs = generate(40, 5, [], [])
    assert len(docs) == 40 and {d.tier for d in docs} == set(haystack.TIERS)


def test_generator_files_define_the_generator():
    files = haystack.generator_files()
    assert files[0] == Path(haystack.__file__).resolve()
    assert len(files) >= 5 and all(f.is_file() for f in files)
    assert {f.suffix for f in files[1:]} == {".yaml"}


def test_a_broken_placeholder_names_the_file_and_the_fix(tmp_path, monkeypatch):
    data = tmp_path / "haystack"
    shutil.copytree(haystack.DATA_DIR, data)
    pools = data / "pools.yaml"
    pools.write_text(pools.read_text().replace('"Let me read {{file}} first."', '"Let me read {{fiel}} first."'))
    monkeypatch.setattr(haystack, "DATA_DIR", data)
    with pytest.raises(SpecError, match=r"pools\.yaml.*fiel.*no pool or let") as e:
        generate(5, 0, PROMPTS, TERMS)
    assert "fix:" in str(e.value)
