"""The judge panel and FAMA: the documented blind spots hold (a forgetting criterion the deterministic judges
get right, one they get wrong), a majority outvotes one judge, a judge that fails is left out and never
scored as quality; FAMA follows Memora's definition at its edges; the interval resamples persons."""

import pytest

from runner.protocols.personal import metrics
from runner.protocols.personal.analysis import comparability, published_table, summarise, table, table3
from runner.units.personal import Criterion
from runner.protocols.personal.judges import ExactJudge, TokenJudge, Verdict, judge_criterion


def test_a_forgetting_criterion_the_panel_gets_right():
    r = judge_criterion("lives in: Lisbon.", Criterion("Porto"), expected=False)
    assert r.correct and r.valid == 3 and not any(v.mentions for v in r.verdicts)


def test_a_forgetting_criterion_the_panel_gets_wrong_negation_is_a_mention():
    """Blind spot (judges.py): an answer that names the outdated value only to say it no longer holds is
    judged to mention it, so the forgetting criterion fails although a person would accept the answer."""
    r = judge_criterion("You no longer live in Porto; you live in Lisbon now.", Criterion("Porto"), expected=False)
    assert not r.correct and all(v.mentions for v in r.verdicts)


def test_the_lexical_judges_outvote_the_embeddings_near_neighbour():
    r = judge_criterion("diet: vegan.", Criterion("vegetarian"), expected=False)
    by = {v.judge: v.mentions for v in r.verdicts}
    assert by == {"exact": False, "tokens": False, "embedding": True}  # vegan ~ vegetarian for the embedding
    assert r.correct


def test_a_partial_name_is_credited_by_majority_not_by_exact_match():
    r = judge_criterion("works at: Northwind.", Criterion("Northwind Analytics"), expected=True)
    by = {v.judge: v.mentions for v in r.verdicts}
    assert by["exact"] is False and by["tokens"] and by["embedding"] and r.correct


def test_aliases_and_accents_count_as_the_value():
    assert ExactJudge().judge("You live in Kraków.", Criterion("Krakow")).mentions
    assert ExactJudge().judge("lives in gothenburg", Criterion("Gothenburg", ("Göteborg",))).mentions
    assert not ExactJudge().judge("Devon is lovely", Criterion("Dev")).mentions  # whole words only


class Broken:
    name = "broken"

    def judge(self, answer, criterion):
        raise ConnectionError("judge transport failed")


class Yes:
    name = "yes"

    def judge(self, answer, criterion):
        return Verdict(self.name, True, "always")


def test_a_failing_judge_is_left_out_of_the_majority_and_all_failing_is_incorrect():
    r = judge_criterion("lives in: Lisbon.", Criterion("Lisbon"), True, panel=(ExactJudge(), Broken(), TokenJudge()))
    assert r.valid == 2 and r.correct
    assert next(v for v in r.verdicts if v.judge == "broken").mentions is None
    assert not judge_criterion("anything", Criterion("Lisbon"), True, panel=(Broken(), Broken())).correct


def test_a_sub_question_is_judged_on_the_value_it_names_and_one_naming_none_gets_no_verdict():
    from runner.units.personal import SubQuestion

    named = SubQuestion("Is 'Call family' listed as a remaining todo item?", (), "q_eval_0", "memory_presence", "Call family")
    result = judge_criterion("Still to do: call family, and water the plants.", named, True)
    assert result.correct and result.valid == 3 and [v.mentions for v in result.verdicts] == [True, True, True]
    nothing = SubQuestion("Does the response say four landings are left?", (), "q_eval_1", "memory_presence")
    result = judge_criterion("Four landings are left.", nothing, True)  # the answer is right; no judge can say so here
    assert (result.correct, result.valid) == (False, 0)
    assert {v.detail for v in result.verdicts} == {"the sub-question names no value to look for"}


def test_a_tie_is_not_a_strict_majority():
    r = judge_criterion("nothing here", Criterion("Lisbon"), True, panel=(ExactJudge(), Yes()))
    assert r.valid == 2 and not r.correct


@pytest.mark.parametrize("np_, cp, nf, cf, fama", [
    (2, 2, 1, 1, 1.0), (2, 1, 0, 0, 0.5), (0, 0, 2, 2, 0.0), (0, 0, 0, 0, 0.0),
    (1, 1, 1, 0, 0.5), (1, 0, 3, 0, 0.0),  # max(0, 0 - 0.75) clips at 0
])
def test_fama_at_its_edges(np_, cp, nf, cf, fama):
    assert metrics.score(np_, cp, nf, cf).fama == pytest.approx(fama)


def test_the_interval_resamples_persons():
    mean, low, high = metrics.mean_with_interval({"p0": [1.0, 1.0], "p1": [0.0], "p2": [0.5, 0.5, 0.5]})
    assert mean == pytest.approx(3.5 / 6) and low < mean < high
    assert metrics.mean_with_interval({"p0": [1.0]}) == (1.0, None, None)
    assert metrics.mean_with_interval({}) == (None, None, None)


def test_the_summary_and_the_published_table_read_the_ledgers_result():
    import json

    def row(person, arm, fama, violations=0):
        q = {"id": "q", "kind": "remembering", "np": 1, "nf": 1, "cp": 1, "cf": 1, "fama": fama, "mpa": fama, "faa": 1.0,
             "lam": 0.5, "released": 1, "violations": violations, "evidence_released": 1, "evidence": 1}
        return {"agent": "reader", "arm": arm, "condition": "weekly", "task": person, "admitted": True,
                "result": json.dumps({"questions": [q]})}

    summary = summarise([row("p0", "oracle_memory", 1.0), row("p1", "oracle_memory", 1.0), row("p0", "recall", 0.0, 2)])
    by_arm = {s["arm"]: s for s in summary}
    assert by_arm["oracle_memory"]["fama"] == 1.0 and by_arm["recall"]["violations"] == 2 and by_arm["recall"]["flags"]
    assert len(table(summary)[1]) == 2
    columns, lines = published_table(summary)
    assert columns[-3:] == ["weekly", "monthly", "quarterly"]
    assert ["LangMem", "published (Memora)", "71", "42", "39"] in lines
    assert ["oracle_memory", "memgrid (reader)", "100", "-", "-"] in lines


def test_table_3_averages_each_persons_mean_first_as_memoras_aggregator_does():
    """Memora's Table 3 (aggregate_results.py) is the mean over persons of each person's mean per-question FAMA, per
    task and period: a person with three remembering questions counts as much as one with one. Pooling the
    questions instead (0.25 here) would weigh persons by their question counts."""
    import json

    def question(kind, fama):
        return {"id": "q", "kind": kind, "np": 1, "nf": 0, "cp": 1, "cf": 0, "fama": fama, "mpa": fama, "faa": 1.0,
                "lam": 0.0, "released": 1, "violations": 0, "evidence_released": 1, "evidence": 1}

    def row(person, horizon, questions, suite=None):
        return {"agent": "echo", "arm": "recall", "condition": horizon, "task": person, "admitted": True,
                "result": json.dumps({"questions": questions, **({"suite": suite} if suite else {})})}

    rows = [row("software_engineer", "weekly", [question("remembering", 1.0), question("reasoning", 0.5)], "memora"),
            row("content_writer", "weekly", [question("remembering", 0.0)] * 3, "memora"),
            row("content_writer", "monthly", [question("recommending", 0.25)], "memora")]
    summary = summarise(rows)
    weekly = next(s for s in summary if s["horizon"] == "weekly")
    assert weekly["table3"] == {"remembering": 0.5, "reasoning": 0.5, "recommending": None}
    assert weekly["by_kind"]["remembering"] == 0.25  # the pooled mean memgrid's own table keeps
    columns, lines = table3(summary)
    assert columns == ["agent", "arm", "rem weekly", "rem monthly", "rea weekly", "rea monthly", "rec weekly",
                       "rec monthly"]
    assert lines == [["echo", "recall", "50.00", "-", "50.00", "-", "-", "25.00"]]
    assert ["recall", "memgrid (echo)", "50", "-", "-"] in published_table(summary)[1]
    assert comparability(summary).startswith("Same data and questions") and "suite memora" in comparability(summary)
    assert comparability(summarise([{**r, "result": r["result"].replace('"suite": "memora"', '"suite": null')}
                                    for r in rows])).startswith("Not directly comparable")


def test_an_answer_is_judged_on_its_first_million_characters_and_the_cut_is_flagged(tmp_path):
    """The deterministic judges cost the controller time in an answer's length, per criterion, and a command answerer
    may print 16 MiB: the judges read the first JUDGED_CHARS of an answer, the question's record says so and the
    summary flags it. A value past the cut is not seen: the length is the answerer's own doing."""
    import json
    from pathlib import Path

    from runner.exec.trial import TrialContext
    from runner.plan.grid import CellSpec
    from runner.protocols.personal.corpus import build_unit
    from runner.protocols.personal.protocol import JUDGED_CHARS, PersonalProtocol, Released

    unit = build_unit("p00", "weekly")
    first, second = unit.questions[:2]
    value = first.presence[0].value
    answers = {first.id: value + " " + "filler " * (JUDGED_CHARS // 7), second.id: "filler " * (JUDGED_CHARS // 7) + value}
    nothing = {q.id: Released((), {}) for q in unit.questions}
    ctx = TrialContext(None, "unit", tmp_path, None, {}, {}, protocol=PersonalProtocol())
    result = PersonalProtocol().judge(ctx, CellSpec("p00", "bare", 0, "weekly", "command", "c", 0), 1, unit, answers,
                                      nothing, tmp_path)
    by_id = {q["id"]: q for q in result["questions"]}
    assert by_id[first.id]["answer_cut_at"] == JUDGED_CHARS and by_id[first.id]["cp"] >= 1  # seen before the cut
    assert by_id[second.id]["answer_cut_at"] == JUDGED_CHARS and by_id[second.id]["cp"] == 0  # past it: not seen
    assert "answer_cut_at" not in by_id[unit.questions[2].id]
    row = {"agent": "command", "arm": "bare", "condition": "weekly", "task": "p00", "admitted": True,
           "result": json.dumps(result)}
    assert "2 answers were longer than 1,000,000 characters and judged on that much" in summarise([row])[0]["flags"]
    assert len(json.loads((Path(tmp_path) / "verdict.json").read_text())["questions"][0]["answer"]) == JUDGED_CHARS


def test_the_html_page_holds_both_tables_the_plot_and_the_judges_blind_spots():
    import json

    from runner.protocols.personal.report import render

    q = {"id": "q", "kind": "remembering", "np": 1, "nf": 0, "cp": 1, "cf": 0, "fama": 1.0, "mpa": 1.0, "faa": 1.0,
         "lam": 0.0, "released": 1, "violations": 0, "evidence_released": 1, "evidence": 1}
    rows = [{"agent": "reader", "arm": "oracle_memory", "condition": h, "task": p, "admitted": True,
             "result": json.dumps({"questions": [q]})} for p in ("p0", "p1") for h in ("weekly", "quarterly")]
    page = render("run-x", {"grid": {"agents": ["reader"], "arms": ["oracle_memory"], "cases": 2}}, summarise(rows))
    assert 'id="personal"' in page and 'id="published"' in page and 'id="table3"' in page and "data:image/png;base64," in page
    assert "Not directly comparable" in page and "Blind to paraphrase" in page


class Transport:
    """The gateway's place in a ModelJudge, answering as told: a reply, or a transport failure."""

    def __init__(self, reply):
        self.reply, self.asked = reply, 0

    def ask(self, model, prompt):
        self.asked += 1
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_a_model_judges_malformed_or_failed_reply_is_invalid_and_never_cached(tmp_path):
    import urllib.error

    from runner.protocols.personal.panel import JudgeCache, ModelJudge

    cache = JudgeCache.open(tmp_path / "cache.jsonl")
    for reply in ("maybe, it depends", urllib.error.URLError("connection refused"), ""):
        v = ModelJudge(0, "m", Transport(reply), cache, "Where?").judge("lives in: Lisbon.", Criterion("Lisbon"))
        assert v.mentions is None, v
    assert cache.entries == {}
    good = Transport("Yes.")
    assert ModelJudge(0, "m", good, cache, "Where?").judge("lives in: Lisbon.", Criterion("Lisbon")).mentions is True
    again = JudgeCache.open(tmp_path / "cache.jsonl")  # from disk, as another run of the runs folder reads it
    twice = Transport("no")
    assert ModelJudge(0, "m", twice, again, "Where?").judge("lives in: Lisbon.", Criterion("Lisbon")).mentions is True
    assert twice.asked == 0
    other_answer = ModelJudge(0, "m", twice, again, "Where?").judge("lives in: Porto.", Criterion("Lisbon"))
    assert other_answer.mentions is False and twice.asked == 1  # a different answer is a different key


def test_the_evidence_table_splits_fama_by_whether_the_search_returned_all_memory_evidence():
    """Issue 53, step 4: a loss is the answerer's when the evidence was all returned, retrieval's when it was not.
    Questions citing no memory evidence are in neither group; older rows without forgetting evidence count none."""
    import json

    from runner.protocols.personal.analysis import evidence_table

    def question(fama, evidence, returned, forgotten=0, forgotten_returned=0):
        return {"id": "q", "kind": "remembering", "np": 1, "nf": 0, "cp": 1, "cf": 0, "fama": fama, "mpa": fama,
                "faa": 1.0, "lam": 0.0, "released": 1, "violations": 0, "evidence_released": returned,
                "evidence": evidence, "forgotten_released": forgotten_returned, "forgotten": forgotten}

    questions = [question(1.0, 2, 2, 1, 1), question(0.5, 1, 1, 2, 0), question(0.0, 2, 1), question(0.25, 1, 0),
                 question(1.0, 0, 0)]
    old = {k: v for k, v in question(0.0, 1, 0).items() if not k.startswith("forgotten")}
    summary = summarise([{"agent": "echo", "arm": "recall", "condition": "weekly", "task": "p0", "admitted": True,
                          "result": json.dumps({"questions": questions + [old]})}])
    s = summary[0]
    assert (s["fama_evidence_whole"], s["evidence_whole"]) == (0.75, 2)
    assert (s["fama_evidence_part"], s["evidence_part"]) == (pytest.approx(0.25 / 3), 3)
    assert s["forgotten_recall"] == 0.5  # of the two questions citing forgetting evidence: all, then none
    columns, lines = evidence_table(summary)
    assert lines == [["echo", "recall", "weekly", "0.50", "0.50", "0.75 (2)", "0.08 (3)"]]


def test_the_best_window_f1_in_one_pass_is_every_windows_f1_at_its_best():
    """TokenJudge's best-window F1 slides one window over the answer (issue 74: counting each window afresh took 26 of
    a full-context Memora cell's 31 judging CPU seconds); it must equal token_f1 over every window, the definition."""
    import random

    from runner.protocols.personal.judges import best_window_f1, token_f1

    def by_definition(target, words):
        return max(token_f1(target, list(words[i:i + len(target)])) for i in range(max(1, len(words) - len(target) + 1)))

    rng = random.Random(20261207)
    for _ in range(2000):
        target = [rng.choice("abcdef") for _ in range(rng.randint(1, 5))]
        words = tuple(rng.choice("abcdefxy") for _ in range(rng.randint(0, 30)))
        assert best_window_f1(target, words) == pytest.approx(by_definition(target, words)), (target, words)
