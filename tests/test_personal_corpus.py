"""The personal corpus and its answer key: big enough, deterministic and matching the committed digests, and
consistent (every presence value stands and is stated in its evidence; every forgetting value once held
and no longer does); the search's release rule drops what the contract forbids and counts it."""

import yaml

from runner.protocols.personal import corpus as gen
from runner.protocols.personal.protocol import MAX_IDS, released
from runner.units.personal import Question, Record, Unit, unit_digest

from conftest import REPO

UNITS = [gen.build_unit(p, h) for p in gen.person_ids(20) for h in gen.HORIZONS]


def test_the_preset_corpus_has_20_persons_over_3_horizons_and_300_questions_of_every_kind():
    assert len(UNITS) == 60
    questions = [q for u in UNITS for q in u.questions]
    assert len(questions) >= 300
    assert {q.kind for q in questions} == {"remembering", "reasoning", "recommending"}
    assert sum(bool(q.forgetting) for q in questions) >= 200  # most questions test forgetting too
    assert all(len(u.records) <= MAX_IDS for u in UNITS)  # the full context fits the contract's release cap


def test_generation_is_deterministic_and_matches_the_committed_digests():
    committed = yaml.safe_load((REPO / "corpus" / "personal" / "digests.yaml").read_text())
    assert len(committed) == gen.MAX_PERSONS * len(gen.HORIZONS)
    for p in gen.person_ids(gen.MAX_PERSONS):
        for h in gen.HORIZONS:
            assert unit_digest(gen.build_unit(p, h)) == committed[f"{p}-{h}"], f"{p}-{h}: regenerate the digests"


def test_every_criterion_agrees_with_the_fact_history():
    for u in UNITS:
        by_id = {r.id: r for r in u.records}
        assert len(by_id) == len(u.records)
        assert [r.date for r in u.records] == sorted(r.date for r in u.records)
        for q in u.questions:
            assert q.presence, q.id  # FAMA is 0 without one, whatever the answer
            current = {v for a in q.attributes for v in u.current(a)}
            assert {c.value for c in q.presence} == current
            held_once = {v for a in q.attributes for _, _, v in u.history[a]}
            for c in q.forgetting:
                assert c.value in held_once and c.value not in current, (q.id, c.value)
            evidence = " ".join(by_id[i].user for i in q.evidence)
            assert all(c.value in evidence for c in q.presence), q.id
            forgotten = " ".join(by_id[i].user for i in q.forgotten)  # the records stating what no longer holds
            assert all(c.value in forgotten for c in q.forgetting) and bool(q.forgotten) == bool(q.forgetting), q.id
            assert q.cutoff_session == u.records[-1].session


def test_confusers_name_values_the_person_never_had():
    """Chatter may name a pool value said of someone else; never one of the person's own values, or the
    answer key would call a record about the user a distraction."""
    for u in UNITS:
        own = {v for a in gen.ATTRIBUTES for _, _, v in u.history.get(a, [])}
        for r in u.records:
            if any(r.user == t.format(v=v) for a in gen.ATTRIBUTES.values() for t in a.confuse for v in a.pool):
                assert not any(v in r.user for v in own), r


def test_release_keeps_the_persons_records_up_to_the_cutoff_and_counts_the_rest():
    u = gen.build_unit("p01", "monthly")
    q = u.questions[0]
    other = gen.build_unit("p02", "monthly").records[0].id
    mine = [r.id for r in u.records]
    r = released(u, q, [mine[3], mine[3], other, "made-up", mine[0]])
    assert r.kept == (mine[3], mine[0])  # unique, in the search's order
    assert r.dropped == {"not_this_person": (other, "made-up"), "duplicate": (mine[3],)}
    assert r.violations == [other, "made-up"]  # the harness's reader repeats a record a product stored in parts
    assert released(u, q, [mine[3], mine[3], other], contract=True).violations == [other, mine[3]]
    early = Question(q.id, q.kind, q.text, q.attributes, 0, q.presence, q.forgetting, q.evidence)
    r = released(u, early, mine)
    assert all(i.split("-")[1].endswith("00") for i in r.kept) and len(r.violations) == len(mine) - len(r.kept)
    assert r.dropped["past_cutoff"] == tuple(r.violations)
    assert released(u, q, mine * 2).kept == tuple(mine)


def test_release_keeps_at_most_350_and_a_submission_is_charged_for_the_rest():
    records = [Record(f"p09-q{i:03d}-0", "p09", i, "2026-01-01", "user: hi", "hi", "") for i in range(400)]
    u = Unit("p09", "Sam", "quarterly", records)
    q = Question("q", "remembering", "?", (), 399, (), (), ())
    ids = [r.id for r in records]
    r = released(u, q, ids)
    assert r.kept == tuple(ids[:350]) and r.dropped == {"over_limit": tuple(ids[350:])} and r.violations == []
    assert released(u, q, ids, contract=True).violations == ids[350:]